import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Admin modes.
 *
 * <p>{@code create-topic --topic T --partitions N}: prints {@code "created"} or {@code "error"}.
 *
 * <p>{@code group-offsets --group G}: prints one {@code "offset"} line per committed partition.
 */
final class AdminModes {
    private AdminModes() {
    }

    static int createTopic(Args args) throws InterruptedException {
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            NewTopic topic = new NewTopic(args.get("topic"), args.getInt("partitions"), (short) 1);
            admin.createTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
            Json.emit(Map.of("event", "created", "topic", topic.name()));
            return 0;
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
            Json.emit(Map.of("event", "error", "message", Harness.describe(e)));
            return 1;
        }
    }

    static int groupOffsets(Args args) throws InterruptedException {
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin
                    .listConsumerGroupOffsets(args.get("group"))
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                Map<String, Object> line = new TreeMap<>();
                line.put("event", "offset");
                line.put("topic", e.getKey().topic());
                line.put("partition", e.getKey().partition());
                line.put("offset", e.getValue() == null ? null : e.getValue().offset());
                Json.emit(line);
            }
            return 0;
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
            Json.emit(Map.of("event", "error", "message", Harness.describe(e)));
            return 1;
        }
    }
}
