package dev.kafkalite.examples.billing;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Billing: orders in ({@code {"order_id", "amount"}} keyed by the order id), invoices out
 * ({@code {"order_id", "total"}}, same key). The same consume-transform-produce pipeline written
 * three ways, one Spring profile each, to show which delivery box each one is in
 * (docs/delivery.md):
 *
 * <ul>
 *   <li>{@code at-most-once} ({@link AtMostOnceBilling}): the order's offset is committed before it
 *       is billed, by a producer that does not retry; a refused invoice is given up.
 *   <li>{@code at-least-once} ({@link AtLeastOnceBilling}): the offset is committed after the
 *       invoice is acknowledged, by a retrying producer without idempotence or transactions.
 *   <li>{@code exactly-once} ({@link ExactlyOnceBilling}): a {@code @Transactional} listener in a
 *       container run by Boot's KafkaTransactionManager: the invoice and the consumed offset are
 *       committed in one Kafka transaction.
 * </ul>
 *
 * <p>Run with {@code --spring.profiles.active=exactly-once
 * --spring.kafka.bootstrap-servers=HOST:PORT}. The settings each profile changes are in
 * application-PROFILE.properties; what they share is in application.properties.
 */
@SpringBootApplication
public class BillingApplication {
  public static final String ORDERS = "orders";
  public static final String INVOICES = "invoices";
  public static final String GROUP = "billing";

  private static final JsonMapper JSON = JsonMapper.builder().build();

  public static void main(String[] args) {
    SpringApplication.run(BillingApplication.class, args);
  }

  /** The transform every pipeline applies: an order's invoice, its amount with 20 % tax. */
  static String invoice(String order) {
    JsonNode read = JSON.readTree(order);
    return JSON.createObjectNode()
        .put("order_id", read.get("order_id").asString())
        .put("total", read.get("amount").asDouble() * 1.2)
        .toString();
  }
}
