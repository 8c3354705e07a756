package dev.kafkalite.junit5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

class KafkaliteExtensionTest {
  static KafkaProducer<String, String> producer(KafkaliteBroker broker) {
    Properties p = new Properties();
    p.put("bootstrap.servers", broker.bootstrap());
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("retries", "0");
    p.put("enable.idempotence", "false");
    p.put("delivery.timeout.ms", "30000");
    p.put("request.timeout.ms", "20000");
    return new KafkaProducer<>(p);
  }

  static void produce(KafkaliteBroker broker, String topic, String... values) throws Exception {
    try (KafkaProducer<String, String> producer = producer(broker)) {
      for (String value : values) producer.send(new ProducerRecord<>(topic, value)).get();
    }
  }

  static List<String> consume(KafkaliteBroker broker, String topic, int count) {
    Properties p = new Properties();
    p.put("bootstrap.servers", broker.bootstrap());
    p.put("group.id", "g-" + System.nanoTime());
    p.put("auto.offset.reset", "earliest");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    List<String> got = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      consumer.subscribe(List.of(topic));
      long deadline = System.currentTimeMillis() + 30_000;
      while (got.size() < count && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) got.add(r.value());
      }
    }
    return got;
  }

  static Set<String> topics(KafkaliteBroker broker) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.bootstrap()))) {
      return admin.listTopics().names().get();
    }
  }

  static Set<String> controlNames(String json) {
    Set<String> names = new TreeSet<>();
    Matcher m = Pattern.compile("\"name\":\\s*\"([^\"]+)\"").matcher(json);
    while (m.find()) names.add(m.group(1));
    return names;
  }

  @Nested
  @Kafkalite(settings = "num.partitions=1")
  @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
  class OneBrokerForTheClass {
    @Test
    @Order(1)
    void leavesATopic(KafkaliteBroker broker) throws Exception {
      produce(broker, "leaky", "x");
      assertTrue(topics(broker).contains("leaky"));
    }

    @Test
    @Order(2)
    void findsTheBrokerResetBeforeIt(KafkaliteBroker broker) throws Exception {
      assertFalse(topics(broker).contains("leaky"), "the previous test's topic leaked");
    }

    @Test
    @Order(3)
    void snapshotAndRestore(KafkaliteBroker broker) throws Exception {
      produce(broker, "orders", "first");
      broker.snapshot("base");
      produce(broker, "orders", "second");
      broker.restore("base");
      produce(broker, "orders", "third");
      assertEquals(List.of("first", "third"), consume(broker, "orders", 2));
    }

    @Test
    @Order(4)
    void aFaultReachesTheJavaClient(KafkaliteBroker broker) throws Exception {
      produce(broker, "payments", "warm-up");
      broker.controls().failRequests("Produce", "TOPIC_AUTHORIZATION_FAILED", Map.of("count", 1, "topic", "payments"));
      try (KafkaProducer<String, String> producer = producer(broker)) {
        ExecutionException refused = assertThrows(ExecutionException.class,
            () -> producer.send(new ProducerRecord<>("payments", "refused")).get());
        assertInstanceOf(TopicAuthorizationException.class, refused.getCause());
      }
      assertEquals("[]", broker.controls().listFaults());
    }

    @Test
    @Order(5)
    void theGeneratedControlsMatchTheBroker(KafkaliteBroker broker) {
      assertEquals(controlNames(GeneratedControls.CONTROL_TABLE), controlNames(broker.controls().list()),
          "GeneratedControls was generated from another table: run python3 -m kafkalite.controls_codegen");
      KafkaliteControls.ControlException unknown = assertThrows(KafkaliteControls.ControlException.class,
          () -> broker.controls().call("no-such-control", Map.of()));
      assertEquals(400, unknown.status);
    }
  }

  static final Set<String> SEEN = ConcurrentHashMap.newKeySet();

  @Nested
  @Kafkalite(perTest = true, args = {"--clock", "manual"})
  class ABrokerPerTest {
    @Test
    void first(KafkaliteBroker broker) throws Exception {
      assertTrue(SEEN.add(broker.bootstrap()));
      produce(broker, "mine", "x");
    }

    @Test
    void second(KafkaliteBroker broker) throws Exception {
      assertTrue(SEEN.add(broker.bootstrap()));
      assertFalse(topics(broker).contains("mine"));
      String before = broker.controls().clock();
      broker.advanceClock(Duration.ofHours(1));
      assertNotEquals(before, broker.controls().clock());
      assertTrue(before.contains("\"mode\":\"manual\""), before);
    }
  }
}
