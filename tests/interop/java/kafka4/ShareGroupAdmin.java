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
import org.apache.kafka.clients.admin.AlterShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.DeleteShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * Share-group admin modes (KIP-932's Admin calls, 4.x only). Failures are reported as the
 * exception's simple class name in an {@code error} field, as in {@link GroupAdmin}.
 *
 * <ul>
 *   <li>{@code describe-share-groups --groups G1,G2}: one {@code share-described} line per
 *       group: state, epochs, members with their assignment.</li>
 *   <li>{@code share-group-offsets --group G}: Admin.listShareGroupOffsets, one
 *       {@code share-offset} line per partition (start offset, lag), or an {@code error}.</li>
 *   <li>{@code alter-share-group-offsets --group G --topic T --offsets P:O,P:O}: one
 *       {@code share-offset-altered} line per partition.</li>
 *   <li>{@code delete-share-group-offsets --group G --topics T1,T2}: one
 *       {@code share-offsets-deleted} line per topic.</li>
 *   <li>{@code delete-share-groups --groups G1,G2}: one {@code group-deleted} line per group.</li>
 * </ul>
 */
final class ShareGroupAdmin {
    private static final long TIMEOUT_S = 30;

    private ShareGroupAdmin() {
    }

    static int describe(Args args) throws InterruptedException {
        List<String> groups = Harness.splitCsv(args.get("groups"));
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            Map<String, KafkaFuture<ShareGroupDescription>> futures =
                    admin.describeShareGroups(groups).describedGroups();
            for (String group : groups) {
                Map<String, Object> line = new HashMap<>();
                line.put("event", "share-described");
                line.put("groupId", group);
                try {
                    describe(futures.get(group).get(TIMEOUT_S, TimeUnit.SECONDS), line);
                } catch (ExecutionException | TimeoutException e) {
                    line.put("error", GroupAdmin.errorName(e));
                }
                Json.emit(line);
            }
        }
        return 0;
    }

    private static void describe(ShareGroupDescription d, Map<String, Object> line) {
        line.put("state", d.groupState().toString());
        line.put("groupEpoch", d.groupEpoch());
        line.put("assignmentEpoch", d.targetAssignmentEpoch());
        List<Map<String, Object>> members = new ArrayList<>();
        for (ShareMemberDescription m : d.members()) {
            Map<String, Object> member = new HashMap<>();
            member.put("memberId", m.consumerId());
            member.put("clientId", m.clientId());
            member.put("host", m.host());
            member.put("memberEpoch", m.memberEpoch());
            List<List<Object>> parts = new ArrayList<>();
            for (TopicPartition tp : m.assignment().topicPartitions()) {
                parts.add(List.of(tp.topic(), tp.partition()));
            }
            member.put("assignment", parts);
            members.add(member);
        }
        line.put("members", members);
    }

    static int offsets(Args args) throws InterruptedException {
        String group = args.get("group");
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin
                    .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                    .partitionsToOffsetInfo(group).get(TIMEOUT_S, TimeUnit.SECONDS);
            for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : offsets.entrySet()) {
                Map<String, Object> line = new HashMap<>();
                line.put("event", "share-offset");
                line.put("topic", e.getKey().topic());
                line.put("partition", e.getKey().partition());
                // A partition the group has no state for comes back as null.
                SharePartitionOffsetInfo info = e.getValue();
                line.put("startOffset", info == null ? null : info.startOffset());
                line.put("lag", info == null ? null : info.lag().orElse(null));
                Json.emit(line);
            }
        } catch (ExecutionException | TimeoutException e) {
            Json.emit(Map.of("event", "share-offset", "error", GroupAdmin.errorName(e)));
        }
        return 0;
    }

    static int alterOffsets(Args args) throws InterruptedException {
        String topic = args.get("topic");
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (String po : Harness.splitCsv(args.get("offsets"))) {
            String[] parts = po.split(":");
            offsets.put(new TopicPartition(topic, Integer.parseInt(parts[0])), Long.parseLong(parts[1]));
        }
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            AlterShareGroupOffsetsResult result = admin.alterShareGroupOffsets(args.get("group"), offsets);
            for (TopicPartition tp : offsets.keySet()) {
                Map<String, Object> line = new HashMap<>();
                line.put("event", "share-offset-altered");
                line.put("partition", tp.partition());
                line.put("error", GroupAdmin.outcome(result.partitionResult(tp)));
                Json.emit(line);
            }
        }
        return 0;
    }

    static int deleteOffsets(Args args) throws InterruptedException {
        Set<String> topics = new HashSet<>(Harness.splitCsv(args.get("topics")));
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            DeleteShareGroupOffsetsResult result = admin.deleteShareGroupOffsets(args.get("group"), topics);
            for (String topic : topics) {
                Map<String, Object> line = new HashMap<>();
                line.put("event", "share-offsets-deleted");
                line.put("topic", topic);
                line.put("error", GroupAdmin.outcome(result.topicResult(topic)));
                Json.emit(line);
            }
        }
        return 0;
    }

    static int deleteGroups(Args args) throws InterruptedException {
        List<String> groups = Harness.splitCsv(args.get("groups"));
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            Map<String, KafkaFuture<Void>> futures = admin.deleteShareGroups(groups).deletedGroups();
            for (String group : groups) {
                Map<String, Object> line = new HashMap<>();
                line.put("event", "group-deleted");
                line.put("groupId", group);
                line.put("error", GroupAdmin.outcome(futures.get(group)));
                Json.emit(line);
            }
        }
        return 0;
    }
}
