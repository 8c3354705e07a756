import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The transaction scenarios of compat_tests/test_transactions.py and test_exactly_once.py with
 * kafka-clients (see compat_tests/txn/__init__.py for what each does). Same stdin/stdout
 * protocol as KafkaDriver: one JSON request in, JSON lines out, {"error": ...} on failure.
 *
 *   plan     {transactional_id, txns: [{records: [[topic, partition, value]], end}]}
 *   fence    {transactional_id, topic}                     -> {"error_name": ...}
 *   time_out {transactional_id, topic, timeout_ms, wait_ms} -> {"error_name": ...}
 *   copy     {transactional_id, group, source, sink, count, timeout_ms, batch} -> progress lines, {"copied": n}
 *   admin    {transactional_ids, topic, partitions}        -> listings, descriptions, producers
 */
public final class TxnDriver {
    public static void main(String[] args) throws Exception {
        int status = 0;
        try {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            System.in.transferTo(buf);
            Map<String, Object> req = Json.obj(Json.parse(buf.toString(StandardCharsets.UTF_8)));
            String cmd = (String) req.get("cmd");
            switch (cmd) {
                case "plan": plan(req); break;
                case "fence": fence(req); break;
                case "time_out": timeOut(req); break;
                case "copy": copy(req); break;
                case "admin": admin(req); break;
                default: throw new IllegalArgumentException("unknown command " + cmd);
            }
        } catch (Throwable t) {
            KafkaDriver.emit(Json.map("error", KafkaDriver.describe(t)));
            status = 1;
        }
        System.out.flush();
        Runtime.getRuntime().halt(status);
    }

    static KafkaProducer<byte[], byte[]> producer(Map<String, Object> req, String tid, Map<String, Object> extra) {
        Properties p = KafkaDriver.props(req);
        p.put("transactional.id", tid);
        p.putIfAbsent("linger.ms", "5");
        p.putIfAbsent("delivery.timeout.ms", "30000");
        p.putIfAbsent("request.timeout.ms", "15000");
        p.putIfAbsent("max.block.ms", "30000");
        if (extra != null) for (Map.Entry<String, Object> e : extra.entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static byte[] utf8(Object s) {
        return ((String) s).getBytes(StandardCharsets.UTF_8);
    }

    static String errorName(Throwable t) {
        t = KafkaDriver.root(t);
        if (t instanceof org.apache.kafka.common.KafkaException && t.getCause() != null
                && !(t instanceof org.apache.kafka.common.errors.ApiException)) {
            Throwable c = t.getCause();
            if (c instanceof org.apache.kafka.common.errors.ApiException) t = c;
        }
        return t.getClass().getSimpleName();
    }

    static void plan(Map<String, Object> req) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = producer(req, (String) req.get("transactional_id"), null)) {
            p.initTransactions();
            for (Object o : Json.list(req.get("txns"))) {
                Map<String, Object> txn = Json.obj(o);
                p.beginTransaction();
                List<Future<RecordMetadata>> acks = new ArrayList<>();
                for (Object r : Json.list(txn.get("records"))) {
                    List<Object> rec = Json.list(r);
                    acks.add(p.send(new ProducerRecord<>((String) rec.get(0), ((Number) rec.get(1)).intValue(), null, utf8(rec.get(2)))));
                }
                p.flush();
                for (Future<RecordMetadata> f : acks) f.get();
                if ("commit".equals(txn.get("end"))) p.commitTransaction(); else p.abortTransaction();
            }
        }
        KafkaDriver.emit(Json.map("done", true));
    }

    static void fence(Map<String, Object> req) throws Exception {
        String tid = (String) req.get("transactional_id");
        String topic = (String) req.get("topic");
        KafkaProducer<byte[], byte[]> a = producer(req, tid, null);
        a.initTransactions();
        a.beginTransaction();
        a.send(new ProducerRecord<>(topic, 0, null, utf8("zombie-1"))).get();
        try (KafkaProducer<byte[], byte[]> b = producer(req, tid, null)) {
            b.initTransactions();
            b.beginTransaction();
            b.send(new ProducerRecord<>(topic, 0, null, utf8("winner"))).get();
            b.commitTransaction();
        }
        String name = "NONE";
        try {
            a.send(new ProducerRecord<>(topic, 0, null, utf8("zombie-2"))).get();
            a.commitTransaction();
        } catch (Exception e) {
            name = errorName(e);
        }
        a.close(Duration.ofSeconds(1));
        KafkaDriver.emit(Json.map("error_name", name));
    }

    static void timeOut(Map<String, Object> req) throws Exception {
        String topic = (String) req.get("topic");
        long timeoutMs = KafkaDriver.longArg(req, "timeout_ms", 1000);
        Map<String, Object> extra = new HashMap<>();
        extra.put("transaction.timeout.ms", timeoutMs);
        extra.put("delivery.timeout.ms", Math.max(timeoutMs, 20000));
        extra.put("request.timeout.ms", 10000);
        String name = "NONE";
        try (KafkaProducer<byte[], byte[]> p = producer(req, (String) req.get("transactional_id"), extra)) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, utf8("late"))).get();
            // the test creates this file once the broker has aborted the transaction
            java.nio.file.Path until = java.nio.file.Path.of((String) req.get("until"));
            long deadline = System.currentTimeMillis() + 60000;
            while (!java.nio.file.Files.exists(until)) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException(until + " did not appear");
                Thread.sleep(50);
            }
            try {
                p.commitTransaction();
            } catch (Exception e) {
                name = errorName(e);
            }
        }
        KafkaDriver.emit(Json.map("error_name", name));
    }

    static void copy(Map<String, Object> req) throws Exception {
        String source = (String) req.get("source");
        String sink = (String) req.get("sink");
        long count = KafkaDriver.longArg(req, "count", Long.MAX_VALUE);
        long deadline = System.currentTimeMillis() + KafkaDriver.longArg(req, "timeout_ms", 60000);
        Properties cp = KafkaDriver.props(req);
        cp.put("group.id", req.get("group"));
        cp.put("isolation.level", "read_committed");
        cp.put("enable.auto.commit", "false");
        cp.put("auto.offset.reset", "earliest");
        cp.put("max.poll.records", String.valueOf(KafkaDriver.longArg(req, "batch", 100)));
        cp.put("session.timeout.ms", "10000");
        cp.put("heartbeat.interval.ms", "1000");
        long copied = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             KafkaProducer<byte[], byte[]> producer = producer(req, (String) req.get("transactional_id"), null)) {
            producer.initTransactions();
            consumer.subscribe(List.of(source));
            byte[] prefix = utf8("copied:");
            while (copied < count && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    byte[] v = new byte[prefix.length + r.value().length];
                    System.arraycopy(prefix, 0, v, 0, prefix.length);
                    System.arraycopy(r.value(), 0, v, prefix.length, r.value().length);
                    producer.send(new ProducerRecord<>(sink, r.partition(), r.key(), v));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
                copied += records.count();
                KafkaDriver.emit(Json.map("progress", copied));
            }
        }
        KafkaDriver.emit(Json.map("copied", copied));
    }

    static void admin(Map<String, Object> req) throws Exception {
        try (Admin admin = Admin.create(KafkaDriver.props(req))) {
            List<Object> listed = new ArrayList<>();
            for (TransactionListing l : admin.listTransactions().all().get()) {
                listed.add(Json.map("transactional_id", l.transactionalId(), "producer_id", l.producerId(),
                        "state", l.state().toString()));
            }
            KafkaDriver.emit(Json.map("listed", listed));
            List<Object> ongoing = new ArrayList<>();
            for (TransactionListing l : admin.listTransactions(new ListTransactionsOptions()
                    .filterStates(List.of(org.apache.kafka.clients.admin.TransactionState.ONGOING))).all().get()) {
                ongoing.add(l.transactionalId());
            }
            KafkaDriver.emit(Json.map("ongoing", ongoing));
            List<String> ids = new ArrayList<>();
            for (Object o : Json.list(req.get("transactional_ids"))) ids.add((String) o);
            Map<String, Object> described = new TreeMap<>();
            for (Map.Entry<String, TransactionDescription> e : admin.describeTransactions(ids).all().get().entrySet()) {
                TransactionDescription d = e.getValue();
                List<Object> parts = new ArrayList<>();
                for (TopicPartition tp : d.topicPartitions()) parts.add(List.of(tp.topic(), (long) tp.partition()));
                described.put(e.getKey(), Json.map("state", d.state().toString(), "producer_id", d.producerId(),
                        "producer_epoch", (long) d.producerEpoch(), "timeout_ms", (long) d.transactionTimeoutMs(),
                        "start_ms", d.transactionStartTimeMs().orElse(-1L), "partitions", parts));
            }
            KafkaDriver.emit(Json.map("described", described));
            List<TopicPartition> tps = new ArrayList<>();
            for (Object p : Json.list(req.get("partitions"))) tps.add(new TopicPartition((String) req.get("topic"), ((Number) p).intValue()));
            DescribeProducersResult dp = admin.describeProducers(tps);
            Map<String, Object> producers = new TreeMap<>();
            for (Map.Entry<TopicPartition, DescribeProducersResult.PartitionProducerState> e : dp.all().get().entrySet()) {
                List<Object> active = new ArrayList<>();
                for (ProducerState s : e.getValue().activeProducers()) {
                    active.add(Json.map("producer_id", s.producerId(), "producer_epoch", (long) s.producerEpoch(),
                            "last_sequence", (long) s.lastSequence(),
                            "txn_start_offset", s.currentTransactionStartOffset().isPresent() ? s.currentTransactionStartOffset().getAsLong() : -1L));
                }
                producers.put(String.valueOf(e.getKey().partition()), active);
            }
            KafkaDriver.emit(Json.map("producers", producers));
        }
    }
}
