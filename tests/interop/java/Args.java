import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/** {@code --name value} options; {@code --prop key=value} may repeat and sets client configs. */
final class Args {
    private final Map<String, String> values = new HashMap<>();
    private final List<String> props = new ArrayList<>();

    static Args parse(String[] argv, int start) {
        Args args = new Args();
        for (int i = start; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                Harness.usage("expected --option value at " + argv[i]);
            }
            String name = argv[i].substring(2);
            if (name.equals("prop")) {
                args.props.add(argv[i + 1]);
            } else {
                args.values.put(name, argv[i + 1]);
            }
        }
        return args;
    }

    String get(String name) {
        String value = values.get(name);
        if (value == null) {
            Harness.usage("missing --" + name);
        }
        return value;
    }

    String get(String name, String fallback) {
        return values.getOrDefault(name, fallback);
    }

    int getInt(String name) {
        return Integer.parseInt(get(name));
    }

    long getLong(String name, long fallback) {
        String value = values.get(name);
        return value == null ? fallback : Long.parseLong(value);
    }

    /** bootstrap.servers plus every --prop, on top of the given defaults. */
    Properties clientProps(Map<String, Object> defaults) {
        Properties p = new Properties();
        p.putAll(defaults);
        p.put("bootstrap.servers", get("bootstrap"));
        for (String kv : props) {
            int eq = kv.indexOf('=');
            if (eq < 1) {
                Harness.usage("--prop needs key=value, got " + kv);
            }
            p.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return p;
    }
}
