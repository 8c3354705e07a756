import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** A JUnit 5 test of a producer and a consumer, pointed at the broker named by KAFKA_BOOTSTRAP. */
class KafkaliteRoundTripTest {
    static final String BOOTSTRAP = System.getenv().getOrDefault("KAFKA_BOOTSTRAP", "127.0.0.1:9092");

    @Test
    void producedRecordsAreConsumedInOrder() throws Exception {
        String topic = "orders-" + UUID.randomUUID();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", BOOTSTRAP))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        try (var producer = new KafkaProducer<>(Map.<String, Object>of("bootstrap.servers", BOOTSTRAP,
                "enable.idempotence", true), new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 3; i++) {
                producer.send(new ProducerRecord<>(topic, "key-" + i, "value-" + i)).get();
            }
        }
        List<String> values = new ArrayList<>();
        try (var consumer = new KafkaConsumer<>(Map.<String, Object>of("bootstrap.servers", BOOTSTRAP,
                "group.id", "test-" + topic, "auto.offset.reset", "earliest"),
                new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (values.size() < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    values.add(record.value());
                }
            }
        }
        assertEquals(List.of("value-0", "value-1", "value-2"), values);
    }
}
