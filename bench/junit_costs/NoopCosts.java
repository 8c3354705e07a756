import org.junit.jupiter.api.RepeatedTest;

/** The floor: what the test runner itself takes for a test that does nothing. */
class NoopCosts {
  @RepeatedTest(Costs.TESTS)
  void noop() {}
}
