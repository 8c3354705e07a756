import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.ListIterator;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Kafka client calls of Spark's Kafka connector (spark-sql-kafka-0-10, Spark 4.x), made the way
 * the connector makes them and with the client configs it sets, so that a broker's answers to them
 * can be checked without Spark. Mirrors, in Spark's sources (connector/kafka-0-10-sql):
 *
 * <ul>
 * <li>{@code offsets}: KafkaOffsetReaderAdmin with ConsumerStrategy — an Admin client built from the
 *   driver's consumer params (KafkaSourceProvider.kafkaParamsForDriver: ByteArrayDeserializer,
 *   auto.offset.reset=earliest, enable.auto.commit=false, max.poll.records=1,
 *   receive.buffer.bytes=65536); partitions from describeTopics (assign, subscribe) or listTopics
 *   plus a regex search (subscribePattern), internal topics left out; then listOffsets with
 *   OffsetSpec.earliest(), latest() or forTimestamp(ts) and ListOffsetsOptions(isolation level of
 *   kafka.isolation.level).</li>
 * <li>{@code read}: KafkaDataConsumer.get over offset ranges with InternalKafkaConsumer.fetch — a
 *   KafkaConsumer per partition from the executor params (kafkaParamsForExecutors:
 *   ByteArrayDeserializer, auto.offset.reset=none, group.id=spark-kafka-relation-UUID-executor,
 *   enable.auto.commit=false, receive.buffer.bytes=65536) that assigns, seeks, polls, reads its
 *   position, then seekToBeginning/seekToEnd + position for the available range; records that are
 *   invisible (control batches, aborted data under read_committed) are skipped the way Spark
 *   skips them, and Spark's data-loss and timeout checks raise.</li>
 * <li>{@code write}: KafkaWriteTask — a KafkaProducer with only ByteArraySerializer set (so the
 *   client defaults apply: idempotent, acks=all), one shared callback keeping the first error,
 *   send per row (topic, partition, timestamp, key, value, headers), flush, check.</li>
 * <li>{@code producers}: Admin.describeProducers, to see what the idempotent writer left on the
 *   partitions (not a connector call; used by the checks).</li>
 * </ul>
 *
 * Protocol as KafkaDriver's (compat_tests/java): one JSON request on stdin
 * {"cmd", "bootstrap", "config": {kafka.* options without the prefix}, ...}, JSON lines on stdout,
 * a failure as {"error": {...}} with exit status 1. With --serve, one request per stdin line, each
 * answer closed by {"end": true}, so that a test session pays for one JVM start.
 */
public final class SparkConnectorCalls {
    static final long UNKNOWN_OFFSET = -2L; // KafkaDataConsumer.UNKNOWN_OFFSET

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--serve")) {
            serve();
            return;
        }
        int status = 0;
        try {
            dispatch(Json.obj(Json.parse(new String(System.in.readAllBytes(), StandardCharsets.UTF_8))));
        } catch (Throwable t) {
            KafkaDriver.emit(Json.map("error", KafkaDriver.describe(t)));
            status = 1;
        }
        System.out.flush();
        Runtime.getRuntime().halt(status);
    }

    /**
     * --serve: one request per stdin line, each answered by its lines and {"end": true}; stops at
     * the end of stdin. Every request builds and closes its own clients, as the connector does per
     * query and task; only the JVM (its loaded classes) is shared.
     */
    static void serve() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isBlank()) continue;
            try {
                dispatch(Json.obj(Json.parse(line)));
            } catch (Throwable t) {
                KafkaDriver.emit(Json.map("error", KafkaDriver.describe(t)));
            }
            KafkaDriver.emit(Json.map("end", true));
        }
        Runtime.getRuntime().halt(0);
    }

    static void dispatch(Map<String, Object> req) throws Exception {
        String cmd = (String) req.get("cmd");
        switch (cmd == null ? "" : cmd) {
            case "offsets": offsets(req); break;
            case "read": read(req); break;
            case "write": write(req); break;
            case "producers": producers(req); break;
            default: throw new IllegalArgumentException("unknown command " + cmd + "; known: offsets, read, write, producers");
        }
    }

    // ---- params, as KafkaSourceProvider builds them ----

    static Properties driverParams(Map<String, Object> req) {
        Properties p = KafkaDriver.props(req);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("max.poll.records", "1");
        p.putIfAbsent("receive.buffer.bytes", "65536");
        return p;
    }

    static Properties executorParams(Map<String, Object> req) {
        Properties p = KafkaDriver.props(req);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("auto.offset.reset", "none");
        p.putIfAbsent("group.id", "spark-kafka-relation-" + UUID.randomUUID() + "-executor");
        p.put("enable.auto.commit", "false");
        p.putIfAbsent("receive.buffer.bytes", "65536");
        return p;
    }

    static Properties producerParams(Map<String, Object> req) {
        Properties p = KafkaDriver.props(req);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        return p;
    }

    static IsolationLevel isolation(Properties p) {
        Object s = p.get("isolation.level");
        return IsolationLevel.valueOf((s == null ? "read_uncommitted" : s.toString()).toUpperCase(java.util.Locale.ROOT));
    }

    static String key(TopicPartition tp) {
        return tp.topic() + ":" + tp.partition();
    }

    static TopicPartition tp(String key) {
        int i = key.lastIndexOf(':');
        return new TopicPartition(key.substring(0, i), Integer.parseInt(key.substring(i + 1)));
    }

    // ---- offsets: KafkaOffsetReaderAdmin ----

    /**
     * offsets: {"strategy": {"assign": ["topic:partition", ...]} | {"subscribe": [topic, ...]} |
     * {"subscribePattern": regex}, "queries": ["earliest" | "latest" | {"timestamp": ms} |
     * {"timestamps": {"topic:partition": ms}}, ...]}.
     *
     * Prints {"partitions": ["topic:partition", ...]} (what the strategy resolves to, sorted), then one
     * {"query": i, "offsets": {"topic:partition": {"offset", "timestamp", "leader_epoch"}}} per query.
     */
    static void offsets(Map<String, Object> req) throws Exception {
        Properties params = driverParams(req);
        ListOffsetsOptions options = new ListOffsetsOptions(isolation(params));
        try (Admin admin = Admin.create(params)) {
            Set<TopicPartition> partitions = assignedTopicPartitions(admin, Json.obj(req.get("strategy")));
            List<String> names = new ArrayList<>();
            for (TopicPartition tp : partitions) names.add(key(tp));
            KafkaDriver.emit(Json.map("partitions", names));
            int i = 0;
            for (Object q : Json.list(req.get("queries"))) {
                Map<TopicPartition, OffsetSpec> specs = new LinkedHashMap<>();
                if ("earliest".equals(q)) {
                    for (TopicPartition tp : partitions) specs.put(tp, OffsetSpec.earliest());
                } else if ("latest".equals(q)) {
                    for (TopicPartition tp : partitions) specs.put(tp, OffsetSpec.latest());
                } else if (Json.obj(q).containsKey("timestamp")) {
                    long ts = ((Number) Json.obj(q).get("timestamp")).longValue();
                    for (TopicPartition tp : partitions) specs.put(tp, OffsetSpec.forTimestamp(ts));
                } else {
                    Map<String, Object> byPartition = Json.obj(Json.obj(q).get("timestamps"));
                    // fetchSpecificTimestampBasedOffsets asserts the partitions named are exactly the assigned ones
                    Set<String> named = new TreeSet<>(byPartition.keySet());
                    if (!named.equals(new TreeSet<>(names))) {
                        throw new IllegalArgumentException("startingOffsetsByTimestamp names " + named + " but the strategy assigns " + names);
                    }
                    for (Map.Entry<String, Object> e : byPartition.entrySet()) {
                        specs.put(tp(e.getKey()), OffsetSpec.forTimestamp(((Number) e.getValue()).longValue()));
                    }
                }
                Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> res = admin.listOffsets(specs, options).all().get();
                Map<String, Object> out = new LinkedHashMap<>();
                for (TopicPartition tp : specs.keySet()) {
                    ListOffsetsResult.ListOffsetsResultInfo info = res.get(tp);
                    out.put(key(tp), Json.map("offset", info.offset(), "timestamp", info.timestamp(),
                            "leader_epoch", info.leaderEpoch().orElse(null)));
                }
                KafkaDriver.emit(Json.map("query", i++, "offsets", out));
            }
        }
    }

    /** ConsumerStrategy.assignedTopicPartitions, for the three strategies. */
    static Set<TopicPartition> assignedTopicPartitions(Admin admin, Map<String, Object> strategy) throws Exception {
        Set<TopicPartition> out = new TreeSet<>(
                java.util.Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        if (strategy.containsKey("assign")) {
            Set<TopicPartition> wanted = new java.util.HashSet<>();
            Set<String> topics = new TreeSet<>();
            for (Object o : Json.list(strategy.get("assign"))) {
                TopicPartition tp = tp((String) o);
                wanted.add(tp);
                topics.add(tp.topic());
            }
            for (TopicPartition tp : retrieveAllPartitions(admin, topics)) if (wanted.contains(tp)) out.add(tp);
        } else if (strategy.containsKey("subscribe")) {
            Set<String> topics = new TreeSet<>();
            for (Object o : Json.list(strategy.get("subscribe"))) topics.add((String) o);
            out.addAll(retrieveAllPartitions(admin, topics));
        } else if (strategy.containsKey("subscribePattern")) {
            Pattern regex = Pattern.compile((String) strategy.get("subscribePattern"));
            Set<String> topics = new TreeSet<>();
            // listTopics leaves internal topics out by default; Scala's Regex.findFirstIn is a search
            for (TopicListing listing : admin.listTopics().listings().get()) {
                if (regex.matcher(listing.name()).find()) topics.add(listing.name());
            }
            out.addAll(retrieveAllPartitions(admin, topics));
        } else {
            throw new IllegalArgumentException("strategy must be assign, subscribe or subscribePattern: " + strategy);
        }
        return out;
    }

    static List<TopicPartition> retrieveAllPartitions(Admin admin, Set<String> topics) throws Exception {
        List<TopicPartition> out = new ArrayList<>();
        if (topics.isEmpty()) return out;
        for (Map.Entry<String, TopicDescription> e : admin.describeTopics(topics).allTopicNames().get().entrySet()) {
            if (e.getValue().isInternal()) continue;
            for (TopicPartitionInfo info : e.getValue().partitions()) out.add(new TopicPartition(e.getKey(), info.partition()));
        }
        return out;
    }

    // ---- read: KafkaDataConsumer / InternalKafkaConsumer ----

    /** FetchedData: records of the last poll, the next offset in them, the position after the poll. */
    static final class Fetched {
        ListIterator<ConsumerRecord<byte[], byte[]>> records = Collections.emptyListIterator();
        long nextOffsetInFetchedData = UNKNOWN_OFFSET;
        long offsetAfterPoll = UNKNOWN_OFFSET;
        long earliest = UNKNOWN_OFFSET;
        long latest = UNKNOWN_OFFSET;

        void reset() {
            records = Collections.emptyListIterator();
            nextOffsetInFetchedData = UNKNOWN_OFFSET;
            offsetAfterPoll = UNKNOWN_OFFSET;
            earliest = UNKNOWN_OFFSET;
            latest = UNKNOWN_OFFSET;
        }

        ConsumerRecord<byte[], byte[]> next() {
            ConsumerRecord<byte[], byte[]> r = records.next();
            nextOffsetInFetchedData = r.offset() + 1;
            return r;
        }

        void previous() {
            ConsumerRecord<byte[], byte[]> r = records.previous();
            nextOffsetInFetchedData = r.offset();
        }
    }

    /** One partition's consumer with its fetched data, as KafkaDataConsumer holds them. */
    static final class PartitionReader {
        final TopicPartition tp;
        final KafkaConsumer<byte[], byte[]> consumer;
        final long pollTimeoutMs;
        final Fetched fetched = new Fetched();
        final List<Object> polls = new ArrayList<>();

        PartitionReader(TopicPartition tp, Properties params, long pollTimeoutMs) {
            this.tp = tp;
            this.pollTimeoutMs = pollTimeoutMs;
            this.consumer = new KafkaConsumer<>(params);
            this.consumer.assign(Collections.singletonList(tp));
        }

        /** InternalKafkaConsumer.fetch */
        void fetchData(long offset) throws Exception {
            consumer.seek(tp, offset);
            ConsumerRecords<byte[], byte[]> p = consumer.poll(Duration.ofMillis(pollTimeoutMs));
            List<ConsumerRecord<byte[], byte[]>> r = p.records(tp);
            long offsetAfterPoll = consumer.position(tp);
            consumer.seekToBeginning(Collections.singleton(tp));
            long earliest = consumer.position(tp);
            consumer.seekToEnd(Collections.singleton(tp));
            long latest = consumer.position(tp);
            List<Long> offsets = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> rec : r) offsets.add(rec.offset());
            polls.add(Json.map("seek", offset, "offsets", offsets, "position_after_poll", offsetAfterPoll,
                    "earliest", earliest, "latest", latest));
            if (r.isEmpty()) {
                if (offset < earliest || offset >= latest) {
                    throw new OffsetOutOfRangeException(Map.of(tp, offset));
                } else if (offset == offsetAfterPoll) {
                    throw new TimeoutException("Cannot fetch record for offset " + offset + " in " + pollTimeoutMs + " milliseconds");
                }
            }
            fetched.records = new ArrayList<>(r).listIterator();
            fetched.nextOffsetInFetchedData = UNKNOWN_OFFSET;
            fetched.offsetAfterPoll = offsetAfterPoll;
            fetched.earliest = earliest;
            fetched.latest = latest;
        }

        /** KafkaDataConsumer.fetchRecord: a record, or null and the next offset to fetch in skipTo[0]. */
        ConsumerRecord<byte[], byte[]> fetchRecord(long offset, long[] skipTo) throws Exception {
            if (offset != fetched.nextOffsetInFetchedData) {
                fetchData(offset);
            } else if (!fetched.records.hasNext()) {
                if (offset < fetched.offsetAfterPoll) {
                    skipTo[0] = fetched.offsetAfterPoll;
                    fetched.reset();
                    return null;
                }
                fetchData(offset);
            }
            if (!fetched.records.hasNext()) {
                if (offset > fetched.offsetAfterPoll) {
                    throw new IllegalStateException("seek to " + offset + " and poll but the offset was reset to " + fetched.offsetAfterPoll);
                }
                skipTo[0] = fetched.offsetAfterPoll;
                return null;
            }
            ConsumerRecord<byte[], byte[]> record = fetched.next();
            if (record.offset() > offset) {
                if (fetched.earliest <= offset) {
                    // offset is valid but invisible: jump to the record, which the next call returns
                    fetched.previous();
                    skipTo[0] = record.offset();
                    return null;
                }
                throw new IllegalStateException("data loss (failOnDataLoss): offsets [" + offset + ", " + record.offset()
                        + ") of " + tp + " are gone; earliest is " + fetched.earliest);
            } else if (record.offset() < offset) {
                throw new IllegalStateException("Tried to fetch " + offset + " but the returned record offset was " + record.offset());
            }
            return record;
        }

        /** KafkaDataConsumer.get with failOnDataLoss=true: the record at offset, or the next visible one below until, or null. */
        ConsumerRecord<byte[], byte[]> get(long offset, long until) throws Exception {
            long toFetch = offset;
            long[] skipTo = new long[1];
            while (toFetch != UNKNOWN_OFFSET) {
                ConsumerRecord<byte[], byte[]> r;
                try {
                    r = fetchRecord(toFetch, skipTo);
                } catch (OffsetOutOfRangeException e) {
                    fetched.reset();
                    throw new IllegalStateException("data loss (failOnDataLoss): cannot fetch offset " + toFetch + " of " + tp, e);
                }
                if (r != null) return r;
                toFetch = skipTo[0];
                if (toFetch >= until) {
                    fetched.reset();
                    toFetch = UNKNOWN_OFFSET;
                }
            }
            fetched.reset();
            return null;
        }
    }

    /**
     * read: {"ranges": [{"topic", "partition", "from", "until"}], "poll_timeout_ms": ms} — reads each
     * range as KafkaBatchPartitionReader / KafkaSourceRDD do (get(next, until) until next >= until),
     * one consumer per partition kept across ranges (the consumer pool's cache key).
     *
     * Prints one line per record {"topic", "partition", "offset", "timestamp", "timestamp_type", "key",
     * "value", "headers"}, then {"range": i, "polls": [{"seek", "offsets", "position_after_poll",
     * "earliest", "latest"}]} per range.
     */
    static void read(Map<String, Object> req) throws Exception {
        Properties params = executorParams(req);
        long pollTimeoutMs = KafkaDriver.longArg(req, "poll_timeout_ms", 10000);
        Map<String, PartitionReader> readers = new LinkedHashMap<>();
        try {
            int i = 0;
            for (Object o : Json.list(req.get("ranges"))) {
                Map<String, Object> range = Json.obj(o);
                TopicPartition tp = new TopicPartition((String) range.get("topic"), ((Number) range.get("partition")).intValue());
                PartitionReader reader = readers.computeIfAbsent(key(tp), k -> new PartitionReader(tp, params, pollTimeoutMs));
                reader.polls.clear();
                long next = ((Number) range.get("from")).longValue();
                long until = ((Number) range.get("until")).longValue();
                while (next < until) {
                    ConsumerRecord<byte[], byte[]> r = reader.get(next, until);
                    if (r == null) break;
                    emitRecord(r);
                    next = r.offset() + 1;
                }
                KafkaDriver.emit(Json.map("range", i++, "polls", new ArrayList<>(reader.polls)));
            }
        } finally {
            for (PartitionReader r : readers.values()) r.consumer.close(Duration.ofSeconds(5));
        }
    }

    static void emitRecord(ConsumerRecord<byte[], byte[]> r) {
        List<Object> headers = new ArrayList<>();
        for (Header h : r.headers()) headers.add(java.util.Arrays.asList(h.key(), h.value()));
        KafkaDriver.emit(Json.map(
                "topic", r.topic(),
                "partition", r.partition(),
                "offset", r.offset(),
                "timestamp", r.timestamp(),
                "timestamp_type", r.timestampType().name,
                "key", r.key(),
                "value", r.value(),
                "headers", headers));
    }

    // ---- write: KafkaWriteTask ----

    /**
     * write: {"topic": default topic (the writer's topic option) or null, "rows": [{"topic", "key",
     * "value", "headers": [[name, base64|null]] | null, "partition", "timestamp"}]}.
     *
     * Prints {"partition", "offset", "timestamp"} per row in order (from the send futures, which the
     * connector itself does not look at), then {"done": true}. The first failed send fails the
     * command, as checkForErrors does.
     */
    static void write(Map<String, Object> req) throws Exception {
        String defaultTopic = (String) req.get("topic");
        List<Object> rows = Json.list(req.get("rows"));
        final Exception[] failedWrite = new Exception[1];
        Callback callback = (RecordMetadata md, Exception e) -> {
            synchronized (failedWrite) {
                if (failedWrite[0] == null && e != null) failedWrite[0] = e;
            }
        };
        List<java.util.concurrent.Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerParams(req))) {
            for (Object o : rows) {
                synchronized (failedWrite) {
                    if (failedWrite[0] != null) break;
                }
                Map<String, Object> row = Json.obj(o);
                String topic = row.get("topic") != null ? (String) row.get("topic") : defaultTopic;
                if (topic == null) throw new NullPointerException("null topic present in the data. Use the topic option for setting a default topic.");
                Integer partition = row.get("partition") == null ? null : ((Number) row.get("partition")).intValue();
                Long timestamp = row.get("timestamp") == null ? null : ((Number) row.get("timestamp")).longValue();
                ProducerRecord<byte[], byte[]> record;
                if (row.get("headers") == null) {
                    record = new ProducerRecord<>(topic, partition, timestamp, Json.bytes(row.get("key")), Json.bytes(row.get("value")));
                } else {
                    List<Header> headers = new ArrayList<>();
                    for (Object h : Json.list(row.get("headers"))) {
                        List<Object> kv = Json.list(h);
                        headers.add(new RecordHeader((String) kv.get(0), Json.bytes(kv.get(1))));
                    }
                    record = new ProducerRecord<>(topic, partition, timestamp, Json.bytes(row.get("key")), Json.bytes(row.get("value")), headers);
                }
                futures.add(producer.send(record, callback));
            }
            synchronized (failedWrite) {
                if (failedWrite[0] != null) throw failedWrite[0];
            }
            producer.flush();
            synchronized (failedWrite) {
                if (failedWrite[0] != null) throw failedWrite[0];
            }
            for (java.util.concurrent.Future<RecordMetadata> f : futures) {
                RecordMetadata md = f.get();
                KafkaDriver.emit(Json.map("topic", md.topic(), "partition", md.partition(), "offset", md.offset(), "timestamp", md.timestamp()));
            }
            KafkaDriver.emit(Json.map("done", true));
        }
    }

    // ---- producers: Admin.describeProducers ----

    /** producers: {"partitions": ["topic:partition", ...]} — prints {"producers": {"topic:partition": [{...}]}}. */
    static void producers(Map<String, Object> req) throws Exception {
        List<TopicPartition> tps = new ArrayList<>();
        for (Object o : Json.list(req.get("partitions"))) tps.add(tp((String) o));
        try (Admin admin = Admin.create(KafkaDriver.props(req))) {
            Map<TopicPartition, DescribeProducersResult.PartitionProducerState> res = admin.describeProducers(tps).all().get();
            Map<String, Object> out = new LinkedHashMap<>();
            for (TopicPartition tp : tps) {
                List<Object> states = new ArrayList<>();
                for (ProducerState s : res.get(tp).activeProducers()) {
                    states.add(Json.map("producer_id", s.producerId(), "producer_epoch", s.producerEpoch(),
                            "last_sequence", s.lastSequence(), "last_timestamp", s.lastTimestamp(),
                            "current_transaction_start_offset", s.currentTransactionStartOffset().isPresent()
                                    ? s.currentTransactionStartOffset().getAsLong() : null));
                }
                out.put(key(tp), states);
            }
            KafkaDriver.emit(Json.map("producers", out));
        }
    }
}
