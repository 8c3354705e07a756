import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * consume: {"topic": T, "partitions": [p...], "count": n, "start": "earliest"|"latest"|offset|{partition: offset},
 * "timeout_ms": ms, "config": {...}} — assigns the partitions (no group), seeks, and polls until
 * n records arrived or the timeout passed.
 *
 * Prints one line per record {"partition", "offset", "timestamp", "timestamp_type", "key", "value",
 * "headers": [[name, base64|null]], "leader_epoch"} and a final {"done": bool, "count": n,
 * "positions": {partition: position}}.
 */
final class ConsumeCommand {
    static void run(Map<String, Object> req) throws Exception {
        Properties p = KafkaDriver.props(req);
        p.putIfAbsent("enable.auto.commit", "false");
        p.putIfAbsent("auto.offset.reset", "earliest");
        String topic = (String) req.get("topic");
        long count = KafkaDriver.longArg(req, "count", 0);
        long timeoutMs = KafkaDriver.longArg(req, "timeout_ms", 30000);
        Object start = req.get("start");
        List<TopicPartition> tps = new ArrayList<>();
        for (Object o : Json.list(req.get("partitions"))) tps.add(new TopicPartition(topic, ((Number) o).intValue()));

        try (KafkaConsumer<byte[], byte[]> consumer =
                     new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(tps);
            if (start == null || "earliest".equals(start)) {
                consumer.seekToBeginning(tps);
            } else if ("latest".equals(start)) {
                consumer.seekToEnd(tps);
            } else if (start instanceof Map) {
                Map<String, Object> offsets = Json.obj(start);
                for (TopicPartition tp : tps) consumer.seek(tp, ((Number) offsets.get(Integer.toString(tp.partition()))).longValue());
            } else {
                long offset = start instanceof Number ? ((Number) start).longValue() : Long.parseLong((String) start);
                for (TopicPartition tp : tps) consumer.seek(tp, offset);
            }
            // Resolve positions now, so "latest" means the end at the time of this call.
            Map<String, Object> startPositions = new java.util.LinkedHashMap<>();
            for (TopicPartition tp : tps) startPositions.put(Integer.toString(tp.partition()), consumer.position(tp));
            KafkaDriver.emit(Json.map("positioned", startPositions));

            long deadline = System.currentTimeMillis() + timeoutMs;
            long got = 0;
            while (got < count && System.currentTimeMillis() < deadline) {
                long left = Math.max(1, Math.min(500, deadline - System.currentTimeMillis()));
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(left));
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    if (got >= count) break;
                    got++;
                    List<Object> headers = new ArrayList<>();
                    for (Header h : r.headers()) headers.add(java.util.Arrays.asList(h.key(), h.value()));
                    KafkaDriver.emit(Json.map(
                            "partition", r.partition(),
                            "offset", r.offset(),
                            "timestamp", r.timestamp(),
                            "timestamp_type", r.timestampType().name,
                            "leader_epoch", r.leaderEpoch().orElse(null),
                            "key", r.key(),
                            "value", r.value(),
                            "headers", headers));
                }
            }
            Map<String, Object> positions = new java.util.LinkedHashMap<>();
            for (TopicPartition tp : tps) positions.put(Integer.toString(tp.partition()), consumer.position(tp, Duration.ofSeconds(5)));
            KafkaDriver.emit(Json.map("done", got >= count, "count", got, "positions", positions));
        }
    }
}
