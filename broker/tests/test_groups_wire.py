"""Group and offset APIs at the protocol level: exact error codes across versions."""

from __future__ import annotations

import importlib
import struct
import threading
import uuid

import pytest
from kio.schema.errors import ErrorCode

from kafkalite.protocol.client import WireClient
from kafkalite.protocol.messages import make
from kafkalite.tests import suite_brokers


@pytest.fixture(scope="module")
def gbroker():
    # auto-created topics get num.partitions=4
    with suite_brokers.running(extra_args=["-c", "group.consumer.heartbeat.interval.ms=200", "-c", "num.partitions=4"]) as b:
        yield b


@pytest.fixture
def wire(gbroker):
    with WireClient(gbroker.bootstrap) as c:
        yield c


def mod(api: str, version: int, kind: str = "request"):
    return importlib.import_module(f"kio.schema.{api}.v{version}.{kind}")


def subscription(*topics: str) -> bytes:
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def topic(wire, name=None) -> tuple[str, uuid.UUID]:
    name = name or f"w-{uuid.uuid4().hex[:8]}"
    m = mod("metadata", 12)
    ask = make(m.MetadataRequest, topics=(make(m.MetadataRequestTopic, name=name, topic_id=None),),
               allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    # the Metadata that auto-creates the topic answers UNKNOWN_TOPIC_OR_PARTITION; the next one finds it
    assert wire.request(ask).topics[0].error_code == ErrorCode.unknown_topic_or_partition
    t = wire.request(ask).topics[0]
    assert t.error_code == ErrorCode.none
    return name, t.topic_id


def join(wire, group, member_id="", version=9, instance=None, session=10000, protocols=None):
    m = mod("join_group", version)
    protocols = protocols or (make(m.JoinGroupRequestProtocol, name="range", metadata=subscription("t")),)
    return wire.request(make(m.JoinGroupRequest, group_id=group, session_timeout=session, rebalance_timeout=10000,
                             member_id=member_id, group_instance_id=instance, protocol_type="consumer",
                             protocols=protocols, reason=None))


def sync(wire, group, member_id, generation, assignments=(), version=5):
    m = mod("sync_group", version)
    return wire.request(make(m.SyncGroupRequest, group_id=group, generation_id=generation, member_id=member_id,
                             group_instance_id=None, protocol_type="consumer", protocol_name="range",
                             assignments=tuple(make(m.SyncGroupRequestAssignment, member_id=mid, assignment=a)
                                               for mid, a in assignments)))


def stable_member(wire, group):
    first = join(wire, group)
    assert first.error_code == ErrorCode.member_id_required and first.member_id
    res = join(wire, group, first.member_id)
    assert res.error_code == ErrorCode.none and res.leader == res.member_id and res.generation_id == 1
    s = sync(wire, group, res.member_id, 1, [(res.member_id, b"assigned")])
    assert s.error_code == ErrorCode.none and bytes(s.assignment) == b"assigned"
    return res.member_id


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5, 6])
def test_find_coordinator_every_version(wire, gbroker, version):
    m = mod("find_coordinator", version)
    if version >= 4:
        resp = wire.request(make(m.FindCoordinatorRequest, key_type=0, coordinator_keys=("a", "b")))
        assert [c.key for c in resp.coordinators] == ["a", "b"]
        assert all(c.error_code == ErrorCode.none and c.port == gbroker.port for c in resp.coordinators)
        txn = wire.request(make(m.FindCoordinatorRequest, key_type=1, coordinator_keys=("tx",)))
        assert txn.coordinators[0].error_code == ErrorCode.none
        bad = wire.request(make(m.FindCoordinatorRequest, key_type=5, coordinator_keys=("x",)))
        assert bad.coordinators[0].error_code == ErrorCode.invalid_request
    else:
        resp = wire.request(make(m.FindCoordinatorRequest, key="a", key_type=0))
        assert resp.error_code == ErrorCode.none and resp.port == gbroker.port and resp.node_id == 1


@pytest.mark.parametrize("version", [0, 3, 4, 5, 7, 9])
def test_join_sync_heartbeat_leave_versions(wire, version):
    group = f"g-{uuid.uuid4().hex[:8]}"
    res = join(wire, group, version=version)
    if version >= 4:
        assert res.error_code == ErrorCode.member_id_required
        res = join(wire, group, res.member_id, version=version)
    assert res.error_code == ErrorCode.none and res.generation_id == 1
    assert res.leader == res.member_id and len(res.members) == 1
    assert bytes(res.members[0].metadata) == subscription("t")
    mid = res.member_id
    sv = min(version, 5) if version >= 3 else min(version, 2)
    s = sync(wire, group, mid, 1, [(mid, b"x")], version=sv)
    assert s.error_code == ErrorCode.none and bytes(s.assignment) == b"x"
    hv = min(version, 4)
    hm = mod("heartbeat", hv)
    hb = wire.request(make(hm.HeartbeatRequest, group_id=group, generation_id=1, member_id=mid, group_instance_id=None))
    assert hb.error_code == ErrorCode.none
    hb = wire.request(make(hm.HeartbeatRequest, group_id=group, generation_id=5, member_id=mid, group_instance_id=None))
    assert hb.error_code == ErrorCode.illegal_generation
    lv = min(version, 5)
    lm = mod("leave_group", lv)
    if lv >= 3:
        resp = wire.request(make(lm.LeaveGroupRequest, group_id=group, members=(
            make(lm.MemberIdentity, member_id=mid, group_instance_id=None, reason=None),
            make(lm.MemberIdentity, member_id="nobody", group_instance_id=None, reason=None))))
        assert resp.error_code == ErrorCode.none
        assert [x.error_code for x in resp.members] == [ErrorCode.none, ErrorCode.unknown_member_id]
    else:
        resp = wire.request(make(lm.LeaveGroupRequest, group_id=group, member_id=mid))
        assert resp.error_code == ErrorCode.none


def test_sync_and_heartbeat_errors(wire):
    group = f"g-{uuid.uuid4().hex[:8]}"
    mid = stable_member(wire, group)
    assert sync(wire, group, "unknown", 1).error_code == ErrorCode.unknown_member_id
    assert sync(wire, group, mid, 9).error_code == ErrorCode.illegal_generation
    assert sync(wire, "no-such-group", mid, 1).error_code == ErrorCode.unknown_member_id
    hm = mod("heartbeat", 4)
    assert wire.request(make(hm.HeartbeatRequest, group_id="no-such-group", generation_id=1, member_id=mid,
                             group_instance_id=None)).error_code == ErrorCode.unknown_member_id
    bad = join(wire, group, protocols=(make(mod("join_group", 9).JoinGroupRequestProtocol, name="other",
                                            metadata=b""),))
    assert bad.error_code == ErrorCode.inconsistent_group_protocol
    assert join(wire, group, session=1).error_code == ErrorCode.invalid_session_timeout


def test_rebalance_with_a_second_member(gbroker, wire):
    group = f"g-{uuid.uuid4().hex[:8]}"
    a = stable_member(wire, group)
    results = {}

    def second():
        with WireClient(gbroker.bootstrap) as w2:
            first = join(w2, group)
            results["b"] = join(w2, group, first.member_id)

    t = threading.Thread(target=second)
    t.start()
    hm = mod("heartbeat", 4)
    for _ in range(100):
        hb = wire.request(make(hm.HeartbeatRequest, group_id=group, generation_id=1, member_id=a, group_instance_id=None))
        if hb.error_code == ErrorCode.rebalance_in_progress:
            break
    assert hb.error_code == ErrorCode.rebalance_in_progress
    ra = join(wire, group, a)
    t.join(10)
    assert ra.generation_id == 2 and len(ra.members) == 2 and results["b"].generation_id == 2
    assert results["b"].members == ()


def _commit(wire, group, name, tid, offsets, version=10, generation=-1, member=""):
    m = mod("offset_commit", version)
    parts = tuple(make(m.OffsetCommitRequestPartition, partition_index=p, committed_offset=o,
                       committed_leader_epoch=e, committed_metadata=md, commit_timestamp=-1)
                  for p, (o, e, md) in offsets.items())
    t = make(m.OffsetCommitRequestTopic, name=name, topic_id=tid, partitions=parts)
    return wire.request(make(m.OffsetCommitRequest, group_id=group, generation_id_or_member_epoch=generation,
                             member_id=member, group_instance_id=None, retention_time=-1, topics=(t,)))


def _fetch(wire, group, name, tid, partitions, version=10, require_stable=False):
    m = mod("offset_fetch", version)
    if version >= 8:
        topics = None if partitions is None else (
            make(m.OffsetFetchRequestTopics, name=name, topic_id=tid, partition_indexes=tuple(partitions)),)
        req = make(m.OffsetFetchRequest, require_stable=require_stable, groups=(
            make(m.OffsetFetchRequestGroup, group_id=group, member_id=None, member_epoch=-1, topics=topics),))
    else:
        topics = None if partitions is None else (
            make(m.OffsetFetchRequestTopic, name=name, partition_indexes=tuple(partitions)),)
        req = make(m.OffsetFetchRequest, group_id=group, topics=topics, require_stable=require_stable)
    return wire.request(req)


@pytest.mark.parametrize("version", [2, 5, 7, 8, 9, 10])
def test_offset_commit_and_fetch_versions(wire, version):
    name, tid = topic(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    resp = _commit(wire, group, name, tid, {0: (5, 2, "m0"), 1: (7, -1, None)}, version=version)
    assert [p.error_code for p in resp.topics[0].partitions] == [ErrorCode.none, ErrorCode.none]
    for fv in (1, 3, 5, 7, 8, 9, 10):
        f = _fetch(wire, group, name, tid, [0, 1, 2], version=fv)
        parts = (f.groups[0].topics if fv >= 8 else f.topics)[0].partitions
        got = [(p.partition_index, p.committed_offset, p.metadata) for p in parts]
        assert got == [(0, 5, "m0"), (1, 7, ""), (2, -1, "")]
        if fv >= 5:
            assert parts[0].committed_leader_epoch == (2 if version >= 6 else -1)
    all_ = _fetch(wire, group, name, tid, None, version=8)
    assert sorted(p.partition_index for p in all_.groups[0].topics[0].partitions) == [0, 1]


def test_offset_commit_errors(wire):
    name, tid = topic(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    r = _commit(wire, group, name, tid, {5: (1, -1, "")}, version=8)
    assert r.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
    r = _commit(wire, group, "nope-" + name, tid, {0: (1, -1, "")}, version=8)
    assert r.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
    r = _commit(wire, group, name, uuid.uuid4(), {0: (1, -1, "")}, version=10)
    assert r.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_id
    r = _commit(wire, group, name, tid, {0: (1, -1, "x" * 5000)}, version=8)
    assert r.topics[0].partitions[0].error_code == ErrorCode.offset_metadata_too_large
    r = _commit(wire, "fresh-" + group, name, tid, {0: (1, -1, "")}, version=8, generation=3, member="m")
    assert r.topics[0].partitions[0].error_code == ErrorCode.illegal_generation
    r = _commit(wire, "fresh2-" + group, name, tid, {0: (1, -1, "")}, version=9, generation=3, member="m")
    assert r.topics[0].partitions[0].error_code == ErrorCode.group_id_not_found
    mid = stable_member(wire, group + "-live")
    r = _commit(wire, group + "-live", name, tid, {0: (1, -1, "")}, version=8, generation=1, member=mid)
    assert r.topics[0].partitions[0].error_code == ErrorCode.none
    r = _commit(wire, group + "-live", name, tid, {0: (1, -1, "")}, version=8, generation=2, member=mid)
    assert r.topics[0].partitions[0].error_code == ErrorCode.illegal_generation
    r = _commit(wire, group + "-live", name, tid, {0: (1, -1, "")}, version=8, generation=1, member="x")
    assert r.topics[0].partitions[0].error_code == ErrorCode.unknown_member_id
    r = _commit(wire, group + "-live", name, tid, {0: (1, -1, "")}, version=8)
    assert r.topics[0].partitions[0].error_code == ErrorCode.unknown_member_id


def test_list_describe_delete_groups(wire):
    group = f"g-{uuid.uuid4().hex[:8]}"
    mid = stable_member(wire, group)
    lm = mod("list_groups", 5)
    listed = wire.request(make(lm.ListGroupsRequest, states_filter=("stable",), types_filter=("classic",)))
    assert (group, "Stable", "classic") in {(g.group_id, g.group_state, g.group_type) for g in listed.groups}
    listed = wire.request(make(lm.ListGroupsRequest, states_filter=("Empty",), types_filter=()))
    assert group not in {g.group_id for g in listed.groups}
    assert group in {g.group_id for g in wire.request(make(mod("list_groups", 0).ListGroupsRequest)).groups}
    dm = mod("describe_groups", 6)
    d = wire.request(make(dm.DescribeGroupsRequest, groups=(group, "missing"), include_authorized_operations=False))
    g, missing = d.groups
    assert g.group_state == "Stable" and g.protocol_data == "range" and g.members[0].member_id == mid
    assert bytes(g.members[0].member_assignment) == b"assigned"
    assert missing.group_state == "Dead" and missing.error_code == ErrorCode.group_id_not_found
    d0 = wire.request(make(mod("describe_groups", 0).DescribeGroupsRequest, groups=("missing",)))
    assert d0.groups[0].error_code == ErrorCode.none and d0.groups[0].group_state == "Dead"
    delm = mod("delete_groups", 2)
    r = wire.request(make(delm.DeleteGroupsRequest, groups_names=(group, "missing")))
    assert [(x.group_id, x.error_code) for x in r.results] == [(group, ErrorCode.non_empty_group),
                                                               ("missing", ErrorCode.group_id_not_found)]
    lv = mod("leave_group", 5)
    wire.request(make(lv.LeaveGroupRequest, group_id=group, members=(
        make(lv.MemberIdentity, member_id=mid, group_instance_id=None, reason=None),)))
    r = wire.request(make(delm.DeleteGroupsRequest, groups_names=(group,)))
    assert r.results[0].error_code == ErrorCode.none


def test_offset_delete(wire):
    name, tid = topic(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    _commit(wire, group, name, tid, {0: (3, -1, ""), 1: (4, -1, "")}, version=8)
    om = mod("offset_delete", 0)

    def delete(g, parts):
        return wire.request(make(om.OffsetDeleteRequest, group_id=g, topics=(
            make(om.OffsetDeleteRequestTopic, name=name, partitions=tuple(
                make(om.OffsetDeleteRequestPartition, partition_index=p) for p in parts)),)))

    assert delete("missing-group", [0]).error_code == ErrorCode.group_id_not_found
    r = delete(group, [0])
    assert r.error_code == ErrorCode.none and r.topics[0].partitions[0].error_code == ErrorCode.none
    # a partition the topic does not have: answered before the group is looked at (KafkaApis)
    r = delete(group, [1, 99])
    assert [(p.partition_index, p.error_code) for p in r.topics[0].partitions] == [
        (1, ErrorCode.none), (99, ErrorCode.unknown_topic_or_partition)]
    r = delete("missing-group", [99])
    assert r.error_code == ErrorCode.group_id_not_found
    assert [(p.partition_index, p.error_code) for p in r.topics[0].partitions] == [
        (99, ErrorCode.unknown_topic_or_partition)]
    f = _fetch(wire, group, name, tid, [0, 1], version=8)
    assert [p.committed_offset for p in f.groups[0].topics[0].partitions] == [-1, -1]


def _cgh(wire, group, member_id, epoch, version=1, topics=None, owned=(), instance=None):
    m = mod("consumer_group_heartbeat", version)
    tps = None if owned is None else tuple(make(m.TopicPartitions, topic_id=t, partitions=tuple(ps)) for t, ps in owned)
    return wire.request(make(m.ConsumerGroupHeartbeatRequest, group_id=group, member_id=member_id, member_epoch=epoch,
                             instance_id=instance, rack_id=None, rebalance_timeout=30000 if epoch == 0 else -1,
                             subscribed_topic_names=topics, subscribed_topic_regex=None, server_assignor=None,
                             topic_partitions=tps))


def test_consumer_group_heartbeat_and_describe(wire):
    name, tid = topic(wire)
    group = f"cg-{uuid.uuid4().hex[:8]}"
    bad = _cgh(wire, group, "", 0, topics=(name,))
    assert bad.error_code == ErrorCode.invalid_request  # v1: the member brings its own id
    v0 = _cgh(wire, group + "-v0", "", 0, version=0, topics=(name,))
    assert v0.error_code == ErrorCode.none and v0.member_id and v0.member_epoch == 1
    mid = str(uuid.uuid4())
    r = _cgh(wire, group, mid, 0, topics=(name,))
    assert r.error_code == ErrorCode.none and r.member_epoch == 1 and r.heartbeat_interval.total_seconds() == 0.2
    assert [(tp.topic_id, sorted(tp.partitions)) for tp in r.assignment.topic_partitions] == [(tid, [0, 1, 2, 3])]
    steady = _cgh(wire, group, mid, 1, owned=None)
    assert steady.error_code == ErrorCode.none and steady.assignment is None
    assert _cgh(wire, group, mid, 7, owned=None).error_code == ErrorCode.fenced_member_epoch
    assert _cgh(wire, group, "stranger", 1, owned=None).error_code == ErrorCode.unknown_member_id
    dm = mod("consumer_group_describe", 1)
    d = wire.request(make(dm.ConsumerGroupDescribeRequest, group_ids=(group, "missing"),
                          include_authorized_operations=False))
    g, missing = d.groups
    assert g.group_state == "Stable" and g.group_epoch == 1 and g.assignor_name == "uniform"
    assert g.members[0].member_id == mid and g.members[0].assignment.topic_partitions[0].topic_name == name
    assert missing.error_code == ErrorCode.group_id_not_found
    # OffsetCommit by a KIP-848 member: its epoch is the generation
    r = _commit(wire, group, name, tid, {0: (1, -1, "")}, version=9, generation=1, member=mid)
    assert r.topics[0].partitions[0].error_code == ErrorCode.none
    r = _commit(wire, group, name, tid, {0: (1, -1, "")}, version=9, generation=0, member=mid)
    assert r.topics[0].partitions[0].error_code == ErrorCode.stale_member_epoch
    # leave
    left = _cgh(wire, group, mid, -1, owned=None)
    assert left.error_code == ErrorCode.none and left.member_epoch == -1
    lm = mod("list_groups", 5)
    listed = wire.request(make(lm.ListGroupsRequest, states_filter=(), types_filter=("consumer",)))
    assert (group, "Empty", "consumer") in {(x.group_id, x.group_state, x.group_type) for x in listed.groups}


def test_offset_fetch_batches_groups(wire):
    name, tid = topic(wire)
    g1, g2 = f"g-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    _commit(wire, g1, name, tid, {0: (11, -1, "")}, version=8)
    _commit(wire, g2, name, tid, {0: (22, -1, "")}, version=8)
    m = mod("offset_fetch", 8)
    resp = wire.request(make(m.OffsetFetchRequest, require_stable=False, groups=tuple(
        make(m.OffsetFetchRequestGroup, group_id=g, topics=(
            make(m.OffsetFetchRequestTopics, name=name, partition_indexes=(0,)),)) for g in (g1, g2, "none"))))
    got = {g.group_id: g.topics[0].partitions[0].committed_offset for g in resp.groups}
    assert got == {g1: 11, g2: 22, "none": -1}


@pytest.mark.parametrize("commit", [True, False])
def test_transactional_offsets_are_unstable_until_the_marker(wire, commit):
    """TxnOffsetCommit (via the transaction coordinator) stages offsets in the group; OffsetFetch
    with require_stable answers UNSTABLE_OFFSET_COMMIT until EndTxn writes the marker."""
    name, tid = topic(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    txid = f"tx-{uuid.uuid4().hex[:8]}"
    ip = mod("init_producer_id", 5)
    init = wire.request(make(ip.InitProducerIdRequest, transactional_id=txid, transaction_timeout=60000,
                             producer_id=-1, producer_epoch=-1))
    assert init.error_code == ErrorCode.none
    pid, epoch = init.producer_id, init.producer_epoch
    tm = mod("txn_offset_commit", 5)
    r = wire.request(make(tm.TxnOffsetCommitRequest, transactional_id=txid, group_id=group, producer_id=pid,
                          producer_epoch=epoch, generation_id=-1, member_id="", group_instance_id=None,
                          topics=(make(tm.TxnOffsetCommitRequestTopic, name=name, partitions=(
                              make(tm.TxnOffsetCommitRequestPartition, partition_index=0, committed_offset=42,
                                   committed_leader_epoch=-1, committed_metadata="txn"),)),)))
    assert r.topics[0].partitions[0].error_code == ErrorCode.none
    stable = _fetch(wire, group, name, tid, [0], version=9, require_stable=True)
    assert stable.groups[0].topics[0].partitions[0].error_code == ErrorCode.unstable_offset_commit
    loose = _fetch(wire, group, name, tid, [0], version=9)
    assert loose.groups[0].topics[0].partitions[0].committed_offset == -1
    em = mod("end_txn", 5)
    end = wire.request(make(em.EndTxnRequest, transactional_id=txid, producer_id=pid, producer_epoch=epoch,
                            committed=commit))
    assert end.error_code == ErrorCode.none
    after = _fetch(wire, group, name, tid, [0], version=9, require_stable=True).groups[0].topics[0].partitions[0]
    assert after.error_code == ErrorCode.none
    assert (after.committed_offset, after.metadata) == ((42, "txn") if commit else (-1, ""))


def test_consumer_group_member_asked_to_revoke_again_keeps_its_epoch(wire):
    """A member that reports its revocation done while the target has moved on (a third member
    joined) is asked to revoke more at the same epoch, as on Kafka; the same heartbeat sent
    again (its answer lost on a dead connection) is answered, not fenced."""
    (n1, t1), (n2, t2) = topic(wire), topic(wire)
    group = f"cg-{uuid.uuid4().hex[:8]}"
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    ra = _cgh(wire, group, a, 0, topics=(n1, n2))
    assert ra.error_code == ErrorCode.none and sum(len(tp.partitions) for tp in ra.assignment.topic_partitions) == 8
    epoch = ra.member_epoch
    assert _cgh(wire, group, b, 0, topics=(n1, n2)).error_code == ErrorCode.none
    everything = [(t1, range(4)), (t2, range(4))]
    asked = _cgh(wire, group, a, epoch, owned=everything)
    assert asked.error_code == ErrorCode.none and asked.member_epoch == epoch
    kept = [(tp.topic_id, tuple(tp.partitions)) for tp in asked.assignment.topic_partitions]
    assert sum(len(ps) for _, ps in kept) == 4
    assert _cgh(wire, group, c, 0, topics=(n1, n2)).error_code == ErrorCode.none
    again = _cgh(wire, group, a, epoch, owned=kept)
    assert again.error_code == ErrorCode.none and again.member_epoch == epoch
    assert sum(len(tp.partitions) for tp in again.assignment.topic_partitions) < 4
    retried = _cgh(wire, group, a, epoch, owned=kept)
    assert retried.error_code == ErrorCode.none and retried.member_epoch == epoch
