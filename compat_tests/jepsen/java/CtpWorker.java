import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One worker of the consume-transform-produce workload (compat_tests/jepsen/ctp.py) with
 * kafka-clients: a group member reading the input topic read_committed, writing each record to
 * the same partition of the output topic in a transaction whose offsets go with
 * sendOffsetsToTransaction(offsets, consumer.groupMetadata()) (KIP-447: the group generation
 * fences a zombie's offsets).
 *
 * stdin: the setup {bootstrap, group, input, output, transactional_id, batch, consumer: {props},
 * producer: {props}}, then one "go" line per pause point. stdout, one JSON line each:
 *   {"event": "ready"}
 *   {"event": "open", "txn": n, "records": [[partition, offset, value, output offset], ...]}   then waits for go
 *   {"event": "offsets", "txn": n, "offsets": {partition: offset}}                               then waits for go
 *   {"event": "committed" | "aborted" | "unknown", "txn": n, "error"?: text}
 * A transaction is "aborted" when commitTransaction was never called, "unknown" when it threw.
 * After either, the producer is made anew (initTransactions resolves what was open) and the
 * consumer goes back to the group's committed offsets, so nothing is skipped or done twice.
 */
public final class CtpWorker {
    private final Map<String, Object> setup;
    private final BufferedReader in;
    private final String output;
    private KafkaProducer<byte[], byte[]> producer;
    private final KafkaConsumer<byte[], byte[]> consumer;

    private CtpWorker(Map<String, Object> setup, BufferedReader in) {
        this.setup = setup;
        this.in = in;
        this.output = (String) setup.get("output");
        Properties c = props("consumer");
        c.put("group.id", setup.get("group"));
        c.put("isolation.level", "read_committed");
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("max.poll.records", String.valueOf(setup.get("batch")));
        consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.subscribe(List.of((String) setup.get("input")));
        producer = newProducer();
    }

    private Properties props(String which) {
        Properties p = new Properties();
        p.put("bootstrap.servers", setup.get("bootstrap"));
        for (Map.Entry<String, Object> e : Json.obj(setup.get(which)).entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
        return p;
    }

    private KafkaProducer<byte[], byte[]> newProducer() {
        Properties p = props("producer");
        p.put("transactional.id", setup.get("transactional_id"));
        KafkaProducer<byte[], byte[]> made = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        made.initTransactions();
        return made;
    }

    /** Blocks until the runner says go (it kills the process instead when a kill is due here). */
    private void awaitGo() throws Exception {
        if (in.readLine() == null) Runtime.getRuntime().halt(0);
    }

    /** Back to the group's committed offsets (read with require_stable: a pending transaction's
     * offsets are waited for), so an aborted batch is read again and nothing after it is skipped. */
    private void rewind() {
        var assigned = consumer.assignment();
        if (assigned.isEmpty()) return;
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned);
        List<TopicPartition> none = new ArrayList<>();
        for (TopicPartition tp : assigned) {
            OffsetAndMetadata om = committed.get(tp);
            if (om == null) none.add(tp);
            else consumer.seek(tp, om.offset());
        }
        if (!none.isEmpty()) consumer.seekToBeginning(none);
    }

    private void restartProducer() {
        producer.close(Duration.ZERO);
        producer = newProducer();
    }

    private void step(long n, ConsumerRecords<byte[], byte[]> records) throws Exception {
        List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
        records.forEach(batch::add);
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        try {
            producer.beginTransaction();
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> r : batch) {
                String v = new String(r.value(), StandardCharsets.UTF_8);
                byte[] out = (r.partition() + ":" + r.offset() + ":" + v).getBytes(StandardCharsets.UTF_8);
                sent.add(producer.send(new ProducerRecord<>(output, r.partition(), r.value(), out)));
                offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            }
            List<Object> done = new ArrayList<>();
            for (int i = 0; i < batch.size(); i++) {
                ConsumerRecord<byte[], byte[]> r = batch.get(i);
                done.add(List.of(r.partition(), r.offset(), Long.parseLong(new String(r.value(), StandardCharsets.UTF_8)),
                        sent.get(i).get().offset()));
            }
            KafkaDriver.emit(Json.map("event", "open", "txn", n, "records", done));
            awaitGo();
            producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
            Map<String, Object> shown = new HashMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                shown.put(String.valueOf(e.getKey().partition()), e.getValue().offset());
            }
            KafkaDriver.emit(Json.map("event", "offsets", "txn", n, "offsets", shown));
            awaitGo();
        } catch (Exception e) {
            String why = describe(e);
            if (fatal(e)) {
                restartProducer();
            } else {
                try {
                    producer.abortTransaction();
                } catch (KafkaException again) {
                    restartProducer();
                }
            }
            KafkaDriver.emit(Json.map("event", "aborted", "txn", n, "error", why));
            rewind();
            return;
        }
        try {
            producer.commitTransaction();
            KafkaDriver.emit(Json.map("event", "committed", "txn", n));
        } catch (KafkaException e) {
            KafkaDriver.emit(Json.map("event", "unknown", "txn", n, "error", describe(e)));
            restartProducer();
            rewind();
        }
    }

    private static boolean fatal(Throwable e) {
        Throwable root = KafkaDriver.root(e);
        return root instanceof ProducerFencedException || root instanceof InvalidProducerEpochException
                || root instanceof IllegalStateException;
    }

    private static String describe(Throwable e) {
        Throwable root = KafkaDriver.root(e);
        return root.getClass().getSimpleName() + ": " + root.getMessage();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        CtpWorker w = new CtpWorker(Json.obj(Json.parse(in.readLine())), in);
        KafkaDriver.emit(Json.map("event", "ready"));
        long n = 0;
        while (true) {
            ConsumerRecords<byte[], byte[]> records = w.consumer.poll(Duration.ofMillis(200));
            if (!records.isEmpty()) w.step(++n, records);
        }
    }
}
