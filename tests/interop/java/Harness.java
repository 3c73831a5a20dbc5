import java.util.List;
import java.util.Map;

/**
 * Command-line driver that runs the real Kafka Java client (3.9.1) against a broker for the
 * Python interop tests.
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
 *   <li>{@code consume-group}: subscribe in a group (classic or consumer protocol), report
 *       assignments, commit, read N records.</li>
 *   <li>{@code group-offsets}: Admin.listConsumerGroupOffsets.</li>
 *   <li>{@code share-consume}: a KafkaShareConsumer acknowledging explicitly
 *       ({@link ShareConsumeMode}).</li>
 *   <li>{@code print-workload}: the workload's records without any broker, so tests can
 *       check that Java and Python generate the same bytes.</li>
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
            case "produce" -> ProduceMode.run(args);
            case "consume-assign" -> ConsumeModes.assign(args);
            case "consume-group" -> ConsumeModes.group(args);
            case "share-consume" -> ShareConsumeMode.run(args);
            case "group-members" -> GroupMembers.run(args);
            case "list-groups" -> GroupAdmin.listGroups(args);
            case "describe-groups" -> GroupAdmin.describeGroups(args);
            case "delete-group-offsets" -> GroupAdmin.deleteGroupOffsets(args);
            case "delete-groups" -> GroupAdmin.deleteGroups(args);
            case "txn-produce" -> TxnModes.produce(args);
            case "ctp" -> TxnModes.consumeTransformProduce(args);
            default -> {
                usage("unknown mode " + mode);
                yield 64;
            }
        };
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
