package dev.kafkalite.junit5;

import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Starts a kafkalite broker for the test class and injects it as a {@link KafkaliteBroker}
 * parameter (of a test, a constructor or a lifecycle method). Before each test the broker is
 * reset (topics, groups, offsets, transactions, ACLs, faults), unless {@link #reset()} is false;
 * with {@link #perTest()} each test gets a broker of its own instead.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@ExtendWith(KafkaliteExtension.class)
public @interface Kafkalite {
  /** Broker settings by Kafka's names, as "key=value" ("num.partitions=3"). */
  String[] settings() default {};

  /** Node ids in the one process, each on its own port. */
  int nodes() default 1;

  /** A seed file (topics, records, offsets, ACLs, users) loaded before the broker is ready. */
  String seed() default "";

  /** Other options of the kafkalite command, as they are. */
  String[] args() default {};

  /** Reset the broker before each test. */
  boolean reset() default true;

  /** A fresh broker for each test instead of one for the class. */
  boolean perTest() default false;
}
