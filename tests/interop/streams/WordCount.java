// A Kafka Streams word count for the streams-group interop test: lines from the input
// topic are split into words, re-keyed by word (a repartition topic) and counted in a
// state store (a changelog topic); counts go to the output topic. It joins its group with
// group.protocol=streams and prints JSON lines: every state change, and its tasks whenever
// they change. It runs until its standard input closes, then closes cleanly.
//
// Arguments: bootstrap application-id input output state-dir processing-guarantee [threads]

import java.io.IOException;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public final class WordCount {
    private WordCount() {
    }

    private static void emit(String json) {
        synchronized (System.out) {
            System.out.println(json);
            System.out.flush();
        }
    }

    private static String tasks(KafkaStreams streams) {
        TreeSet<String> active = new TreeSet<>();
        TreeSet<String> standby = new TreeSet<>();
        for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
            for (TaskMetadata task : thread.activeTasks()) {
                active.add(task.taskId().toString());
            }
            for (TaskMetadata task : thread.standbyTasks()) {
                standby.add(task.taskId().toString());
            }
        }
        return "{\"event\":\"tasks\",\"active\":" + list(active) + ",\"standby\":" + list(standby) + "}";
    }

    private static String list(TreeSet<String> items) {
        StringBuilder out = new StringBuilder("[");
        for (String item : items) {
            if (out.length() > 1) {
                out.append(',');
            }
            out.append('"').append(item).append('"');
        }
        return out.append(']').toString();
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[5]);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, args.length > 6 ? args[6] : "1");
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> lines = builder.stream(args[2]);
        lines.flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.as("words"))
            .count(Materialized.as("counts"))
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        AtomicReference<String> lastTasks = new AtomicReference<>("");
        // The listener runs on Kafka Streams' close thread: main waits for its NOT_RUNNING
        // before exiting, or the JVM can end before that line is written (seen under load).
        CountDownLatch notRunning = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            emit("{\"event\":\"state\",\"state\":\"" + now + "\",\"from\":\"" + before + "\"}");
            if (now == KafkaStreams.State.NOT_RUNNING) {
                notRunning.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(exception -> {
            emit("{\"event\":\"error\",\"message\":\"" + String.valueOf(exception)
                .replace("\\", "\\\\").replace("\"", "'") + "\"}");
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        Thread watcher = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                String now = tasks(streams);
                if (!now.equals(lastTasks.getAndSet(now))) {
                    emit(now);
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        watcher.setDaemon(true);
        watcher.start();
        while (System.in.read() != -1) {
            // Wait for the test to close standard input.
        }
        watcher.interrupt();
        streams.close();
        notRunning.await(30, TimeUnit.SECONDS);
        emit("{\"event\":\"closed\"}");
    }
}
