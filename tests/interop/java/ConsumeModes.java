import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Consumer modes. Both print one {@code "record"} line per record read and a final
 * {@code "consumed"} summary.
 *
 * <p>{@code consume-assign --topic T --count N [--timeout-ms MS]}: no group at all.
 *
 * <p>{@code consume-group --topic T[,T2] --count N --group G [--group-protocol classic|consumer]
 * [--assignor NAME] [--instance-id ID] [--commit sync|async|none] [--timeout-ms MS]}: subscribe;
 * prints {@code "assigned"}, {@code "revoked"} and {@code "lost"} events from the rebalance
 * listener and commits after each non-empty poll. {@code --assignor} is a classic
 * partition.assignment.strategy short name (range, roundrobin, sticky, cooperative-sticky) or,
 * with the consumer protocol, a group.remote.assignor name (uniform, range).
 *
 * <p>{@code consume-from --topic T --partition P --offset O --count N [--timeout-ms MS]}: no
 * group; assign one partition, seek to O and read until N records, the timeout, or the first
 * exception from {@code poll}, which is printed as an {@code "error"} event with the consumer's
 * position at that moment (then the run ends, as an application that does not seek past it);
 * a final {@code "closed"} event says how long {@code close()} took.
 */
final class ConsumeModes {
    private static final Map<String, String> CLASSIC_ASSIGNORS = Map.of(
            "range", "org.apache.kafka.clients.consumer.RangeAssignor",
            "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
            "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

    private ConsumeModes() {
    }

    static int assign(Args args) {
        Map<String, Object> defaults = baseProps();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(args.clientProps(defaults))) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(args.get("topic"), Duration.ofSeconds(30))) {
                partitions.add(new TopicPartition(info.topic(), info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            return readUntil(consumer, args, "none");
        }
    }

    static int from(Args args) {
        TopicPartition tp = new TopicPartition(args.get("topic"), args.getInt("partition"));
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(args.clientProps(baseProps()));
        try {
            consumer.assign(List.of(tp));
            consumer.seek(tp, args.getLong("offset", 0));
            int count = args.getInt("count");
            long deadline = System.currentTimeMillis() + args.getLong("timeout-ms", 60_000);
            int read = 0;
            while (read < count && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(500));
                } catch (RuntimeException e) {
                    Map<String, Object> line = new HashMap<>();
                    line.put("event", "error");
                    line.put("class", e.getClass().getName());
                    line.put("message", String.valueOf(e.getMessage()));
                    Throwable cause = e.getCause();
                    line.put("cause", cause == null ? "" : cause.getClass().getName());
                    line.put("causeMessage", cause == null ? "" : String.valueOf(cause.getMessage()));
                    line.put("position", consumer.position(tp));
                    Json.emit(line);
                    break;
                }
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    emitRecord(r);
                    read++;
                }
            }
            Json.emit(Map.of("event", "consumed", "count", read));
            return read >= count ? 0 : 2;
        } finally {
            long started = System.nanoTime();
            consumer.close();
            Json.emit(Map.of("event", "closed", "ms", (System.nanoTime() - started) / 1_000_000));
        }
    }

    static int group(Args args) {
        Map<String, Object> defaults = baseProps();
        String protocol = args.get("group-protocol", "classic");
        defaults.put("group.id", args.get("group"));
        defaults.put("group.protocol", protocol);
        String assignor = args.get("assignor", "");
        if (!assignor.isEmpty() && protocol.equals("classic")) {
            defaults.put("partition.assignment.strategy", CLASSIC_ASSIGNORS.getOrDefault(assignor, assignor));
        } else if (!assignor.isEmpty()) {
            defaults.put("group.remote.assignor", assignor);
        }
        String instanceId = args.get("instance-id", "");
        if (!instanceId.isEmpty()) {
            defaults.put("group.instance.id", instanceId);
        }
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(args.clientProps(defaults))) {
            consumer.subscribe(Harness.splitCsv(args.get("topic")), new Listener());
            return readUntil(consumer, args, args.get("commit", "sync"));
        }
    }

    private static Map<String, Object> baseProps() {
        Map<String, Object> p = new HashMap<>();
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        return p;
    }

    private static int readUntil(KafkaConsumer<byte[], byte[]> consumer, Args args, String commit) {
        int count = args.getInt("count");
        long deadline = System.currentTimeMillis() + args.getLong("timeout-ms", 60_000);
        int read = 0;
        while (read < count && System.currentTimeMillis() < deadline) {
            ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
            for (ConsumerRecord<byte[], byte[]> r : records) {
                emitRecord(r);
                read++;
            }
            if (!records.isEmpty() && commit.equals("sync")) {
                consumer.commitSync();
                Json.emit(Map.of("event", "committed", "records", read));
            } else if (!records.isEmpty() && commit.equals("async")) {
                consumer.commitAsync();
            }
        }
        Json.emit(Map.of("event", "consumed", "count", read));
        return read >= count ? 0 : 2;
    }

    private static void emitRecord(ConsumerRecord<byte[], byte[]> r) {
        List<List<Object>> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            headers.add(java.util.Arrays.asList(h.key(), h.value()));
        }
        Map<String, Object> line = new HashMap<>();
        line.put("event", "record");
        line.put("topic", r.topic());
        line.put("partition", r.partition());
        line.put("offset", r.offset());
        line.put("key", r.key());
        line.put("value", r.value());
        line.put("headers", headers);
        line.put("timestamp", r.timestamp());
        line.put("timestampType", r.timestampType().name);
        Json.emit(line);
    }

    /** Reports rebalance callbacks as events so tests can follow assignments. */
    private static final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            Json.emit(Map.of("event", "assigned", "partitions", names(partitions)));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            Json.emit(Map.of("event", "revoked", "partitions", names(partitions)));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            Json.emit(Map.of("event", "lost", "partitions", names(partitions)));
        }

        private static List<String> names(Collection<TopicPartition> partitions) {
            List<String> out = new ArrayList<>();
            for (TopicPartition tp : partitions) {
                out.add(tp.topic() + "-" + tp.partition());
            }
            return out;
        }
    }
}
