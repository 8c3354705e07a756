import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import dev.kafkalite.junit5.KafkaliteContainer;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.startupcheck.OneShotStartupCheckStrategy;
import org.testcontainers.utility.DockerImageName;

/**
 * kafkalite's image through testcontainers-java: the Java client on the host produces, consumes
 * and runs transactions through the published port; a client container on the same network
 * goes through the internal listener's alias. Prints one JSON object of what it saw:
 *   java ContainerCheck IMAGE CLIENT_IMAGE CLIENT_SCRIPT_FILE
 */
public class ContainerCheck {
    public static void main(String[] args) throws Exception {
        String image = args[0], clientImage = args[1];
        String clientScript = Files.readString(Path.of(args[2]));
        Map<String, Object> out = new LinkedHashMap<>();
        try (Network network = Network.newNetwork();
             KafkaliteContainer kafka = new KafkaliteContainer(image).withNetwork(network)
                     .withInternalAlias("kafka").withConfig("num.partitions", "2")) {
            kafka.start();
            String bootstrap = kafka.getBootstrapServers();
            out.put("bootstrap", bootstrap);
            out.put("internal", kafka.getInternalBootstrapServers());

            try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
                List<Object> nodes = new ArrayList<>();
                for (Node n : admin.describeCluster().nodes().get()) nodes.add(n.host() + ":" + n.port());
                out.put("nodes", nodes);
                admin.createTopics(List.of(new NewTopic("java-txn", 1, (short) 1))).all().get();
            }
            out.put("roundtrip", roundTrip(bootstrap, "java-host"));
            out.put("partitions", partitions(bootstrap, "java-host"));
            out.put("transactions", transactions(bootstrap, "java-txn"));
            out.put("controlsUrl", kafka.getControlsUrl());
            out.put("controls", controls(kafka));

            // a client in another container on the same network, through the alias
            String topic = "java-net-" + UUID.randomUUID().toString().substring(0, 6);
            try (GenericContainer<?> app = new GenericContainer<>(DockerImageName.parse(clientImage))
                    .withNetwork(network)
                    .withCommand("python3", "-c", clientScript, kafka.getInternalBootstrapServers(), topic)
                    .withStartupCheckStrategy(new OneShotStartupCheckStrategy().withTimeout(Duration.ofSeconds(120)))) {
                app.start();  // returns once the container exited with status 0
                String[] lines = app.getLogs().strip().split("\n");
                out.put("client", Json.parse(lines[lines.length - 1]));
            }
            out.put("fromNetwork", consume(bootstrap, topic, 0, 3, "read_uncommitted"));
        }
        System.out.println(Json.write(out));
    }

    /** The clock control with the container's token, and without: {"withToken": [status, body], "without": status}. */
    static Map<String, Object> controls(KafkaliteContainer kafka) throws Exception {
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        java.net.URI clock = java.net.URI.create(kafka.getControlsUrl() + "controls/advance-clock");
        java.net.http.HttpRequest.Builder post = java.net.http.HttpRequest.newBuilder(clock)
                .header("Content-Type", "application/json")
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"ms\": 1000}"));
        java.net.http.HttpResponse<String> with = http.send(
                post.copy().header("Authorization", "Bearer " + kafka.getControlsToken()).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        java.net.http.HttpResponse<String> without = http.send(post.build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("withToken", List.of(with.statusCode(), Json.parse(with.body())));
        out.put("without", without.statusCode());
        return out;
    }

    static Properties producerProps(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return p;
    }

    static List<Object> roundTrip(String bootstrap, String topic) throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap))) {
            for (int i = 0; i < 5; i++) producer.send(new ProducerRecord<>(topic, 0, null, "j" + i)).get();
        }
        return consume(bootstrap, topic, 0, 5, "read_uncommitted");
    }

    static int partitions(String bootstrap, String topic) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
        }
    }

    static Map<String, Object> transactions(String bootstrap, String topic) throws Exception {
        Properties p = producerProps(bootstrap);
        p.put("transactional.id", "java-tc-txn");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 3; i++) producer.send(new ProducerRecord<>(topic, 0, null, "aborted-" + i));
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 3; i++) producer.send(new ProducerRecord<>(topic, 0, null, "committed-" + i));
            producer.commitTransaction();
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("read_committed", consume(bootstrap, topic, 0, 3, "read_committed"));
        r.put("read_uncommitted", consume(bootstrap, topic, 0, 6, "read_uncommitted"));
        return r;
    }

    static List<Object> consume(String bootstrap, String topic, int partition, int count, String isolation) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("isolation.level", isolation);
        p.put("enable.auto.commit", "false");
        List<Object> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, partition);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 30_000;
            while (values.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> rec : consumer.poll(Duration.ofMillis(500))) values.add(rec.value());
            }
            // one more poll: nothing beyond `count` may be visible (aborted records under read_committed)
            for (ConsumerRecord<String, String> rec : consumer.poll(Duration.ofMillis(1000))) values.add(rec.value());
        }
        return values;
    }
}
