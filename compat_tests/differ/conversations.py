"""The differ's conversations: scripted raw requests, each run against Apache Kafka and
kafkalite with fresh resource names, answers compared field by field.

`@conversation(name, api_key, labels)` registers `fn(c)`; the test runs it once at the lowest
and once at the highest version of `api_key` that both brokers serve (`c.v`). Other APIs a
conversation needs are sent at fixed versions. Every answer the conversation sends is
recorded unless `record=False` (set-up polling only).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from kio.schema.errors import ErrorCode

from kafkalite.protocol.batch import COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_ZSTD
from kafkalite.protocol.records import Record, build_batch

from .core import Conversation


@dataclass(frozen=True)
class Conv:
    name: str
    api_key: int
    labels: tuple[str, ...]
    fn: Callable[[Conversation], None]


CONVERSATIONS: dict[str, Conv] = {}


def conversation(name: str, api_key: int, labels: tuple[str, ...] = ("t",)):
    def register(fn):
        if name in CONVERSATIONS:
            raise ValueError(f"conversation {name} registered twice")
        CONVERSATIONS[name] = Conv(name, api_key, labels, fn)
        return fn
    return register


TS = 1_600_000_000  # record timestamps below the normaliser's wall-clock line: compared exactly


def recs(n: int, start: int = 0, *, keyed: bool = True) -> list[Record]:
    return [Record(key=f"k{i}".encode() if keyed else None, value=f"v{i}".encode(),
                   headers=(("h", f"{i}".encode()),), timestamp_ms=TS + i) for i in range(start, start + n)]


def batch(n: int = 3, start: int = 0, **kw) -> bytes:
    return bytes(build_batch(recs(n, start, keyed=kw.pop("keyed", True)), **kw))


def produce(c: Conversation, v: int, label: str, data: bytes, *, partition: int = 0, acks: int = -1,
            txn: str | None = None, step: str = "", record: bool = True):
    return c.send(0, v, label=step or f"Produce v{v}", record=record, transactional_id=txn, acks=acks,
                  timeout=10000, topic_data=[{"name": c[label], "topic_id": c.topic_id(label),
                                              "partition_data": [{"index": partition, "records": data}]}])


def fetch(c: Conversation, v: int, parts: list[tuple[str, int, int]], *, isolation: int = 0,
          max_wait: int = 0, step: str = "", session_id: int = 0, session_epoch: int = -1, forgotten=()):
    by_topic: dict[str, list] = {}
    for label, p, off in parts:
        by_topic.setdefault(label, []).append({"partition": p, "fetch_offset": off, "partition_max_bytes": 1 << 20,
                                               "current_leader_epoch": -1, "log_start_offset": -1})
    fields = dict(max_wait=max_wait, min_bytes=1, max_bytes=1 << 22,
                  isolation_level=isolation, session_id=session_id, session_epoch=session_epoch,
                  topics=[{"topic": c[lb], "topic_id": c.topic_id(lb), "partitions": ps} for lb, ps in by_topic.items()],
                  forgotten_topics_data=[{"topic": c[lb], "topic_id": c.topic_id(lb), "partitions": ps}
                                         for lb, ps in forgotten],
                  rack_id="")
    return c.send(1, v, label=step or f"Fetch v{v}", **fields)


def list_offsets(c: Conversation, v: int, label: str, timestamps: list[tuple[int, int]], *, isolation: int = 0,
                 step: str = ""):
    return c.send(2, v, label=step or f"ListOffsets v{v}", replica_id=-1, isolation_level=isolation, timeout=1000,
                  topics=[{"name": c[label], "partitions": [
                      {"partition_index": p, "timestamp": ts, "current_leader_epoch": -1, "max_num_offsets": 1}
                      for p, ts in timestamps]}])


def fetch_offsets(c: Conversation, v: int, group: str, topics: dict[str, list[int]] | None, *, step: str,
                 require_stable: bool = False):
    """OffsetFetch in the v0-v7 form (one group) and the v8+ form (groups), topics by name and id."""
    ts = None if topics is None else [{"name": c[lb], "topic_id": c.topic_id(lb), "partition_indexes": ps}
                                      for lb, ps in topics.items()]
    return c.send(9, v, label=step, require_stable=require_stable, group_id=c[group], topics=ts,
                  groups=[{"group_id": c[group], "member_id": None, "member_epoch": -1, "topics": ts}])


def metadata(c: Conversation, v: int, labels: list[str], *, auto_create: bool = False, step: str = ""):
    return c.send(3, v, label=step or f"Metadata v{v}",
                  topics=[{"name": c[lb], "topic_id": None} for lb in labels],
                  allow_auto_topic_creation=auto_create, include_topic_authorized_operations=False,
                  include_cluster_authorized_operations=False)


# ------------------------------------------------------------------ produce / fetch


@conversation("produce and fetch", 0)
def produce_fetch(c: Conversation) -> None:
    c.create_topics(("t", 2))
    produce(c, c.v, "t", batch(3))
    produce(c, c.v, "t", batch(2, 3), partition=1)
    produce(c, c.v, "t", batch(1, 5))
    fetch(c, c.ver(1), [("t", 0, 0), ("t", 1, 0)])
    fetch(c, c.ver(1), [("t", 0, 3)])


@conversation("produce errors", 0)
def produce_errors(c: Conversation) -> None:
    c.create_topics(("t", 1))
    produce(c, c.v, "t", batch(1), partition=5, step="unknown partition")
    good = bytearray(batch(2))
    bad = bytearray(good)
    bad[-1] ^= 0xFF  # the CRC no longer matches
    produce(c, c.v, "t", bytes(bad), step="bad CRC")
    c.send(0, c.v, label="acks=2", transactional_id=None, acks=2, timeout=1000,
           topic_data=[{"name": c["t"], "topic_id": c.topic_id("t"),
                        "partition_data": [{"index": 0, "records": bytes(good)}]}])
    produce(c, c.v, "t", bytes(good) + bytes(good), step="two batches")
    produce(c, c.v, "t", bytes(good), step="after the errors")


@conversation("produce to an unknown topic", 0, labels=("t",))
def produce_unknown(c: Conversation) -> None:
    import uuid as _uuid
    c.send(0, c.v, label="unknown topic", transactional_id=None, acks=-1, timeout=1000,
           topic_data=[{"name": c["t"], "topic_id": _uuid.UUID(int=12345),
                        "partition_data": [{"index": 0, "records": batch(1)}]}])


@conversation("fetch", 1)
def fetch_conv(c: Conversation) -> None:
    c.create_topics(("t", 2))
    produce(c, c.ver(0), "t", batch(3))
    produce(c, c.ver(0), "t", batch(2, 3))
    fetch(c, c.v, [("t", 0, 0)], step="from 0")
    fetch(c, c.v, [("t", 0, 4)], step="inside a batch")
    fetch(c, c.v, [("t", 0, 5)], step="at the end")
    fetch(c, c.v, [("t", 0, 6)], step="past the end")
    fetch(c, c.v, [("t", 0, -3)], step="negative offset")
    fetch(c, c.v, [("t", 1, 0)], step="empty partition")
    fetch(c, c.v, [("t", 7, 0)], step="unknown partition")
    if c.v >= 9:  # current_leader_epoch came with v9 (KIP-320)
        for epoch, step in ((5, "future leader epoch"), (0, "current leader epoch")):
            c.send(1, c.v, label=step, max_wait=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                   session_id=0, session_epoch=-1, rack_id="",
                   topics=[{"topic": c["t"], "topic_id": c.topic_id("t"), "partitions": [
                       {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                        "current_leader_epoch": epoch}]}])


@conversation("fetch waits for max_wait", 1)
def fetch_wait(c: Conversation) -> None:
    c.create_topics(("t", 1))
    t0 = time.monotonic()
    fetch(c, c.v, [("t", 0, 0)], max_wait=300, step="empty, waits")
    c.record("waited at least max_wait", time.monotonic() - t0 >= 0.25)


@conversation("compression codecs", 0)
def compression(c: Conversation) -> None:
    c.create_topics(("t", 1))
    for codec in (COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_ZSTD):
        produce(c, c.v, "t", batch(3, compression=codec), step=f"codec {codec}")
    fetch(c, c.ver(1), [("t", 0, 0)])


@conversation("topic compression.type", 0, labels=("t", "z"))
def topic_compression(c: Conversation) -> None:
    c.create_topics(("t", 1, {"compression.type": "gzip"}), ("z", 1, {"compression.type": "uncompressed"}))
    produce(c, c.v, "t", batch(3), step="uncompressed into gzip topic")
    produce(c, c.v, "t", batch(2, 3, compression=COMPRESSION_ZSTD), step="zstd into gzip topic")
    produce(c, c.v, "z", batch(2, compression=COMPRESSION_SNAPPY), step="snappy into uncompressed topic")
    fetch(c, c.ver(1), [("t", 0, 0), ("z", 0, 0)])


@conversation("compacted topic needs keys", 0)
def compacted(c: Conversation) -> None:
    c.create_topics(("t", 1, {"cleanup.policy": "compact"}))
    produce(c, c.v, "t", batch(2, keyed=False), step="no key")
    produce(c, c.v, "t", batch(2), step="keyed")


@conversation("list offsets", 2)
def list_offsets_conv(c: Conversation) -> None:
    c.create_topics(("t", 1))
    produce(c, c.ver(0), "t", batch(3))
    produce(c, c.ver(0), "t", batch(3, 3))
    list_offsets(c, c.v, "t", [(0, -2)], step="earliest")
    list_offsets(c, c.v, "t", [(0, -1)], step="latest")
    list_offsets(c, c.v, "t", [(0, TS + 4)], step="by time")
    list_offsets(c, c.v, "t", [(0, TS + 100)], step="after every record")
    if c.v >= 7:
        list_offsets(c, c.v, "t", [(0, -3)], step="max timestamp")
    list_offsets(c, c.v, "t", [(3, -1)], step="unknown partition")


@conversation("delete records", 21)
def delete_records(c: Conversation) -> None:
    c.create_topics(("t", 1))
    produce(c, c.ver(0), "t", batch(5))

    def delete(offset, step, part=0):
        c.send(21, c.v, label=step, timeout=5000,
               topics=[{"name": c["t"], "partitions": [{"partition_index": part, "offset": offset}]}])

    delete(2, "to offset 2")
    delete(9, "past the high watermark")
    delete(-1, "to the high watermark")
    delete(1, "unknown partition", part=4)
    fetch(c, c.ver(1), [("t", 0, 1)], step="fetch below the log start")
    list_offsets(c, c.ver(2), "t", [(0, -2)], step="earliest after delete")


@conversation("offset for leader epoch", 23)
def offset_for_leader_epoch(c: Conversation) -> None:
    c.create_topics(("t", 1))
    produce(c, c.ver(0), "t", batch(3))
    for epoch, step in ((0, "epoch 0"), (5, "future epoch")):
        c.send(23, c.v, label=step, replica_id=-1, topics=[{"topic": c["t"], "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": epoch}]}])


# ------------------------------------------------------------------ metadata and admin


@conversation("metadata", 3, labels=("t", "missing"))
def metadata_conv(c: Conversation) -> None:
    c.create_topics(("t", 3))
    metadata(c, c.v, ["t"], step="known topic")
    if c.v >= 4:
        metadata(c, c.v, ["missing"], step="unknown topic, no auto-creation")


@conversation("api versions", 18, labels=())
def api_versions(c: Conversation) -> None:
    resp = c.send(18, c.v, label="ApiVersions", record=False, client_software_name="differ",
                  client_software_version="1.0")
    c.record("error", resp.error_code)
    c.record("has ApiVersions", any(k.api_key == 18 for k in resp.api_keys))
    c.send(18, 4 if c.v < 4 else c.v, label="bad client software name", client_software_name="!bad name",
           client_software_version="1.0")


@conversation("create and delete topics", 19, labels=("t", "bad", "dup"))
def create_delete(c: Conversation) -> None:
    c.create_topics(("t", 2), version=c.v)
    c.send(19, c.v, label="create again", timeout=5000, validate_only=False,
           topics=[{"name": c["t"], "num_partitions": 1, "replication_factor": 1}])
    c.send(19, c.v, label="bad requests", timeout=5000, validate_only=False, topics=[
        {"name": c["bad"], "num_partitions": 1, "replication_factor": 3},
        {"name": c["dup"], "num_partitions": 1, "replication_factor": 1,
         "configs": [{"name": "cleanup.policy", "value": "sideways"}]},
        {"name": "bad/name", "num_partitions": 1, "replication_factor": 1},
        {"name": c["bad"] + "x", "num_partitions": 0, "replication_factor": 1},
    ])
    c.send(19, c.v, label="validate only", timeout=5000, validate_only=True,
           topics=[{"name": c["dup"], "num_partitions": 4, "replication_factor": 1,
                    "configs": [{"name": "retention.ms", "value": "1000"}]}])
    c.send(20, c.ver(20), label="DeleteTopics", timeout=5000,
           topics=[{"name": c["t"]}, {"name": c["dup"]}], topic_names=[c["t"], c["dup"]])


@conversation("delete topics", 20, labels=("t", "missing"))
def delete_topics(c: Conversation) -> None:
    c.create_topics(("t", 1))
    c.send(20, c.v, label="delete", timeout=5000, topics=[{"name": c["t"]}], topic_names=[c["t"]])
    c.send(20, c.v, label="delete missing", timeout=5000, topics=[{"name": c["missing"]}],
           topic_names=[c["missing"]])


@conversation("create partitions", 37, labels=("t", "missing"))
def create_partitions(c: Conversation) -> None:
    c.create_topics(("t", 1))

    def grow(label, count, step, validate=False):
        c.send(37, c.v, label=step, timeout=5000, validate_only=validate,
               topics=[{"name": c[label], "count": count, "assignments": None}])

    grow("t", 3, "grow to 3")
    grow("t", 2, "shrink")
    grow("t", 3, "same count")
    grow("missing", 2, "missing topic")
    grow("t", 5, "validate only", validate=True)


@conversation("describe configs", 32, labels=("t", "missing"))
def describe_configs(c: Conversation) -> None:
    c.create_topics(("t", 1, {"retention.ms": "12345"}))
    c.send(32, c.v, label="one key", include_synonyms=True, include_documentation=False, resources=[
        {"resource_type": 2, "resource_name": c["t"], "configuration_keys": ["retention.ms", "cleanup.policy"]}])
    c.send(32, c.v, label="missing topic", include_synonyms=False, include_documentation=False, resources=[
        {"resource_type": 2, "resource_name": c["missing"], "configuration_keys": ["retention.ms"]}])
    c.send(32, c.v, label="bad resource type", include_synonyms=False, include_documentation=False, resources=[
        {"resource_type": 99, "resource_name": c["t"], "configuration_keys": None}])


@conversation("alter configs", 33, labels=("t", "missing"))
def alter_configs(c: Conversation) -> None:
    c.create_topics(("t", 1))

    def alter(label, configs, step, validate=False):
        c.send(33, c.v, label=step, validate_only=validate, resources=[
            {"resource_type": 2, "resource_name": c[label],
             "configs": [{"name": k, "value": v} for k, v in configs.items()]}])

    alter("t", {"retention.ms": "5000"}, "valid")
    alter("t", {"retention.ms": "soon"}, "bad value")
    alter("t", {"no.such.config": "1"}, "unknown key")
    alter("missing", {"retention.ms": "5000"}, "missing topic")
    c.send(32, c.ver(32), label="described after", include_synonyms=False, include_documentation=False, resources=[
        {"resource_type": 2, "resource_name": c["t"], "configuration_keys": ["retention.ms"]}])


@conversation("incremental alter configs", 44, labels=("t", "missing"))
def incremental_alter(c: Conversation) -> None:
    c.create_topics(("t", 1))

    def alter(label, ops, step):
        c.send(44, c.v, label=step, validate_only=False, resources=[
            {"resource_type": 2, "resource_name": c[label],
             "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}])

    alter("t", [("retention.ms", 0, "7000"), ("cleanup.policy", 0, "compact")], "set")
    alter("t", [("cleanup.policy", 2, "delete")], "append to a list")
    alter("t", [("retention.ms", 1, None)], "delete")
    alter("t", [("retention.ms", 2, "1")], "append to a non-list")
    alter("t", [("min.insync.replicas", 0, "0")], "invalid value")
    alter("missing", [("retention.ms", 0, "1")], "missing topic")
    c.send(32, c.ver(32), label="described after", include_synonyms=False, include_documentation=False, resources=[
        {"resource_type": 2, "resource_name": c["t"], "configuration_keys": ["retention.ms", "cleanup.policy"]}])


@conversation("describe cluster", 60, labels=())
def describe_cluster(c: Conversation) -> None:
    c.send(60, c.v, label="DescribeCluster", include_cluster_authorized_operations=False, endpoint_type=1,
           include_fenced_brokers=False)


@conversation("describe log dirs", 35)
def describe_log_dirs(c: Conversation) -> None:
    c.create_topics(("t", 1))
    resp = c.send(35, c.v, label="DescribeLogDirs", record=False,
                  topics=[{"topic": c["t"], "partitions": [0, 3]}])
    c.record("error", getattr(resp, "error_code", ErrorCode.none))
    c.record("topics", [[t.name for t in d.topics] for d in resp.results])
    c.record("partitions", [[[p.partition_index for p in t.partitions] for t in d.topics] for d in resp.results])


@conversation("describe topic partitions", 75, labels=("t", "missing"))
def describe_topic_partitions(c: Conversation) -> None:
    c.create_topics(("t", 3))
    c.send(75, c.v, label="two partitions a page", topics=[{"name": c["t"]}, {"name": c["missing"]}],
           response_partition_limit=2, cursor=None)


@conversation("list partition reassignments", 46)
def list_reassignments(c: Conversation) -> None:
    c.create_topics(("t", 1))
    c.send(46, c.v, label="none", timeout=5000, topics=[{"name": c["t"], "partition_indexes": [0]}])


# ------------------------------------------------------------------ classic groups


def join(c: Conversation, v: int, group: str, member: str = "", *, step: str = "", instance=None):
    return c.send(11, v, label=step or f"JoinGroup v{v}", group_id=c[group], session_timeout=10000,
                  rebalance_timeout=10000, member_id=member, group_instance_id=instance,
                  protocol_type="consumer", protocols=[{"name": "range", "metadata": b"\x00\x01"}], reason=None)


@conversation("classic group", 11, labels=("g", "t"))
def classic_group(c: Conversation) -> None:
    c.create_topics(("t", 1))
    c.find_coordinator(0, "g")
    r = join(c, c.v, "g", step="join without member id")
    member = r.member_id
    if r.error_code == ErrorCode.member_id_required:
        r = join(c, c.v, "g", member, step="join with the member id")
    gen = r.generation_id
    c.send(15, c.ver(15), label="describe awaiting sync", groups=[c["g"]], include_authorized_operations=False)
    c.send(14, c.ver(14), label="sync", group_id=c["g"], generation_id=gen, member_id=member, group_instance_id=None,
           protocol_type="consumer", protocol_name="range",
           assignments=[{"member_id": member, "assignment": b"\x00\x01\x02"}])
    c.send(12, c.ver(12), label="heartbeat", group_id=c["g"], generation_id=gen, member_id=member, group_instance_id=None)
    c.send(12, c.ver(12), label="heartbeat, wrong generation", group_id=c["g"], generation_id=gen + 5,
           member_id=member, group_instance_id=None)
    c.send(12, c.ver(12), label="heartbeat, unknown member", group_id=c["g"], generation_id=gen,
           member_id="nobody", group_instance_id=None)
    c.send(8, c.ver(8), label="commit", group_id=c["g"], generation_id_or_member_epoch=gen, member_id=member,
           group_instance_id=None, topics=[{"name": c["t"], "topic_id": c.topic_id("t"), "partitions": [
               {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
                "committed_metadata": "m"}]}])
    c.send(8, c.ver(8), label="commit, stale generation", group_id=c["g"], generation_id_or_member_epoch=gen - 1,
           member_id=member, group_instance_id=None, topics=[{"name": c["t"], "topic_id": c.topic_id("t"), "partitions": [
               {"partition_index": 0, "committed_offset": 8, "committed_leader_epoch": -1,
                "committed_metadata": ""}]}])
    c.send(15, c.ver(15), label="describe stable", groups=[c["g"]], include_authorized_operations=False)
    c.send(13, c.ver(13), label="leave", group_id=c["g"], members=[{"member_id": member, "group_instance_id": None,
                                                            "reason": None}])
    c.send(15, c.ver(15), label="describe empty", groups=[c["g"]], include_authorized_operations=False)
    c.send(42, c.ver(42), label="delete the group", groups_names=[c["g"]])
    c.send(15, c.ver(15), label="describe deleted", groups=[c["g"]], include_authorized_operations=False)


@conversation("classic group rebalance", 12, labels=("g", "t"))
def classic_rebalance(c: Conversation) -> None:
    """Two members: Stable, PreparingRebalance while the second waits, CompletingRebalance, Stable."""
    c.create_topics(("t", 1))
    c.find_coordinator(0, "g", record=False)
    jv = c.ver(11)

    def join_fields(member):
        return dict(group_id=c["g"], session_timeout=10000, rebalance_timeout=10000, member_id=member,
                    group_instance_id=None, protocol_type="consumer",
                    protocols=[{"name": "range", "metadata": b"\x00\x01"}], reason=None)

    def sync(member, gen, step, assignments=()):
        return c.send(14, c.ver(14), label=step, group_id=c["g"], generation_id=gen, member_id=member,
                      group_instance_id=None, protocol_type="consumer", protocol_name="range",
                      assignments=[{"member_id": m, "assignment": a} for m, a in assignments])

    def describe(step):
        c.send(15, c.ver(15), label=step, groups=[c["g"]], include_authorized_operations=False)

    a = join(c, jv, "g", step="A joins")
    if a.error_code == ErrorCode.member_id_required:
        a = join(c, jv, "g", a.member_id, step="A joins with its member id")
    sync(a.member_id, a.generation_id, "A syncs", [(a.member_id, b"a")])
    b_id = ""
    if jv >= 4:
        b = join(c, jv, "g", step="B asks to join")
        b_id = b.member_id
    pending = c.begin(11, jv, **join_fields(b_id))
    # B's join is parked until A rejoins: the group says so once the broker has it
    c.until(15, c.ver(15), lambda resp: resp.groups[0].group_state == "PreparingRebalance",
            label="preparing rebalance", groups=[c["g"]], include_authorized_operations=False)
    c.send(12, c.v, label="A's heartbeat during the rebalance", group_id=c["g"], generation_id=a.generation_id,
           member_id=a.member_id, group_instance_id=None)
    a2 = join(c, jv, "g", a.member_id, step="A rejoins")
    b2 = c.finish(pending, "B's join completes")
    describe("completing rebalance")
    leader, follower = (a2, b2) if a2.member_id == a2.leader else (b2, a2)
    c.send(12, c.v, label="heartbeat before sync", group_id=c["g"], generation_id=a2.generation_id,
           member_id=a2.member_id, group_instance_id=None)
    sync(leader.member_id, leader.generation_id, "leader syncs",
         [(a2.member_id, b"a"), (b2.member_id, b"b")])
    sync(follower.member_id, follower.generation_id, "follower syncs")
    describe("stable with two members")
    c.send(12, c.v, label="heartbeat when stable", group_id=c["g"], generation_id=a2.generation_id,
           member_id=a2.member_id, group_instance_id=None)
    c.send(13, c.ver(13), label="both leave", group_id=c["g"], member_id=a2.member_id,
           members=[{"member_id": a2.member_id, "group_instance_id": None, "reason": None},
                    {"member_id": b2.member_id, "group_instance_id": None, "reason": None}])
    describe("empty again")


@conversation("sync and heartbeat errors", 14, labels=("g",))
def group_errors(c: Conversation) -> None:
    c.find_coordinator(0, "g")
    c.send(14, c.v, label="sync unknown group", group_id=c["g"], generation_id=1, member_id="m",
           group_instance_id=None, protocol_type="consumer", protocol_name="range", assignments=[])
    c.send(12, c.ver(12), label="heartbeat unknown group", group_id=c["g"], generation_id=1, member_id="m",
           group_instance_id=None)
    c.send(13, c.ver(13), label="leave unknown group", group_id=c["g"],
           members=[{"member_id": "m", "group_instance_id": None, "reason": None}])
    c.send(42, c.ver(42), label="delete unknown group", groups_names=[c["g"]])


@conversation("offset commit and fetch", 8, labels=("g", "t", "missing"))
def offsets(c: Conversation) -> None:
    c.create_topics(("t", 2))
    c.find_coordinator(0, "g")
    c.send(8, c.v, label="simple commit", group_id=c["g"], generation_id_or_member_epoch=-1, member_id="",
           group_instance_id=None, retention_time_ms=-1, topics=[{"name": c["t"], "topic_id": c.topic_id("t"), "partitions": [
               {"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1, "committed_metadata": "x",
                "commit_timestamp": -1},
               {"partition_index": 1, "committed_offset": 5, "committed_leader_epoch": -1, "committed_metadata": None,
                "commit_timestamp": -1}]}])
    fetch_offsets(c, c.ver(9), "g", {"t": [0, 1, 2]}, step="fetch")
    if c.ver(9) >= 2:  # all of a group's offsets came with v2
        fetch_offsets(c, c.ver(9), "g", None, step="fetch all")
    c.send(47, 0, label="offset delete", group_id=c["g"],
           topics=[{"name": c["t"], "partitions": [{"partition_index": 0}]}])
    fetch_offsets(c, c.ver(9), "g", {"t": [0, 1]}, step="fetch after delete")


@conversation("offset commit errors", 8, labels=("g", "t", "missing"))
def offset_commit_errors(c: Conversation) -> None:
    c.create_topics(("t", 1))
    c.find_coordinator(0, "g", record=False)

    def commit(step, label, partition, generation=-1, member=""):
        c.send(8, c.v, label=step, group_id=c["g"], generation_id_or_member_epoch=generation, member_id=member,
               group_instance_id=None, retention_time_ms=-1,
               topics=[{"name": c[label], "topic_id": c.topic_id(label) if label == "t" else None,
                        "partitions": [{"partition_index": partition, "committed_offset": 1,
                                        "committed_leader_epoch": -1, "commit_timestamp": -1}]}])

    commit("unknown partition", "t", 5)
    c.send(15, c.ver(15), label="no group after a failed commit", groups=[c["g"]],
           include_authorized_operations=False)
    c.send(47, 0, label="offset delete, no group", group_id=c["g"], topics=[])
    commit("generation without a group", "t", 0, generation=3, member="m")
    commit("simple commit", "t", 0)
    commit("member of an empty group", "t", 0, generation=1, member="m")
    c.send(15, c.ver(15), label="the simple group", groups=[c["g"]], include_authorized_operations=False)


@conversation("offset fetch", 9, labels=("g", "t"))
def offset_fetch(c: Conversation) -> None:
    c.create_topics(("t", 1))
    c.find_coordinator(0, "g")
    fetch_offsets(c, c.v, "g", {"t": [0]}, step="unknown group")


@conversation("list groups", 16, labels=("g", "t"))
def list_groups(c: Conversation) -> None:
    c.find_coordinator(0, "g")
    c.create_topics(("t", 1))
    c.send(8, c.ver(8), label="create the group by committing", group_id=c["g"], generation_id_or_member_epoch=-1,
           member_id="", group_instance_id=None, topics=[{"name": c["t"], "topic_id": c.topic_id("t"), "partitions": [
               {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1}]}])
    resp = c.send(16, c.v, label="ListGroups", record=False, states_filter=["Empty"], types_filter=[])
    c.record("error", resp.error_code)
    c.record("ours listed", [(g.protocol_type, getattr(g, "group_state", None)) for g in resp.groups
                             if g.group_id == c["g"]])


# ------------------------------------------------------------------ KIP-848 groups


@conversation("consumer group heartbeat", 68, labels=("g", "t"))
def consumer_group(c: Conversation) -> None:
    import uuid as _uuid
    c.create_topics(("t", 2))
    c.find_coordinator(0, "g")
    member = str(_uuid.uuid4()) if c.v >= 1 else ""

    def hb(step, epoch, **kw):
        fields = dict(group_id=c["g"], member_id=member, member_epoch=epoch, instance_id=None, rack_id=None,
                      rebalance_timeout=10000, subscribed_topic_names=[c["t"]], subscribed_topic_regex=None,
                      server_assignor=None, topic_partitions=[])
        fields.update(kw)
        return c.send(68, c.v, label=step, **fields)

    r = hb("join", 0)
    member = r.member_id or member
    epoch = r.member_epoch
    hb("heartbeat", epoch, subscribed_topic_names=None, topic_partitions=None, rebalance_timeout=-1)
    hb("fenced epoch", epoch + 10, subscribed_topic_names=None, topic_partitions=None, rebalance_timeout=-1)
    hb("unknown assignor", 0, server_assignor="nope")
    c.send(69, c.ver(69), label="describe", group_ids=[c["g"]], include_authorized_operations=False)
    hb("leave", -1, subscribed_topic_names=None, topic_partitions=None, rebalance_timeout=-1)


@conversation("share group", 78, labels=("g", "t"))
def share_group_conv(c: Conversation) -> None:
    """KIP-932: join a share group, fetch (open the share session), acknowledge accept / release /
    reject, fetch the released record again, a wrong session epoch, offsets, describe, leave."""
    import uuid as _uuid
    c.create_topics(("t", 1))
    produce(c, c.ver(0), "t", batch(3))
    c.send(44, c.ver(44), label="earliest", validate_only=False, resources=[
        {"resource_type": 32, "resource_name": c["g"],
         "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}])
    c.find_coordinator(0, "g")
    member = str(_uuid.uuid4())
    tid = c.topic_id("t")
    hb = c.send(76, c.ver(76), label="join", group_id=c["g"], member_id=member, member_epoch=0, rack_id=None,
                subscribed_topic_names=[c["t"]])

    def share_fetch(epoch, acks=(), **kw):
        return dict(group_id=c["g"], member_id=member, share_session_epoch=epoch, max_wait=500, min_bytes=1,
                    max_bytes=1 << 20, max_records=10, batch_size=10, share_acquire_mode=0, is_renew_ack=False,
                    topics=[{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                        {"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in acks]}]}],
                    forgotten_topics_data=[], **kw)

    # Kafka initialises a share-partition in the background (its first share group also creates
    # __share_group_state): the first fetches may come back empty, for over 20 s on a loaded machine
    c.until(78, c.v, lambda r: any(p.acquired_records for t in r.responses for p in t.partitions),
            label="open session", timeout=90.0, **share_fetch(0))
    c.send(79, c.ver(79), label="acknowledge", group_id=c["g"], member_id=member, share_session_epoch=1,
           is_renew_ack=False, topics=[{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
               {"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]},
               {"first_offset": 1, "last_offset": 1, "acknowledge_types": [2]},
               {"first_offset": 2, "last_offset": 2, "acknowledge_types": [3]}]}]}])
    c.send(78, c.v, label="released record again", **share_fetch(2))
    c.send(78, c.v, label="wrong session epoch", **share_fetch(7))
    c.send(78, c.v, label="accept and close", **share_fetch(-1, acks=[(1, 1, 1)]))
    c.send(90, c.ver(90), label="offsets", groups=[{"group_id": c["g"], "topics": [
        {"topic_name": c["t"], "partitions": [0]}]}])
    c.send(77, c.ver(77), label="describe", group_ids=[c["g"], "no-such-share-group"],
           include_authorized_operations=False)
    c.send(15, c.ver(15), label="described as a classic group", groups=[c["g"]], include_authorized_operations=False)
    c.send(42, c.ver(42), label="delete while it has a member", groups_names=[c["g"]])
    c.send(76, c.ver(76), label="fenced epoch", group_id=c["g"], member_id=member, member_epoch=hb.member_epoch + 5,
           rack_id=None, subscribed_topic_names=None)
    c.send(76, c.ver(76), label="leave", group_id=c["g"], member_id=member, member_epoch=-1, rack_id=None,
           subscribed_topic_names=None)
    c.send(42, c.ver(42), label="delete once empty", groups_names=[c["g"]])
    c.send(77, c.ver(77), label="describe after delete", group_ids=[c["g"]], include_authorized_operations=False)


# ------------------------------------------------------------------ idempotence and transactions


def init_pid(c: Conversation, v: int = 5, txn: str | None = None, step: str = "", timeout: int = 60000, **kw):
    if txn is not None:
        c.find_coordinator(1, txn, record=False)
    return c.send(22, v, label=step or f"InitProducerId v{v}", transactional_id=c[txn] if txn else None,
                  transaction_timeout=timeout, producer_id=kw.get("producer_id", -1),
                  producer_epoch=kw.get("producer_epoch", -1))


@conversation("idempotent producer", 22, labels=("t",))
def idempotent(c: Conversation) -> None:
    c.create_topics(("t", 1))
    r = init_pid(c, c.v)
    pid, epoch = r.producer_id, r.producer_epoch

    def send(seq, n, step, ep=epoch):
        produce(c, c.ver(0), "t", batch(n, producer_id=pid, producer_epoch=ep, base_sequence=seq), step=step)

    send(0, 2, "first")
    send(2, 2, "next")
    send(0, 2, "duplicate of the first")
    send(9, 1, "sequence gap")
    send(4, 1, "wrong epoch", ep=epoch + 3)
    send(4, 1, "in order again")
    fetch(c, c.ver(1), [("t", 0, 0)])


@conversation("transaction commit", 26, labels=("x", "t", "g"))
def txn_commit(c: Conversation) -> None:
    c.create_topics(("t", 1))
    v = c.v
    r = init_pid(c, 5 if v >= 5 else 4, "x")
    pid, epoch = r.producer_id, r.producer_epoch
    c.send(24, c.ver(24, cap=3), label="add partitions", v3_and_below_transactional_id=c["x"], v3_and_below_producer_id=pid,
           v3_and_below_producer_epoch=epoch,
           v3_and_below_topics=[{"name": c["t"], "partitions": [0]}])
    produce(c, c.ver(0), "t", batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True),
            txn=c["x"], step="transactional produce")
    list_offsets(c, c.ver(2), "t", [(0, -1)], isolation=1, step="LSO while open")
    fetch(c, c.ver(1), [("t", 0, 0)], isolation=1, step="read_committed while open")
    c.find_coordinator(0, "g", record=False)
    c.send(25, c.ver(25), label="add offsets", transactional_id=c["x"], producer_id=pid, producer_epoch=epoch,
           group_id=c["g"])
    c.send(28, c.ver(28), label="txn offset commit", transactional_id=c["x"], group_id=c["g"], producer_id=pid,
           producer_epoch=epoch, generation_id=-1, member_id="", group_instance_id=None,
           topics=[{"name": c["t"], "partitions": [{"partition_index": 0, "committed_offset": 2,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""}]}])
    c.send(65, 0, label="describe ongoing", transactional_ids=[c["x"]])
    fetch_offsets(c, max(c.ver(9), 7), "g", {"t": [0]}, step="require_stable while the commit is pending",
                  require_stable=True)
    c.send(26, v, label="commit", transactional_id=c["x"], producer_id=pid, producer_epoch=epoch, committed=True)
    _settle(c, "x")
    c.send(65, 0, label="describe complete commit", transactional_ids=[c["x"]])
    fetch(c, c.ver(1), [("t", 0, 0)], isolation=1, step="read_committed after commit")
    fetch_offsets(c, max(c.ver(9), 7), "g", {"t": [0]}, step="committed offsets", require_stable=True)
    c.send(26, v, label="commit again", transactional_id=c["x"], producer_id=pid,
           producer_epoch=epoch + 1 if v >= 5 else epoch, committed=True)
    c.send(26, v, label="abort after commit", transactional_id=c["x"], producer_id=pid,
           producer_epoch=epoch + 1 if v >= 5 else epoch, committed=False)


def _settle(c: Conversation, txn: str) -> None:
    """Wait (not recorded) until the transaction is Complete*: markers are asynchronous on both."""
    c.until(65, 0, lambda r: r.transaction_states[0].transaction_state in ("CompleteCommit", "CompleteAbort", "Empty"),
            record=False, transactional_ids=[c[txn]])


@conversation("transaction abort", 24, labels=("x", "t"))
def txn_abort(c: Conversation) -> None:
    c.create_topics(("t", 1))
    r = init_pid(c, c.ver(22), "x")
    pid, epoch = r.producer_id, r.producer_epoch
    # (DescribeTransactions of an Empty transaction carries a start time of -1, which kio cannot read)
    c.send(66, c.ver(66), label="listed as empty", state_filters=["Empty"], producer_id_filters=[pid],
           duration_filter=-1, transactional_id_pattern=None)
    v = min(c.v, 3)
    c.send(24, v, label="add partitions", v3_and_below_transactional_id=c["x"], v3_and_below_producer_id=pid,
           v3_and_below_producer_epoch=epoch, v3_and_below_topics=[{"name": c["t"], "partitions": [0, 9]}])
    c.send(24, v, label="add a known partition", v3_and_below_transactional_id=c["x"],
           v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
           v3_and_below_topics=[{"name": c["t"], "partitions": [0]}])
    c.send(24, v, label="wrong epoch", v3_and_below_transactional_id=c["x"], v3_and_below_producer_id=pid,
           v3_and_below_producer_epoch=epoch + 1, v3_and_below_topics=[{"name": c["t"], "partitions": [0]}])
    produce(c, c.ver(0), "t", batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True),
            txn=c["x"], step="transactional produce")
    c.send(65, 0, label="describe ongoing", transactional_ids=[c["x"]])
    c.send(26, 3, label="abort", transactional_id=c["x"], producer_id=pid, producer_epoch=epoch, committed=False)
    _settle(c, "x")
    c.send(65, 0, label="describe complete abort", transactional_ids=[c["x"]])
    fetch(c, c.ver(1), [("t", 0, 0)], isolation=1, step="read_committed after abort")
    c.send(61, 0, label="describe producers", topics=[{"name": c["t"], "partition_indexes": [0]}])


@conversation("transaction fencing and errors", 22, labels=("x", "t", "y"))
def txn_fence(c: Conversation) -> None:
    c.create_topics(("t", 1))
    r = init_pid(c, c.v, "x")
    pid, epoch = r.producer_id, r.producer_epoch
    r2 = init_pid(c, c.v, "x", step="second producer fences the first")
    c.record("same producer id", r2.producer_id == pid)
    c.record("epoch bumped", r2.producer_epoch - epoch)
    c.send(26, 3, label="fenced end txn", transactional_id=c["x"], producer_id=pid, producer_epoch=epoch,
           committed=True)
    c.send(26, 3, label="end txn with nothing open", transactional_id=c["x"], producer_id=pid,
           producer_epoch=r2.producer_epoch, committed=True)
    c.send(26, 3, label="end txn, unknown transactional id", transactional_id=c["y"], producer_id=pid,
           producer_epoch=0, committed=True)
    produce(c, c.ver(0), "t", batch(1, producer_id=pid, producer_epoch=r2.producer_epoch, base_sequence=0,
                             transactional=True), txn=c["x"], step="produce to a partition not added")
    produce(c, c.ver(0), "t", batch(1, producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True),
            txn=c["x"], step="produce with the fenced epoch")
    c.send(25, c.ver(25), label="add offsets with the fenced epoch", transactional_id=c["x"], producer_id=pid,
           producer_epoch=epoch, group_id=c["y"])
    c.send(24, c.ver(24, cap=3), label="add partitions, unknown producer id", v3_and_below_transactional_id=c["x"],
           v3_and_below_producer_id=pid + 77, v3_and_below_producer_epoch=r2.producer_epoch,
           v3_and_below_topics=[{"name": c["t"], "partitions": [0]}])
    init_pid(c, c.v, "y", step="bad timeout", timeout=10_000_000)
    c.send(65, 0, label="describe unknown", transactional_ids=[c["y"]])


@conversation("transaction timeout", 66, labels=("x", "t"))
def txn_timeout(c: Conversation) -> None:
    c.create_topics(("t", 1))
    r = init_pid(c, c.ver(22), "x", timeout=1000)
    pid, epoch = r.producer_id, r.producer_epoch
    c.send(24, c.ver(24, cap=3), label="add partitions", v3_and_below_transactional_id=c["x"], v3_and_below_producer_id=pid,
           v3_and_below_producer_epoch=epoch, v3_and_below_topics=[{"name": c["t"], "partitions": [0]}])
    produce(c, c.ver(0), "t", batch(1, producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True),
            txn=c["x"], step="transactional produce")
    resp = c.send(66, c.v, label="list", record=False, state_filters=["Ongoing"], producer_id_filters=[pid],
                  duration_filter=-1, transactional_id_pattern=None)
    c.record("listed while ongoing", [(s.transactional_id, s.transaction_state) for s in resp.transaction_states])
    _settle(c, "x")  # the coordinator aborts it after transaction.timeout.ms (checked every 10 s at most)
    c.send(26, 3, label="commit after the timeout", transactional_id=c["x"], producer_id=pid,
           producer_epoch=epoch, committed=True)
    fetch(c, c.ver(1), [("t", 0, 0)], isolation=1, step="read_committed after the timeout")


@conversation("incremental fetch session", 1)
def fetch_session(c: Conversation) -> None:
    v = max(c.v, 7)  # sessions came with Fetch v7 (KIP-227)
    c.create_topics(("t", 3))
    produce(c, c.ver(0), "t", batch(2))
    full = fetch(c, v, [("t", 0, 0), ("t", 1, 0), ("t", 2, 0)], session_epoch=0, step="full fetch opens a session")
    sid = full.session_id
    fetch(c, v, [("t", 0, 2)], session_id=sid, session_epoch=1, step="nothing new")
    produce(c, c.ver(0), "t", batch(3), partition=2)
    fetch(c, v, [], session_id=sid, session_epoch=2, step="new data on a partition not named")
    fetch(c, v, [], session_id=sid, session_epoch=3, forgotten=[("t", [2])], step="forget a partition")
    produce(c, c.ver(0), "t", batch(1), partition=2)
    fetch(c, v, [], session_id=sid, session_epoch=4, step="forgotten partition stays out")
    fetch(c, v, [("t", 2, 4)], session_id=sid, session_epoch=5, step="added again")
    fetch(c, v, [("t", 7, 0)], session_id=sid, session_epoch=6, step="unknown partition added")
    fetch(c, v, [], session_id=sid, session_epoch=6, step="wrong epoch")
    fetch(c, v, [], session_id=sid + 1 if sid else 1, session_epoch=1, step="unknown session")
    fetch(c, v, [("t", 0, 0)], session_id=sid, session_epoch=-1, step="close the session")
    fetch(c, v, [], session_id=sid, session_epoch=7, step="closed session")


@conversation("write transaction markers", 27, labels=("t", "missing"))
def write_txn_markers(c: Conversation) -> None:
    c.create_topics(("t", 1))
    r = init_pid(c, c.ver(22))
    pid, epoch = r.producer_id, r.producer_epoch
    produce(c, c.ver(0), "t", batch(1), step="plain produce")

    def marker(step, label, commit=True, partitions=(0,)):
        c.send(27, c.v, label=step, markers=[{"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
                                               "topics": [{"name": c[label], "partition_indexes": list(partitions)}],
                                               "coordinator_epoch": 0, "transaction_version": 0}])

    marker("marker for a missing topic", "missing")
    marker("marker for an unknown partition", "t", partitions=(4,))
    marker("abort marker without a transaction", "t", commit=False)
    fetch(c, c.ver(1), [("t", 0, 0)], step="fetch after the marker")


@conversation("metadata auto-creation", 3, labels=("auto", "bad"))
def metadata_auto_create(c: Conversation) -> None:
    if c.v < 4:
        c.v = 4  # allow_auto_topic_creation came with v4
    # the Metadata that creates the topic answers UNKNOWN_TOPIC_OR_PARTITION on both: Kafka's
    # controller creates it in the background
    c.send(3, c.v, label="creating", topics=[{"name": c["auto"], "topic_id": None}], allow_auto_topic_creation=True,
           include_topic_authorized_operations=False)
    c.until(3, c.v, lambda r: all(t.error_code == ErrorCode.none and t.partitions for t in r.topics),
            label="auto-created", topics=[{"name": c["auto"], "topic_id": None}], allow_auto_topic_creation=True,
            include_topic_authorized_operations=False)
    metadata(c, c.v, ["bad"], step="unknown, auto-creation off")
    c.send(3, c.v, label="invalid name, auto-creation on", topics=[{"name": "bad name!", "topic_id": None}],
           allow_auto_topic_creation=True, include_topic_authorized_operations=False)


@conversation("acks=0 and bad frames", 0)
def acks_zero(c: Conversation) -> None:
    c.create_topics(("t", 1))
    c.send_expect_close(0, c.v, label="acks=0, unknown partition", transactional_id=None, acks=0, timeout=1000,
                        topic_data=[{"name": c["t"], "topic_id": c.topic_id("t"),
                                     "partition_data": [{"index": 3, "records": batch(1)}]}])
    c.send_expect_close(0, c.v, label="acks=0, fine", transactional_id=None, acks=0, timeout=1000,
                        topic_data=[{"name": c["t"], "topic_id": c.topic_id("t"),
                                     "partition_data": [{"index": 0, "records": batch(1)}]}])
    list_offsets(c, c.ver(2), "t", [(0, -1)], step="the acks=0 record landed")
    import struct
    c.send_raw(struct.pack(">hhih", 999, 0, 1, 0), label="unknown api key")
    c.send_raw(struct.pack(">hhih", 0, 2, 1, 0), label="Produce v2 (advertised, refused)")


@conversation("produce topic policies", 0, labels=("small", "append", "strict"))
def produce_policies(c: Conversation) -> None:
    c.create_topics(("small", 1, {"max.message.bytes": "200"}),
                    ("append", 1, {"message.timestamp.type": "LogAppendTime"}),
                    ("strict", 1, {"message.timestamp.after.max.ms": "60000",
                                   "message.timestamp.before.max.ms": "60000"}))
    produce(c, c.v, "small", batch(1), step="small batch")
    produce(c, c.v, "small", bytes(build_batch([Record(value=b"x" * 400, timestamp_ms=TS)])), step="too large")
    produce(c, c.v, "append", batch(2), step="LogAppendTime topic")
    fetch(c, c.ver(1), [("append", 0, 0)], step="LogAppendTime batch")
    now = int(time.time() * 1000)
    produce(c, c.v, "strict", bytes(build_batch([Record(value=b"old", timestamp_ms=TS)])), step="too old")
    produce(c, c.v, "strict", bytes(build_batch([Record(value=b"future", timestamp_ms=now + 3_600_000)])),
            step="too far ahead")
    produce(c, c.v, "strict", bytes(build_batch([Record(value=b"now", timestamp_ms=now)])), step="on time")
    list_offsets(c, c.ver(2), "strict", [(0, -1)], step="one record kept")


@conversation("join group errors", 11, labels=("g", "h"))
def join_errors(c: Conversation) -> None:
    c.find_coordinator(0, "g", record=False)

    def send(step, group="g", member="", session=10000, protocol_type="consumer", protocols=None):
        return c.send(11, c.v, label=step, group_id=c[group], session_timeout=session, rebalance_timeout=10000,
                      member_id=member, group_instance_id=None, protocol_type=protocol_type,
                      protocols=protocols if protocols is not None else [{"name": "range", "metadata": b"\x00"}],
                      reason=None)

    send("session timeout too small", session=1)
    send("session timeout too large", session=10_000_000)
    send("unknown member id", member="nobody")
    send("no protocols", protocols=[])
    r = send("first member")
    if r.error_code == ErrorCode.member_id_required:
        r = send("first member with its id", member=r.member_id)
    c.send(14, c.ver(14), label="sync", group_id=c["g"], generation_id=r.generation_id, member_id=r.member_id,
           group_instance_id=None, protocol_type="consumer", protocol_name="range",
           assignments=[{"member_id": r.member_id, "assignment": b""}])
    send("another protocol type", protocol_type="connect", member="")
    send("no common protocol", protocols=[{"name": "roundrobin-x", "metadata": b""}], member="")
    c.send(13, c.ver(13), label="leave", group_id=c["g"], member_id=r.member_id,
           members=[{"member_id": r.member_id, "group_instance_id": None, "reason": None}])


@conversation("consumer group errors", 69, labels=("g", "classic", "t"))
def consumer_group_errors(c: Conversation) -> None:
    c.create_topics(("t", 1))
    c.find_coordinator(0, "g", record=False)
    c.send(69, c.v, label="describe unknown group", group_ids=[c["g"]], include_authorized_operations=False)
    c.send(8, c.ver(8), label="a classic group by commit", group_id=c["classic"], generation_id_or_member_epoch=-1,
           member_id="", group_instance_id=None, topics=[{"name": c["t"], "topic_id": c.topic_id("t"), "partitions": [
               {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1}]}])
    c.send(69, c.v, label="describe a classic group", group_ids=[c["classic"]], include_authorized_operations=False)

    def hb(step, **kw):
        fields = dict(group_id=c["g"], member_id="", member_epoch=0, instance_id=None, rack_id=None,
                      rebalance_timeout=10000, subscribed_topic_names=[c["t"]], subscribed_topic_regex=None,
                      server_assignor=None, topic_partitions=[])
        fields.update(kw)
        return c.send(68, c.ver(68), label=step, **fields)

    hb("no rebalance timeout", rebalance_timeout=-1)
    hb("no subscription", subscribed_topic_names=None)
    hb("unknown member, epoch 3", member_id="00000000-0000-0000-0000-00000000abcd", member_epoch=3)
    hb("join a classic group", group_id=c["classic"], member_id="00000000-0000-0000-0000-00000000abce")
    c.send(15, c.ver(15), label="describe groups of both kinds", groups=[c["g"], c["classic"]],
           include_authorized_operations=False)


@conversation("describe broker configs", 32, labels=())
def broker_configs(c: Conversation) -> None:
    keys = ["num.partitions", "log.retention.ms", "auto.create.topics.enable", "message.max.bytes",
            "offsets.topic.num.partitions", "group.initial.rebalance.delay.ms", "no.such.key"]
    c.send(32, c.v, label="some broker configs", include_synonyms=True, include_documentation=False,
           resources=[{"resource_type": 4, "resource_name": "1", "configuration_keys": keys}])
    c.send(32, c.v, label="another broker", include_synonyms=False, include_documentation=False,
           resources=[{"resource_type": 4, "resource_name": "7", "configuration_keys": keys}])


@conversation("admin calls on missing resources", 37, labels=("t", "missing", "gone"))
def missing_resources(c: Conversation) -> None:
    import uuid as _uuid
    c.create_topics(("t", 2), ("gone", 1))
    c.send(20, c.ver(20), label="delete by name", timeout=5000, topics=[{"name": c["gone"]}], topic_names=[c["gone"]])
    c.send(20, c.ver(20), label="delete an unknown id", timeout=5000,
           topics=[{"name": None, "topic_id": _uuid.UUID(int=77)}], topic_names=[c["missing"]])
    c.send(21, c.ver(21), label="delete records of a missing topic", timeout=5000,
           topics=[{"name": c["missing"], "partitions": [{"partition_index": 0, "offset": 1}]}])
    c.send(23, c.ver(23), label="leader epochs of a missing topic", replica_id=-1,
           topics=[{"topic": c["missing"], "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                           "leader_epoch": 0}]},
                   {"topic": c["t"], "partitions": [{"partition": 9, "current_leader_epoch": -1, "leader_epoch": 0}]}])
    list_offsets(c, c.ver(2), "missing", [(0, -1)], step="list offsets of a missing topic")
    list_offsets(c, c.ver(2), "t", [(7, -1)], step="list offsets of a missing partition")
    c.send(61, 0, label="producers of missing partitions",
           topics=[{"name": c["missing"], "partition_indexes": [0]}, {"name": c["t"], "partition_indexes": [5]}])
    c.send(37, c.v, label="grow a deleted topic", timeout=5000, validate_only=False,
           topics=[{"name": c["gone"], "count": 3, "assignments": None}])
    c.send(37, c.v, label="grow with a bad assignment", timeout=5000, validate_only=False,
           topics=[{"name": c["t"], "count": 3, "assignments": [{"broker_ids": [42]}]}])
    c.send(37, c.v, label="the same topic twice", timeout=5000, validate_only=False,
           topics=[{"name": c["t"], "count": 4, "assignments": None}, {"name": c["t"], "count": 5, "assignments": None}])
    c.send(32, c.ver(32), label="configs of a deleted topic", include_synonyms=False, include_documentation=False,
           resources=[{"resource_type": 2, "resource_name": c["gone"], "configuration_keys": ["retention.ms"]}])
    c.send(75, 0, label="describe partitions, cursor", topics=[{"name": c["t"]}], response_partition_limit=1,
           cursor={"topic_name": c["t"], "partition_index": 1})
    c.send(66, c.ver(66), label="list transactions, nothing matches", state_filters=["Ongoing"],
           producer_id_filters=[123456789], duration_filter=-1, transactional_id_pattern=None)
