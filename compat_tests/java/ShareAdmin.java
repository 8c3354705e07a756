import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;

/** The Admin client's share group calls (KIP-932), as AdminCommand operations. */
final class ShareAdmin {
    private ShareAdmin() {}

    /** listShareGroups: {"groups": [{"group_id", "type", "protocol", "state"}]} */
    static Object listShareGroups(Admin admin, Map<String, Object> args) throws Exception {
        List<Object> out = new ArrayList<>();
        for (GroupListing g : admin.listGroups(ListGroupsOptions.forShareGroups()).all().get()) {
            out.add(Json.map("group_id", g.groupId(), "type", g.type().map(Object::toString).orElse(null),
                    "protocol", g.protocol(), "state", g.groupState().map(Object::toString).orElse(null)));
        }
        return out;
    }

    /** describeShareGroups(groups): {group: {"state", "group_epoch", "assignment_epoch", "members": [...]}} */
    static Object describeShareGroups(Admin admin, Map<String, Object> args) throws Exception {
        List<String> ids = new ArrayList<>();
        for (Object o : Json.list(args.get("groups"))) ids.add((String) o);
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<String, ShareGroupDescription> e : admin.describeShareGroups(ids).all().get().entrySet()) {
            ShareGroupDescription d = e.getValue();
            List<Object> members = new ArrayList<>();
            for (ShareMemberDescription m : d.members()) {
                List<Object> tps = new ArrayList<>();
                for (TopicPartition tp : m.assignment().topicPartitions()) tps.add(tp.topic() + "-" + tp.partition());
                tps.sort(null);
                members.add(Json.map("member_id", m.consumerId(), "client_id", m.clientId(), "epoch", m.memberEpoch(),
                        "assignment", tps));
            }
            out.put(e.getKey(), Json.map("state", d.groupState().toString(), "group_epoch", d.groupEpoch(),
                    "assignment_epoch", d.targetAssignmentEpoch(), "members", members));
        }
        return out;
    }

    /** listShareGroupOffsets(group, topic, partitions): {"P": {"start_offset", "lag"}} */
    static Object listShareGroupOffsets(Admin admin, Map<String, Object> args) throws Exception {
        String group = (String) args.get("group");
        List<TopicPartition> tps = new ArrayList<>();
        for (Object p : Json.list(args.get("partitions"))) tps.add(new TopicPartition((String) args.get("topic"), ((Number) p).intValue()));
        Map<String, ListShareGroupOffsetsSpec> spec = Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(tps));
        Map<String, Object> out = new TreeMap<>();
        Map<TopicPartition, SharePartitionOffsetInfo> got = admin.listShareGroupOffsets(spec).partitionsToOffsetInfo(group).get();
        for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : got.entrySet()) {
            SharePartitionOffsetInfo i = e.getValue();
            out.put(String.valueOf(e.getKey().partition()), i == null ? null
                    : Json.map("start_offset", i.startOffset(), "lag", i.lag().orElse(null)));
        }
        return out;
    }

    /** alterShareGroupOffsets(group, topic, offsets: {"P": offset}) */
    static Object alterShareGroupOffsets(Admin admin, Map<String, Object> args) throws Exception {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (Map.Entry<String, Object> e : Json.obj(args.get("offsets")).entrySet())
            offsets.put(new TopicPartition((String) args.get("topic"), Integer.parseInt(e.getKey())), ((Number) e.getValue()).longValue());
        admin.alterShareGroupOffsets((String) args.get("group"), offsets).all().get();
        return null;
    }

    /** deleteShareGroupOffsets(group, topics) */
    static Object deleteShareGroupOffsets(Admin admin, Map<String, Object> args) throws Exception {
        HashSet<String> topics = new HashSet<>();
        for (Object o : Json.list(args.get("topics"))) topics.add((String) o);
        admin.deleteShareGroupOffsets((String) args.get("group"), topics).all().get();
        return null;
    }

    /** deleteShareGroups(groups) */
    static Object deleteShareGroups(Admin admin, Map<String, Object> args) throws Exception {
        List<String> ids = new ArrayList<>();
        for (Object o : Json.list(args.get("groups"))) ids.add((String) o);
        admin.deleteShareGroups(ids).all().get();
        return null;
    }
}
