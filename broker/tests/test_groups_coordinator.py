"""The group coordinator's persistence in __consumer_offsets and the transaction hooks, on an
in-memory stand-in for the cluster's partition logs (the real logs are tested in storage/)."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
import trio
import trio.testing
from kio.schema.errors import ErrorCode

from kafkalite.broker.changes import StateChanges
from kafkalite.broker.group_configs import GroupConfigs
from kafkalite.broker.groups import GroupCoordinator
from kafkalite.broker.groups import records as rec
from kafkalite.broker.groups.persistence import BURST_SETTLE_MS
from kafkalite.broker.partition import Partition
from kafkalite.protocol.batch import BatchHeader
from kafkalite.protocol.control_records import build_control_batch
from kafkalite.protocol.records import decode_records


class FakeLog:
    config = SimpleNamespace(fsync="never")

    def __init__(self):
        self.batches: list[tuple[int, bytes]] = []
        self.next_offset = 0
        self.log_start_offset = 0

    def append(self, batch, leader_epoch=0, now_ms=0):
        h = BatchHeader(batch, 0)
        base = self.next_offset
        batch[0:8] = base.to_bytes(8, "big")
        self.batches.append((base, bytes(batch)))
        self.next_offset += h.record_count
        return SimpleNamespace(base_offset=base, last_offset=self.next_offset - 1, max_timestamp=h.max_timestamp,
                               log_append_time_ms=-1, log_start_offset=self.log_start_offset)

    @property
    def log_end_offset(self):
        return self.next_offset

    def batches_from(self, offset):
        return [(b, data) for b, data in self.batches if b >= offset]

    def flush(self):
        pass


def FakePartition(topic, index):
    """The broker's Partition (append, producer state, wake-ups) over the in-memory log."""
    return Partition(topic, index, FakeLog())


class FakeCluster:
    def __init__(self):
        self.topics = {}
        self.topics_by_id = {}
        self.changes = StateChanges()

    def create_topic(self, name, n, configs=None):
        t = SimpleNamespace(name=name, topic_id=uuid.uuid4(), configs=dict(configs or {}), partitions=[])
        t.partitions = [FakePartition(t, i) for i in range(n)]
        self.topics[name] = t
        self.topics_by_id[t.topic_id] = t
        return t

    def partition(self, name, index):
        t = self.topics.get(name)
        return t.partitions[index] if t and 0 <= index < len(t.partitions) else None


class Clock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self):
        return self.now


CONFIG = {
    "group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10, "group.max.session.timeout.ms": 100000,
    "group.consumer.session.timeout.ms": 1000, "group.consumer.heartbeat.interval.ms": 100,
    "offsets.topic.num.partitions": 3, "offsets.retention.minutes": 1, "fsync": "never",
}


def fake_services(config: dict) -> SimpleNamespace:
    """The services a coordinator reads besides itself: group configs none of these tests set
    (a directory that is never there: they fall back to `config`)."""
    return SimpleNamespace(group_configs=GroupConfigs(Path("/nonexistent/kafkalite-test-meta"), config))


def make(cluster=None, clock=None):
    broker = SimpleNamespace(config=CONFIG, cluster=cluster or FakeCluster(), services=fake_services(CONFIG))
    coord = GroupCoordinator(broker, clock=clock or Clock())
    broker.services.groups = coord
    return coord


def restart(coord):
    again = make(coord.broker.cluster, coord.clock)
    again.load()
    return again


async def first_join(coord, **join):
    """A member's first JoinGroup answer. A static member forming a group waits out the burst
    window (no MEMBER_ID_REQUIRED round trip gives the others time to arrive): the fake clock is
    moved past it and the group ticked, as the coordinator's deadline task would."""
    answers = []

    async def ask():
        answers.append(await coord.join_group(**join))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        if not answers:
            coord.clock.now += BURST_SETTLE_MS
            coord._tick(coord.groups[join["group_id"]], coord.clock())
    return answers[0]


def join_and_sync(coord, group="g", instance=None):
    async def go():
        first = await first_join(coord, group_id=group, member_id="", group_instance_id=instance, client_id="c",
                                 client_host="/h", session_timeout_ms=1000, rebalance_timeout_ms=1000,
                                 protocol_type="consumer", protocols=[("range", b"\0\0\0\0\0\0")],
                                 api_version=9)
        mid = first.member_id
        if first.error == ErrorCode.member_id_required:
            first = await coord.join_group(group_id=group, member_id=mid, group_instance_id=instance, client_id="c",
                                           client_host="/h", session_timeout_ms=1000, rebalance_timeout_ms=1000,
                                           protocol_type="consumer", protocols=[("range", b"\0\0\0\0\0\0")],
                                           api_version=9)
        s = await coord.sync_group(group_id=group, member_id=mid, group_instance_id=instance,
                                   generation_id=first.generation_id, protocol_type="consumer",
                                   protocol_name="range", assignments={mid: b"assignment"})
        assert s.error == ErrorCode.none
        return mid, first.generation_id
    return trio.run(go)


def test_commit_fetch_and_reload():
    coord = make()
    coord.cluster.create_topic("t", 2)
    assert coord.validate_commit("g", -1, "", None, 8) == ErrorCode.none
    errs = coord.commit_offsets("g", {("t", 0): (5, 3, "meta"), ("t", 1): (7, -1, None)})
    assert set(errs.values()) == {ErrorCode.none}
    again = restart(coord)
    err, rows = again.fetch_offsets("g", [("t", 0), ("t", 1), ("t", 9)], require_stable=False)
    assert err == ErrorCode.none
    assert rows == [("t", 0, 5, 3, "meta", ErrorCode.none), ("t", 1, 7, -1, "", ErrorCode.none),
                    ("t", 9, -1, -1, "", ErrorCode.none)]
    assert again.list_groups() == [("g", "", "Empty", "classic")]


def test_records_are_kafkas_format():
    coord = make()
    coord.commit_offsets("grp", {("t", 3): (42, 1, "m")})
    part = coord.offsets_partition("grp")
    (_, batch), = part.log.batches
    (r,) = decode_records(batch)
    assert r.key == b"\x00\x01\x00\x03grp\x00\x01t\x00\x00\x00\x03"
    v = rec.decode_offset_commit_value(r.value)
    assert (v.offset, v.leader_epoch, v.metadata) == (42, 1, "m")
    assert r.value[:2] == b"\x00\x03"


def test_group_metadata_survives_restart():
    coord = make()
    mid, gen = join_and_sync(coord, instance="i-1")
    again = restart(coord)
    g = again.groups["g"]
    assert g.state == "Stable" and g.generation_id == gen and g.members[mid].assignment == b"assignment"
    assert again.heartbeat(group_id="g", member_id=mid, group_instance_id="i-1", generation_id=gen) == ErrorCode.none
    assert again.validate_commit("g", gen, mid, "i-1", 8) == ErrorCode.none
    assert again.validate_commit("g", gen + 1, mid, "i-1", 8) == ErrorCode.illegal_generation


def test_delete_group_writes_tombstones():
    coord = make()
    coord.commit_offsets("g", {("t", 0): (1, -1, "")})
    coord.validate_commit("g", -1, "", None, 8)
    assert coord.delete_groups(["g", "nope"]) == [("g", ErrorCode.none), ("nope", ErrorCode.group_id_not_found)]
    again = restart(coord)
    assert "g" not in again.groups and again.fetch_offsets("g", None, require_stable=False) == (ErrorCode.none, [])


def test_non_empty_group_cannot_be_deleted():
    coord = make()
    join_and_sync(coord)
    assert coord.delete_groups(["g"]) == [("g", ErrorCode.non_empty_group)]


def test_offset_retention_of_empty_groups():
    clock = Clock()
    coord = make(clock=clock)
    coord.validate_commit("g", -1, "", None, 8)
    coord.commit_offsets("g", {("t", 0): (1, -1, "")})
    clock.now += 59_000
    assert coord.expire_offsets() == 0
    clock.now += 1_000
    assert coord.expire_offsets() == 1
    assert "g" not in coord.groups
    assert restart(coord).offsets.committed == {}


def test_consumer_group_survives_restart():
    clock = Clock()
    coord = make(clock=clock)
    t = coord.cluster.create_topic("t", 4)
    r = coord.consumer_group_heartbeat(group_id="cg", member_id="m1", member_epoch=0, instance_id=None, rack_id=None,
                                       rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
                                       subscribed_topic_regex=None, server_assignor=None, owned={}, client_id="c",
                                       client_host="/h", api_version=1)
    assert r.error == ErrorCode.none and r.assignment == {t.topic_id: {0, 1, 2, 3}}
    again = restart(coord)
    g = again.groups["cg"]
    assert g.group_epoch == 1 and g.members["m1"].assigned == {t.topic_id: {0, 1, 2, 3}}
    # its one member had reached the group's epoch: the group loads Stable, as Kafka's does, so a
    # describe before the member's next heartbeat sees it Stable (not Assigning)
    assert g.state == "Stable"
    r2 = again.consumer_group_heartbeat(group_id="cg", member_id="m1", member_epoch=1, instance_id=None,
                                        rack_id=None, rebalance_timeout_ms=-1, subscribed_topic_names=None,
                                        subscribed_topic_regex=None, server_assignor=None,
                                        owned={t.topic_id: {0, 1, 2, 3}}, client_id="c", client_host="/h",
                                        api_version=1)
    assert r2.error == ErrorCode.none and r2.member_epoch == 1
    # leaving writes tombstones: the member is gone after another restart
    again.consumer_group_heartbeat(group_id="cg", member_id="m1", member_epoch=-1, instance_id=None, rack_id=None,
                                   rebalance_timeout_ms=-1, subscribed_topic_names=None, subscribed_topic_regex=None,
                                   server_assignor=None, owned=None, client_id="c", client_host="/h", api_version=1)
    third = restart(again)
    assert third.groups["cg"].members == {} and third.groups["cg"].state == "Empty"


def test_a_consumer_groups_session_is_its_group_config():
    """consumer.session.timeout.ms set on a group (IncrementalAlterConfigs, GROUP) is its members'
    session, a static member's left with epoch -2 included; another group keeps the broker's."""
    clock = Clock()
    coord = make(clock=clock)
    coord.cluster.create_topic("t", 2)
    coord.broker.services.group_configs.values["slow"] = {"consumer.session.timeout.ms": "10000"}

    def join(group: str, epoch: int = 0, member: str = ""):
        member = member or str(uuid.uuid4())   # v1: the member makes its own id
        return coord.consumer_group_heartbeat(
            group_id=group, member_id=member, member_epoch=epoch, instance_id="i", rack_id=None,
            rebalance_timeout_ms=1000 if epoch == 0 else -1, subscribed_topic_names=["t"] if epoch == 0 else None,
            subscribed_topic_regex=None, server_assignor=None, owned={} if epoch == 0 else None, client_id="c",
            client_host="/h", api_version=1)

    slow, fast = join("slow"), join("fast")
    assert slow.error == fast.error == ErrorCode.none
    assert coord.groups["slow"].members[slow.member_id].session_deadline == clock.now + 10000
    assert coord.groups["fast"].members[fast.member_id].session_deadline == clock.now + 1000
    join("slow", -2, slow.member_id)    # a static member's temporary leave (KIP-345 over KIP-848)
    clock.now += 5000                   # past the broker's 1 s, within the group's 10 s
    coord._tick(coord.groups["slow"], clock.now)
    assert coord.groups["slow"].members, "the static member was removed before its group's session ended"
    clock.now += 5001
    coord._tick(coord.groups["slow"], clock.now)
    assert not coord.groups["slow"].members


def test_heartbeat_validation():
    coord = make()
    r = coord.consumer_group_heartbeat(group_id="cg", member_id="", member_epoch=0, instance_id=None, rack_id=None,
                                       rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
                                       subscribed_topic_regex=None, server_assignor=None, owned={}, client_id="c",
                                       client_host="/h", api_version=1)
    assert r.error == ErrorCode.invalid_request
    r = coord.consumer_group_heartbeat(group_id="cg", member_id="", member_epoch=0, instance_id=None, rack_id=None,
                                       rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
                                       subscribed_topic_regex=None, server_assignor=None, owned={}, client_id="c",
                                       client_host="/h", api_version=0)
    assert r.error == ErrorCode.none and r.member_id


def _txn_commit(coord, pid, group="g", generation=-1, member="", offsets=None):
    return coord.stage_txn_offsets(group, producer_id=pid, producer_epoch=0, generation_id=generation,
                                   member_id=member, group_instance_id=None,
                                   offsets=offsets or {("t", 0): (10, -1, "")}, now_ms=coord.clock())


def _marker(coord, group, pid, commit):
    part = coord.offsets_partition(group)
    part.log.append(build_control_batch(commit, producer_id=pid, producer_epoch=0, coordinator_epoch=0,
                                        timestamp_ms=0))
    coord.complete_txn_offsets(pid, commit)


def test_txn_offsets_pending_until_commit_marker():
    coord = make()
    coord.cluster.create_topic("t", 1)
    assert _txn_commit(coord, 7) == {("t", 0): ErrorCode.none}
    assert coord.has_pending_txn_offsets("g", "t", 0)
    assert coord.fetch_offsets("g", [("t", 0)], require_stable=True)[1][0][5] == ErrorCode.unstable_offset_commit
    assert coord.fetch_offsets("g", [("t", 0)], require_stable=False)[1][0][2] == -1
    (_, batch) = coord.offsets_partition("g").log.batches[-1]
    h = BatchHeader(batch, 0)
    assert h.is_transactional and h.producer_id == 7 and h.base_sequence == -1
    # restarted before the marker: still pending
    assert restart(coord).has_pending_txn_offsets("g", "t", 0)
    _marker(coord, "g", 7, True)
    assert not coord.has_pending_txn_offsets("g", "t", 0)
    assert coord.fetch_offsets("g", [("t", 0)], require_stable=True)[1][0][2] == 10
    again = restart(coord)
    assert again.fetch_offsets("g", [("t", 0)], require_stable=True)[1][0][2] == 10


def test_txn_offsets_dropped_on_abort():
    coord = make()
    coord.cluster.create_topic("t", 1)
    _txn_commit(coord, 8)
    _marker(coord, "g", 8, False)
    assert coord.fetch_offsets("g", [("t", 0)], require_stable=True)[1][0][2] == -1
    assert restart(coord).fetch_offsets("g", [("t", 0)], require_stable=True)[1][0][2] == -1


def test_txn_offsets_generation_checks():
    coord = make()
    coord.cluster.create_topic("t", 1)
    assert _txn_commit(coord, 9, group="nogroup", generation=3) == {("t", 0): ErrorCode.illegal_generation}
    mid, gen = join_and_sync(coord, group="live")
    assert _txn_commit(coord, 9, group="live", generation=gen, member=mid) == {("t", 0): ErrorCode.none}
    assert _txn_commit(coord, 9, group="live", generation=gen + 1, member=mid) == {("t", 0): ErrorCode.illegal_generation}
    assert _txn_commit(coord, 9, group="live", generation=gen, member="x") == {("t", 0): ErrorCode.unknown_member_id}
    assert _txn_commit(coord, 9, group="live", offsets={("zz", 0): (1, -1, "")}, generation=gen, member=mid) == \
        {("zz", 0): ErrorCode.unknown_topic_or_partition}


@pytest.mark.parametrize("gid", ["g", "my-group", "ünïcode", "x" * 100])
def test_group_partition_is_kafkas(gid):
    coord = make()
    h = 0
    for unit in gid.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    assert coord.offsets_partition(gid).index == abs(h) % 3


def test_empty_group_without_offsets_is_removed_by_the_retention_check():
    coord = make()
    mid, gen = join_and_sync(coord)
    coord.leave_group("g", [(mid, None)])
    assert coord.groups["g"].state == "Empty"
    coord.expire_offsets()
    assert "g" not in coord.groups
    assert "g" not in restart(coord).groups


def test_offsets_of_deleted_and_recreated_topics_are_dropped():
    coord = make()
    coord.cluster.create_topic("t", 1)
    coord.commit_offsets("g", {("t", 0): (5, -1, "")})
    coord.commit_offsets("g", {("u", 0): (1, -1, "")})  # a topic that does not exist
    del coord.cluster.topics["t"]
    coord.cluster.create_topic("t", 1)  # same name, new id
    assert coord.fetch_offsets("g", [("t", 0)], require_stable=False)[1][0][2] == -1
    again = restart(coord)
    assert again.offsets.committed == {}


def test_an_empty_group_changes_protocol_and_keeps_its_offsets():
    coord = make()
    t = coord.cluster.create_topic("t", 1)
    hb = dict(group_id="g", instance_id=None, rack_id=None, subscribed_topic_regex=None, server_assignor=None,
              client_id="c", client_host="/h", api_version=1)
    coord.consumer_group_heartbeat(member_id="m", member_epoch=0, rebalance_timeout_ms=1000,
                                   subscribed_topic_names=["t"], owned={}, **hb)
    assert coord.validate_commit("g", 1, "m", None, 9) == ErrorCode.none
    coord.commit_offsets("g", {("t", 0): (3, -1, "")})
    coord.consumer_group_heartbeat(member_id="m", member_epoch=-1, rebalance_timeout_ms=-1,
                                   subscribed_topic_names=None, owned=None, **hb)
    join_and_sync(coord)  # a classic member now
    assert type(coord.groups["g"]).__name__ == "ClassicGroup"
    assert coord.fetch_offsets("g", [("t", 0)], require_stable=False)[1][0][2] == 3
    again = restart(coord)
    assert type(again.groups["g"]).__name__ == "ClassicGroup"
    assert again.fetch_offsets("g", [("t", 0)], require_stable=False)[1][0][2] == 3
    del t


def test_the_service_task_expires_sessions_on_trio_time():
    from trio.testing import MockClock

    async def main():
        coord = make(clock=lambda: int(trio.current_time() * 1000))
        async with trio.open_nursery() as nursery:
            await nursery.start(coord.run)
            first = await coord.join_group(group_id="g", member_id="", group_instance_id=None, client_id="c",
                                           client_host="/h", session_timeout_ms=1000, rebalance_timeout_ms=1000,
                                           protocol_type="consumer", protocols=[("range", b"")], api_version=3)
            await coord.sync_group(group_id="g", member_id=first.member_id, group_instance_id=None,
                                   generation_id=first.generation_id, protocol_type="consumer",
                                   protocol_name="range", assignments={})
            assert coord.groups["g"].state == "Stable"
            await trio.sleep(0.9)
            assert coord.heartbeat(group_id="g", member_id=first.member_id, group_instance_id=None,
                                   generation_id=1) == ErrorCode.none
            await trio.sleep(0.9)
            assert coord.groups["g"].state == "Stable"
            await trio.sleep(0.2)  # 1000 ms after the last heartbeat
            assert coord.groups["g"].state == "Empty"
            nursery.cancel_scope.cancel()

    trio.run(main, clock=MockClock(autojump_threshold=0))
