import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.AcknowledgementCommitCallback;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One share consumer (KafkaShareConsumer, KIP-932) for the share group tests
 * (compat_tests/share/members.py).
 *
 * Arguments are key=value: bootstrap, group, topic, client_id, ack_mode (explicit|implicit), and
 * any consumer setting as config.NAME=VALUE. Prints JSON lines: {"event": "record", "partition",
 * "offset", "key", "value", "delivery_count"}, {"event": "committed", "errors": N},
 * {"event": "closed"}, {"event": "error", "message": ...}. Reads on stdin: "ack OFFSET TYPE"
 * (ACCEPT, RELEASE, REJECT: acknowledges a delivered record, explicit mode), "commit"
 * (commitSync), "close". In explicit mode it polls again only once every delivered record is
 * acknowledged, as KafkaShareConsumer requires.
 */
public class ShareMember {
    /** One JSON event line, from key, value, key, value... */
    private static synchronized void emit(Object... kv) {
        System.out.println(Json.write(Json.map(kv)));
        System.out.flush();
    }

    private static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> cfg = new HashMap<>();
        Properties p = new Properties();
        for (String a : args) {
            int i = a.indexOf('=');
            String k = a.substring(0, i), v = a.substring(i + 1);
            if (k.startsWith("config.")) p.put(k.substring(7), v);
            else cfg.put(k, v);
        }
        boolean explicit = !"implicit".equals(cfg.getOrDefault("ack_mode", "explicit"));
        p.put("bootstrap.servers", cfg.get("bootstrap"));
        p.put("group.id", cfg.get("group"));
        p.put("client.id", cfg.getOrDefault("client_id", "java-share-member"));
        p.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());

        LinkedBlockingQueue<String> commands = GroupMember.stdinCommands();

        TreeMap<Long, ConsumerRecord<byte[], byte[]>> pending = new TreeMap<>();
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(p)) {
            consumer.subscribe(List.of(cfg.get("topic")));
            // every acknowledgement's outcome, whether commitSync or a piggy-backed ShareFetch carried it
            AcknowledgementCommitCallback outcome = (offsets, exception) -> {
                for (Map.Entry<TopicIdPartition, java.util.Set<Long>> e : offsets.entrySet())
                    emit("event", "acknowledged", "partition", e.getKey().partition(),
                         "offsets", new java.util.TreeSet<>(e.getValue()),
                         "error", exception == null ? null : exception.getClass().getSimpleName());
            };
            consumer.setAcknowledgementCommitCallback(outcome);
            while (true) {
                String cmd = pending.isEmpty() ? commands.poll() : commands.poll(100, TimeUnit.MILLISECONDS);
                if (cmd != null) {
                    String[] parts = cmd.split(" ");
                    if (parts[0].equals("close")) break;
                    if (parts[0].equals("ack")) {
                        ConsumerRecord<byte[], byte[]> r = pending.remove(Long.parseLong(parts[1]));
                        if (r == null) {
                            emit("event", "error", "message", "no pending record at " + parts[1]);
                            continue;
                        }
                        consumer.acknowledge(r, AcknowledgeType.valueOf(parts[2]));
                    } else if (parts[0].equals("commit")) {
                        Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync(Duration.ofSeconds(30));
                        long errors = result.values().stream().filter(Optional::isPresent).count();
                        emit("event", "committed", "errors", errors);
                    }
                    continue;
                }
                if (!pending.isEmpty()) continue;
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (explicit) pending.put(r.offset(), r);
                    emit("event", "record", "partition", r.partition(), "offset", r.offset(), "key", text(r.key()),
                         "value", text(r.value()), "delivery_count", r.deliveryCount().map(Short::intValue).orElse(-1));
                }
            }
            consumer.close(Duration.ofSeconds(10));
            emit("event", "closed");
        } catch (Exception e) {
            emit("event", "error", "message", e.getClass().getName() + ": " + e.getMessage());
            e.printStackTrace();
            System.exit(1);
        }
    }
}
