import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * produce: {"topic": T, "records": [{"key", "value" (base64|null), "partition", "timestamp",
 * "headers": [[name, base64|null], ...]}], "config": {...}}.
 *
 * Sends every record without waiting, then flushes, then prints one line per record in order:
 * {"partition", "offset", "timestamp"} or {"error": {...}}. A final {"done": true, "errors": n}.
 */
final class ProduceCommand {
    static void run(Map<String, Object> req) throws Exception {
        Properties p = KafkaDriver.props(req);
        p.putIfAbsent("max.request.size", "16777216");
        String topic = (String) req.get("topic");
        List<Object> records = Json.list(req.get("records"));
        List<Future<RecordMetadata>> futures = new ArrayList<>(records.size());
        try (KafkaProducer<byte[], byte[]> producer =
                     new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (Object o : records) {
                futures.add(producer.send(record(topic, Json.obj(o))));
            }
            producer.flush();
            int errors = 0;
            for (Future<RecordMetadata> f : futures) {
                try {
                    RecordMetadata md = f.get();
                    KafkaDriver.emit(Json.map("partition", md.partition(), "offset", md.offset(), "timestamp", md.timestamp()));
                } catch (Exception e) {
                    errors++;
                    KafkaDriver.emit(Json.map("error", KafkaDriver.describe(e)));
                }
            }
            KafkaDriver.emit(Json.map("done", true, "errors", errors));
        }
    }

    static ProducerRecord<byte[], byte[]> record(String topic, Map<String, Object> r) {
        Object part = r.get("partition");
        Object ts = r.get("timestamp");
        RecordHeaders headers = new RecordHeaders();
        for (Object h : Json.list(r.get("headers"))) {
            List<Object> kv = Json.list(h);
            headers.add((String) kv.get(0), Json.bytes(kv.get(1)));
        }
        return new ProducerRecord<>(
                topic,
                part == null ? null : ((Number) part).intValue(),
                ts == null ? null : ((Number) ts).longValue(),
                Json.bytes(r.get("key")),
                Json.bytes(r.get("value")),
                headers);
    }
}
