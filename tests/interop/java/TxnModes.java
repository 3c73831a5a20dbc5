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
 *
 * <p>{@code txn-fence --topic T --transactional-id ID}: a zombie and its successor. Producer A
 * sends {@code zombie-0} and {@code zombie-1} in a transaction and flushes; producer B with the
 * same id runs initTransactions (fencing A); A's commit fails and is reported as
 * {@code fenced} with the exception's simple class name, then A's further send too
 * ({@code zombie-send}); B commits {@code successor-0}. Prints {@code fence-done}.
 *
 * <p>{@code txn-timeout --topic T --transactional-id ID --wait-ms W} (with
 * {@code --prop transaction.timeout.ms=...}): producers ID-commit and ID-abort each send one
 * record in a transaction, flush, and leave it open for W ms, so that the coordinator aborts
 * both; then ID-commit commits ({@code late-commit}) and ID-abort aborts
 * ({@code late-abort}), each reported with the simple class name of what it threw or
 * "none"; ID-abort then commits {@code after-0} in a new transaction ({@code after}).
 */
final class TxnModes {
    private TxnModes() {
    }

    private static KafkaProducer<byte[], byte[]> producer(Args args) {
        return producer(args, args.get("transactional-id"));
    }

    private static KafkaProducer<byte[], byte[]> producer(Args args, String transactionalId) {
        Map<String, Object> defaults = new HashMap<>();
        defaults.put("key.serializer", ByteArraySerializer.class.getName());
        defaults.put("value.serializer", ByteArraySerializer.class.getName());
        defaults.put("transactional.id", transactionalId);
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

    static int fence(Args args) {
        String topic = args.get("topic");
        KafkaProducer<byte[], byte[]> zombie = producer(args);
        zombie.beginTransaction();
        for (int i = 0; i < 2; i++) {
            zombie.send(new ProducerRecord<>(topic, 0, bytes("z" + i), bytes("zombie-" + i)));
        }
        zombie.flush();
        KafkaProducer<byte[], byte[]> successor = producer(args);
        Json.emit(Map.of("event", "fenced", "error", failure(zombie::commitTransaction)));
        Json.emit(Map.of("event", "zombie-send", "error", failure(() -> zombie.send(
                new ProducerRecord<>(topic, 0, bytes("z2"), bytes("zombie-2"))).get())));
        zombie.close(Duration.ZERO);
        successor.beginTransaction();
        successor.send(new ProducerRecord<>(topic, 0, bytes("s0"), bytes("successor-0")));
        successor.commitTransaction();
        successor.close();
        Json.emit(Map.of("event", "fence-done"));
        return 0;
    }

    static int timeout(Args args) throws InterruptedException {
        String topic = args.get("topic");
        String id = args.get("transactional-id");
        KafkaProducer<byte[], byte[]> committer = producer(args, id + "-commit");
        KafkaProducer<byte[], byte[]> aborter = producer(args, id + "-abort");
        for (KafkaProducer<byte[], byte[]> p : List.of(committer, aborter)) {
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, bytes("late"), bytes("timed-out")));
            p.flush();
        }
        Thread.sleep(args.getLong("wait-ms", 15_000));
        Json.emit(Map.of("event", "late-commit", "error", failure(committer::commitTransaction)));
        Json.emit(Map.of("event", "late-abort", "error", failure(aborter::abortTransaction)));
        Json.emit(Map.of("event", "after", "error", failure(() -> {
            aborter.beginTransaction();
            aborter.send(new ProducerRecord<>(topic, 0, bytes("a0"), bytes("after-0"))).get();
            aborter.commitTransaction();
        })));
        committer.close(Duration.ZERO);
        aborter.close(Duration.ZERO);
        return 0;
    }

    /** What {@code action} threw, as the simple class name of the root cause, or "none". */
    private static String failure(Action action) {
        try {
            action.run();
            return "none";
        } catch (Exception e) {
            Throwable cause = e;
            while (cause.getCause() != null) {
                cause = cause.getCause();
            }
            return cause.getClass().getSimpleName();
        }
    }

    @FunctionalInterface
    private interface Action {
        void run() throws Exception;
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
