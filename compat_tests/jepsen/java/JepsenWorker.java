import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One process of the queue workload (compat_tests/jepsen/workers.py) with kafka-clients: a
 * transactional producer and a consumer, driven one operation at a time.
 *
 * stdin: the first line is the setup {bootstrap, transactional_id, group, isolation, prefix,
 * partitions, producer: {props}, consumer: {props}, poll_ms}; then one operation per line:
 *   {"f": "txn", "value": [["send", k, v] | ["poll"], ...], "abort": bool, "commit_offsets": bool}
 *   {"f": "poll"}   a poll outside any transaction
 *   {"f": "assign", "value": [k...], "seek_to_beginning": bool} | {"f": "subscribe", "value": [k...]}
 *   {"f": "reset"}  close both clients; the next operation opens new ones
 *   {"f": "close"}
 * stdout: one JSON line per operation: {"type": ok|fail|info, "value": ..., "error": ...,
 * "rebalance_log": [{"keys": [...]}]}. A transaction is "fail" when commitTransaction was never
 * called (so it cannot have committed) and "info" when commitTransaction threw.
 * Key k is partition k % partitions of topic prefix-(k / partitions).
 */
public final class JepsenWorker {
    private final Map<String, Object> setup;
    private final int partitions;
    private final String prefix;
    private KafkaProducer<byte[], byte[]> producer;
    private KafkaConsumer<byte[], byte[]> consumer;
    private boolean subscribed;
    private final List<Object> rebalanceLog = new ArrayList<>();

    private JepsenWorker(Map<String, Object> setup) {
        this.setup = setup;
        this.partitions = ((Number) setup.get("partitions")).intValue();
        this.prefix = (String) setup.get("prefix");
    }

    private TopicPartition tp(long key) {
        return new TopicPartition(prefix + "-" + (key / partitions), (int) (key % partitions));
    }

    private long key(String topic, int partition) {
        return Long.parseLong(topic.substring(prefix.length() + 1)) * partitions + partition;
    }

    private Properties props(String which) {
        Properties p = new Properties();
        p.put("bootstrap.servers", setup.get("bootstrap"));
        Object cfg = setup.get(which);
        if (cfg != null) {
            for (Map.Entry<String, Object> e : Json.obj(cfg).entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
        }
        return p;
    }

    private KafkaProducer<byte[], byte[]> producer() {
        if (producer == null) {
            Properties p = props("producer");
            p.put("transactional.id", setup.get("transactional_id"));
            KafkaProducer<byte[], byte[]> made = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
            try {
                made.initTransactions();
            } catch (RuntimeException e) {
                made.close(Duration.ZERO);
                throw e;
            }
            producer = made;
        }
        return producer;
    }

    private KafkaConsumer<byte[], byte[]> consumer() {
        if (consumer == null) {
            Properties p = props("consumer");
            p.put("group.id", setup.get("group"));
            p.put("isolation.level", setup.get("isolation"));
            p.put("enable.auto.commit", "false");
            p.put("auto.offset.reset", "earliest");
            consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }
        return consumer;
    }

    private void logKeys(Collection<TopicPartition> tps, String why) {
        if (tps.isEmpty()) return;
        List<Object> keys = new ArrayList<>();
        for (TopicPartition t : tps) keys.add(key(t.topic(), t.partition()));
        rebalanceLog.add(Json.map("keys", keys, "event", why));
    }

    private final ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
        @Override public void onPartitionsRevoked(Collection<TopicPartition> tps) { logKeys(tps, "revoked"); }
        @Override public void onPartitionsAssigned(Collection<TopicPartition> tps) { logKeys(tps, "assigned"); }
        @Override public void onPartitionsLost(Collection<TopicPartition> tps) { logKeys(tps, "lost"); }
    };

    private Map<String, Object> poll() {
        Map<Long, List<Object>> out = new TreeMap<>();
        long ms = ((Number) setup.getOrDefault("poll_ms", 200L)).longValue();
        for (ConsumerRecord<byte[], byte[]> r : consumer().poll(Duration.ofMillis(ms))) {
            long v = Long.parseLong(new String(r.value(), StandardCharsets.UTF_8));
            out.computeIfAbsent(key(r.topic(), r.partition()), k -> new ArrayList<>()).add(List.of(r.offset(), v));
        }
        Map<String, Object> json = new LinkedHashMap<>();
        for (Map.Entry<Long, List<Object>> e : out.entrySet()) json.put(String.valueOf(e.getKey()), e.getValue());
        return json;
    }

    private Map<String, Object> txn(Map<String, Object> op) {
        List<Object> done = new ArrayList<>();
        boolean abort = Boolean.TRUE.equals(op.get("abort"));
        boolean commitOffsets = Boolean.TRUE.equals(op.get("commit_offsets"));
        try {
            KafkaProducer<byte[], byte[]> p = producer();
            p.beginTransaction();
            for (Object m : Json.list(op.get("value"))) {
                List<Object> mop = Json.list(m);
                if ("send".equals(mop.get(0))) {
                    long k = ((Number) mop.get(1)).longValue();
                    long v = ((Number) mop.get(2)).longValue();
                    TopicPartition t = tp(k);
                    RecordMetadata md = p.send(new ProducerRecord<>(t.topic(), t.partition(), null,
                            String.valueOf(v).getBytes(StandardCharsets.UTF_8))).get();
                    done.add(List.of("send", k, List.of(md.offset(), v)));
                } else {
                    done.add(List.of("poll", poll()));
                }
            }
            if (commitOffsets && subscribed && !consumer().assignment().isEmpty()) {
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (TopicPartition t : consumer().assignment()) offsets.put(t, new OffsetAndMetadata(consumer().position(t)));
                p.sendOffsetsToTransaction(offsets, consumer().groupMetadata());
            }
        } catch (Throwable t) {
            abortQuietly();
            return result("fail", done, t);
        }
        if (abort) {
            try {
                producer.abortTransaction();
                return result("ok", done, null);
            } catch (Throwable t) {
                return result("fail", done, t);
            }
        }
        try {
            producer.commitTransaction();
            return result("ok", done, null);
        } catch (Throwable t) {
            return result("info", done, t);
        }
    }

    private void abortQuietly() {
        try {
            if (producer != null) producer.abortTransaction();
        } catch (Throwable ignored) {
            // the next operation starts from new clients: the runner resets a failed process
        }
    }

    private Map<String, Object> result(String type, Object value, Throwable t) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("type", type);
        r.put("value", value);
        if (t != null) {
            Throwable root = KafkaDriver.root(t);
            r.put("error", root.getClass().getSimpleName() + ": " + root.getMessage());
        }
        return r;
    }

    private Map<String, Object> handle(Map<String, Object> op) {
        String f = (String) op.get("f");
        switch (f) {
            case "txn":
                return txn(op);
            case "poll":
                try {
                    Map<String, Object> polled = poll();
                    if (subscribed) consumer().commitSync();
                    return result("ok", List.of(List.of("poll", polled)), null);
                } catch (Throwable t) {
                    return result("fail", List.of(List.of("poll")), t);
                }
            case "assign": {
                Set<TopicPartition> tps = new LinkedHashSet<>();
                for (Object k : Json.list(op.get("value"))) tps.add(tp(((Number) k).longValue()));
                try {
                    if (subscribed) {
                        consumer().unsubscribe();
                        subscribed = false;
                    }
                    consumer().assign(tps);
                    if (Boolean.TRUE.equals(op.get("seek_to_beginning"))) consumer().seekToBeginning(tps);
                    return result("ok", op.get("value"), null);
                } catch (Throwable t) {
                    return result("fail", op.get("value"), t);
                }
            }
            case "subscribe": {
                Set<String> topics = new LinkedHashSet<>();
                for (Object k : Json.list(op.get("value"))) topics.add(tp(((Number) k).longValue()).topic());
                try {
                    if (!subscribed && !consumer().assignment().isEmpty()) {
                        logKeys(consumer().assignment(), "unassigned");
                        consumer().unsubscribe();
                    }
                    consumer().subscribe(topics, listener);
                    subscribed = true;
                    return result("ok", op.get("value"), null);
                } catch (Throwable t) {
                    return result("fail", op.get("value"), t);
                }
            }
            case "reset":
                if (producer != null) producer.close(Duration.ZERO);
                if (consumer != null) consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ZERO));
                producer = null;
                consumer = null;
                subscribed = false;
                return result("ok", null, null);
            default:
                throw new IllegalArgumentException("unknown operation " + f);
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        JepsenWorker w = new JepsenWorker(Json.obj(Json.parse(in.readLine())));
        KafkaDriver.emit(Json.map("ready", true));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, Object> op = Json.obj(Json.parse(line));
            if ("close".equals(op.get("f"))) break;
            w.rebalanceLog.clear();
            Map<String, Object> r;
            try {
                r = w.handle(op);
            } catch (Throwable t) {
                r = w.result("info", null, t);
            }
            if (!w.rebalanceLog.isEmpty()) r.put("rebalance_log", new ArrayList<>(w.rebalanceLog));
            KafkaDriver.emit(r);
        }
        try {
            if (w.producer != null) w.producer.close(Duration.ofSeconds(2));
            if (w.consumer != null) w.consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(2)));
        } finally {
            Runtime.getRuntime().halt(0);
        }
    }
}
