import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.junit.jupiter.api.RepeatedTest;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.kafka.test.condition.EmbeddedKafkaCondition;
import org.springframework.kafka.test.context.EmbeddedKafka;

/** One EmbeddedKafka (KRaft) broker for the class. It has no reset: a test that must not see the
 * previous one's state deletes its topics and groups through the Admin client first. */
@EmbeddedKafka
class EmbeddedResetCosts {
  @RepeatedTest(Costs.TESTS)
  void reset() throws Exception {
    // the condition's broker of the class (its parameter injection does not reach repetitions)
    EmbeddedKafkaBroker broker = EmbeddedKafkaCondition.getBroker();
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.getBrokersAsString()))) {
      Set<String> topics = admin.listTopics().names().get();
      if (!topics.isEmpty()) admin.deleteTopics(topics).all().get();
      List<String> groups = admin.listGroups().all().get().stream().map(GroupListing::groupId).toList();
      if (!groups.isEmpty()) admin.deleteConsumerGroups(groups).all().get();
    }
    Costs.produceOne(broker.getBrokersAsString());
  }
}
