import java.util.List;
import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import java.util.Properties;

/**
 * Command-line driver that runs the real Kafka Java client against a broker for the Python
 * interop tests. The sources in this directory compile against every client the tests use
 * (4.4 for the matrix, 3.9 for the share consumer's v0 RPCs); {@code kafka3/} and
 * {@code kafka4/} hold what differs, chiefly {@link ClientModes}: the modes only that client
 * has.
 *
 * <p>Usage: {@code Harness <mode> --bootstrap HOST:PORT [--option value ...]}. Every line on
 * stdout is one JSON object with an {@code "event"} field; stderr carries the client's own
 * logging. The exit code is 0 when the mode did what it was asked, 1 when the client reported
 * errors, 2 when it timed out, 64 on bad usage.
 *
 * <p>Modes (see tests/interop/README.md for the options of each):
 * <ul>
 *   <li>{@code create-topic}: Admin.createTopics.</li>
 *   <li>{@code produce}: the deterministic workload of {@link Workload}, default producer
 *       settings (idempotence on) plus the chosen compression.</li>
 *   <li>{@code consume-assign}: assign all partitions, seek to beginning, read N records.</li>
 *   <li>{@code consume-from}: assign one partition, seek to an offset, read until N records
 *   or the first error, which is reported.</li>
 *   <li>{@code consume-group}: subscribe in a group (classic or consumer protocol), report
 *       assignments, commit, read N records.</li>
 *   <li>{@code group-offsets}: Admin.listConsumerGroupOffsets.</li>
 *   <li>{@code share-consume}: a KafkaShareConsumer acknowledging explicitly
 *       ({@link ShareConsumeMode}).</li>
 *   <li>{@code print-workload}: the workload's records without any broker, so tests can
 *       check that Java and Python generate the same bytes.</li>
 *   <li>{@code client-version}: the version of the kafka-clients jar on the classpath.</li>
 *   <li>group and share-group admin modes of the 4.x client ({@link ClientModes}).</li>
 * </ul>
 */
public final class Harness {
    private Harness() {
    }

    public static void main(String[] argv) {
        if (argv.length < 1) {
            usage("missing mode");
        }
        Args args = Args.parse(argv, 1);
        int code;
        try {
            code = dispatch(argv[0], args);
        } catch (Exception e) {
            // Report client failures as an event too, so tests see them in one place.
            Json.emit(Map.of("event", "error", "message", describe(e)));
            e.printStackTrace();
            code = 1;
        }
        Json.flush();
        // Exit explicitly: client threads that are still winding down must not keep the JVM.
        System.exit(code);
    }

    private static int dispatch(String mode, Args args) throws Exception {
        return switch (mode) {
            case "create-topic" -> AdminModes.createTopic(args);
            case "group-offsets" -> AdminModes.groupOffsets(args);
            case "print-workload" -> Workload.print(args);
            case "client-version" -> {
                Json.emit(Map.of("event", "client-version", "version", clientVersion()));
                yield 0;
            }
            case "produce" -> ProduceMode.run(args);
            case "consume-assign" -> ConsumeModes.assign(args);
            case "consume-group" -> ConsumeModes.group(args);
            case "consume-from" -> ConsumeModes.from(args);
            case "share-consume" -> ShareConsumeMode.run(args);
            case "group-members" -> GroupMembers.run(args);
            case "txn-produce" -> TxnModes.produce(args);
            case "ctp" -> TxnModes.consumeTransformProduce(args);
            case "txn-fence" -> TxnModes.fence(args);
            case "txn-timeout" -> TxnModes.timeout(args);
            default -> {
                Integer code = ClientModes.run(mode, args);
                if (code == null) {
                    usage("unknown mode " + mode + " for client " + clientVersion());
                }
                yield code == null ? 64 : code;
            }
        };
    }

    /** The version kafka-clients records in its jar (the same file in 3.x and 4.x). */
    static String clientVersion() throws IOException {
        Properties info = new Properties();
        try (InputStream in = Harness.class.getClassLoader()
                .getResourceAsStream("kafka/kafka-version.properties")) {
            if (in != null) {
                info.load(in);
            }
        }
        return info.getProperty("version", "unknown");
    }

    static void usage(String problem) {
        Json.emit(Map.of("event", "usage-error", "message", problem));
        Json.flush();
        System.exit(64);
    }

    /** Exception text for JSON output, including the cause chain's first cause. */
    static String describe(Throwable error) {
        Throwable cause = error.getCause();
        String text = error.getClass().getSimpleName() + ": " + error.getMessage();
        return cause == null ? text : text + " (cause " + describe(cause) + ")";
    }

    static List<String> splitCsv(String value) {
        return value.isEmpty() ? List.of() : List.of(value.split(","));
    }
}
