import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;

/** The Admin client's feature and metadata-quorum calls (KIP-584, KIP-595), as AdminCommand operations. */
final class ClusterAdmin {
    private ClusterAdmin() {}

    /** describeFeatures: {"finalized": {name: [min, max]}, "supported": {name: [min, max]}, "epoch"} */
    static Object describeFeatures(Admin admin, Map<String, Object> args) throws Exception {
        FeatureMetadata md = admin.describeFeatures().featureMetadata().get();
        Map<String, Object> finalized = new TreeMap<>();
        for (Map.Entry<String, FinalizedVersionRange> e : md.finalizedFeatures().entrySet()) {
            finalized.put(e.getKey(), List.of(e.getValue().minVersionLevel(), e.getValue().maxVersionLevel()));
        }
        Map<String, Object> supported = new TreeMap<>();
        for (Map.Entry<String, SupportedVersionRange> e : md.supportedFeatures().entrySet()) {
            supported.put(e.getKey(), List.of(e.getValue().minVersion(), e.getValue().maxVersion()));
        }
        return Json.map("finalized", finalized, "supported", supported, "epoch", md.finalizedFeaturesEpoch().orElse(-1L));
    }

    /** updateFeatures(updates: {name: [level, "UPGRADE"|"SAFE_DOWNGRADE"|"UNSAFE_DOWNGRADE"]}, validate_only) */
    static Object updateFeatures(Admin admin, Map<String, Object> args) throws Exception {
        Map<String, FeatureUpdate> updates = new HashMap<>();
        for (Map.Entry<String, Object> e : Json.obj(args.get("updates")).entrySet()) {
            List<Object> u = Json.list(e.getValue());
            updates.put(e.getKey(), new FeatureUpdate(((Number) u.get(0)).shortValue(),
                    FeatureUpdate.UpgradeType.valueOf((String) u.get(1))));
        }
        admin.updateFeatures(updates, new UpdateFeaturesOptions().validateOnly(Boolean.TRUE.equals(args.get("validate_only"))))
                .all().get();
        return "ok";
    }

    /** describeMetadataQuorum: {"leader", "epoch", "high_watermark", "voters": [ids], "observers": [ids], "nodes": {id: [endpoints]}} */
    static Object describeMetadataQuorum(Admin admin, Map<String, Object> args) throws Exception {
        QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get();
        List<Object> voters = new ArrayList<>();
        for (QuorumInfo.ReplicaState r : q.voters()) voters.add(r.replicaId());
        List<Object> observers = new ArrayList<>();
        for (QuorumInfo.ReplicaState r : q.observers()) observers.add(r.replicaId());
        Map<String, Object> nodes = new TreeMap<>();
        for (Map.Entry<Integer, QuorumInfo.Node> e : q.nodes().entrySet()) {
            List<Object> endpoints = new ArrayList<>();
            for (var ep : e.getValue().endpoints()) endpoints.add(ep.listener());
            nodes.put(String.valueOf(e.getKey()), endpoints);
        }
        return Json.map("leader", q.leaderId(), "epoch", q.leaderEpoch(), "high_watermark", q.highWatermark(),
                "voters", voters, "observers", observers, "nodes", nodes);
    }

    /** electLeaders(type: "PREFERRED"|"UNCLEAN", partitions: [[topic, p]] or null): {"topic-p": error name or "NONE"} */
    static Object electLeaders(Admin admin, Map<String, Object> args) throws Exception {
        Set<TopicPartition> partitions = null;
        if (args.get("partitions") != null) {
            partitions = new HashSet<>();
            for (Object o : Json.list(args.get("partitions"))) {
                List<Object> tp = Json.list(o);
                partitions.add(new TopicPartition((String) tp.get(0), ((Number) tp.get(1)).intValue()));
            }
        }
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, Optional<Throwable>> e : admin.electLeaders(
                ElectionType.valueOf((String) args.get("type")), partitions).partitions().get().entrySet()) {
            out.put(e.getKey().toString(), e.getValue().map(t -> org.apache.kafka.common.protocol.Errors.forException(t).name())
                    .orElse("NONE"));
        }
        return out;
    }

    /** alterPartitionReassignments(reassignments: [[topic, p, [replicas] or null]]) */
    static Object alterPartitionReassignments(Admin admin, Map<String, Object> args) throws Exception {
        Map<TopicPartition, Optional<NewPartitionReassignment>> changes = new HashMap<>();
        for (Object o : Json.list(args.get("reassignments"))) {
            List<Object> r = Json.list(o);
            TopicPartition tp = new TopicPartition((String) r.get(0), ((Number) r.get(1)).intValue());
            if (r.get(2) == null) {
                changes.put(tp, Optional.empty());
            } else {
                List<Integer> replicas = new ArrayList<>();
                for (Object n : Json.list(r.get(2))) replicas.add(((Number) n).intValue());
                changes.put(tp, Optional.of(new NewPartitionReassignment(replicas)));
            }
        }
        admin.alterPartitionReassignments(changes).all().get();
        return "ok";
    }

    /** listPartitionReassignments: {"topic-p": {"replicas", "adding", "removing"}} */
    static Object listPartitionReassignments(Admin admin, Map<String, Object> args) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, PartitionReassignment> e : admin.listPartitionReassignments().reassignments().get().entrySet()) {
            out.put(e.getKey().toString(), Json.map("replicas", e.getValue().replicas(), "adding", e.getValue().addingReplicas(),
                    "removing", e.getValue().removingReplicas()));
        }
        return out;
    }
}
