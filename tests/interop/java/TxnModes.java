import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Transactional producer modes.
 *
 * <p>{@code txn-produce --topic T --transactional-id ID --plan commit:5,abort:3,open:2}:
 * one transaction per plan step, each sending N records keyed {@code <step>-<i>} with value
 * {@code <outcome>-<step>-<i>} to partition 0, then committing or aborting; {@code open}
 * flushes its records and halts the JVM without ending the transaction (a crashed producer);
 * {@code hold} flushes its records, prints {@code held}, waits for a line on stdin (a test
 * moving the broker's virtual time past the transaction's timeout meanwhile), then tries to
 * commit and prints {@code txn-commit-failed} with the error, or {@code txn} if it committed.
 * Prints {@code txn} per finished step and {@code txn-produced} at the end.
 *
 * <p>{@code ctp --input I --output O --group G --transactional-id ID --count N}: a
 * consume-transform-produce loop: a read_committed group consumer, and per non-empty poll one
 * transaction that writes each record to O (value prefixed {@code out-}) and commits the
 * consumed offsets with {@code sendOffsetsToTransaction}. Prints {@code ctp-done}.
 */
final class TxnModes {
    private TxnModes() {
    }

    private static KafkaProducer<byte[], byte[]> producer(Args args) {
        Map<String, Object> defaults = new HashMap<>();
        defaults.put("key.serializer", ByteArraySerializer.class.getName());
        defaults.put("value.serializer", ByteArraySerializer.class.getName());
        defaults.put("transactional.id", args.get("transactional-id"));
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(args.clientProps(defaults));
        producer.initTransactions();
        return producer;
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    static int produce(Args args) {
        String topic = args.get("topic");
        KafkaProducer<byte[], byte[]> producer = producer(args);
        List<String> plan = Harness.splitCsv(args.get("plan"));
        for (int step = 0; step < plan.size(); step++) {
            String[] parts = plan.get(step).split(":");
            String outcome = parts[0];
            int count = Integer.parseInt(parts[1]);
            producer.beginTransaction();
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, 0, bytes(step + "-" + i),
                        bytes(outcome + "-" + step + "-" + i)));
            }
            producer.flush();
            switch (outcome) {
                case "commit" -> producer.commitTransaction();
                case "abort" -> producer.abortTransaction();
                case "open" -> {
                    Json.emit(Map.of("event", "open", "step", step));
                    Json.flush();
                    // A crash: no abort, no close, the transaction stays open.
                    Runtime.getRuntime().halt(0);
                }
                case "hold" -> {
                    Json.emit(Map.of("event", "held", "step", step));
                    Json.flush();
                    try {
                        new java.io.BufferedReader(new java.io.InputStreamReader(
                                System.in, StandardCharsets.UTF_8)).readLine();
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                    try {
                        producer.commitTransaction();
                    } catch (RuntimeException e) {
                        Json.emit(Map.of("event", "txn-commit-failed", "step", step,
                                "error", Harness.describe(e)));
                        Json.flush();
                        producer.close(Duration.ofSeconds(5));
                        return 0;
                    }
                }
                default -> Harness.usage("unknown outcome " + outcome);
            }
            Json.emit(Map.of("event", "txn", "step", step, "outcome", outcome, "count", count));
        }
        producer.close();
        Json.emit(Map.of("event", "txn-produced", "steps", plan.size()));
        return 0;
    }

    static int consumeTransformProduce(Args args) {
        String output = args.get("output");
        int count = args.getInt("count");
        long deadline = System.currentTimeMillis() + args.getLong("timeout-ms", 60_000);
        Map<String, Object> props = new HashMap<>();
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("group.id", args.get("group"));
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("isolation.level", "read_committed");
        props.put("bootstrap.servers", args.get("bootstrap"));
        int done = 0;
        int transactions = 0;
        try (KafkaProducer<byte[], byte[]> producer = producer(args);
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args.get("input")));
            while (done < count && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    byte[] value = bytes("out-" + new String(r.value(), StandardCharsets.UTF_8));
                    producer.send(new ProducerRecord<>(output, r.partition(), r.key(), value));
                    offsets.put(new TopicPartition(r.topic(), r.partition()),
                            new OffsetAndMetadata(r.offset() + 1));
                    done++;
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
                transactions++;
            }
        }
        Json.emit(Map.of("event", "ctp-done", "count", done, "transactions", transactions));
        return done >= count ? 0 : 2;
    }
}
