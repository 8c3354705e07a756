import dev.kafkalite.junit5.Kafkalite;
import dev.kafkalite.junit5.KafkaliteBroker;
import org.junit.jupiter.api.RepeatedTest;

/** One broker for the class, reset by the extension before each test (the reset is in the test's time). */
@Kafkalite
class KafkaliteResetCosts {
  @RepeatedTest(Costs.TESTS)
  void reset(KafkaliteBroker broker) throws Exception {
    Costs.produceOne(broker.bootstrap());
  }
}
