import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/**
 * admin: {"ops": [{"op": NAME, ...arguments}, ...], "config": {...}} — runs the operations in
 * order with one Admin client and prints one line per operation: {"op", "result"} or
 * {"op", "error": {...}}. Operations are the methods below, one per Admin call.
 */
final class AdminCommand {
    interface Op {
        Object run(Admin admin, Map<String, Object> args) throws Exception;
    }

    static final Map<String, Op> OPS = new LinkedHashMap<>();

    static {
        OPS.put("createAcls", AdminCommand::createAcls);
        OPS.put("describeAcls", AdminCommand::describeAcls);
        OPS.put("deleteAcls", AdminCommand::deleteAcls);
        OPS.put("createTopics", AdminCommand::createTopics);
        OPS.put("deleteTopics", AdminCommand::deleteTopics);
        OPS.put("listTopics", AdminCommand::listTopics);
        OPS.put("describeTopics", AdminCommand::describeTopics);
        OPS.put("describeCluster", AdminCommand::describeCluster);
        OPS.put("describeConfigs", AdminCommand::describeConfigs);
        OPS.put("incrementalAlterConfigs", AdminCommand::incrementalAlterConfigs);
        OPS.put("createPartitions", AdminCommand::createPartitions);
        OPS.put("listOffsets", AdminCommand::listOffsets);
        OPS.put("deleteRecords", AdminCommand::deleteRecords);
        OPS.put("describeLogDirs", AdminCommand::describeLogDirs);
        OPS.put("listShareGroups", ShareAdmin::listShareGroups);
        OPS.put("describeShareGroups", ShareAdmin::describeShareGroups);
        OPS.put("listShareGroupOffsets", ShareAdmin::listShareGroupOffsets);
        OPS.put("alterShareGroupOffsets", ShareAdmin::alterShareGroupOffsets);
        OPS.put("deleteShareGroupOffsets", ShareAdmin::deleteShareGroupOffsets);
        OPS.put("deleteShareGroups", ShareAdmin::deleteShareGroups);
        OPS.put("describeUserScramCredentials", AdminCommand::describeUserScramCredentials);
        OPS.put("alterUserScramCredentials", AdminCommand::alterUserScramCredentials);
        OPS.put("describeClientQuotas", QuotaCommands::describeClientQuotas);
        OPS.put("alterClientQuotas", QuotaCommands::alterClientQuotas);
        OPS.put("describeFeatures", ClusterAdmin::describeFeatures);
        OPS.put("updateFeatures", ClusterAdmin::updateFeatures);
        OPS.put("describeMetadataQuorum", ClusterAdmin::describeMetadataQuorum);
        OPS.put("electLeaders", ClusterAdmin::electLeaders);
        OPS.put("alterPartitionReassignments", ClusterAdmin::alterPartitionReassignments);
        OPS.put("listPartitionReassignments", ClusterAdmin::listPartitionReassignments);
        OPS.put("createDelegationToken", ClusterAdmin::createDelegationToken);
        OPS.put("describeDelegationToken", ClusterAdmin::describeDelegationToken);
        OPS.put("renewDelegationToken", ClusterAdmin::renewDelegationToken);
        OPS.put("expireDelegationToken", ClusterAdmin::expireDelegationToken);
    }

    static void run(Map<String, Object> req) throws Exception {
        try (Admin admin = Admin.create(KafkaDriver.props(req))) {
            for (Object o : Json.list(req.get("ops"))) {
                Map<String, Object> args = Json.obj(o);
                String name = (String) args.get("op");
                Op op = OPS.get(name);
                try {
                    if (op == null) throw new IllegalArgumentException("unknown admin op " + name + "; known: " + OPS.keySet());
                    KafkaDriver.emit(Json.map("op", name, "result", op.run(admin, args)));
                } catch (Exception e) {
                    KafkaDriver.emit(Json.map("op", name, "error", KafkaDriver.describe(e)));
                }
            }
        }
    }

    private static boolean flag(Map<String, Object> args, String key) {
        return Boolean.TRUE.equals(args.get(key));
    }

    private static List<String> strings(Object v) {
        List<String> out = new ArrayList<>();
        for (Object o : Json.list(v)) out.add((String) o);
        return out;
    }

    private static Map<String, String> stringMap(Object v) {
        Map<String, String> out = new HashMap<>();
        if (v != null) for (Map.Entry<String, Object> e : Json.obj(v).entrySet()) out.put(e.getKey(), e.getValue() == null ? null : String.valueOf(e.getValue()));
        return out;
    }

    // ACLs travel as [resource type, name, pattern type, principal, host, operation, permission]
    // with Kafka's enum names; in a filter, null name/principal/host match any.
    private static AclBinding aclBinding(Object o) {
        List<Object> a = Json.list(o);
        return new AclBinding(
                new ResourcePattern(ResourceType.valueOf((String) a.get(0)), (String) a.get(1), PatternType.valueOf((String) a.get(2))),
                new AccessControlEntry((String) a.get(3), (String) a.get(4), AclOperation.valueOf((String) a.get(5)),
                        AclPermissionType.valueOf((String) a.get(6))));
    }

    private static AclBindingFilter aclFilter(Object o) {
        List<Object> a = Json.list(o);
        return new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.valueOf((String) a.get(0)), (String) a.get(1), PatternType.valueOf((String) a.get(2))),
                new AccessControlEntryFilter((String) a.get(3), (String) a.get(4), AclOperation.valueOf((String) a.get(5)),
                        AclPermissionType.valueOf((String) a.get(6))));
    }

    private static List<Object> aclJson(AclBinding b) {
        List<Object> out = new ArrayList<>();
        out.add(b.pattern().resourceType().name());
        out.add(b.pattern().name());
        out.add(b.pattern().patternType().name());
        out.add(b.entry().principal());
        out.add(b.entry().host());
        out.add(b.entry().operation().name());
        out.add(b.entry().permissionType().name());
        return out;
    }

    static Object createAcls(Admin admin, Map<String, Object> args) throws Exception {
        List<AclBinding> acls = new ArrayList<>();
        for (Object o : Json.list(args.get("acls"))) acls.add(aclBinding(o));
        admin.createAcls(acls).all().get();
        return acls.size();
    }

    static Object describeAcls(Admin admin, Map<String, Object> args) throws Exception {
        List<Object> out = new ArrayList<>();
        for (AclBinding b : admin.describeAcls(aclFilter(args.get("filter"))).values().get()) out.add(aclJson(b));
        return out;
    }

    static Object deleteAcls(Admin admin, Map<String, Object> args) throws Exception {
        List<AclBindingFilter> filters = new ArrayList<>();
        for (Object o : Json.list(args.get("filters"))) filters.add(aclFilter(o));
        List<Object> out = new ArrayList<>();
        for (AclBinding b : admin.deleteAcls(filters).all().get()) out.add(aclJson(b));
        return out;
    }

    static Object createTopics(Admin admin, Map<String, Object> args) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        for (Object o : Json.list(args.get("topics"))) {
            Map<String, Object> t = Json.obj(o);
            Object parts = t.get("partitions");
            Object rf = t.get("replication_factor");
            NewTopic nt = new NewTopic((String) t.get("name"),
                    parts == null ? Optional.empty() : Optional.of(((Number) parts).intValue()),
                    rf == null ? Optional.empty() : Optional.of(((Number) rf).shortValue()));
            nt.configs(stringMap(t.get("configs")));
            topics.add(nt);
        }
        CreateTopicsResult res = admin.createTopics(topics, new CreateTopicsOptions().validateOnly(flag(args, "validate_only")));
        res.all().get();
        Map<String, Object> out = new LinkedHashMap<>();
        for (NewTopic nt : topics) {
            String n = nt.name();
            Map<String, Object> configs = new LinkedHashMap<>();
            try {
                Config c = res.config(n).get();
                for (ConfigEntry e : c.entries()) configs.put(e.name(), e.value());
            } catch (Exception e) {
                configs = null; // older CreateTopics versions return no configs
            }
            Uuid id = null;
            try { id = res.topicId(n).get(); } catch (Exception ignored) { }
            out.put(n, Json.map(
                    "topic_id", id == null ? null : id.toString(),
                    "partitions", res.numPartitions(n).get(),
                    "replication_factor", res.replicationFactor(n).get(),
                    "configs", configs));
        }
        return out;
    }

    static Object deleteTopics(Admin admin, Map<String, Object> args) throws Exception {
        if (args.get("topic_ids") != null) {
            List<Uuid> ids = new ArrayList<>();
            for (String s : strings(args.get("topic_ids"))) ids.add(Uuid.fromString(s));
            admin.deleteTopics(TopicCollection.ofTopicIds(ids)).all().get();
        } else {
            admin.deleteTopics(TopicCollection.ofTopicNames(strings(args.get("names")))).all().get();
        }
        return true;
    }

    static Object listTopics(Admin admin, Map<String, Object> args) throws Exception {
        Set<String> names = admin.listTopics(new ListTopicsOptions().listInternal(flag(args, "internal"))).names().get();
        return new ArrayList<>(new java.util.TreeSet<>(names));
    }

    static Object describeTopics(Admin admin, Map<String, Object> args) throws Exception {
        Map<?, TopicDescription> descs;
        if (args.get("topic_ids") != null) {
            List<Uuid> ids = new ArrayList<>();
            for (String s : strings(args.get("topic_ids"))) ids.add(Uuid.fromString(s));
            descs = admin.describeTopics(TopicCollection.ofTopicIds(ids)).allTopicIds().get();
        } else {
            descs = admin.describeTopics(TopicCollection.ofTopicNames(strings(args.get("names")))).allTopicNames().get();
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (TopicDescription d : descs.values()) {
            List<Object> parts = new ArrayList<>();
            for (TopicPartitionInfo p : d.partitions()) {
                parts.add(Json.map(
                        "partition", p.partition(),
                        "leader", p.leader() == null ? null : p.leader().id(),
                        "replicas", nodeIds(p.replicas()),
                        "isr", nodeIds(p.isr())));
            }
            out.put(d.name(), Json.map(
                    "topic_id", d.topicId() == null ? null : d.topicId().toString(),
                    "internal", d.isInternal(),
                    "partitions", parts));
        }
        return out;
    }

    private static List<Object> nodeIds(Collection<Node> nodes) {
        List<Object> ids = new ArrayList<>();
        for (Node n : nodes) ids.add(n.id());
        return ids;
    }

    static Object describeCluster(Admin admin, Map<String, Object> args) throws Exception {
        DescribeClusterResult r = admin.describeCluster();
        List<Object> nodes = new ArrayList<>();
        for (Node n : r.nodes().get()) nodes.add(Json.map("id", n.id(), "host", n.host(), "port", n.port(), "rack", n.rack()));
        Node controller = r.controller().get();
        return Json.map(
                "cluster_id", r.clusterId().get(),
                "controller", controller == null ? null : controller.id(),
                "nodes", nodes);
    }

    private static ConfigResource resource(Map<String, Object> r) {
        String type = ((String) r.get("type")).toUpperCase();
        return new ConfigResource(ConfigResource.Type.valueOf(type), (String) r.get("name"));
    }

    static Object describeConfigs(Admin admin, Map<String, Object> args) throws Exception {
        List<ConfigResource> resources = new ArrayList<>();
        for (Object o : Json.list(args.get("resources"))) resources.add(resource(Json.obj(o)));
        DescribeConfigsOptions opts = new DescribeConfigsOptions()
                .includeSynonyms(flag(args, "include_synonyms"))
                .includeDocumentation(flag(args, "include_documentation"));
        Map<ConfigResource, Config> configs = admin.describeConfigs(resources, opts).all().get();
        Map<String, Object> out = new LinkedHashMap<>();
        for (ConfigResource res : resources) {
            Map<String, Object> entries = new LinkedHashMap<>();
            for (ConfigEntry e : configs.get(res).entries()) {
                List<Object> synonyms = new ArrayList<>();
                for (ConfigEntry.ConfigSynonym s : e.synonyms()) synonyms.add(Json.map("name", s.name(), "value", s.value(), "source", s.source()));
                entries.put(e.name(), Json.map(
                        "value", e.value(),
                        "source", e.source(),
                        "default", e.isDefault(),
                        "read_only", e.isReadOnly(),
                        "sensitive", e.isSensitive(),
                        "type", e.type(),
                        "synonyms", synonyms));
            }
            out.put(res.type().name().toLowerCase() + ":" + res.name(), entries);
        }
        return out;
    }

    static Object incrementalAlterConfigs(Admin admin, Map<String, Object> args) throws Exception {
        Map<ConfigResource, Collection<AlterConfigOp>> changes = new LinkedHashMap<>();
        for (Object o : Json.list(args.get("resources"))) {
            Map<String, Object> r = Json.obj(o);
            List<AlterConfigOp> ops = new ArrayList<>();
            for (Object c : Json.list(r.get("ops"))) {
                Map<String, Object> op = Json.obj(c);
                Object value = op.get("value");
                ops.add(new AlterConfigOp(
                        new ConfigEntry((String) op.get("name"), value == null ? null : String.valueOf(value)),
                        AlterConfigOp.OpType.valueOf(((String) op.getOrDefault("op", "SET")).toUpperCase())));
            }
            changes.put(resource(r), ops);
        }
        admin.incrementalAlterConfigs(changes, new AlterConfigsOptions().validateOnly(flag(args, "validate_only"))).all().get();
        return true;
    }

    static Object createPartitions(Admin admin, Map<String, Object> args) throws Exception {
        Map<String, NewPartitions> req = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : Json.obj(args.get("topics")).entrySet()) {
            req.put(e.getKey(), NewPartitions.increaseTo(((Number) e.getValue()).intValue()));
        }
        admin.createPartitions(req, new CreatePartitionsOptions().validateOnly(flag(args, "validate_only"))).all().get();
        return true;
    }

    private static OffsetSpec spec(Map<String, Object> args) {
        Object s = args.getOrDefault("spec", "latest");
        if (s instanceof Number) return OffsetSpec.forTimestamp(((Number) s).longValue());
        switch ((String) s) {
            case "earliest": return OffsetSpec.earliest();
            case "latest": return OffsetSpec.latest();
            case "max_timestamp": return OffsetSpec.maxTimestamp();
            case "earliest_local": return OffsetSpec.earliestLocal();
            case "latest_tiered": return OffsetSpec.latestTiered();
            default: throw new IllegalArgumentException("unknown offset spec " + s);
        }
    }

    static Object listOffsets(Admin admin, Map<String, Object> args) throws Exception {
        String topic = (String) args.get("topic");
        Map<TopicPartition, OffsetSpec> req = new LinkedHashMap<>();
        for (Object p : Json.list(args.get("partitions"))) req.put(new TopicPartition(topic, ((Number) p).intValue()), spec(args));
        IsolationLevel iso = "read_committed".equals(args.get("isolation")) ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED;
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> res = admin.listOffsets(req, new ListOffsetsOptions(iso)).all().get();
        Map<String, Object> out = new LinkedHashMap<>();
        for (TopicPartition tp : req.keySet()) {
            ListOffsetsResult.ListOffsetsResultInfo info = res.get(tp);
            out.put(Integer.toString(tp.partition()), Json.map(
                    "offset", info.offset(),
                    "timestamp", info.timestamp(),
                    "leader_epoch", info.leaderEpoch().orElse(null)));
        }
        return out;
    }

    static Object deleteRecords(Admin admin, Map<String, Object> args) throws Exception {
        String topic = (String) args.get("topic");
        Map<TopicPartition, RecordsToDelete> req = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : Json.obj(args.get("offsets")).entrySet()) {
            req.put(new TopicPartition(topic, Integer.parseInt(e.getKey())), RecordsToDelete.beforeOffset(((Number) e.getValue()).longValue()));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<TopicPartition, org.apache.kafka.common.KafkaFuture<org.apache.kafka.clients.admin.DeletedRecords>> e
                : admin.deleteRecords(req).lowWatermarks().entrySet()) {
            out.put(Integer.toString(e.getKey().partition()), e.getValue().get().lowWatermark());
        }
        return out;
    }

    static Object describeLogDirs(Admin admin, Map<String, Object> args) throws Exception {
        List<Integer> brokers = new ArrayList<>();
        for (Object o : Json.list(args.get("brokers"))) brokers.add(((Number) o).intValue());
        Map<Integer, Map<String, LogDirDescription>> res = admin.describeLogDirs(brokers).allDescriptions().get();
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<Integer, Map<String, LogDirDescription>> b : res.entrySet()) {
            Map<String, Object> dirs = new LinkedHashMap<>();
            for (Map.Entry<String, LogDirDescription> d : b.getValue().entrySet()) {
                Map<String, Object> replicas = new LinkedHashMap<>();
                for (Map.Entry<TopicPartition, ReplicaInfo> r : d.getValue().replicaInfos().entrySet()) {
                    replicas.put(r.getKey().toString(), Json.map("size", r.getValue().size(), "offset_lag", r.getValue().offsetLag()));
                }
                dirs.put(d.getKey(), Json.map(
                        "error", d.getValue().error() == null ? null : d.getValue().error().getClass().getName(),
                        "replicas", replicas));
            }
            out.put(Integer.toString(b.getKey()), dirs);
        }
        return out;
    }

    /** users (null: all) -> {user: {mechanism: iterations}}; a failed user fails the op. */
    static Object describeUserScramCredentials(Admin admin, Map<String, Object> args) throws Exception {
        Map<String, UserScramCredentialsDescription> res = args.get("users") == null
                ? admin.describeUserScramCredentials().all().get()
                : admin.describeUserScramCredentials(strings(args.get("users"))).all().get();
        Map<String, Object> out = new java.util.TreeMap<>();
        for (Map.Entry<String, UserScramCredentialsDescription> e : res.entrySet()) {
            Map<String, Object> mechs = new java.util.TreeMap<>();
            for (ScramCredentialInfo info : e.getValue().credentialInfos()) mechs.put(info.mechanism().mechanismName(), info.iterations());
            out.put(e.getKey(), mechs);
        }
        return out;
    }

    /** upsertions [{user, mechanism, iterations, password}], deletions [{user, mechanism}]; the
     * client salts the password (Admin's UserScramCredentialUpsertion). */
    static Object alterUserScramCredentials(Admin admin, Map<String, Object> args) throws Exception {
        List<UserScramCredentialAlteration> alterations = new ArrayList<>();
        for (Object o : Json.list(args.get("upsertions"))) {
            Map<String, Object> u = Json.obj(o);
            alterations.add(new UserScramCredentialUpsertion((String) u.get("user"),
                    new ScramCredentialInfo(ScramMechanism.fromMechanismName((String) u.get("mechanism")),
                            ((Number) u.get("iterations")).intValue()), (String) u.get("password")));
        }
        for (Object o : Json.list(args.get("deletions"))) {
            Map<String, Object> d = Json.obj(o);
            alterations.add(new UserScramCredentialDeletion((String) d.get("user"),
                    ScramMechanism.fromMechanismName((String) d.get("mechanism"))));
        }
        admin.alterUserScramCredentials(alterations).all().get();
        return null;
    }
}
