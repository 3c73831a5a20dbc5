import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Collection;
import java.util.Map;

/**
 * Minimal JSON-lines writer for stdout (the client jars ship no JSON library). byte[] values
 * are written as base64 strings so arbitrary keys, values and header values survive.
 */
final class Json {
    private static final BufferedWriter OUT = new BufferedWriter(
            new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);

    private Json() {
    }

    /** Write one object as one line; safe to call from client callback threads. */
    static synchronized void emit(Map<String, ?> object) {
        try {
            OUT.write(value(object));
            OUT.write('\n');
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static synchronized void flush() {
        try {
            OUT.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String value(Object v) {
        if (v == null) {
            return "null";
        } else if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        } else if (v instanceof byte[] bytes) {
            return string(Base64.getEncoder().encodeToString(bytes));
        } else if (v instanceof Map<?, ?> map) {
            StringBuilder sb = new StringBuilder("{");
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (sb.length() > 1) {
                    sb.append(',');
                }
                sb.append(string(e.getKey().toString())).append(':').append(value(e.getValue()));
            }
            return sb.append('}').toString();
        } else if (v instanceof Collection<?> items) {
            StringBuilder sb = new StringBuilder("[");
            for (Object item : items) {
                if (sb.length() > 1) {
                    sb.append(',');
                }
                sb.append(value(item));
            }
            return sb.append(']').toString();
        }
        return string(v.toString());
    }

    static String string(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }
}
