import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * Consumer-group admin modes (Admin client 3.9.1). Per-item failures are reported as the
 * exception's simple class name in an {@code error} field, so tests can compare them with
 * what Kafka returns.
 *
 * <ul>
 *   <li>{@code list-groups [--states S1,S2]}: one {@code group} line per listed group.</li>
 *   <li>{@code describe-groups --groups G1,G2}: one {@code described} line per group.</li>
 *   <li>{@code delete-group-offsets --group G --topic T --partitions 0,1}: one
 *       {@code offset-deleted} line per partition.</li>
 *   <li>{@code delete-groups --groups G1,G2}: one {@code group-deleted} line per group.</li>
 * </ul>
 */
final class GroupAdmin {
    private static final long TIMEOUT_S = 30;

    private GroupAdmin() {
    }

    static int listGroups(Args args) throws InterruptedException, ExecutionException, TimeoutException {
        ListConsumerGroupsOptions options = new ListConsumerGroupsOptions();
        Set<ConsumerGroupState> states = new HashSet<>();
        for (String s : Harness.splitCsv(args.get("states", ""))) {
            states.add(ConsumerGroupState.parse(s));
        }
        if (!states.isEmpty()) {
            options.inStates(states);
        }
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            for (ConsumerGroupListing g : admin.listConsumerGroups(options).all().get(TIMEOUT_S, TimeUnit.SECONDS)) {
                Map<String, Object> line = new HashMap<>();
                line.put("event", "group");
                line.put("groupId", g.groupId());
                line.put("simple", g.isSimpleConsumerGroup());
                line.put("state", g.state().map(ConsumerGroupState::toString).orElse(null));
                line.put("type", g.type().map(Object::toString).orElse(null));
                Json.emit(line);
            }
        }
        return 0;
    }

    static int describeGroups(Args args) throws InterruptedException {
        List<String> groups = Harness.splitCsv(args.get("groups"));
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            Map<String, KafkaFuture<ConsumerGroupDescription>> futures =
                    admin.describeConsumerGroups(groups).describedGroups();
            for (String group : groups) {
                Map<String, Object> line = new HashMap<>();
                line.put("event", "described");
                line.put("groupId", group);
                try {
                    describe(futures.get(group).get(TIMEOUT_S, TimeUnit.SECONDS), line);
                } catch (ExecutionException | TimeoutException e) {
                    line.put("error", errorName(e));
                }
                Json.emit(line);
            }
        }
        return 0;
    }

    private static void describe(ConsumerGroupDescription d, Map<String, Object> line) {
        line.put("simple", d.isSimpleConsumerGroup());
        line.put("state", d.state().toString());
        line.put("assignor", d.partitionAssignor());
        line.put("type", d.type().toString());
        List<Map<String, Object>> members = new ArrayList<>();
        for (MemberDescription m : d.members()) {
            Map<String, Object> member = new HashMap<>();
            member.put("memberId", m.consumerId());
            member.put("instanceId", m.groupInstanceId().orElse(null));
            member.put("clientId", m.clientId());
            member.put("host", m.host());
            List<List<Object>> parts = new ArrayList<>();
            for (TopicPartition tp : m.assignment().topicPartitions()) {
                parts.add(List.of(tp.topic(), tp.partition()));
            }
            member.put("assignment", parts);
            members.add(member);
        }
        line.put("members", members);
    }

    static int deleteGroupOffsets(Args args) throws InterruptedException {
        String topic = args.get("topic");
        Set<TopicPartition> partitions = new HashSet<>();
        for (String p : Harness.splitCsv(args.get("partitions"))) {
            partitions.add(new TopicPartition(topic, Integer.parseInt(p)));
        }
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            var result = admin.deleteConsumerGroupOffsets(args.get("group"), partitions);
            for (TopicPartition tp : partitions) {
                Map<String, Object> line = new HashMap<>();
                line.put("event", "offset-deleted");
                line.put("partition", tp.partition());
                line.put("error", outcome(result.partitionResult(tp)));
                Json.emit(line);
            }
        }
        return 0;
    }

    static int deleteGroups(Args args) throws InterruptedException {
        List<String> groups = Harness.splitCsv(args.get("groups"));
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            Map<String, KafkaFuture<Void>> futures = admin.deleteConsumerGroups(groups).deletedGroups();
            for (String group : groups) {
                Map<String, Object> line = new HashMap<>();
                line.put("event", "group-deleted");
                line.put("groupId", group);
                line.put("error", outcome(futures.get(group)));
                Json.emit(line);
            }
        }
        return 0;
    }

    /** null on success, else the failure's exception class name. */
    private static String outcome(KafkaFuture<Void> future) throws InterruptedException {
        try {
            future.get(TIMEOUT_S, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException | TimeoutException e) {
            return errorName(e);
        }
    }

    private static String errorName(Exception e) {
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return cause.getClass().getSimpleName();
    }
}
