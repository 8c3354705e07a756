package dev.kafkalite.examples.billing;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.context.annotation.Profile;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * Exactly once: spring.kafka.producer.transaction-id-prefix (application-exactly-once.properties)
 * makes Boot configure a KafkaTransactionManager and run the listener container with it: each
 * delivery begins a Kafka transaction, the invoice is sent in it, and the container sends the
 * consumed offset to it (sendOffsetsToTransaction) before it commits. A failure anywhere aborts
 * both, and the container's after-rollback processor seeks back so the order is read again; the
 * consumer reads read_committed. {@code @Transactional} with the same manager joins the
 * container's transaction (the listener's own work, here the send, would otherwise start one).
 */
@Component
@Profile("exactly-once")
public class ExactlyOnceBilling {
  private final KafkaTemplate<String, String> template;

  public ExactlyOnceBilling(KafkaTemplate<String, String> template) {
    this.template = template;
  }

  @KafkaListener(topics = BillingApplication.ORDERS)
  @Transactional("kafkaTransactionManager")
  public void bill(ConsumerRecord<String, String> order) {
    template.send(BillingApplication.INVOICES, order.key(), BillingApplication.invoice(order.value()));
  }
}
