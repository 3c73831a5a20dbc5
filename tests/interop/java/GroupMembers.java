import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * {@code group-members --topic T --group G [--group-protocol classic|consumer] [--assignor NAME]
 * [--prop k=v ...]}: several
 * consumer-group members in one JVM, each a KafkaConsumer on its own thread, controlled over
 * stdin. Same protocol as tests/helpers/member_host.py, so one Python driver serves every
 * client.
 *
 * <p>stdin: {@code start IDX [INSTANCE_ID]} starts member IDX (client.id {@code mIDX});
 * {@code leave IDX} closes it (a dynamic member sends LeaveGroup; a static one does not, as
 * the client does); {@code exit} closes every member and ends the JVM.
 *
 * <p>stdout: JSON lines with {@code ev}, {@code m} and {@code t} (wall-clock ms): assigned/revoked/lost ({@code parts}),
 * records ({@code recs}: [partition, offset] pairs of one processed poll), committed
 * ({@code offsets}), commit_failed ({@code error}), closed, error ({@code message}). Each
 * member commits synchronously after processing every non-empty poll. {@code --assignor} is a
 * classic strategy short name or, with the consumer protocol, a server-side assignor name.
 */
final class GroupMembers {
    private static final Map<String, String> ASSIGNORS = Map.of(
            "range", "RangeAssignor",
            "roundrobin", "RoundRobinAssignor",
            "sticky", "StickyAssignor",
            "cooperative-sticky", "CooperativeStickyAssignor");

    private GroupMembers() {
    }

    static int run(Args args) throws IOException, InterruptedException {
        Map<Integer, Member> members = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split("\\s+");
            if (cmd[0].equals("start")) {
                int idx = Integer.parseInt(cmd[1]);
                Member m = new Member(args, idx, cmd.length > 2 ? cmd[2] : "");
                members.put(idx, m);
                m.start();
            } else if (cmd[0].equals("leave")) {
                members.get(Integer.parseInt(cmd[1])).stopping = true;
            } else if (cmd[0].equals("exit")) {
                break;
            }
        }
        for (Member m : members.values()) {
            m.stopping = true;
        }
        for (Member m : members.values()) {
            m.join(30_000);
        }
        return 0;
    }

    static void emit(int idx, String ev, String field, Object value) {
        Map<String, Object> line = new HashMap<>();
        line.put("ev", ev);
        line.put("m", idx);
        line.put("t", System.currentTimeMillis());
        if (field != null) {
            line.put(field, value);
        }
        Json.emit(line);
        Json.flush();
    }

    /** One consumer and its poll-process-commit loop. */
    private static final class Member extends Thread {
        private final Args args;
        private final int idx;
        private final String instanceId;
        volatile boolean stopping;
        // Processed offsets whose commit failed (the client refuses commits mid-rebalance);
        // committed when their partitions are revoked, as applications do.
        private final Map<TopicPartition, OffsetAndMetadata> uncommitted = new HashMap<>();
        private KafkaConsumer<byte[], byte[]> consumer;

        Member(Args args, int idx, String instanceId) {
            super("member-" + idx);
            this.args = args;
            this.idx = idx;
            this.instanceId = instanceId;
        }

        @Override
        public void run() {
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(args.clientProps(props()))) {
                consumer = c;
                c.subscribe(List.of(args.get("topic")), new Listener(this));
                while (!stopping) {
                    pollOnce();
                }
            } catch (RuntimeException e) {
                emit(idx, "error", "message", Harness.describe(e));
            }
            emit(idx, "closed", null, null);
        }

        private Map<String, Object> props() {
            Map<String, Object> p = new HashMap<>();
            p.put("key.deserializer", ByteArrayDeserializer.class.getName());
            p.put("value.deserializer", ByteArrayDeserializer.class.getName());
            p.put("enable.auto.commit", "false");
            p.put("auto.offset.reset", "earliest");
            p.put("group.id", args.get("group"));
            p.put("client.id", "m" + idx);
            if (!instanceId.isEmpty()) {
                p.put("group.instance.id", instanceId);
            }
            String assignor = args.get("assignor", "");
            if (args.get("group-protocol", "classic").equals("consumer")) {
                // The broker owns timeouts and assignment: the 4.x client rejects the classic
                // settings with group.protocol=consumer.
                p.put("group.protocol", "consumer");
                if (!assignor.isEmpty()) {
                    p.put("group.remote.assignor", assignor);
                }
                return p;
            }
            p.put("session.timeout.ms", "6000");
            p.put("heartbeat.interval.ms", "500");
            if (!assignor.isEmpty()) {
                p.put("partition.assignment.strategy", "org.apache.kafka.clients.consumer."
                        + ASSIGNORS.getOrDefault(assignor, assignor));
            }
            return p;
        }

        private void pollOnce() {
            ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
            if (records.isEmpty()) {
                return;
            }
            List<List<Object>> recs = new ArrayList<>();
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            for (ConsumerRecord<byte[], byte[]> r : records) {
                recs.add(List.of(r.partition(), r.offset()));
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                commit.put(tp, new OffsetAndMetadata(r.offset() + 1));
            }
            emit(idx, "records", "recs", recs);
            commit(commit);
        }

        private void commit(Map<TopicPartition, OffsetAndMetadata> offsets) {
            Map<String, Object> shown = new TreeMap<>();
            offsets.forEach((tp, om) -> shown.put(Integer.toString(tp.partition()), om.offset()));
            try {
                consumer.commitSync(offsets);
                offsets.keySet().forEach(uncommitted::remove);
                emit(idx, "committed", "offsets", shown);
            } catch (RuntimeException e) {
                uncommitted.putAll(offsets);
                emit(idx, "commit_failed", "error", Harness.describe(e));
            }
        }

        void commitRevoked(Collection<TopicPartition> revoked) {
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (TopicPartition tp : revoked) {
                OffsetAndMetadata om = uncommitted.remove(tp);
                if (om != null) {
                    offsets.put(tp, om);
                }
            }
            if (!offsets.isEmpty()) {
                commit(offsets);
            }
        }
    }

    /** Reports rebalance callbacks; partitions only (the members share one topic). */
    private static final class Listener implements ConsumerRebalanceListener {
        private final Member member;
        private final int idx;

        Listener(Member member) {
            this.member = member;
            this.idx = member.idx;
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            Map<String, Object> line = new HashMap<>();
            line.put("ev", "assigned");
            line.put("m", idx);
            line.put("t", System.currentTimeMillis());
            line.put("parts", numbers(partitions));
            line.put("generation", member.consumer.groupMetadata().generationId());
            Json.emit(line);
            Json.flush();
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            emit(idx, "revoked", "parts", numbers(partitions));
            member.commitRevoked(partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            emit(idx, "lost", "parts", numbers(partitions));
        }

        private static List<Integer> numbers(Collection<TopicPartition> partitions) {
            List<Integer> out = new ArrayList<>();
            for (TopicPartition tp : partitions) {
                out.add(tp.partition());
            }
            return out;
        }
    }
}
