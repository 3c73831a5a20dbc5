import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A Kafka 4.4 client's connections after bootstrap: the admin client's connection to the
 * broker by node id and the consumer's connection to its group coordinator. With the
 * default metadata.cluster.check.enable=true, each opens with ApiVersions v5 naming the
 * cluster id and node id the client learnt from metadata (KIP-1242). Prints the cluster id.
 * Usage: ClusterCheckClient <bootstrap> <topic> <group>
 */
public final class ClusterCheckClient {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        try (Admin admin = Admin.create(props)) {
            System.out.println("cluster " + admin.describeCluster().clusterId().get());
            admin.createTopics(List.of(new NewTopic(args[1], 1, (short) 1))).all().get();
            admin.listTopics().names().get();
        }
        props.put("group.id", args[2]);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(args[1]));
            long deadline = System.currentTimeMillis() + 60_000;
            while (consumer.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(200));
            }
            System.out.println("assigned " + consumer.assignment());
        }
    }
}
