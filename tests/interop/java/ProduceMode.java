import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * {@code produce --topic T --count N --base-ts MS [--compression none|gzip|snappy|lz4|zstd]
 * [--print-acks true] [--prop k=v ...]}: sends the workload with the producer's defaults
 * (so idempotence is on, acks=all) and waits for every acknowledgement.
 */
final class ProduceMode {
    private ProduceMode() {
    }

    static int run(Args args) {
        String topic = args.get("topic");
        int count = args.getInt("count");
        boolean printAcks = Boolean.parseBoolean(args.get("print-acks", "false"));
        Workload workload = new Workload(topic, args.getLong("base-ts", System.currentTimeMillis()));
        Map<String, Object> defaults = Map.of(
                "key.serializer", ByteArraySerializer.class.getName(),
                "value.serializer", ByteArraySerializer.class.getName(),
                "compression.type", args.get("compression", "none"));
        AtomicInteger acked = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicReference<String> firstError = new AtomicReference<>();
        Map<Integer, Integer> perPartition = new TreeMap<>();
        long started = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(args.clientProps(defaults))) {
            // A failure usually means every later send fails the same way: stop early.
            for (int i = 0; i < count && failed.get() == 0; i++) {
                final int seq = i;
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, null,
                        workload.timestamp(i), workload.key(i), workload.value(i), workload.headers(i));
                producer.send(record, (meta, error) -> {
                    if (error != null) {
                        failed.incrementAndGet();
                        firstError.compareAndSet(null, Harness.describe(error));
                        return;
                    }
                    acked.incrementAndGet();
                    synchronized (perPartition) {
                        perPartition.merge(meta.partition(), 1, Integer::sum);
                    }
                    if (printAcks) {
                        Json.emit(Map.of("event", "ack", "seq", seq,
                                "partition", meta.partition(), "offset", meta.offset()));
                    }
                });
            }
            producer.flush();
        }
        Map<String, Object> summary = new TreeMap<>();
        summary.put("event", "produced");
        summary.put("acked", acked.get());
        summary.put("failed", failed.get());
        summary.put("firstError", firstError.get());
        summary.put("perPartition", perPartition);
        summary.put("seconds", (System.nanoTime() - started) / 1e9);
        Json.emit(summary);
        return failed.get() == 0 && acked.get() == count ? 0 : 1;
    }
}
