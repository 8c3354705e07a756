package dev.kafkalite.examples.billing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.kafkalite.junit5.Kafkalite;
import dev.kafkalite.junit5.KafkaliteBroker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Each billing pipeline over {@link #ORDERS} orders on a kafkalite broker under seeded chaos (the
 * chaos control, restarted with the seed before each run), then the broker's delivery audit of
 * orders against invoices: the at-most-once pipeline loses an order within a few seeds, the
 * at-least-once one duplicates an invoice within a few, and the exactly-once one is exactly once
 * under every seed tried. Each run prints one line: the pipeline, the seed, the audit, the faults.
 */
@Kafkalite(settings = {"num.partitions=3", "group.initial.rebalance.delay.ms=0"})
class BillingUnderChaosTest {
  static final int ORDERS = 30;
  private static final JsonMapper JSON = JsonMapper.builder().build();

  /** What one run saw: the audit, the chaos log, and the orders the application gave up. */
  record Run(String pipeline, long seed, JsonNode audit, JsonNode chaos, List<String> givenUp) {
    String verdict() { return audit.get("verdict").asString(); }

    int count(String field) { return audit.get(field).asInt(); }

    /** billing-out's Produce faults of the given kinds, as "#api_seq KIND" (the error's name where one was answered). */
    List<String> produceFaults(String... kinds) {
      List<String> found = new ArrayList<>();
      for (JsonNode fault : chaos) {
        String kind = fault.get("fault").asString();
        if (fault.get("api").asString().equals("produce") && fault.get("client_id").asString().startsWith("billing-out")
            && List.of(kinds).contains(kind)) {
          found.add("#" + fault.get("api_seq").asInt() + " " + (fault.has("error") ? fault.get("error").asString() : kind));
        }
      }
      return found;
    }

    /** The chaos log counted by API and kind, as "3 faults {produce={drop=1, error=2}}". */
    String faults() {
      Map<String, Map<String, Integer>> byApi = new TreeMap<>();
      for (JsonNode fault : chaos) {
        byApi.computeIfAbsent(fault.get("api").asString(), api -> new TreeMap<>())
            .merge(fault.get("fault").asString(), 1, Integer::sum);
      }
      return chaos.size() + " faults " + byApi;
    }

    @Override
    public String toString() {
      return "billing " + pipeline + " seed " + seed + ": " + verdict() + ", " + count("consumed") + " consumed, "
          + count("produced") + " produced, " + count("lost") + " lost, " + count("duplicated") + " duplicated ("
          + count("extra_copies") + " extra copies); " + faults();
    }
  }

  /** Chaos with `seed` from now, the topics (new to chaos), the orders, the pipeline until the group
   * has committed every order, the application closed, then the audit. */
  static Run run(KafkaliteBroker broker, String pipeline, long seed) throws Exception {
    broker.reset();
    broker.controls().chaos(Map.of("seed", seed));
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.bootstrap()))) {
      admin.createTopics(List.of(new NewTopic(BillingApplication.ORDERS, 3, (short) 1),
          new NewTopic(BillingApplication.INVOICES, 1, (short) 1))).all().get();
    }
    try (var shop = new KafkaProducer<>(Map.<String, Object>of("bootstrap.servers", broker.bootstrap(),
        "client.id", "shop", "enable.idempotence", true, "request.timeout.ms", 3000),
        new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < ORDERS; i++) {
        String id = "o-" + i;
        shop.send(new ProducerRecord<>(BillingApplication.ORDERS, id,
            "{\"order_id\":\"" + id + "\",\"amount\":" + (10 + i) + "}"));
      }
      shop.flush();
    }
    List<String> givenUp = List.of();
    try (ConfigurableApplicationContext app = new SpringApplicationBuilder(BillingApplication.class)
        .profiles(pipeline).properties("spring.kafka.bootstrap-servers=" + broker.bootstrap()).run()) {
      if (pipeline.equals("exactly-once")) {
        // @Transactional is honoured (Boot enabled transaction management for the Kafka manager)
        assertTrue(AopUtils.isAopProxy(app.getBean(ExactlyOnceBilling.class)), "the listener is not transactional");
      }
      broker.controls().waitCommitted(BillingApplication.GROUP, BillingApplication.ORDERS, Map.of("timeout_ms", 90_000));
      if (pipeline.equals("at-most-once")) {
        app.stop();  // the listener's last invoice is sent (or given up) before the list is read
        givenUp = app.getBean(AtMostOnceBilling.class).undelivered();
      }
    }
    JsonNode audit = JSON.readTree(broker.controls().deliveryAudit(BillingApplication.ORDERS,
        BillingApplication.INVOICES, Map.of("group", BillingApplication.GROUP, "match", "$.order_id")));
    Run run = new Run(pipeline, seed, audit, JSON.readTree(broker.controls().chaosLog()), givenUp);
    System.out.println(run);
    return run;
  }

  /** Runs `pipeline` under each seed in turn until `found` holds, and returns that run. */
  static Run firstSeedThat(KafkaliteBroker broker, String pipeline, long[] seeds, Predicate<Run> found)
      throws Exception {
    List<String> tried = new ArrayList<>();
    for (long seed : seeds) {
      Run run = run(broker, pipeline, seed);
      if (found.test(run)) return run;
      tried.add(run.toString());
    }
    return fail("no seed of " + Arrays.toString(seeds) + " showed it: " + tried);
  }

  @Test
  void committingBeforeProcessingLosesAnOrderWhenAProduceIsRefused(KafkaliteBroker broker) throws Exception {
    Run run = firstSeedThat(broker, "at-most-once", new long[] {1, 2, 3, 4, 5}, r -> r.count("lost") > 0);
    assertEquals("at most once", run.verdict(), run.audit().toString());
    assertEquals(ORDERS, run.count("consumed"), run.audit().toString());
    assertEquals(0, run.count("duplicated"), run.audit().toString());
    // each Produce of billing-out the broker refused (not written, not retried) is one order lost,
    // and the application gave up on it; one whose acknowledgement was dropped was given up too,
    // but its invoice is written: the audit counts what the log holds, not what the application believed
    List<String> refused = run.produceFaults("error", "close", "unknown_topic");
    assertEquals(refused.size(), run.count("lost"), run + "; refused " + refused);
    for (JsonNode lost : run.audit().get("lost_examples")) {
      assertTrue(run.givenUp().contains(lost.get("id").asString()), lost + " not in " + run.givenUp());
    }
    System.out.println("  refused Produce requests of billing-out: " + refused + ", dropped acknowledgements: "
        + run.produceFaults("drop") + "; orders given up: " + run.givenUp());
  }

  @Test
  void committingAfterProducingWithoutIdempotenceDuplicatesWhenAnAcknowledgementIsLost(KafkaliteBroker broker)
      throws Exception {
    Run run = firstSeedThat(broker, "at-least-once", new long[] {1, 2, 3, 4, 5}, r -> r.count("duplicated") > 0);
    assertEquals("at least once", run.verdict(), run.audit().toString());
    assertEquals(0, run.count("lost"), run.audit().toString());
    assertFalse(run.produceFaults("drop").isEmpty(), run.chaos().toString());
    System.out.println("  dropped Produce acknowledgements of billing-out: " + run.produceFaults("drop"));
  }

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2, 3})
  void theTransactionalListenerIsExactlyOnce(long seed, KafkaliteBroker broker) throws Exception {
    Run run = run(broker, "exactly-once", seed);
    assertEquals("exactly once", run.verdict(), run.toString());
    assertEquals(List.of(ORDERS, ORDERS, 0, 0),
        List.of(run.count("consumed"), run.count("produced"), run.count("lost"), run.count("duplicated")), run.toString());
    assertFalse(run.chaos().isEmpty(), "seed " + seed + " injected no fault");
  }
}
