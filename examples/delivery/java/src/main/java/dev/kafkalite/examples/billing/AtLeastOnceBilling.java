package dev.kafkalite.examples.billing;

import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.context.annotation.Profile;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

/**
 * At least once: the listener waits for the invoice's acknowledgement, and the container commits
 * the order's offset after the listener returns (ack mode RECORD); the producer retries, without
 * idempotence or transactions (application-at-least-once.properties). An invoice the broker wrote
 * but whose acknowledgement was lost is sent again and written twice; a failure the listener
 * throws makes the container's error handler deliver the order again.
 */
@Component
@Profile("at-least-once")
public class AtLeastOnceBilling {
  private final KafkaTemplate<String, String> template;

  public AtLeastOnceBilling(KafkaTemplate<String, String> template) {
    this.template = template;
  }

  @KafkaListener(topics = BillingApplication.ORDERS)
  public void bill(ConsumerRecord<String, String> order) throws ExecutionException, InterruptedException {
    template.send(BillingApplication.INVOICES, order.key(), BillingApplication.invoice(order.value())).get();
  }
}
