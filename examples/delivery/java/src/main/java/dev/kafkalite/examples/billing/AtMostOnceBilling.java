package dev.kafkalite.examples.billing;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Profile;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.stereotype.Component;

/**
 * At most once: the listener acknowledges the order first (ack mode MANUAL_IMMEDIATE, so the
 * offset is committed there and then), then sends its invoice with a producer that neither is
 * idempotent nor retries (application-at-most-once.properties). When the broker refuses that
 * Produce (NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER, a closed connection),
 * the application gives up on the invoice, and the order, committed already, is never billed.
 */
@Component
@Profile("at-most-once")
public class AtMostOnceBilling {
  private static final Logger log = LoggerFactory.getLogger(AtMostOnceBilling.class);

  private final KafkaTemplate<String, String> template;
  private final List<String> undelivered = new CopyOnWriteArrayList<>();

  public AtMostOnceBilling(KafkaTemplate<String, String> template) {
    this.template = template;
  }

  @KafkaListener(topics = BillingApplication.ORDERS)
  public void bill(ConsumerRecord<String, String> order, Acknowledgment ack) throws InterruptedException {
    ack.acknowledge();
    try {
      template.send(BillingApplication.INVOICES, order.key(), BillingApplication.invoice(order.value())).get();
    } catch (ExecutionException e) {
      undelivered.add(order.key());
      log.warn("gave up on the invoice of order {}: {}", order.key(), e.getCause().toString());
    }
  }

  /** The orders whose invoice was given up, in the order they were. */
  public List<String> undelivered() {
    return List.copyOf(undelivered);
  }
}
