import dev.kafkalite.junit5.Kafkalite;
import dev.kafkalite.junit5.KafkaliteBroker;
import org.junit.jupiter.api.RepeatedTest;

/** A broker of each test's own (perTest): started before the test, stopped when it ends. */
@Kafkalite(perTest = true)
class KafkaliteFreshCosts {
  @RepeatedTest(Costs.TESTS)
  void fresh(KafkaliteBroker broker) throws Exception {
    Costs.produceOne(broker.bootstrap());
  }
}
