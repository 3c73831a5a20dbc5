import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * {@code share-consume --topic T --group G --dir D [--limit N] [--timeout-ms MS]}: a
 * {@link KafkaShareConsumer} that acknowledges explicitly ({@link ShareAcks} says how each
 * client is put in that mode).
 *
 * <p>Record values are decimal ids. The delivery number of a record is counted across
 * processes with marker files {@code D/d-<id>-<k>} (created atomically; a record is never held
 * by two consumers at once, which is what the test checks). The action by id: {@code id % 10
 * == 1} release on the first delivery then accept; {@code 2} reject; {@code 3} always release
 * (so it is archived at the delivery limit N); else accept. A record is finished when accepted,
 * rejected or released for the N-th time, marked by {@code D/done-<id>}. The mode stops when
 * the file {@code D/stop} appears or after the timeout. Prints a {@code "share-record"} line per
 * delivery: id, partition, offset, kind, count, received/sent epoch microseconds, and a
 * {@code "share-commit-error"} line for every partition whose commitSync result is an error.
 */
final class ShareConsumeMode {
    /**
     * The first poll waits for the assignment: a share group is assigned its partitions at
     * the heartbeat after their share state is initialized, one heartbeat interval (5 s)
     * after the join, so a 3.9 consumer (replaced when its first poll is empty) must wait
     * longer than that, or it would be replaced just as its records arrive.
     */
    private static final long FIRST_POLL_MS = 12_000;

    private ShareConsumeMode() {
    }

    static int run(Args args) throws IOException {
        Map<String, Object> defaults = new HashMap<>();
        defaults.put("group.id", args.get("group"));
        defaults.put("key.deserializer", ByteArrayDeserializer.class.getName());
        defaults.put("value.deserializer", ByteArrayDeserializer.class.getName());
        ShareAcks.configureExplicit(defaults);
        File dir = new File(args.get("dir"));
        int limit = Integer.parseInt(args.get("limit", "3"));
        long deadline = System.currentTimeMillis() + args.getLong("timeout-ms", 120_000L);
        File stop = new File(dir, "stop");
        while (!stop.exists() && System.currentTimeMillis() < deadline) {
            try (KafkaShareConsumer<byte[], byte[]> consumer =
                         new KafkaShareConsumer<>(args.clientProps(defaults))) {
                consumer.subscribe(List.of(args.get("topic")));
                boolean first = true;
                while (!stop.exists() && System.currentTimeMillis() < deadline) {
                    ConsumerRecords<byte[], byte[]> records =
                            consumer.poll(Duration.ofMillis(first ? FIRST_POLL_MS : 500));
                    if (records.isEmpty()) {
                        if (first && ShareAcks.MODE_SET_BY_FIRST_POLLS) {
                            break;
                        }
                        continue;
                    }
                    first = false;
                    long received = micros();
                    for (ConsumerRecord<byte[], byte[]> record : records) {
                        handle(consumer, record, dir, limit, received);
                    }
                    reportCommit(consumer.commitSync(Duration.ofSeconds(30)));
                }
            }
        }
        return 0;
    }

    private static void reportCommit(Map<TopicIdPartition, Optional<KafkaException>> results) {
        for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : results.entrySet()) {
            // The 3.9 client maps a successful partition to null rather than an empty Optional.
            if (e.getValue() != null && e.getValue().isPresent()) {
                Json.emit(Map.of("event", "share-commit-error", "partition", e.getKey().partition(),
                        "error", Harness.describe(e.getValue().get())));
            }
        }
    }

    private static void handle(KafkaShareConsumer<byte[], byte[]> consumer,
                               ConsumerRecord<byte[], byte[]> record, File dir, int limit,
                               long received) throws IOException {
        int id = Integer.parseInt(new String(record.value(), StandardCharsets.UTF_8));
        int count = 1;
        while (!new File(dir, "d-" + id + "-" + count).createNewFile()) {
            count++;
        }
        AcknowledgeType kind = decide(id, count);
        consumer.acknowledge(record, kind);
        boolean finished = kind != AcknowledgeType.RELEASE || count >= limit;
        if (finished) {
            new File(dir, "done-" + id).createNewFile();
        }
        Json.emit(Map.of("event", "share-record", "id", id, "partition", record.partition(),
                "offset", record.offset(), "kind", kind.name(), "count", count,
                "received", received, "sent", micros()));
    }

    static AcknowledgeType decide(int id, int count) {
        return switch (id % 10) {
            case 1 -> count == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
            case 2 -> AcknowledgeType.REJECT;
            case 3 -> AcknowledgeType.RELEASE;
            default -> AcknowledgeType.ACCEPT;
        };
    }

    private static long micros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }
}
