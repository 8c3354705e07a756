import org.junit.jupiter.api.RepeatedTest;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/** An EmbeddedKafka (KRaft) broker of each test's own, started and destroyed in the test. */
class EmbeddedFreshCosts {
  @RepeatedTest(Costs.TESTS)
  void fresh() throws Exception {
    EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 1);
    broker.afterPropertiesSet();
    try {
      Costs.produceOne(broker.getBrokersAsString());
    } finally {
      broker.destroy();
    }
  }
}
