import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.LinkedBlockingQueue;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One consumer-group member for the group tests (compat_tests/groups/members.py).
 *
 * Arguments are key=value: bootstrap, group, topic, protocol (classic|consumer), instance_id,
 * session_timeout_ms, heartbeat_interval_ms, assignor, client_id, request_timeout_ms, isolation (isolation.level),
 * report_commit_failures (a failed commitSync is an event, {"event": "commit_failed"}, not the end). Prints JSON lines
 * ({"event": "assigned", "partitions": [...]}, {"event": "record", ...}, {"event": "committed"},
 * {"event": "closed"}, {"event": "error", "message": ...}); reads "commit" / "close" on stdin.
 */
public class GroupMember {
    private static final TreeSet<Integer> assigned = new TreeSet<>();

    private static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    private static void emitAssignment() {
        emit("{\"event\": \"assigned\", \"partitions\": " + assigned.toString() + "}");
    }

    /** The lines read on stdin, trimmed, on a daemon thread; "close" once stdin closes. (ShareMember too.) */
    static LinkedBlockingQueue<String> stdinCommands() {
        LinkedBlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) commands.add(line.trim());
            } catch (Exception e) {
                // stdin closed
            }
            commands.add("close");
        });
        reader.setDaemon(true);
        reader.start();
        return commands;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> cfg = Args.parse(args);
        Properties p = new Properties();
        p.put("bootstrap.servers", cfg.get("bootstrap"));
        p.put("group.id", cfg.get("group"));
        p.put("client.id", cfg.getOrDefault("client_id", "java-member"));
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("metadata.max.age.ms", "1000");
        String protocol = cfg.getOrDefault("protocol", "classic");
        p.put("group.protocol", protocol);
        if (protocol.equals("consumer")) {
            if (cfg.containsKey("assignor")) p.put("group.remote.assignor", cfg.get("assignor"));
        } else {
            p.put("session.timeout.ms", cfg.getOrDefault("session_timeout_ms", "6000"));
            p.put("heartbeat.interval.ms", cfg.getOrDefault("heartbeat_interval_ms", "500"));
            if (cfg.containsKey("assignor")) p.put("partition.assignment.strategy", cfg.get("assignor"));
        }
        if (cfg.containsKey("instance_id")) p.put("group.instance.id", cfg.get("instance_id"));
        if (cfg.containsKey("request_timeout_ms")) p.put("request.timeout.ms", cfg.get("request_timeout_ms"));
        if (cfg.containsKey("isolation")) p.put("isolation.level", cfg.get("isolation"));

        boolean reportCommitFailures = cfg.containsKey("report_commit_failures");
        LinkedBlockingQueue<String> commands = stdinCommands();

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(cfg.get("topic")), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                    for (TopicPartition tp : parts) assigned.remove(tp.partition());
                    emitAssignment();
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    for (TopicPartition tp : parts) assigned.add(tp.partition());
                    emitAssignment();
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> parts) {
                    onPartitionsRevoked(parts);
                }
            });
            while (true) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(50));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    String value = r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8);
                    emit("{\"event\": \"record\", \"partition\": " + r.partition() + ", \"offset\": " + r.offset()
                        + ", \"value\": " + quote(value) + "}");
                }
                String cmd = commands.poll();
                if (cmd == null) continue;
                if (cmd.equals("commit")) {
                    try {
                        consumer.commitSync(Duration.ofSeconds(20));
                    } catch (CommitFailedException e) {
                        if (!reportCommitFailures) throw e;
                        // an application that goes on after a failed commit (a stale member epoch)
                        emit("{\"event\": \"commit_failed\", \"message\": " + quote(e.toString()) + "}");
                        continue;
                    }
                    emit("{\"event\": \"committed\"}");
                } else if (cmd.equals("close")) {
                    break;
                }
            }
        } catch (Exception e) {
            emit("{\"event\": \"error\", \"message\": " + quote(e.toString()) + "}");
            System.exit(1);
        }
        emit("{\"event\": \"closed\"}");
    }
}
