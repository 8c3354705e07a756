import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Group administration through the Java Admin client, for the group tests.
 *
 * Arguments: bootstrap=HOST:PORT op=list|describe|delete|offsets group=ID. Prints one JSON line:
 * list: {"groups": {"id": ["type", "state"]}}; describe: {"state", "type", "assignor",
 * "members": [{"client_id", "partitions": [...]}]}; delete: {"deleted": true};
 * offsets: {"offsets": {"topic:partition": offset}}; or {"error": "..."}.
 */
public class GroupAdmin {
    private static String q(String s) {
        return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> cfg = Args.parse(args);
        Properties p = new Properties();
        p.put("bootstrap.servers", cfg.get("bootstrap"));
        p.put("default.api.timeout.ms", "20000");
        p.put("request.timeout.ms", "15000");
        String group = cfg.get("group");
        try (Admin admin = Admin.create(p)) {
            String out;
            switch (cfg.get("op")) {
                case "list": {
                    List<String> parts = new ArrayList<>();
                    for (GroupListing g : admin.listGroups().all().get()) {
                        parts.add(q(g.groupId()) + ": [" + q(g.type().map(Object::toString).orElse(""))
                            + ", " + q(g.groupState().map(Object::toString).orElse("")) + "]");
                    }
                    out = "{\"groups\": {" + String.join(", ", parts) + "}}";
                    break;
                }
                case "describe": {
                    ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                    List<String> members = new ArrayList<>();
                    for (MemberDescription m : d.members()) {
                        List<Integer> ps = new ArrayList<>();
                        for (TopicPartition tp : m.assignment().topicPartitions()) ps.add(tp.partition());
                        ps.sort(null);
                        members.add("{\"client_id\": " + q(m.clientId()) + ", \"partitions\": " + ps + "}");
                    }
                    out = "{\"state\": " + q(d.groupState().toString()) + ", \"type\": " + q(d.type().toString())
                        + ", \"assignor\": " + q(d.partitionAssignor()) + ", \"members\": [" + String.join(", ", members) + "]}";
                    break;
                }
                case "delete":
                    admin.deleteConsumerGroups(List.of(group)).all().get();
                    out = "{\"deleted\": true}";
                    break;
                case "offsets": {
                    Map<TopicPartition, OffsetAndMetadata> offs =
                        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                    Map<String, Long> sorted = new TreeMap<>();
                    offs.forEach((tp, om) -> sorted.put(tp.topic() + ":" + tp.partition(), om == null ? -1 : om.offset()));
                    List<String> parts = new ArrayList<>();
                    sorted.forEach((k, v) -> parts.add(q(k) + ": " + v));
                    out = "{\"offsets\": {" + String.join(", ", parts) + "}}";
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown op " + cfg.get("op"));
            }
            System.out.println(out);
        } catch (Exception e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            System.out.println("{\"error\": " + q(c.getClass().getSimpleName() + ": " + c.getMessage()) + "}");
        }
    }
}
