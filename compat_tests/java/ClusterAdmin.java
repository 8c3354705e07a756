import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
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

    private static Map<String, Object> token(DelegationToken t) {
        TokenInformation i = t.tokenInfo();
        List<Object> renewers = new ArrayList<>();
        for (KafkaPrincipal p : i.renewers()) renewers.add(p.toString());
        return Json.map("token_id", i.tokenId(), "hmac", t.hmacAsBase64String(), "owner", i.owner().toString(),
                "requester", i.tokenRequester().toString(), "renewers", renewers, "issue", i.issueTimestamp(),
                "expiry", i.expiryTimestamp(), "max", i.maxTimestamp());
    }

    /** createDelegationToken(renewers: ["User:x"], max_lifetime_ms) */
    static Object createDelegationToken(Admin admin, Map<String, Object> args) throws Exception {
        CreateDelegationTokenOptions options = new CreateDelegationTokenOptions().renewers(principals(args.get("renewers")));
        if (args.get("max_lifetime_ms") != null) options.maxlifeTimeMs(((Number) args.get("max_lifetime_ms")).longValue());
        return token(admin.createDelegationToken(options).delegationToken().get());
    }

    /** describeDelegationToken(owners: ["User:x"], optional): [token] */
    static Object describeDelegationToken(Admin admin, Map<String, Object> args) throws Exception {
        DescribeDelegationTokenOptions options = new DescribeDelegationTokenOptions();
        if (args.get("owners") != null) options.owners(principals(args.get("owners")));
        List<Object> out = new ArrayList<>();
        for (DelegationToken t : admin.describeDelegationToken(options).delegationTokens().get()) out.add(token(t));
        return out;
    }

    private static List<KafkaPrincipal> principals(Object names) {
        List<KafkaPrincipal> out = new ArrayList<>();
        for (Object o : Json.list(names)) {
            String[] typeAndName = ((String) o).split(":", 2);
            out.add(new KafkaPrincipal(typeAndName[0], typeAndName[1]));
        }
        return out;
    }

    /** renewDelegationToken(hmac base64, period_ms): the new expiry */
    static Object renewDelegationToken(Admin admin, Map<String, Object> args) throws Exception {
        return admin.renewDelegationToken(java.util.Base64.getDecoder().decode((String) args.get("hmac")),
                new RenewDelegationTokenOptions().renewTimePeriodMs(((Number) args.get("period_ms")).longValue())).expiryTimestamp().get();
    }

    /** expireDelegationToken(hmac base64, period_ms): the new expiry */
    static Object expireDelegationToken(Admin admin, Map<String, Object> args) throws Exception {
        return admin.expireDelegationToken(java.util.Base64.getDecoder().decode((String) args.get("hmac")),
                new ExpireDelegationTokenOptions().expiryTimePeriodMs(((Number) args.get("period_ms")).longValue())).expiryTimestamp().get();
    }
}
