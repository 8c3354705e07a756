package springeos;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.annotation.Bean;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultAfterRollbackProcessor;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.stereotype.Component;
import org.springframework.util.backoff.FixedBackOff;

/**
 * A Spring Boot application (no web server) with Spring for Apache Kafka's transactions, started
 * with --spring.kafka.bootstrap-servers=HOST:PORT and the topic names as app.* properties.
 *
 * - A transactional KafkaTemplate (spring.kafka.producer.transaction-id-prefix): at start-up one
 *   transaction of three records to app.events is committed and one is rolled back.
 * - A @KafkaListener on app.in whose container runs each delivery in a Kafka transaction (Boot's
 *   KafkaTransactionManager): it produces the upper-cased value to app.out, and the consumed offset
 *   goes to the same transaction. For a value starting with "fail" it throws after producing, so
 *   the transaction rolls back; DefaultAfterRollbackProcessor retries twice, then its
 *   DeadLetterPublishingRecoverer publishes the record to app.in-dlt and commits its offset, in one
 *   transaction.
 * - A @KafkaListener on app.plain in a container without transactions, whose DefaultErrorHandler
 *   retries a "poison" record twice and then has a DeadLetterPublishingRecoverer publish it to
 *   app.plain-dlt.
 *
 * Prints one JSON line per event on stdout: ready, each listener attempt, closed.
 */
@SpringBootApplication
public class SpringEosApp {
    static final Map<String, AtomicInteger> ATTEMPTS = new ConcurrentHashMap<>();

    public static void main(String[] args) {
        SpringApplication app = new SpringApplication(SpringEosApp.class);
        app.setWebApplicationType(WebApplicationType.NONE);
        Map<String, Object> defaults = new HashMap<>();
        defaults.put("spring.main.banner-mode", "off");
        defaults.put("spring.kafka.producer.transaction-id-prefix", "spring-eos-");
        defaults.put("spring.kafka.producer.acks", "all");
        defaults.put("spring.kafka.consumer.isolation-level", "read_committed");
        defaults.put("spring.kafka.consumer.auto-offset-reset", "earliest");
        defaults.put("spring.kafka.consumer.enable-auto-commit", "false");
        app.setDefaultProperties(defaults);
        // The driving test holds our stdin: if it goes away, so do we (Spring's shutdown hook closes
        // the context).
        Thread watch = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (java.io.IOException ignored) {
            }
            System.exit(0);
        }, "stdin-watch");
        watch.setDaemon(true);
        watch.start();
        app.run(args);
    }

    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static void attempt(String listener, ConsumerRecord<String, String> rec) {
        int n = ATTEMPTS.computeIfAbsent(listener + "/" + rec.value(), k -> new AtomicInteger()).incrementAndGet();
        emit("{\"event\":\"attempt\",\"listener\":\"" + listener + "\",\"value\":\"" + rec.value()
                + "\",\"partition\":" + rec.partition() + ",\"offset\":" + rec.offset() + ",\"n\":" + n + "}");
    }

    /** Transactional container (Boot's factory): failed deliveries roll back, then go to the DLT. */
    @Bean
    DefaultAfterRollbackProcessor<Object, Object> afterRollbackProcessor(KafkaTemplate<Object, Object> template,
                                                                        @Value("${app.in-dlt}") String dlt) {
        DeadLetterPublishingRecoverer recoverer =
                new DeadLetterPublishingRecoverer(template, (rec, ex) -> new TopicPartition(dlt, -1));
        return new DefaultAfterRollbackProcessor<>(recoverer, new FixedBackOff(100L, 2L), template, true);
    }

    /** A container without transactions: DefaultErrorHandler retries, then publishes to the DLT. */
    @Bean
    ConcurrentKafkaListenerContainerFactory<Object, Object> plainFactory(ConsumerFactory<Object, Object> consumers,
                                                                        KafkaTemplate<Object, Object> template,
                                                                        @Value("${app.plain-dlt}") String dlt) {
        ConcurrentKafkaListenerContainerFactory<Object, Object> factory = new ConcurrentKafkaListenerContainerFactory<>();
        factory.setConsumerFactory(consumers);
        DeadLetterPublishingRecoverer recoverer =
                new DeadLetterPublishingRecoverer(template, (rec, ex) -> new TopicPartition(dlt, -1));
        factory.setCommonErrorHandler(new DefaultErrorHandler(recoverer, new FixedBackOff(100L, 2L)));
        return factory;
    }

    @Bean
    CommandLineRunner publishEvents(KafkaTemplate<String, String> template, @Value("${app.events}") String events) {
        return args -> {
            template.executeInTransaction(t -> {
                for (int i = 1; i <= 3; i++) t.send(events, "start", "started-" + i);
                return null;
            });
            try {
                template.executeInTransaction(t -> {
                    t.send(events, "start", "aborted-1");
                    t.flush();
                    throw new IllegalStateException("rolled back on purpose");
                });
            } catch (IllegalStateException expected) {
                emit("{\"event\":\"rolled_back\"}");
            }
        };
    }

    @EventListener(ApplicationReadyEvent.class)
    public void ready() {
        emit("{\"event\":\"ready\"}");
    }

    @EventListener(ContextClosedEvent.class)
    public void closed() {
        emit("{\"event\":\"closed\"}");
    }

    @Component
    static class Listeners {
        private final KafkaTemplate<String, String> template;
        private final String out;

        Listeners(KafkaTemplate<String, String> template, @Value("${app.out}") String out) {
            this.template = template;
            this.out = out;
        }

        @KafkaListener(id = "tx-listener", topics = "${app.in}", groupId = "${app.group}")
        public void transform(ConsumerRecord<String, String> rec) {
            attempt("tx", rec);
            template.send(out, rec.key(), rec.value().toUpperCase());
            if (rec.value().startsWith("fail")) {
                template.flush();  // the record is in the log, inside the transaction about to abort
                throw new IllegalStateException("refused after producing " + rec.value());
            }
        }

        @KafkaListener(id = "plain-listener", topics = "${app.plain}", groupId = "${app.group}-plain",
                       containerFactory = "plainFactory")
        public void plain(ConsumerRecord<String, String> rec) {
            attempt("plain", rec);
            if (rec.value().equals("poison")) throw new IllegalArgumentException("cannot handle " + rec.value());
        }
    }
}
