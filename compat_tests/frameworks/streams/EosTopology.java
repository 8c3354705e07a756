import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * One Kafka Streams instance of an exactly-once (exactly_once_v2) application, run unmodified
 * against the broker under test.
 *
 * Topology: orders (key customer id, value "orderId:amount") joined with the customers table
 * (a state store with its changelog) into the enriched topic; orders re-keyed by the upper-cased
 * customer id (groupBy: a repartition topic) and summed into the totals topic (a state store and
 * changelog), and counted per 10 s window into the windows topic (a windowed store and changelog).
 * Re-keying is one-to-one, so all records of a new key come from one input partition in order and
 * every output record is determined by the input alone: any lost or repeated processing shows.
 *
 * Arguments: key=value pairs; topic.orders, topic.customers, topic.enriched, topic.totals,
 * topic.windows name the topics, every other pair is a Streams configuration. Prints one JSON line
 * per event on stdout: state changes, finished restorations, and "closed" after a clean close
 * (on SIGTERM).
 */
public class EosTopology {
    public static void main(String[] args) throws Exception {
        Map<String, String> topics = new HashMap<>();
        Properties props = new Properties();
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        for (String arg : args) {
            int eq = arg.indexOf('=');
            String k = arg.substring(0, eq), v = arg.substring(eq + 1);
            if (k.startsWith("topic.")) topics.put(k.substring(6), v);
            else props.put(k, v);
        }
        Topology topology = topology(topics);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.setStateListener((next, old) -> emit("{\"event\":\"state\",\"old\":\"" + old + "\",\"new\":\"" + next
                + "\",\"t\":" + System.currentTimeMillis() + "}"));
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                emit("{\"event\":\"restore_start\",\"store\":\"" + store + "\",\"topic\":\"" + tp.topic()
                        + "\",\"partition\":" + tp.partition() + ",\"start\":" + start + ",\"end\":" + end + "}");
            }
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {}
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                emit("{\"event\":\"restored\",\"store\":\"" + store + "\",\"topic\":\"" + tp.topic()
                        + "\",\"partition\":" + tp.partition() + ",\"records\":" + total + "}");
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            emit("{\"event\":\"error\",\"type\":\"" + e.getClass().getName() + "\",\"message\":"
                    + quote(String.valueOf(e.getMessage())) + "}");
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            emit("{\"event\":\"closed\"}");
            closed.countDown();
        }));
        emit("{\"event\":\"topology\",\"description\":" + quote(topology.describe().toString()) + "}");
        exitWhenStdinCloses();
        streams.start();
        closed.await();
    }

    static Topology topology(Map<String, String> topics) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> customers = builder.table(topics.get("customers"),
                Consumed.with(Serdes.String(), Serdes.String()),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("customers-store"));
        KStream<String, String> orders = builder.stream(topics.get("orders"), Consumed.with(Serdes.String(), Serdes.String()));

        // An inner join, written as a left join whose misses are reported (and dropped): every
        // customer is in the table before any order, so a miss means the table was not read first.
        orders.leftJoin(customers, (order, customer) -> customer == null ? null : order + "@" + customer)
              .peek((k, v) -> { if (v == null) emit("{\"event\":\"join_miss\",\"key\":" + quote(k) + "}"); })
              .filter((k, v) -> v != null)
              .to(topics.get("enriched"), Produced.with(Serdes.String(), Serdes.String()));

        KGroupedStream<String, Long> byCustomer = orders
                .mapValues(v -> Long.parseLong(v.substring(v.indexOf(':') + 1)))
                .groupBy((k, v) -> k.toUpperCase(Locale.ROOT), Grouped.with(Serdes.String(), Serdes.Long()));

        byCustomer.reduce(Long::sum, Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("totals-store"))
                  .toStream()
                  .mapValues(v -> Long.toString(v))
                  .to(topics.get("totals"), Produced.with(Serdes.String(), Serdes.String()));

        byCustomer.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofHours(1)))
                  .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("window-counts"))
                  .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
                  .mapValues(v -> Long.toString(v))
                  .to(topics.get("windows"), Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    /** The driving test holds our stdin: if it goes away, so do we (through the shutdown hook). */
    static void exitWhenStdinCloses() {
        Thread t = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (java.io.IOException ignored) {
            }
            System.exit(0);
        }, "stdin-watch");
        t.setDaemon(true);
        t.start();
    }

    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c == '\n') b.append("\\n");
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
