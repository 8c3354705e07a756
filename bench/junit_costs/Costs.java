import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/** What every measured test does, whichever broker it has: one record produced with a producer of
 * its own, as a test of an application would. bench/helper_costs.py rewrites TESTS (--tests). */
final class Costs {
  static final int TESTS = 10;
  /** The line the bench times the first test by: printed once, when a test has produced. */
  static final String FIRST_TEST_DONE = "junit-costs: first test done";
  private static final AtomicBoolean FIRST = new AtomicBoolean();

  private Costs() {}

  static void produceOne(String bootstrap) throws Exception {
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of("bootstrap.servers", bootstrap),
        new StringSerializer(), new StringSerializer())) {
      producer.send(new ProducerRecord<>("t", "v")).get();
    }
    if (FIRST.compareAndSet(false, true)) {
      System.out.println(FIRST_TEST_DONE);
      System.out.flush();
    }
  }
}
