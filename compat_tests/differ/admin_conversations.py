"""The differ's conversations about the cluster-administration APIs: client quotas (48, 49).

They register in conversations.CONVERSATIONS like the others (test_differ.py and the command line
import this module). Kafka's error messages are compared here too (the normaliser drops
`error_message` fields): each answer is recorded with its text under `error_text`. Entries that
Kafka lists from a hash map are recorded sorted. Every quota a conversation sets is removed
again before it ends, since the brokers are shared by all conversations.
"""

from __future__ import annotations

from typing import Any, Callable

from kio.schema.errors import ErrorCode

from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import Record, build_batch

from .conversations import TS, conversation, produce
from .core import Conversation

EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def _entity(pairs) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]


def _described(resp) -> dict[str, Any]:
    entries = None if resp.entries is None else sorted(
        [sorted([e.entity_type, e.entity_name] for e in entry.entity),
         sorted([v.key, v.value] for v in entry.values)] for entry in resp.entries)
    return {"error_code": int(resp.error_code), "error_text": resp.error_message, "entries": entries}


def describe_quotas(c: Conversation, label: str, components, strict: bool = False, *, until=None):
    fields = dict(strict=strict, components=[{"entity_type": t, "match_type": m, "match": n}
                                             for t, m, n in components])
    if until is not None:
        # Kafka's broker answers from its metadata image, updated a moment after the controller commits
        resp = c.until(48, c.ver(48), until, record=False, **fields)
    else:
        resp = c.send(48, c.ver(48), record=False, **fields)
    c.record(label, _described(resp))
    return resp


def alter_quotas(c: Conversation, label: str, entries, validate_only: bool = False):
    """entries: [(entity pairs, [(key, value or None to remove)])]"""
    resp = c.send(49, c.v, record=False, validate_only=validate_only, entries=[
        {"entity": _entity(pairs), "ops": [{"key": k, "value": 0.0 if v is None else v, "remove": v is None}
                                           for k, v in ops]} for pairs, ops in entries])
    c.record(label, sorted([sorted([e.entity_type, e.entity_name] for e in r.entity), int(r.error_code),
                            r.error_message] for r in resp.entries))
    return resp


def _count(resp) -> int:
    return -1 if resp.entries is None else len(resp.entries)


@conversation("client quotas", 49, labels=("u", "c"))
def client_quotas(c: Conversation) -> None:
    u, cl = c["u"], c["c"]
    user, client, both = [("user", u)], [("client-id", cl)], [("user", u), ("client-id", cl)]
    alter_quotas(c, "set", [(user, [("producer_byte_rate", 1048576.0), ("request_percentage", 250.5)]),
                            (both, [("consumer_byte_rate", 2097152.0)]),
                            (client, [("controller_mutation_rate", 10.0)])])
    describe_quotas(c, "user exact", [("user", EXACT, u)], until=lambda r: _count(r) == 2)
    describe_quotas(c, "user exact strict", [("user", EXACT, u)], strict=True)
    describe_quotas(c, "client exact", [("client-id", EXACT, cl)])
    describe_quotas(c, "user exact, any client", [("user", EXACT, u), ("client-id", SPECIFIED, None)])
    describe_quotas(c, "default user, this client", [("user", DEFAULT, None), ("client-id", EXACT, cl)])
    alter_quotas(c, "validate only", [(user, [("producer_byte_rate", 1.0)])], validate_only=True)
    alter_quotas(c, "change and remove", [(user, [("producer_byte_rate", 2048.0), ("request_percentage", None)])])
    describe_quotas(c, "after change", [("user", EXACT, u)], strict=True,
                    until=lambda r: _count(r) == 1 and len(r.entries[0].values) == 1)
    for step, entries in (
            ("unknown key", [(user, [("connection_creation_rate", 5.0)])]),
            ("fractional byte rate", [(user, [("producer_byte_rate", 10.5)])]),
            ("zero", [(user, [("request_percentage", 0.0)])]),
            ("negative", [(client, [("consumer_byte_rate", -1.0)])]),
            ("not a number", [(client, [("request_percentage", float("nan"))])]),
            ("empty name", [([("user", "")], [("producer_byte_rate", 1.0)])]),
            ("unknown entity type", [([("group", u)], [("producer_byte_rate", 1.0)])]),
            ("empty entity", [([], [("producer_byte_rate", 1.0)])]),
            ("ip with user", [([("ip", "127.0.0.9"), ("user", u)], [("producer_byte_rate", 1.0)])]),
            ("ip too large", [([("ip", "127.0.0.9")], [("connection_creation_rate", 3e9)])]),
            ("ip fractional", [([("ip", "127.0.0.9")], [("connection_creation_rate", 1.5)])]),
            ("duplicate key", [(user, [("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)])]),
            ("duplicate entity", [(client, [("request_percentage", 1.0)]), (client, [("request_percentage", 2.0)])])):
        alter_quotas(c, f"refused: {step}", entries)
    for step, components in (
            ("empty entity type", [("", SPECIFIED, None)]),
            ("unknown entity type", [("group", SPECIFIED, None)]),
            ("exact without a name", [("user", EXACT, None)]),
            ("default with a name", [("user", DEFAULT, u)]),
            ("specified with a name", [("user", SPECIFIED, u)]),
            ("type twice", [("user", EXACT, u), ("user", SPECIFIED, None)]),
            ("ip with user", [("ip", SPECIFIED, None), ("user", EXACT, u)]),
            ("unknown match type", [("user", 7, u)])):
        describe_quotas(c, f"refused: {step}", components)
    alter_quotas(c, "remove all", [(user, [("producer_byte_rate", None)]), (both, [("consumer_byte_rate", None)]),
                                   (client, [("controller_mutation_rate", None)])])
    resp = describe_quotas(c, "after removal", [("user", EXACT, u)], until=lambda r: _count(r) == 0)
    assert resp.error_code == ErrorCode.none


@conversation("client quota throttle", 48, labels=("t", "c"))
def client_quota_throttle(c: Conversation) -> None:
    """A client over its byte rates: the produce is taken and throttled, the fetch that follows is
    answered empty (no partitions, no session) and throttled. Throttle times depend on timing and
    are recorded as whether there was one."""
    c.create_topics(("t", 1))
    client = [("client-id", c["c"])]
    alter_quotas(c, "set", [(client, [("producer_byte_rate", 1000.0), ("consumer_byte_rate", 1000.0)])])
    describe_quotas(c, "set", [("client-id", EXACT, c["c"])], until=lambda r: _count(r) == 1)
    shared = c._wire
    c._wire = WireClient(c.bootstrap, timeout=c.timeout, client_id=c["c"])
    try:
        # 10.6 kB against 1000 B/s over Kafka's ten 1 s windows: a little over the rate
        big = bytes(build_batch([Record(key=None, value=b"x" * 10_600, timestamp_ms=TS)]))
        produced = produce(c, c.ver(0), "t", big, record=False)
        c.record("produce over the rate", {"throttled": produced.throttle_time.total_seconds() > 0,
                                           "errors": [int(p.error_code) for t in produced.responses
                                                      for p in t.partition_responses]})
        fetched = c.send(1, c.ver(1), record=False, max_wait=0, min_bytes=1, max_bytes=1 << 22, isolation_level=0,
                         session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
                             {"topic": c["t"], "topic_id": c.topic_id("t"), "partitions": [
                                 {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                                  "current_leader_epoch": -1, "log_start_offset": -1}]}])
        c.record("fetch over the rate", {"throttled": fetched.throttle_time.total_seconds() > 0,
                                         "error_code": int(getattr(fetched, "error_code", 0)),
                                         "session_id": getattr(fetched, "session_id", 0),
                                         "responses": len(fetched.responses)})
    finally:
        c._wire.close()
        c._wire = shared
    alter_quotas(c, "remove", [(client, [("producer_byte_rate", None), ("consumer_byte_rate", None)])])


# ------------------------------------------------------------------ dynamic broker configs

TOPIC, BROKER, GROUP_RESOURCE = 2, 4, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_LABELS = {APPEND: "append", SUBTRACT: "subtract"}


def incremental(c: Conversation, label: str, resources, validate_only: bool = False, version: int | None = None):
    """resources: [(type, name, [(key, op, value)])]; recorded with Kafka's messages."""
    resp = c.send(44, c.ver(44) if version is None else version, record=False, validate_only=validate_only,
                  resources=[{"resource_type": t, "resource_name": n,
                              "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in cfgs]}
                             for t, n, cfgs in resources])
    c.record(label, [[r.resource_type, r.resource_name, int(r.error_code), r.error_message] for r in resp.responses])
    return resp


def legacy_alter(c: Conversation, label: str, resources, validate_only: bool = False):
    resp = c.send(33, c.ver(33), record=False, validate_only=validate_only,
                  resources=[{"resource_type": t, "resource_name": n,
                              "configs": [{"name": k, "value": v} for k, v in cfgs]} for t, n, cfgs in resources])
    c.record(label, [[r.resource_type, r.resource_name, int(r.error_code), r.error_message] for r in resp.responses])
    return resp


def describe_configs(c: Conversation, label: str, rtype: int, name: str, keys, *, until=None):
    fields = dict(include_synonyms=True, include_documentation=False,
                  resources=[{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}])
    if until is not None:
        return c.until(32, c.ver(32), until, label=label, **fields)
    return c.send(32, c.ver(32), label=label, **fields)


def _values(resp) -> dict:
    return {e.name: e.value for e in resp.results[0].configs}


DYNAMIC_KEYS = ["log.cleaner.threads", "follower.replication.throttled.rate", "leader.replication.throttled.rate",
                "log.cleaner.io.max.bytes.per.second", "no.such.broker.key"]


@conversation("dynamic broker configs", 44, labels=())
def dynamic_broker_configs(c: Conversation) -> None:
    node = "1"
    incremental(c, "set per broker", [(BROKER, node, [("log.cleaner.threads", SET, "2"),
                                                      ("follower.replication.throttled.rate", SET, "1048576")])])
    incremental(c, "set cluster default", [(BROKER, "", [("leader.replication.throttled.rate", SET, "2097152"),
                                                         ("follower.replication.throttled.rate", SET, "4096")])])
    describe_configs(c, "per broker", BROKER, node, DYNAMIC_KEYS,
                     until=lambda r: _values(r).get("leader.replication.throttled.rate") == "2097152"
                     and _values(r).get("log.cleaner.threads") == "2")
    describe_configs(c, "cluster default", BROKER, "", DYNAMIC_KEYS)
    incremental(c, "validate only", [(BROKER, node, [("log.cleaner.io.max.bytes.per.second", SET, "1000.0")])],
                validate_only=True)
    for step, resources in (
            ("static key", [(BROKER, node, [("num.partitions", SET, "3")])]),
            ("static key at the default", [(BROKER, "", [("log.dirs", SET, "/tmp/x")])]),
            ("per-broker key at the default", [(BROKER, "", [("listeners", SET, "PLAINTEXT://:9092")])]),
            ("security key without a listener", [(BROKER, node, [("ssl.keystore.location", SET, "/tmp/k.jks")])]),
            ("not a number", [(BROKER, node, [("log.cleaner.threads", SET, "many")])]),
            ("another broker", [(BROKER, "7", [("log.cleaner.threads", SET, "2")])]),
            ("not a broker id", [(BROKER, "one", [("log.cleaner.threads", SET, "2")])]),
            ("unknown key", [(BROKER, node, [("no.such.broker.key", SET, "x")])]),
            ("append to a number", [(BROKER, node, [("log.cleaner.threads", APPEND, "3")])])):
        incremental(c, f"refused: {step}", resources)
    legacy_alter(c, "legacy alter replaces the broker's set", [(BROKER, node, [("log.cleaner.threads", "1")])])
    describe_configs(c, "after the legacy alter", BROKER, node, DYNAMIC_KEYS,
                     until=lambda r: _values(r).get("follower.replication.throttled.rate") == "4096")
    legacy_alter(c, "legacy alter of a static key", [(BROKER, node, [("num.partitions", "3")])])
    incremental(c, "delete per broker", [(BROKER, node, [("log.cleaner.threads", DELETE, None),
                                                         ("no.such.broker.key", DELETE, None)])])
    incremental(c, "delete cluster default", [(BROKER, "", [("leader.replication.throttled.rate", DELETE, None),
                                                            ("follower.replication.throttled.rate", DELETE, None)])])
    describe_configs(c, "after delete", BROKER, node, DYNAMIC_KEYS,
                     until=lambda r: "leader.replication.throttled.rate" not in _values(r)
                     and "follower.replication.throttled.rate" not in _values(r)
                     and all(e.config_source == 5 for e in r.results[0].configs))


# ------------------------------------------------------------------ list-typed configs


TOPIC_LIST_KEYS = ["cleanup.policy", "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"]


def _value_of(key: str) -> Callable[[Any], str | None]:
    return lambda r: _values(r).get(key)


@conversation("list config increments", 44, labels=("t", "g"))
def list_config_increments(c: Conversation) -> None:
    """APPEND and SUBTRACT on LIST configs with no value at their level start from Kafka's default
    for the key (the controller's getParts asks the config's ConfigDef), at every level: a broker,
    the cluster default and a topic; never from the static setting or the level above. A group
    takes neither."""
    node = "1"
    incremental(c, "broker: append to the default", [(BROKER, node, [("log.cleanup.policy", APPEND, "compact")])])
    describe_configs(c, "broker after append", BROKER, node, ["log.cleanup.policy"],
                     until=lambda r: _value_of("log.cleanup.policy")(r) == "delete,compact")
    incremental(c, "broker: subtract", [(BROKER, node, [("log.cleanup.policy", SUBTRACT, "compact")])])
    describe_configs(c, "broker after subtract", BROKER, node, ["log.cleanup.policy"],
                     until=lambda r: _value_of("log.cleanup.policy")(r) == "delete")
    incremental(c, "broker: delete", [(BROKER, node, [("log.cleanup.policy", DELETE, None)])])
    incremental(c, "cluster default: append to the default", [(BROKER, "", [("log.cleanup.policy", APPEND, "compact")])])
    describe_configs(c, "cluster default after append", BROKER, "", ["log.cleanup.policy"],
                     until=lambda r: _value_of("log.cleanup.policy")(r) == "delete,compact")
    # the broker level starts from Kafka's default, not from the cluster default above it
    incremental(c, "broker under a cluster default: append", [(BROKER, node, [("log.cleanup.policy", APPEND, "compact")])])
    describe_configs(c, "broker under a cluster default", BROKER, node, ["log.cleanup.policy"],
                     until=lambda r: any(e.name == "log.cleanup.policy" and e.config_source == 2
                                         for e in r.results[0].configs))
    incremental(c, "broker: validate a subtract", [(BROKER, node, [("log.cleanup.policy", SUBTRACT, "delete")])],
                validate_only=True)
    incremental(c, "cleanup", [(BROKER, node, [("log.cleanup.policy", DELETE, None)])])
    incremental(c, "cluster default: subtract", [(BROKER, "", [("log.cleanup.policy", SUBTRACT, "compact")])])
    describe_configs(c, "cluster default after subtract", BROKER, "", ["log.cleanup.policy"],
                     until=lambda r: _value_of("log.cleanup.policy")(r) == "delete")
    incremental(c, "cluster default: delete", [(BROKER, "", [("log.cleanup.policy", DELETE, None)])])
    # other LIST keys Kafka changes at run time, checked but not applied (metric.reporters,
    # cordoned.log.dirs and listeners are left out: Kafka loads the reporter class, looks for the
    # directory and builds the listeners, which kafkalite does not)
    for key, value in (("config.providers", "env"), ("sasl.enabled.mechanisms", "PLAIN"),
                       ("ssl.cipher.suites", "TLS_AES_128_GCM_SHA256"), ("ssl.enabled.protocols", "TLSv1.3")):
        for op in (APPEND, SUBTRACT):
            incremental(c, f"broker: validate {OP_LABELS[op]} {key}", [(BROKER, node, [(key, op, value)])],
                        validate_only=True)
    describe_configs(c, "broker after cleanup", BROKER, node, ["log.cleanup.policy"],
                     until=lambda r: all(e.config_source == 5 for e in r.results[0].configs))
    c.create_topics(("t", 1))
    incremental(c, "topic: append to the default", [(TOPIC, c["t"], [
        ("cleanup.policy", APPEND, "compact"), ("leader.replication.throttled.replicas", APPEND, "0:1"),
        ("follower.replication.throttled.replicas", SUBTRACT, "0:1")])])
    describe_configs(c, "topic after append", TOPIC, c["t"], TOPIC_LIST_KEYS,
                     until=lambda r: _value_of("cleanup.policy")(r) == "delete,compact")
    incremental(c, "topic: subtract", [(TOPIC, c["t"], [("cleanup.policy", SUBTRACT, "delete"),
                                                         ("leader.replication.throttled.replicas", APPEND, "0:2")])])
    describe_configs(c, "topic after subtract", TOPIC, c["t"], TOPIC_LIST_KEYS,
                     until=lambda r: _value_of("cleanup.policy")(r) == "compact")
    incremental(c, "topic: append to a number", [(TOPIC, c["t"], [("retention.ms", APPEND, "1")])])
    # Kafka's controller takes no APPEND or SUBTRACT on a group, even on its one LIST key
    incremental(c, "group: append to a list key", [(GROUP_RESOURCE, c["g"], [
        ("streams.rack.aware.assignment.tags", APPEND, "zone,rack")])])
    incremental(c, "group: subtract", [(GROUP_RESOURCE, c["g"], [("streams.rack.aware.assignment.tags", SUBTRACT, "zone")])])
    describe_configs(c, "group unchanged", GROUP_RESOURCE, c["g"], ["streams.rack.aware.assignment.tags"])


# ------------------------------------------------------------------ group configs

CONSUMER_GROUP_KEYS = ["consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "consumer.assignment.interval.ms"]


@conversation("consumer group configs", 44, labels=("g",))
def consumer_group_configs(c: Conversation) -> None:
    g = c["g"]
    incremental(c, "set", [(GROUP_RESOURCE, g, [("consumer.session.timeout.ms", SET, "50000"),
                                                 ("consumer.heartbeat.interval.ms", SET, "6000")])])
    describe_configs(c, "described", GROUP_RESOURCE, g, CONSUMER_GROUP_KEYS,
                     until=lambda r: _values(r).get("consumer.session.timeout.ms") == "50000")
    for step, cfgs in (
            ("session below the broker's minimum", [("consumer.session.timeout.ms", SET, "1000")]),
            ("session above the broker's maximum", [("consumer.session.timeout.ms", SET, "100000")]),
            ("heartbeat below the minimum", [("consumer.heartbeat.interval.ms", SET, "10")]),
            ("heartbeat above the maximum", [("consumer.heartbeat.interval.ms", SET, "20000")]),
            ("not a number", [("consumer.session.timeout.ms", SET, "soon")]),
            ("negative assignment interval", [("consumer.assignment.interval.ms", SET, "-1")]),
            ("unknown key", [("consumer.no.such.key", SET, "1")]),
            ("append", [("consumer.session.timeout.ms", APPEND, "1")])):
        incremental(c, f"refused: {step}", [(GROUP_RESOURCE, g, cfgs)])
    incremental(c, "delete", [(GROUP_RESOURCE, g, [("consumer.session.timeout.ms", DELETE, None),
                                                    ("consumer.heartbeat.interval.ms", DELETE, None)])])
    describe_configs(c, "after delete", GROUP_RESOURCE, g, CONSUMER_GROUP_KEYS,
                     until=lambda r: _values(r).get("consumer.session.timeout.ms") == "45000")


# ------------------------------------------------------------------ features and the quorum

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def _finalized(c: Conversation) -> dict[str, int]:
    resp = c.send(18, 4, record=False, client_software_name="differ", client_software_version="1.0")
    return {f.name: f.max_version_level for f in resp.finalized_features}


def update_features(c: Conversation, label: str, updates, validate_only: bool = False):
    """updates: [(feature, level, upgrade type)]; v0 sends allow_downgrade for the downgrade types."""
    resp = c.send(57, c.v, record=False, timeout=30000, validate_only=validate_only, feature_updates=[
        {"feature": f, "max_version_level": level, "upgrade_type": kind, "allow_downgrade": kind != UPGRADE}
        for f, level, kind in updates])
    c.record(label, {"error_code": int(resp.error_code), "error_text": resp.error_message,
                     "results": sorted([r.feature, int(r.error_code), r.error_message]
                                       for r in getattr(resp, "results", ()))})
    return resp


@conversation("update features", 57, labels=())
def features(c: Conversation) -> None:
    c.record("finalized at start", {k: v for k, v in _finalized(c).items() if k != "metadata.version"})
    update_features(c, "validate only: transaction.version down", [("transaction.version", 1, SAFE_DOWNGRADE)],
                    validate_only=True)
    update_features(c, "same level", [("group.version", 1, UPGRADE)])
    for step, updates in (
            ("downgrade without saying so", [("transaction.version", 1, UPGRADE)]),
            ("unknown feature", [("no.such.version", 1, UPGRADE)]),
            ("above the supported level", [("group.version", 9, UPGRADE)]),
            ("metadata.version down", [("metadata.version", 7, SAFE_DOWNGRADE)]),
            ("metadata.version unsafe down", [("metadata.version", 7, UNSAFE_DOWNGRADE)]),
            ("kraft.version down", [("kraft.version", 0, SAFE_DOWNGRADE)]),
            ("a feature twice, the last an upgrade to its level", [("transaction.version", 1, SAFE_DOWNGRADE),
                                                                   ("transaction.version", 2, UPGRADE)]),
            ("no updates", []),
            ("share.version past streams", [("share.version", 9, UPGRADE)])):
        update_features(c, f"refused: {step}", updates)
    update_features(c, "transaction.version down", [("transaction.version", 1, SAFE_DOWNGRADE)])
    if c.v == 0:
        return  # v0 cannot downgrade (allow_downgrade is not an upgrade type)
    c.until(18, 4, lambda r: {f.name: f.max_version_level for f in r.finalized_features}.get(
        "transaction.version") == 1, record=False, client_software_name="differ", client_software_version="1.0")
    c.record("finalized after the downgrade", {k: v for k, v in _finalized(c).items() if k != "metadata.version"})
    update_features(c, "transaction.version back up", [("transaction.version", 2, UPGRADE)])
    c.until(18, 4, lambda r: {f.name: f.max_version_level for f in r.finalized_features}.get(
        "transaction.version") == 2, record=False, client_software_name="differ", client_software_version="1.0")
    c.record("finalized at the end", {k: v for k, v in _finalized(c).items() if k != "metadata.version"})


@conversation("describe quorum", 55, labels=())
def describe_quorum(c: Conversation) -> None:
    """A one-node combined-mode quorum: the answer's shape and identities are compared, the offsets and
    timestamps (the metadata log's own) only for being there."""
    resp = c.send(55, c.v, record=False, topics=[{"topic_name": "__cluster_metadata",
                                                  "partitions": [{"partition_index": 0}]}])
    part = resp.topics[0].partitions[0]
    c.record("quorum", {
        "error_code": int(resp.error_code), "topic": resp.topics[0].topic_name, "partitions": len(resp.topics[0].partitions),
        "partition_error": int(part.error_code), "leader_is_a_voter": part.leader_id in [v.replica_id for v in part.current_voters],
        "leader_epoch_positive": part.leader_epoch > 0, "high_watermark_positive": part.high_watermark > 0,
        "voters": len(part.current_voters), "observers": len(part.observers),
        "voters_caught_up": all(v.log_end_offset > 0 for v in part.current_voters),
        "nodes": sorted([n.node_id == part.leader_id, [lis.name for lis in n.listeners]] for n in getattr(resp, "nodes", ())),
        "directory_ids": sorted(str(getattr(v, "replica_directory_id", None)) != "00000000-0000-0000-0000-000000000000"
                                for v in part.current_voters)})
    c.send(55, c.v, label="another topic", topics=[{"topic_name": "not-the-metadata", "partitions": [{"partition_index": 0}]}])
    c.send(55, c.v, label="another partition", topics=[{"topic_name": "__cluster_metadata",
                                                        "partitions": [{"partition_index": 3}]}])


# ------------------------------------------------------------------ leaders and reassignments

PREFERRED, UNCLEAN = 0, 1


def _elected(resp) -> dict[str, Any]:
    return {"error_code": int(getattr(resp, "error_code", 0)), "results": sorted(
        [r.topic, p.partition_id, int(p.error_code), p.error_message]
        for r in resp.replica_election_results for p in r.partition_result)}


def elect(c: Conversation, label: str, election_type: int, partitions, version: int | None = None):
    """partitions: [(label, [indexes])] or None (every partition)."""
    resp = c.send(43, c.v if version is None else version, record=False, election_type=election_type, timeout=10000, topic_partitions=None
                  if partitions is None else [{"topic": c[lb] if lb in c.names else lb, "partitions": ps}
                                              for lb, ps in partitions])
    c.record(label, _elected(resp))
    return resp


@conversation("elect leaders", 43, labels=("t",))
def elect_leaders(c: Conversation) -> None:
    c.create_topics(("t", 2))
    elect(c, "preferred, already the leader", PREFERRED, [("t", [0, 1])])
    elect(c, "unclean, the leader is up", UNCLEAN, [("t", [0])])
    elect(c, "unknown topic and partition", PREFERRED, [("no-such-topic-" + c["t"], [0]), ("t", [7])])
    resp = c.send(43, c.v, record=False, election_type=PREFERRED, timeout=10000, topic_partitions=None)
    c.record("every partition", {"error_code": int(getattr(resp, "error_code", 0)),
                                 "mine": [r for r in _elected(resp)["results"] if r[0] == c["t"]]})


@conversation("elect leaders of an unknown election type", 43, labels=("t",))
def elect_unknown_type(c: Conversation) -> None:
    """Election types other than PREFERRED (0) and UNCLEAN (1): the whole request is refused and
    nothing is elected. v0 carries no election type, so the lowest end sends v1."""
    version = max(c.v, 1)
    c.create_topics(("t", 2))
    for election_type in (2, -1, 127):
        elect(c, f"election type {election_type}", election_type, [("t", [0, 1])], version)
    elect(c, "election type 2, unknown topic", 2, [("no-such-topic-" + c["t"], [0])], version)
    elect(c, "election type 2, every partition", 2, None, version)
    elect(c, "preferred afterwards", PREFERRED, [("t", [0, 1])], version)


def reassign(c: Conversation, label: str, partitions, allow_rf_change: bool = True, version: int | None = None):
    """partitions: [(label, index, replicas or None to cancel)]"""
    by_topic: dict[str, list] = {}
    for lb, index, replicas in partitions:
        by_topic.setdefault(c[lb] if lb in c.names else lb, []).append({"partition_index": index,
                                                                          "replicas": replicas})
    resp = c.send(45, c.v if version is None else version, record=False, timeout=10000,
                  allow_replication_factor_change=allow_rf_change,
                  topics=[{"name": n, "partitions": ps} for n, ps in by_topic.items()])
    c.record(label, {"error_code": int(resp.error_code), "error_text": resp.error_message, "responses": sorted(
        [t.name, p.partition_index, int(p.error_code), p.error_message] for t in resp.responses for p in t.partitions)})
    return resp


@conversation("partition reassignments", 45, labels=("t",))
def reassignments(c: Conversation) -> None:
    c.create_topics(("t", 2))
    node = c.wait_for_leaders("t")["t"].partitions[0].leader_id
    reassign(c, "to the replica it has", [("t", 0, [node])])
    reassign(c, "cancel with none in progress", [("t", 1, None)])
    reassign(c, "an empty replica list", [("t", 0, [])])
    reassign(c, "an unknown broker", [("t", 0, [node + 41])])
    reassign(c, "a broker twice", [("t", 0, [node, node])])
    reassign(c, "a negative broker id", [("t", 0, [-1])])
    reassign(c, "a partition that does not exist", [("t", 9, [node])])
    reassign(c, "a topic that does not exist", [("no-such-topic-" + c["t"], 0, [node])])
    resp = c.send(46, c.ver(46), record=False, timeout=10000, topics=None)
    c.record("nothing in progress", {"error_code": int(resp.error_code),
                                     "mine": [t.name for t in resp.topics if t.name == c["t"]]})
    c.send(46, c.ver(46), label="list the topic", timeout=10000, topics=[{"name": c["t"], "partition_indexes": [0, 1]}])


@conversation("reassignments of a deleted topic", 45, labels=("t",))
def reassignments_of_a_deleted_topic(c: Conversation) -> None:
    """A topic deleted and created again under its name: no reassignment of the old one is left
    to apply to the new one (kafkalite's own test holds one across the deletion,
    broker/tests/test_replica_admin.py; a one-node Kafka completes every reassignment at once)."""
    c.create_topics(("t", 2))
    node = c.wait_for_leaders("t")["t"].partitions[0].leader_id
    reassign(c, "before the deletion", [("t", 0, [node]), ("t", 1, [node])])
    c.send(20, c.ver(20), label="delete", timeout=30000, topics=[{"name": c["t"]}], topic_names=[c["t"]])
    reassign(c, "the deleted topic", [("t", 0, [node])])
    reassign(c, "cancel on the deleted topic", [("t", 1, None)])
    again = c.until(19, c.ver(19), lambda r: r.topics[0].error_code == ErrorCode.none, record=False, timeout=30,
                    validate_only=False, topics=[{"name": c["t"], "num_partitions": 1, "replication_factor": 1,
                                                  "assignments": [], "configs": []}])
    c.record("created again", int(again.topics[0].error_code))
    c.wait_for_leaders("t")
    c.send(46, c.ver(46), label="listed after", timeout=10000, topics=[{"name": c["t"], "partition_indexes": [0, 1]}])
    reassign(c, "cancel on the new topic", [("t", 0, None)])


# ------------------------------------------------------------------ delegation tokens


@conversation("delegation tokens without SASL", 38, labels=())
def delegation_tokens_plain(c: Conversation) -> None:
    """On a PLAINTEXT connection of a broker with no delegation.token.secret.key (the differ's
    brokers): what each of the four APIs answers."""
    c.send(38, c.v, label="create", owner_principal_type=None, owner_principal_name=None,
           renewers=[{"principal_type": "User", "principal_name": "bob"}], max_lifetime=-1)
    c.send(39, c.ver(39), label="renew", hmac=b"\x01\x02", renew_period=1000)
    c.send(40, c.ver(40), label="expire", hmac=b"\x01\x02", expiry_time_period=-1)
    c.send(41, c.ver(41), label="describe all", owners=None)
    c.send(41, c.ver(41), label="describe an owner", owners=[{"principal_type": "User", "principal_name": "bob"}])


# ------------------------------------------------------------------ client telemetry (KIP-714)

CLIENT_METRICS = 16


def _subscription(resp) -> dict[str, Any]:
    return {"error_code": int(resp.error_code), "has_instance_id": resp.client_instance_id is not None,
            "compression": list(resp.accepted_compression_types),
            "push_interval_ms": round(resp.push_interval.total_seconds() * 1000),
            "telemetry_max_bytes": resp.telemetry_max_bytes, "delta_temporality": resp.delta_temporality,
            "requested_metrics": list(resp.requested_metrics)}


def _listed(c: Conversation, label: str, version: int, types=()):
    """The conversation's own resources among those listed (the brokers hold others')."""
    resp = c.send(74, version, record=False, resource_types=list(types))
    mine = set(c.names.values())
    c.record(label, {"error_code": int(resp.error_code), "mine": sorted(
        [r.resource_name, getattr(r, "resource_type", CLIENT_METRICS)] for r in resp.config_resources
        if r.resource_name in mine)})


@conversation("client telemetry", 74, labels=("s", "c", "t"))
def client_telemetry(c: Conversation) -> None:
    """Subscriptions (CLIENT_METRICS configs), ListConfigResources at both ends of its range, and
    the telemetry APIs at v0, which both brokers serve without advertising them."""
    import uuid as _uuid

    c.create_topics(("t", 1))
    none = c.send(71, 0, record=False, client_instance_id=None)
    c.record("no subscription, new instance", _subscription(none))
    incremental(c, "subscribe", [(CLIENT_METRICS, c["s"], [
        ("metrics", SET, "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator"),
        ("interval.ms", SET, "1000"), ("match", SET, f"client_id={c['c']}")])])
    for step, cfgs in (("interval too small", [("interval.ms", SET, "10")]),
                       ("unknown key", [("no.such.key", SET, "1")]),
                       ("bad match key", [("match", SET, "nobody=x")]),
                       ("bad match regex", [("match", SET, "client_id=[")])):
        incremental(c, f"refused: {step}", [(CLIENT_METRICS, c["s"], cfgs)])
    describe_configs(c, "described", CLIENT_METRICS, c["s"], None,
                     until=lambda r: _values(r).get("interval.ms") == "1000")
    _listed(c, "listed v0", 0)
    if c.ver(74) >= 1:
        _listed(c, "listed v1 by type", c.ver(74), [CLIENT_METRICS])
        _listed(c, "listed v1 other type", c.ver(74), [2])
    instance = _uuid.uuid4()
    c._wire.close()
    from kafkalite.protocol.client import WireClient
    c._wire = WireClient(c.bootstrap, timeout=c.timeout, client_id=c["c"])
    sub = c.until(71, 0, lambda r: len(r.requested_metrics) == 2, record=False, client_instance_id=instance)
    c.record("subscribed", {**_subscription(sub), "instance": sub.client_instance_id == instance})
    c.send(72, 0, label="push with another subscription id", client_instance_id=instance,
           subscription_id=sub.subscription_id + 1, terminating=False, compression_type=0, metrics=b"")
    c.send(72, 0, label="push", client_instance_id=instance, subscription_id=sub.subscription_id,
           terminating=False, compression_type=0, metrics=b"")
    c.send(72, 0, label="push again at once", client_instance_id=instance,
           subscription_id=sub.subscription_id, terminating=False, compression_type=0, metrics=b"")
    c.send(72, 0, label="push with no instance", client_instance_id=None,
           subscription_id=sub.subscription_id, terminating=False, compression_type=0, metrics=b"")
    c.send(72, 0, label="terminating push", client_instance_id=instance,
           subscription_id=sub.subscription_id, terminating=True, compression_type=0, metrics=b"")
    c.send(72, 0, label="push after terminating", client_instance_id=instance,
           subscription_id=sub.subscription_id, terminating=True, compression_type=0, metrics=b"")
    incremental(c, "unsubscribe", [(CLIENT_METRICS, c["s"], [("metrics", DELETE, None), ("interval.ms", DELETE, None),
                                                              ("match", DELETE, None)])])
