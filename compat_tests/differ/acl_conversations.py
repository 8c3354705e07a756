"""The differ's conversations about authorisation: CreateAcls, DescribeAcls and DeleteAcls
field by field, and the errors every API answers a principal that ACLs refuse.

They run on a pair of brokers with StandardAuthorizer (compat_tests/authorizer.py), except the
`PLAIN` ones, which check the answers of a broker without an authorizer. Every conversation
deletes the ACLs it created, since ACLs outlive it on the shared brokers.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from compat_tests.authorizer import ANONYMOUS

from .conversations import Conv, batch, fetch, list_offsets, produce
from .core import Conversation

ACL_CONVERSATIONS: dict[str, Conv] = {}
PLAIN: set[str] = set()  # conversations for brokers without an authorizer

# Kafka's codes: resource types, pattern types, operations, permissions
ANY, TOPIC, GROUP, CLUSTER, TXN_ID = 1, 2, 3, 4, 5
MATCH, LITERAL, PREFIXED = 2, 3, 4
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS = 2, 3, 4, 5, 6, 7, 8, 10
DENY, ALLOW = 2, 3


def acl_conversation(name: str, api_key: int, labels: tuple[str, ...] = ("t",), *, plain: bool = False):
    def register(fn):
        ACL_CONVERSATIONS[name] = Conv(name, api_key, labels, fn)
        if plain:
            PLAIN.add(name)
        return fn
    return register


def creation(rtype, name, pattern, principal, host, op, perm) -> dict:
    return {"resource_type": rtype, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": host, "operation": op, "permission_type": perm}


def acl_filter(rtype, name, pattern, principal=None, host=None, op=ANY, perm=ANY) -> dict:
    return {"resource_type_filter": rtype, "resource_name_filter": name, "pattern_type_filter": pattern,
            "principal_filter": principal, "host_filter": host, "operation": op, "permission_type": perm}


def _acl_rows(entries) -> list:
    return sorted([e.principal, e.host, int(e.operation), int(e.permission_type)] +
                  ([int(e.error_code), e.error_message] if hasattr(e, "error_code") else []) for e in entries)


def describe(c: Conversation, label: str, flt: dict):
    """DescribeAcls, recorded in a fixed order: Kafka lists resources and their ACLs in the order
    of its hash sets."""
    resp = c.send(29, c.ver(29), label=label, record=False, **flt)
    c.record(label, {"error_code": int(resp.error_code), "error_message": resp.error_message, "resources": sorted(
        [r.resource_type, r.resource_name, r.pattern_type, _acl_rows(r.acls)] for r in resp.resources)})
    return resp


def delete(c: Conversation, label: str, filters: list[dict]):
    """DeleteAcls, each filter's matches recorded in a fixed order (Kafka's is a hash set's)."""
    resp = c.send(31, c.ver(31), label=label, record=False, filters=filters)
    c.record(label, [{"error_code": int(f.error_code), "error_message": f.error_message, "matching_acls": sorted(
        [m.resource_type, m.resource_name, m.pattern_type] + _acl_rows([m])[0] for m in f.matching_acls)}
        for f in resp.filter_results])
    return resp


def count(resp) -> int:
    return sum(len(r.acls) for r in resp.resources)


def until_described(c: Conversation, flt: dict, n: int) -> None:
    """Apache Kafka's broker applies ACLs a moment after the controller commits them."""
    c.until(29, c.ver(29), lambda r: r.error_code == ErrorCode.none and count(r) == n, record=False, **flt)


@acl_conversation("acls without an authorizer", 29, labels=("t",), plain=True)
def acls_disabled(c: Conversation) -> None:
    describe(c, "DescribeAcls", acl_filter(ANY, None, ANY))
    c.send(30, c.ver(30), label="CreateAcls", creations=[creation(TOPIC, c["t"], LITERAL, "User:a", "*", READ, ALLOW)])
    delete(c, "DeleteAcls", [acl_filter(TOPIC, c["t"], ANY)])


@acl_conversation("acls", 30, labels=("t", "g", "x"))
def acls(c: Conversation) -> None:
    c.send(30, c.v, label="create", creations=[
        creation(TOPIC, c["t"] + "-eu", LITERAL, "User:alice", "*", READ, ALLOW),
        creation(TOPIC, c["t"] + "-eu", LITERAL, "User:alice", "*", READ, ALLOW),  # again: no change
        creation(TOPIC, c["t"], PREFIXED, "User:bob", "*", WRITE, DENY),
        creation(GROUP, c["g"], PREFIXED, "User:*", "127.0.0.1", ALL, ALLOW),
        creation(TXN_ID, c["x"], LITERAL, "User:carol", "*", DESCRIBE, ALLOW),
        creation(CLUSTER, "not-" + c["t"], LITERAL, "User:alice", "*", ALTER, ALLOW),
        creation(TOPIC, "", LITERAL, "User:alice", "*", READ, ALLOW),
    ])
    # a filter's codes in a creation fail the whole request, every creation with it
    valid = creation(TOPIC, c["t"], LITERAL, "User:dave", "*", READ, ALLOW)
    for step, bad in (("pattern MATCH", creation(TOPIC, c["t"], MATCH, "User:alice", "*", READ, ALLOW)),
                      ("pattern ANY", creation(TOPIC, c["t"], ANY, "User:alice", "*", READ, ALLOW)),
                      ("resource type ANY", creation(ANY, c["t"], LITERAL, "User:alice", "*", READ, ALLOW)),
                      ("operation ANY", creation(TOPIC, c["t"], LITERAL, "User:alice", "*", ANY, ALLOW)),
                      ("permission ANY", creation(TOPIC, c["t"], LITERAL, "User:alice", "*", READ, ANY))):
        c.send(30, c.v, label=f"create with {step}", creations=[valid, bad])
    # code 0 (UNKNOWN) makes the request unreadable: the connection is closed
    c.send_expect_close(30, c.v, label="create with resource type 0",
                        creations=[creation(0, c["t"], LITERAL, "User:alice", "*", READ, ALLOW)])
    c.send_expect_close(29, c.ver(29), label="describe with pattern type 0", **acl_filter(TOPIC, None, 0))
    c.send_expect_close(31, c.ver(31), label="delete with operation 0", filters=[acl_filter(TOPIC, None, ANY, op=0)])
    c.send(30, c.v, label="create with an operation code past the known ones",
           creations=[creation(TOPIC, c["t"], LITERAL, "User:alice", "*", 99, ALLOW)])
    until_described(c, acl_filter(ANY, None, ANY, "User:alice"), 1)
    describe(c, "topic literal", acl_filter(TOPIC, c["t"] + "-eu", LITERAL))
    describe(c, "topic match", acl_filter(TOPIC, c["t"] + "-eu", MATCH))
    describe(c, "topic any pattern", acl_filter(TOPIC, c["t"], ANY))
    describe(c, "group prefixed", acl_filter(GROUP, c["g"], PREFIXED))
    describe(c, "group match below the prefix", acl_filter(GROUP, c["g"] + "-member", MATCH))
    describe(c, "by principal and host", acl_filter(ANY, None, ANY, "User:*", "127.0.0.1"))
    describe(c, "by operation", acl_filter(TXN_ID, None, ANY, op=DESCRIBE, perm=ALLOW))
    delete(c, "delete", [
        acl_filter(TOPIC, c["t"] + "-eu", MATCH, perm=ALLOW),
        acl_filter(TOPIC, c["t"] + "-eu", MATCH),
        acl_filter(GROUP, c["g"], LITERAL),
        acl_filter(TXN_ID, c["x"], ANY),
        acl_filter(GROUP, c["g"], PREFIXED),
    ])
    until_described(c, acl_filter(ANY, None, ANY, "User:*", "127.0.0.1"), 0)
    describe(c, "after delete", acl_filter(TOPIC, c["t"] + "-eu", MATCH))


@acl_conversation("refused", 0, labels=("t", "h", "g", "hg", "x", "cg", "n"))
def refused(c: Conversation) -> None:
    """t: no READ, WRITE or DELETE; h: no DESCRIBE or DESCRIBE_CONFIGS; group g: no READ; group
    hg: no DESCRIBE; transactional id x: no WRITE. Everything else on them is allowed."""
    c.create_topics(("t", 1), ("h", 1))
    everything = [(TOPIC, "t"), (TOPIC, "h"), (TOPIC, "n"), (GROUP, "g"), (GROUP, "hg"), (TXN_ID, "x")]
    denied = [(TOPIC, "t", READ), (TOPIC, "t", WRITE), (TOPIC, "t", DELETE), (TOPIC, "h", DESCRIBE),
              (TOPIC, "h", DESCRIBE_CONFIGS), (TOPIC, "n", DESCRIBE_CONFIGS), (GROUP, "g", READ), (GROUP, "hg", DESCRIBE), (TXN_ID, "x", WRITE)]
    c.send(30, c.ver(30), label="create", creations=[
        creation(rt, c[lb], LITERAL, ANONYMOUS, "*", ALL, ALLOW) for rt, lb in everything] + [
        creation(rt, c[lb], LITERAL, ANONYMOUS, "*", op, DENY) for rt, lb, op in denied])
    for rt, lb in everything:
        until_described(c, acl_filter(rt, c[lb], LITERAL), 1 + sum(1 for d in denied if d[:2] == (rt, lb)))
    try:
        produce(c, c.ver(0), "t", batch(1), step="Produce without WRITE")
        fetch(c, c.ver(1), [("t", 0, 0)], step="Fetch without READ")
        list_offsets(c, c.ver(2), "h", [(0, -1)], step="ListOffsets without DESCRIBE")
        c.send(3, c.ver(3), label="Metadata", topics=[{"name": c["t"], "topic_id": None},
                                                      {"name": c["h"], "topic_id": None}],
               allow_auto_topic_creation=True, include_topic_authorized_operations=True,
               include_cluster_authorized_operations=False)
        # a fresh Kafka creates its internal topics on the first lookups: wait for them, unrecorded
        c.find_coordinator(0, "g", record=False)
        c.find_coordinator(1, "x", record=False)
        c.send(10, 4, label="FindCoordinator", key_type=0, key="", coordinator_keys=[c["g"], c["hg"]])
        c.send(10, 3, label="FindCoordinator v3 without DESCRIBE", key_type=0, key=c["hg"], coordinator_keys=[])
        c.send(10, 4, label="FindCoordinator transactional", key_type=1, key="", coordinator_keys=[c["x"]])
        c.send(8, c.ver(8), label="a simple group to describe", group_id=c["cg"], generation_id_or_member_epoch=-1,
               member_id="", group_instance_id=None, retention_time=-1, topics=[])
        # Kafka may still be loading the group's offsets partition: compare the settled answer
        c.until(15, c.ver(15), lambda r: all(g.error_code != ErrorCode.coordinator_load_in_progress for g in r.groups),
                label="DescribeGroups with authorized operations", groups=[c["cg"], c["hg"]],
                include_authorized_operations=True)
        c.send(60, c.ver(60), label="DescribeCluster with authorized operations",
               include_cluster_authorized_operations=True, endpoint_type=1, include_fenced_brokers=False)
        c.send(11, c.ver(11), label="JoinGroup without READ", group_id=c["g"], session_timeout=10000,
               rebalance_timeout=10000, member_id="", group_instance_id=None, protocol_type="consumer",
               protocols=[{"name": "range", "metadata": b""}], reason=None)
        c.send(8, c.ver(8), label="OffsetCommit without group READ", group_id=c["g"],
               generation_id_or_member_epoch=-1, member_id="", group_instance_id=None, retention_time=-1,
               topics=[{"name": c["t"], "topic_id": c.topic_id("t"), "partitions": [
                   {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1,
                    "commit_timestamp": -1, "committed_metadata": ""}]}])
        topics = [{"name": c["t"], "topic_id": c.topic_id("t"), "partition_indexes": [0]}]
        c.send(9, c.ver(9), label="OffsetFetch without group DESCRIBE", group_id=c["hg"], topics=topics,
               require_stable=False, groups=[{"group_id": c["hg"], "member_id": None, "member_epoch": -1,
                                              "topics": topics}])
        c.send(68, c.ver(68), label="ConsumerGroupHeartbeat subscribing to a topic without DESCRIBE",
               group_id=c["cg"], member_id="differ-member-000000001", member_epoch=0, instance_id=None,
               rack_id=None, rebalance_timeout=10000, subscribed_topic_names=[c["t"], c["h"]],
               subscribed_topic_regex=None, server_assignor=None, topic_partitions=[])
        c.send(22, c.ver(22), label="InitProducerId without WRITE", transactional_id=c["x"],
               transaction_timeout=60000, producer_id=-1, producer_epoch=-1, enable2_pc=False,
               keep_prepared_txn=False)
        c.send(32, c.ver(32), label="DescribeConfigs", include_synonyms=False, include_documentation=False,
               resources=[{"resource_type": 2, "resource_name": c["h"], "configuration_keys": ["retention.ms"]},
                          {"resource_type": 2, "resource_name": c["t"], "configuration_keys": ["retention.ms"]}])
        c.send(19, c.ver(19), label="CreateTopics without DESCRIBE_CONFIGS", timeout=30000, validate_only=False,
               topics=[{"name": c["n"], "num_partitions": 2, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": "retention.ms", "value": "100000"}]}])
        c.send(21, c.ver(21), label="DeleteRecords without DELETE", timeout=5000, topics=[
            {"name": c["t"], "partitions": [{"partition_index": 0, "offset": 0}]}])
        c.send(20, c.ver(20), label="DeleteTopics without DESCRIBE", timeout=30000, topic_names=[c["h"]],
               topics=[{"name": c["h"], "topic_id": None}])
    finally:
        c.reconnect()
        delete(c, "delete", [acl_filter(rt, c[lb], LITERAL) for rt, lb in everything])


@acl_conversation("share and streams groups refused", 76, labels=("t", "h", "g", "hg", "dg", "og", "sg"))
def share_and_streams_refused(c: Conversation) -> None:
    """The share group and streams group APIs' checks: topic t has no READ, topic h no DESCRIBE;
    group g no READ, group hg no DESCRIBE, group dg no DELETE; og and sg are open."""
    import uuid as _uuid

    c.create_topics(("t", 1), ("h", 1))
    everything = [(TOPIC, "t"), (TOPIC, "h"), (GROUP, "g"), (GROUP, "hg"), (GROUP, "dg"), (GROUP, "og"),
                  (GROUP, "sg")]
    denied = [(TOPIC, "t", READ), (TOPIC, "h", DESCRIBE), (GROUP, "g", READ), (GROUP, "hg", DESCRIBE),
              (GROUP, "dg", DELETE)]
    c.send(30, c.ver(30), label="create", creations=[
        creation(rt, c[lb], LITERAL, ANONYMOUS, "*", ALL, ALLOW) for rt, lb in everything] + [
        creation(rt, c[lb], LITERAL, ANONYMOUS, "*", op, DENY) for rt, lb, op in denied])
    for rt, lb in everything:
        until_described(c, acl_filter(rt, c[lb], LITERAL), 1 + sum(1 for d in denied if d[:2] == (rt, lb)))
    member = str(_uuid.uuid4())
    tid = c.topic_id("t")

    def heartbeat(label, group, epoch, topics, record=True):
        return c.send(76, c.ver(76), label=label, record=record, group_id=c[group], member_id=member,
                      member_epoch=epoch, rack_id=None, subscribed_topic_names=[c[t] for t in topics])

    def share_fetch(label, group, epoch, acks=()):
        return c.send(78, c.ver(78), label=label, group_id=c[group], member_id=member, share_session_epoch=epoch,
                      max_wait=100, min_bytes=1, max_bytes=1 << 20, max_records=10, batch_size=10,
                      share_acquire_mode=0, is_renew_ack=False, forgotten_topics_data=[],
                      topics=[{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                          {"first_offset": f, "last_offset": last, "acknowledge_types": [k]} for f, last, k in acks]}]}])

    try:
        c.find_coordinator(0, "og", record=False)
        heartbeat("ShareGroupHeartbeat without group READ", "g", 0, ["t"])
        heartbeat("ShareGroupHeartbeat subscribing to a topic without DESCRIBE", "og", 0, ["t", "h"])
        share_fetch("ShareFetch without group READ", "g", 0)
        c.send(79, c.ver(79), label="ShareAcknowledge without group READ", group_id=c["g"], member_id=member,
               share_session_epoch=1, is_renew_ack=False, topics=[{"topic_id": tid, "partitions": [
                   {"partition_index": 0, "acknowledgement_batches": [
                       {"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}]}]}])
        c.send(77, c.ver(77), label="ShareGroupDescribe without group DESCRIBE", group_ids=[c["hg"]],
               include_authorized_operations=True)
        c.send(90, c.ver(90), label="DescribeShareGroupOffsets without group DESCRIBE",
               groups=[{"group_id": c["hg"], "topics": [{"topic_name": c["t"], "partitions": [0]}]}])
        c.send(91, c.ver(91), label="AlterShareGroupOffsets without group READ", group_id=c["g"],
               topics=[{"topic_name": c["t"], "partitions": [{"partition_index": 0, "start_offset": 0}]}])
        c.send(92, c.ver(92), label="DeleteShareGroupOffsets without group DELETE", group_id=c["dg"],
               topics=[{"topic_name": c["t"]}])
        c.send(88, c.ver(88), label="StreamsGroupHeartbeat without group READ", **_streams_join(c, "g", "t"))
        c.send(88, c.ver(88), label="StreamsGroupHeartbeat with a topology topic without DESCRIBE",
               **_streams_join(c, "sg", "h"))
        c.send(89, c.ver(89), label="StreamsGroupDescribe without group DESCRIBE", group_ids=[c["hg"]],
               include_authorized_operations=True)
        # og's member subscribes to t, which it may DESCRIBE but not READ (unrecorded: Kafka
        # assigns a joining member's partitions after answering, kafkalite at once)
        heartbeat("ShareGroupHeartbeat joining", "og", 0, ["t"], record=False)
        share_fetch("ShareFetch from a topic without READ", "og", 0)
        c.send(79, c.ver(79), label="ShareAcknowledge on a topic without READ", group_id=c["og"], member_id=member,
               share_session_epoch=1, is_renew_ack=False, topics=[{"topic_id": tid, "partitions": [
                   {"partition_index": 0, "acknowledgement_batches": [
                       {"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}]}]}])
        # a describe that would show t once the principal may no longer DESCRIBE it
        c.send(88, c.ver(88), label="StreamsGroupHeartbeat joining", record=False, **_streams_join(c, "sg", "t"))
        c.send(30, c.ver(30), label="deny DESCRIBE on t",
               creations=[creation(TOPIC, c["t"], LITERAL, ANONYMOUS, "*", DESCRIBE, DENY)])
        until_described(c, acl_filter(TOPIC, c["t"], LITERAL), 3)
        c.send(89, c.ver(89), label="StreamsGroupDescribe of a topology with a topic without DESCRIBE",
               group_ids=[c["sg"]], include_authorized_operations=False)
        heartbeat("ShareGroupHeartbeat leaving", "og", -1, [])
        c.send(90, c.ver(90), label="DescribeShareGroupOffsets of a topic without DESCRIBE",
               groups=[{"group_id": c["og"], "topics": [{"topic_name": c["h"], "partitions": [0]}]}])
        c.send(91, c.ver(91), label="AlterShareGroupOffsets of a topic without READ", group_id=c["og"],
               topics=[{"topic_name": c["t"], "partitions": [{"partition_index": 0, "start_offset": 0}]}])
        c.send(92, c.ver(92), label="DeleteShareGroupOffsets of a topic without READ", group_id=c["og"],
               topics=[{"topic_name": c["t"]}])
    finally:
        c.reconnect()
        delete(c, "delete", [acl_filter(rt, c[lb], LITERAL) for rt, lb in everything])


def _streams_join(c: Conversation, group: str, source: str) -> dict:
    return dict(group_id=c[group], member_id="differ-streams-member-1", member_epoch=0, endpoint_information_epoch=0,
                instance_id=None, rack_id=None, rebalance_timeout=30000, process_id="process-1",
                user_endpoint=None, client_tags=[], task_offsets=None, task_end_offsets=None,
                shutdown_application=False, active_tasks=[], standby_tasks=[], warmup_tasks=[],
                topology={"epoch": 1, "subtopologies": [
                    {"subtopology_id": "0", "source_topics": [c[source]], "source_topic_regex": [],
                     "state_changelog_topics": [], "repartition_sink_topics": [], "repartition_source_topics": [],
                     "copartition_groups": []}]})
