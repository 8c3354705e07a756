import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kafkalite.junit5.Kafkalite;
import dev.kafkalite.junit5.KafkaliteBroker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Kafka Streams exactly-once (exactly_once_v2) application tested with {@code @Kafkalite}: the
 * clicks of each user counted into click-counts, with a fault injected through the broker's
 * controls while it runs, and the output read read_committed to check each click counted once.
 *
 * <p>Both tests use the same application id and topics, as the tests of one application do: what
 * keeps the second from finding the first's committed offsets, changelog and output is the reset
 * the extension runs before each test.
 */
@Kafkalite(settings = {"num.partitions=2", "group.initial.rebalance.delay.ms=0"})
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CountEosTest {
  static final String APPLICATION_ID = "click-counter";
  static final String INPUT = "clicks";
  static final String OUTPUT = "click-counts";
  static final String STORE = "counts";
  static final int USERS = 6;
  static final int CLICKS_PER_USER = 10;
  static final Duration WAIT = Duration.ofSeconds(60);
  static final Pattern ABORTED = Pattern.compile("\"transaction\":\\s*\"aborted\"");

  @TempDir Path stateDir;

  static Topology topology() {
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(INPUT, Consumed.with(Serdes.String(), Serdes.String()))
        .groupByKey()
        .count(Materialized.as(STORE))
        .toStream()
        .to(OUTPUT, Produced.with(Serdes.String(), Serdes.Long()));
    return builder.build();
  }

  KafkaStreams streams(KafkaliteBroker broker) {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, APPLICATION_ID);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    // every update of a count is sent, so the output of a user is exactly 1, 2, ... n
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    return new KafkaStreams(topology(), p);
  }

  /** Creates the topics and writes CLICKS_PER_USER clicks of each user, users interleaved. */
  static void clicks(KafkaliteBroker broker) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.bootstrap()))) {
      admin.createTopics(List.of(new NewTopic(INPUT, 2, (short) 1), new NewTopic(OUTPUT, 2, (short) 1))).all().get();
    }
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(
        Map.of("bootstrap.servers", broker.bootstrap(), "enable.idempotence", true),
        new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < USERS * CLICKS_PER_USER; i++) {
        producer.send(new ProducerRecord<>(INPUT, "user-" + i % USERS, "page-" + i));
      }
      producer.flush();
    }
  }

  /** Runs the application until its committed offsets reach the end of the input, then closes it.
   * Its offsets commit in the transactions of its output, so all of its output is committed then. */
  void runToTheEnd(KafkaliteBroker broker) {
    try (KafkaStreams streams = streams(broker)) {
      streams.start();
      broker.controls().waitCommitted(APPLICATION_ID, INPUT, Map.of("timeout_ms", WAIT.toMillis()));
      streams.close(WAIT);
    }
  }

  /** The counts each user got, in the order of the output, read read_committed to the end. */
  static Map<String, List<Long>> committedCounts(KafkaliteBroker broker) {
    Map<String, List<Long>> counts = new TreeMap<>();
    try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(
        Map.of("bootstrap.servers", broker.bootstrap(), "isolation.level", "read_committed"),
        new StringDeserializer(), new LongDeserializer())) {
      List<TopicPartition> partitions = List.of(new TopicPartition(OUTPUT, 0), new TopicPartition(OUTPUT, 1));
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      // under read_committed the end offsets are the last stable offsets
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
      long deadline = System.currentTimeMillis() + WAIT.toMillis();
      while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
        assertTrue(System.currentTimeMillis() < deadline, "the output was not read to its end in " + WAIT);
        for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
          counts.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
        }
      }
    }
    return counts;
  }

  static Map<String, List<Long>> eachClickCountedOnce() {
    List<Long> once = LongStream.rangeClosed(1, CLICKS_PER_USER).boxed().collect(Collectors.toList());
    Map<String, List<Long>> expected = new TreeMap<>();
    for (int u = 0; u < USERS; u++) expected.put("user-" + u, once);
    return expected;
  }

  @Test
  @Order(1)
  void aFailedOffsetCommitAbortsTheTransactionAndTheClicksAreCountedOnce(KafkaliteBroker broker) throws Exception {
    clicks(broker);
    // the application's first offset commit is refused as a group the member left would refuse
    // it: the producer aborts the transaction, Streams closes its tasks dirty, rejoins, and
    // processes again from the last committed offsets; what the aborted transaction wrote must
    // not reach a read_committed reader
    broker.controls().failRequests("TxnOffsetCommit", "UNKNOWN_MEMBER_ID", Map.of("count", 1));
    runToTheEnd(broker);
    assertEquals("[]", broker.controls().listFaults(), "the application never committed offsets");
    // Streams flushes its sends before it commits offsets, so the aborted transaction's counts are
    // in the log: a reader that did not skip them would see some clicks counted twice
    String log = broker.controls().records(OUTPUT, Map.of("max", 10_000));
    assertTrue(ABORTED.matcher(log).find(), "no aborted transaction in " + OUTPUT);
    assertEquals(eachClickCountedOnce(), committedCounts(broker));
  }

  @Test
  @Order(2)
  void afterTheResetAFailedProduceIsRetriedAndTheClicksAreCountedOnce(KafkaliteBroker broker) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.bootstrap()))) {
      Set<String> topics = admin.listTopics().names().get();
      assertFalse(topics.contains(INPUT) || topics.contains(APPLICATION_ID + "-" + STORE + "-changelog"),
          "the previous test's topics leaked: " + topics);
      assertTrue(admin.listGroups().all().get().isEmpty(), "the previous test's group leaked");
    }
    clicks(broker);
    // two writes of counts answered with a retriable error: the transactional producer retries
    // them with the same sequence numbers, so none is written twice
    broker.controls().failRequests("Produce", "NOT_ENOUGH_REPLICAS", Map.of("count", 2, "topic", OUTPUT));
    runToTheEnd(broker);
    assertEquals("[]", broker.controls().listFaults(), "the application never wrote its counts");
    assertEquals(eachClickCountedOnce(), committedCounts(broker));
  }
}
