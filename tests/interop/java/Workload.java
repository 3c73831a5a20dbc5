import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * The deterministic keyed workload; must stay byte-identical to tests/helpers/workload.py,
 * which checks what consumers read back.
 */
final class Workload {
    private static final int KEY_SPACE = 997;
    private final String topic;
    private final long baseTs;

    Workload(String topic, long baseTs) {
        this.topic = topic;
        this.baseTs = baseTs;
    }

    byte[] key(int i) {
        return utf8("key-" + (i % KEY_SPACE));
    }

    byte[] value(int i) {
        return utf8(topic + ":" + i + ":" + "abcdefghij".repeat(i % 8));
    }

    List<Header> headers(int i) {
        return List.of(
                new RecordHeader("seq", utf8(Integer.toString(i))),
                new RecordHeader("src", utf8(topic)),
                new RecordHeader("bin", new byte[] {0, (byte) 255, (byte) (i & 0xFF)}));
    }

    long timestamp(int i) {
        return baseTs + i * 7L;
    }

    /** {@code print-workload --topic T --count N --base-ts MS}: one "workload" line per record. */
    static int print(Args args) {
        Workload workload = new Workload(args.get("topic"), args.getLong("base-ts", 0));
        int count = args.getInt("count");
        for (int i = 0; i < count; i++) {
            List<List<Object>> headers = new ArrayList<>();
            for (Header h : workload.headers(i)) {
                headers.add(Arrays.asList(h.key(), h.value()));
            }
            Map<String, Object> line = new TreeMap<>();
            line.put("event", "workload");
            line.put("seq", i);
            line.put("key", workload.key(i));
            line.put("value", workload.value(i));
            line.put("headers", headers);
            line.put("timestamp", workload.timestamp(i));
            Json.emit(line);
        }
        return 0;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
