package dev.kafkalite.junit5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The extension and KafkaliteContainer on kafkalite's image, run where no kafkalite command is
 * found (no kafkalite.cmd, KAFKALITE_CMD, kafkalite.pyz or kafkalite on PATH) and testcontainers is
 * on the classpath; the image is KAFKALITE_IMAGE. KafkaliteExtensionTest, run the same way, checks
 * the reset, snapshots, faults, the generated controls and a broker per test on the image; these
 * check what is the container's own, with KafkaliteExtensionTest's helpers.
 */
class KafkaliteImageTest {
  static int partitions(KafkaliteBroker broker, String topic) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.bootstrap()))) {
      return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
    }
  }

  /** now_ms of the clock control's answer. */
  static long nowMs(String clock) {
    Matcher m = Pattern.compile("\"now_ms\":\\s*(\\d+)").matcher(clock);
    assertTrue(m.find(), clock);
    return Long.parseLong(m.group(1));
  }

  @Nested
  @Kafkalite(settings = "num.partitions=2")
  class TheExtensionFallsBackToTheImage {
    @Test
    void startsTheImageWithTheClassSettings(KafkaliteBroker broker) throws Exception {
      assertTrue(broker.bootstrap().startsWith("127.0.0.1:"), broker.bootstrap());
      assertNull(broker.registryUrl());
      KafkaliteExtensionTest.produce(broker, "leaky", "x");
      assertEquals(2, partitions(broker, "leaky"));  // num.partitions=2 reached the broker in the container
      String waited = broker.controls().waitRecords("leaky", Map.of("count", 1, "timeout_ms", 10_000));
      assertTrue(waited.contains("\"value\": \"x\"") || waited.contains("\"value\":\"x\""), waited);
    }
  }

  @Nested
  class TheContainerModule {
    @Test
    void exposesTheControlsTheExtensionsBrokerHas() throws Exception {
      try (KafkaliteContainer kafka = KafkaliteContainer.fromEnvironment().withConfig("num.partitions", "3")) {
        kafka.start();
        KafkaliteBroker view = new KafkaliteBroker(() -> { }, kafka.getBootstrapServers(), kafka.controls());
        KafkaliteExtensionTest.produce(view, "events", "one");
        assertEquals(3, partitions(view, "events"));
        kafka.controls().waitRecords("events", Map.of("count", 1, "timeout_ms", 10_000));
        kafka.snapshot("one");
        kafka.reset();
        assertFalse(KafkaliteExtensionTest.topics(view).contains("events"));
        kafka.restore("one");
        assertEquals(List.of("one"), KafkaliteExtensionTest.consume(view, "events", 1));
        kafka.controls().setClock("manual");
        long before = nowMs(kafka.controls().clock());
        kafka.advanceClock(Duration.ofHours(1));
        assertEquals(before + 3_600_000, nowMs(kafka.controls().clock()));
        // the controls listen on the container's every address: without the token they refuse
        KafkaliteControls.ControlException refused = assertThrows(KafkaliteControls.ControlException.class,
            () -> new KafkaliteControls(kafka.getControlsUrl(), null).reset());
        assertEquals(401, refused.status);
      }
    }
  }
}
