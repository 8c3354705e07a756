import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
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
}
