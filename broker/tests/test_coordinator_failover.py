"""Coordinator failover as Kafka does it: when a __consumer_offsets partition gets another leader,
the group coordinator unloads its groups (classic members waiting in JoinGroup or SyncGroup are
answered NOT_COORDINATOR, Kafka's GroupMetadataManager.onUnloaded) and loads them again from the
log (onElection), so a group is what was written, not what the old coordinator held in memory;
and a transaction's markers carry the coordinator epoch of its __transaction_state partition's
leader (TransactionStateManager), which DescribeProducers shows."""

from __future__ import annotations

from typing import Callable

import kio.schema.describe_producers.v0.request as dp0
import trio
import trio.testing
from kio.schema.errors import ErrorCode

from kafkalite.broker.controls import invoke
from kafkalite.broker.groups import GroupCoordinator
from kafkalite.broker.groups.classic import ClassicGroup
from kafkalite.broker.groups.classic_members import JoinResult, SyncResult
from kafkalite.broker.groups.states import ClassicGroupState as S
from kafkalite.broker.internal_topics import partition_for
from kafkalite.broker.state import Broker
from kafkalite.protocol.batch import BatchHeader
from kafkalite.protocol.control_records import parse_control_record
from kafkalite.protocol.records import Record, build_batch

from .test_groups_coordinator import join_and_sync, make
from .test_nodes import ask, cluster_of

PROTOCOLS = [("range", b"\0\0\0\0\0\0")]


def move(coord: GroupCoordinator, group: str, node: int = 2) -> None:
    """The leader of the group's __consumer_offsets partition moves to `node`, as the cluster's
    controller moves it (Partition.set_leader reports it to the coordinator)."""
    part = coord.offsets_partition(group)
    part.changes = coord.cluster.changes
    part.replicas = part.isr = [1, 2]
    part.set_leader(node)


async def join(coord: GroupCoordinator, group: str, member_id: str) -> JoinResult:
    return await coord.join_group(group_id=group, member_id=member_id, group_instance_id=None, client_id="c",
                                  client_host="/h", session_timeout_ms=1000, rebalance_timeout_ms=1000,
                                  protocol_type="consumer", protocols=PROTOCOLS, api_version=9)


def heartbeat(coord: GroupCoordinator, group: str, member_id: str, generation: int) -> ErrorCode:
    return coord.heartbeat(group_id=group, member_id=member_id, group_instance_id=None, generation_id=generation)


def classic(coord: GroupCoordinator, group: str) -> ClassicGroup:
    found = coord.groups[group]
    assert isinstance(found, ClassicGroup)
    return found


def test_a_member_waiting_in_join_group_is_answered_not_coordinator_and_the_group_is_loaded_as_written():
    coord = make()
    first, generation = join_and_sync(coord)  # Stable, generation 1, written
    answers: list[JoinResult] = []

    async def main() -> None:
        async def second() -> None:
            required = await join(coord, "g", "")
            assert required.error == ErrorCode.member_id_required
            answers.append(await join(coord, "g", required.member_id))  # waits for the first to rejoin

        with trio.fail_after(5):  # a member never answered would hang here
            async with trio.open_nursery() as nursery:
                nursery.start_soon(second)
                await trio.testing.wait_all_tasks_blocked()
                assert classic(coord, "g").state == S.PREPARING_REBALANCE and not answers
                assert heartbeat(coord, "g", first, generation) == ErrorCode.rebalance_in_progress
                move(coord, "g")

    before = classic(coord, "g")
    trio.run(main)
    (answer,) = answers
    assert (answer.error, answer.generation_id) == (ErrorCode.not_coordinator, -1) and answer.member_id
    assert before.state == S.DEAD
    # the new coordinator's group is the last one written: Stable at generation 1 with the first
    # member and its assignment; the rebalance that only the old coordinator knew of is gone
    after = classic(coord, "g")
    assert after is not before
    assert (after.state, after.generation_id, list(after.members)) == (S.STABLE, generation, [first])
    assert after.members[first].assignment == b"assignment"
    assert heartbeat(coord, "g", first, generation) == ErrorCode.none


def test_a_member_waiting_in_sync_group_is_answered_not_coordinator():
    coord = make()
    first, generation = join_and_sync(coord)
    synced: list[SyncResult] = []

    async def main() -> None:
        async def second() -> None:
            required = await join(coord, "g", "")
            joined = await join(coord, "g", required.member_id)
            assert joined.error == ErrorCode.none and joined.leader == first
            # a follower: its SyncGroup waits for the leader's assignment
            synced.append(await coord.sync_group(group_id="g", member_id=joined.member_id, group_instance_id=None,
                                                 generation_id=joined.generation_id, protocol_type="consumer",
                                                 protocol_name="range", assignments={}))

        with trio.fail_after(5):  # a member never answered would hang here
            async with trio.open_nursery() as nursery:
                nursery.start_soon(second)
                await trio.testing.wait_all_tasks_blocked()
                rejoined = await join(coord, "g", first)  # the leader rejoins: generation 2 completes
                assert rejoined.generation_id == generation + 1 and len(rejoined.members) == 2
                await trio.testing.wait_all_tasks_blocked()
                assert classic(coord, "g").state == S.COMPLETING_REBALANCE and not synced
                move(coord, "g")

    trio.run(main)
    assert [s.error for s in synced] == [ErrorCode.not_coordinator]
    after = classic(coord, "g")
    assert (after.state, after.generation_id, list(after.members)) == (S.STABLE, generation, [first])


def test_offsets_come_back_from_the_log_and_other_partitions_groups_stay():
    coord = make()
    coord.cluster.create_topic("t", 1)
    n = 3  # offsets.topic.num.partitions in the coordinator's test config
    moved = "g"
    other = next(f"other-{i}" for i in range(100) if partition_for(f"other-{i}", n) != partition_for(moved, n))
    for gid in (moved, other):
        assert coord.commit_offsets(gid, {("t", 0): (5, 0, "m")}) == {("t", 0): ErrorCode.none}
    kept = coord.groups[other]
    move(coord, moved)
    assert coord.groups[other] is kept
    for gid in (moved, other):
        err, rows = coord.fetch_offsets(gid, [("t", 0)], require_stable=False)
        assert (err, rows) == (ErrorCode.none, [("t", 0, 5, 0, "m", ErrorCode.none)])
    # moving back and forth reads the partition again each time, never doubling anything
    move(coord, moved, node=1)
    assert coord.fetch_offsets(moved, [("t", 0)], require_stable=False)[1][0][2] == 5
    assert sorted(coord.list_groups()) == sorted([(moved, "", "Empty", "classic"), (other, "", "Empty", "classic")])


async def _until(broker: Broker, condition: Callable[[], bool]) -> None:
    with trio.fail_after(10):
        while not condition():
            await broker.cluster.changes.next_change(1)


def test_markers_after_a_transaction_coordinator_move_carry_the_new_coordinator_epoch(tmp_path):
    async def main() -> None:
        async with cluster_of(tmp_path, nodes=2) as broker:
            broker.cluster.create_topic("t", 1, replication_factor=2)
            part = broker.cluster.partition("t", 0)
            assert part is not None
            tc = broker.services.transactions
            tid = "tx-1"
            err, pid, epoch = tc.core.init_producer_id(tid, 60_000)
            assert err == ErrorCode.none

            def commit_one(sequence: int) -> None:
                assert tc.core.add_partitions(tid, pid, epoch, [("t", 0)]) == ErrorCode.none
                part.append(build_batch([Record(key=b"k", value=b"v")], producer_id=pid, producer_epoch=epoch,
                                        base_sequence=sequence, transactional=True), now_ms=0)
                assert tc.end_txn(tid, pid, epoch, True, 0).error == ErrorCode.none

            commit_one(0)
            await _until(broker, lambda: part.producers.entries[pid].current_txn_first_offset is None)
            assert part.producers.entries[pid].coordinator_epoch == 0  # never moved: Kafka's 0 too
            state_part = tc.store.partition_of(tid)
            target = next(n for n in state_part.replicas if n != state_part.leader)
            await invoke(broker, "move-coordinator", {"transactional_id": tid, "node": target})
            assert state_part.leader_epoch == 1
            commit_one(1)
            await _until(broker, lambda: part.producers.entries[pid].current_txn_first_offset is None)
            # the second COMMIT marker in the log carries coordinator epoch 1, and so does the
            # producer's state that DescribeProducers answers from
            markers = [parse_control_record(b)[1] for _o, b in part.batches_from(0) if BatchHeader(b, 0).is_control]
            assert markers == [0, 1]
            described = await ask(broker, part.leader, dp0.DescribeProducersRequest(topics=(
                dp0.TopicRequest(name="t", partition_indexes=(0,)),)))
            (producer,) = described.topics[0].partitions[0].active_producers
            assert (producer.producer_id, producer.coordinator_epoch) == (pid, 1)

        # the same data on one node: the coordinator's epoch goes on from the log, so the next
        # transaction's markers are not fenced by the partition that saw epoch 1
        async with cluster_of(tmp_path, nodes=1) as broker:
            part = broker.cluster.partition("t", 0)
            assert part is not None
            tc = broker.services.transactions
            err, again, epoch = tc.core.init_producer_id(tid, 60_000)
            assert (err, again) == (ErrorCode.none, pid)
            assert tc.core.add_partitions(tid, pid, epoch, [("t", 0)]) == ErrorCode.none
            part.append(build_batch([Record(key=b"k", value=b"v")], producer_id=pid, producer_epoch=epoch,
                                    base_sequence=0, transactional=True), now_ms=0)
            assert tc.end_txn(tid, pid, epoch, True, 0).error == ErrorCode.none
            await _until(broker, lambda: part.producers.entries[pid].current_txn_first_offset is None)
            assert part.producers.entries[pid].coordinator_epoch == 1
            assert part.last_stable_offset == part.high_watermark

    trio.run(main)
