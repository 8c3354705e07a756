import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The Java Admin client's streams-group calls (KIP-1071), in order with one client:
 * {@code StreamsAdmin BOOTSTRAP GROUP OP...}, each OP one of list (listGroups for streams groups),
 * describe (describeStreamsGroups), offsets (listStreamsGroupOffsets), delete
 * (deleteStreamsGroups). Prints one JSON line per OP: {"result": ...} or {"error": {"type", "message"}}.
 */
public class StreamsAdmin {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        String group = args[1];
        ObjectMapper json = new ObjectMapper();
        try (Admin admin = Admin.create(props)) {
            for (int i = 2; i < args.length; i++) {
                Map<String, Object> out = new LinkedHashMap<>();
                try {
                    out.put("result", run(admin, args[i], group));
                } catch (Exception e) {
                    Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
                    out.put("error", Map.of("type", cause.getClass().getName(), "message", String.valueOf(cause.getMessage())));
                }
                System.out.println(json.writeValueAsString(out));
            }
        }
    }

    static Object run(Admin admin, String op, String group) throws Exception {
        switch (op) {
            case "list": {
                List<Object> groups = new ArrayList<>();
                for (GroupListing g : admin.listGroups(ListGroupsOptions.forStreamsGroups()).all().get()) {
                    groups.add(Map.of("group_id", g.groupId(), "type", String.valueOf(g.type().orElse(null)),
                            "protocol", g.protocol(), "state", String.valueOf(g.groupState().orElse(null))));
                }
                return groups;
            }
            case "describe": {
                StreamsGroupDescription d = admin.describeStreamsGroups(List.of(group)).all().get().get(group);
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("state", d.groupState().toString());
                m.put("group_epoch", d.groupEpoch());
                m.put("target_assignment_epoch", d.targetAssignmentEpoch());
                m.put("topology_epoch", d.topologyEpoch());
                List<Object> subs = new ArrayList<>();
                for (StreamsGroupSubtopologyDescription s : d.subtopologies()) {
                    subs.add(Map.of("id", s.subtopologyId(), "source_topics", s.sourceTopics(),
                            "repartition_sink_topics", s.repartitionSinkTopics(),
                            "changelog_topics", s.stateChangelogTopics().keySet(),
                            "repartition_source_topics", s.repartitionSourceTopics().keySet()));
                }
                m.put("subtopologies", subs);
                List<Object> members = new ArrayList<>();
                for (StreamsGroupMemberDescription mem : d.members()) {
                    Map<String, Object> x = new LinkedHashMap<>();
                    x.put("member_id", mem.memberId());
                    x.put("member_epoch", mem.memberEpoch());
                    x.put("process_id", mem.processId());
                    x.put("client_id", mem.clientId());
                    x.put("active", tasks(mem.assignment().activeTasks()));
                    x.put("standby", tasks(mem.assignment().standbyTasks()));
                    x.put("target_active", tasks(mem.targetAssignment().activeTasks()));
                    members.add(x);
                }
                m.put("members", members);
                return m;
            }
            case "offsets": {
                Map<TopicPartition, OffsetAndMetadata> offsets = admin.listStreamsGroupOffsets(
                        Map.of(group, new ListStreamsGroupOffsetsSpec())).partitionsToOffsetAndMetadata(group).get();
                Map<String, Object> m = new LinkedHashMap<>();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                    m.put(e.getKey().topic() + ":" + e.getKey().partition(), e.getValue() == null ? null : e.getValue().offset());
                }
                return m;
            }
            case "delete":
                admin.deleteStreamsGroups(List.of(group)).all().get();
                return "deleted";
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static List<String> tasks(List<StreamsGroupMemberAssignment.TaskIds> ids) {
        List<String> out = new ArrayList<>();
        for (StreamsGroupMemberAssignment.TaskIds t : ids) {
            for (Integer p : t.partitions()) out.add(t.subtopologyId() + "_" + p);
        }
        return out;
    }
}
