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
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * Group admin modes of the 4.x Admin client (KIP-1043's listGroups; the 3.9 client's
 * listConsumerGroups is gone from the matrix). Per-item failures are reported as the
 * exception's simple class name in an {@code error} field, so tests can compare them with
 * what Kafka returns.
 *
 * <ul>
 *   <li>{@code list-groups [--states S1,S2] [--types classic,consumer,share]}: Admin.listGroups,
 *       one {@code group} line per listed group (every type unless filtered).</li>
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
        ListGroupsOptions options = new ListGroupsOptions();
        Set<GroupState> states = new HashSet<>();
        for (String s : Harness.splitCsv(args.get("states", ""))) {
            states.add(GroupState.parse(s));
        }
        Set<GroupType> types = new HashSet<>();
        for (String t : Harness.splitCsv(args.get("types", ""))) {
            types.add(GroupType.parse(t));
        }
        options.inGroupStates(states).withTypes(types);
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            for (GroupListing g : admin.listGroups(options).all().get(TIMEOUT_S, TimeUnit.SECONDS)) {
                Map<String, Object> line = new HashMap<>();
                line.put("event", "group");
                line.put("groupId", g.groupId());
                line.put("simple", g.isSimpleConsumerGroup());
                line.put("state", g.groupState().map(GroupState::toString).orElse(null));
                line.put("type", g.type().map(GroupType::toString).orElse(null));
                line.put("protocol", g.protocol());
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
        line.put("state", d.groupState().toString());
        line.put("assignor", d.partitionAssignor());
        line.put("type", d.type().toString());
        List<Map<String, Object>> members = new ArrayList<>();
        for (MemberDescription m : d.members()) {
            Map<String, Object> member = new HashMap<>();
            member.put("memberId", m.consumerId());
            member.put("instanceId", m.groupInstanceId().orElse(null));
            member.put("clientId", m.clientId());
            member.put("host", m.host());
            member.put("memberEpoch", m.memberEpoch().orElse(null));
            List<List<Object>> parts = new ArrayList<>();
            for (TopicPartition tp : m.assignment().topicPartitions()) {
                parts.add(List.of(tp.topic(), tp.partition()));
            }
            member.put("assignment", parts);
            members.add(member);
        }
        line.put("members", members);
        line.put("groupEpoch", d.groupEpoch().orElse(null));
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
    static String outcome(KafkaFuture<Void> future) throws InterruptedException {
        try {
            future.get(TIMEOUT_S, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException | TimeoutException e) {
            return errorName(e);
        }
    }

    static String errorName(Exception e) {
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return cause.getClass().getSimpleName();
    }
}
