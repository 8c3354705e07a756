import java.time.Duration;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * warmup: builds and closes a producer, a consumer and an admin client without a broker, so that
 * a class-data-sharing archive recorded during this run covers the classes every command loads.
 */
final class Warmup {
    static void run(Map<String, Object> req) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", "127.0.0.1:9");
        p.put("compression.type", "lz4");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.close(Duration.ZERO);
        }
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ZERO));
        }
        try (Admin admin = Admin.create(p)) {
            admin.close(Duration.ZERO);
        }
        Json.parse(Json.write(Json.map("warm", true)));
        KafkaDriver.emit(Json.map("done", true));
    }
}
