"""Transaction handlers (InitProducerId, AddPartitionsToTxn, EndTxn, WriteTxnMarkers,
TxnOffsetCommit), in-process; each expected answer is what Kafka's TransactionCoordinator and
KafkaApis give."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode as E

from .fake import InProcessBroker, create_topic, fetch, in_process_broker, produce, record_values


async def init(b: InProcessBroker, tid: str | None, timeout_ms: int = 60000, producer_id: int = -1,
               producer_epoch: int = -1) -> Any:
    return await b.call(22, 4, transactional_id=tid, transaction_timeout=timeout_ms, producer_id=producer_id,
                        producer_epoch=producer_epoch)


async def add_partitions(b: InProcessBroker, tid: str, pid: int, epoch: int, topics: dict[str, list[int]]) -> dict:
    """AddPartitionsToTxn v3: {(topic, partition): error}."""
    r = await b.call(24, 3, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                     v3_and_below_producer_epoch=epoch,
                     v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in topics.items()])
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


async def end_txn(b: InProcessBroker, tid: str, pid: int, epoch: int, commit: bool) -> Any:
    return (await b.call(26, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         committed=commit)).error_code


async def write_in_transaction(b: InProcessBroker, tid: str, topic: str, values: list[bytes]) -> tuple[int, int]:
    """A transaction of `tid` begun with `values` written to partition 0 of `topic`; its (id, epoch)."""
    r = await init(b, tid)
    pid, epoch = r.producer_id, r.producer_epoch
    assert await add_partitions(b, tid, pid, epoch, {topic: [0]}) == {(topic, 0): E.none}
    written = await produce(b, topic, values, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                            base_sequence=0, transactional=True)
    assert written.error_code == E.none
    return pid, epoch


@asynccontextmanager
async def producer_of_tx(tmp_path: Path) -> AsyncIterator[tuple[InProcessBroker, Any]]:
    """A broker with topic "t" and transactional id "tx" initialized: (broker, InitProducerId answer)."""
    async with in_process_broker(tmp_path) as b:
        await create_topic(b, "t")
        yield b, await init(b, "tx")


async def until(predicate: Any, what: str) -> None:
    """Wait (at most 5 s) for what the coordinator does after answering (markers, offsets)."""
    with trio.move_on_after(5):
        while not predicate():
            await trio.sleep(0.01)
    assert predicate(), f"not within 5 s: {what}"


def test_init_producer_id_gives_new_ids_and_bumps_a_transactional_epoch(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            first, second = await init(b, None), await init(b, None)
            assert (first.error_code, first.producer_epoch) == (E.none, 0)
            assert second.producer_id != first.producer_id  # an idempotent producer gets a new id each time
            t1 = await init(b, "tx")
            assert (t1.error_code, t1.producer_epoch) == (E.none, 0)
            t2 = await init(b, "tx")
            assert (t2.error_code, t2.producer_id, t2.producer_epoch) == (E.none, t1.producer_id, 1)
            # KIP-360: the current id and epoch given, the epoch is bumped
            t3 = await init(b, "tx", producer_id=t2.producer_id, producer_epoch=t2.producer_epoch)
            assert (t3.error_code, t3.producer_id, t3.producer_epoch) == (E.none, t1.producer_id, 2)
            # above transaction.max.timeout.ms (900000 by default)
            assert (await init(b, "tx2", timeout_ms=900_001)).error_code == E.invalid_transaction_timeout

    trio.run(main)


def test_add_partitions_fails_the_whole_request_on_an_unknown_topic(tmp_path: Path) -> None:
    async def main() -> None:
        async with producer_of_tx(tmp_path) as (b, r):
            pid, epoch = r.producer_id, r.producer_epoch
            # Kafka: the partitions that failed their check carry its error, the rest OPERATION_NOT_ATTEMPTED
            assert await add_partitions(b, "tx", pid, epoch, {"t": [0], "missing": [0]}) == {
                ("t", 0): E.operation_not_attempted, ("missing", 0): E.unknown_topic_or_partition}
            assert await add_partitions(b, "tx", pid, epoch, {"t": [0]}) == {("t", 0): E.none}
            # a transactional id the coordinator does not know
            assert await add_partitions(b, "nobody", pid, epoch, {"t": [0]}) == {
                ("t", 0): E.invalid_producer_id_mapping}

    trio.run(main)


def test_end_txn_commits_what_the_transaction_wrote(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            await create_topic(b, "t")
            # Kafka's TransactionCoordinator.endTransaction: no metadata for the id
            assert await end_txn(b, "unknown", 1, 0, True) == E.invalid_producer_id_mapping
            r = await init(b, "tx")
            pid, epoch = r.producer_id, r.producer_epoch
            # ...and state Empty (no transaction begun): INVALID_TXN_STATE
            assert await end_txn(b, "tx", pid, epoch, True) == E.invalid_txn_state
            # its InitProducerId bumps the epoch
            assert await write_in_transaction(b, "tx", "t", [b"a", b"b"]) == (pid, epoch + 1)
            epoch += 1
            # open: read_committed sees nothing yet, the last stable offset stays before it
            open_part = await fetch(b, "t", 0, read_committed=True)
            assert (open_part.high_watermark, open_part.last_stable_offset) == (2, 0)
            assert record_values(open_part.records) == []
            assert await end_txn(b, "tx", pid, epoch, True) == E.none
            partition = b.broker.cluster.partition("t", 0)
            assert partition is not None
            await until(lambda: partition.last_stable_offset == 3, "the COMMIT marker written")
            committed = await fetch(b, "t", 0, read_committed=True)
            assert record_values(committed.records) == [b"a", b"b"]

    trio.run(main)


def test_write_txn_markers_completes_a_producers_transaction_per_partition(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            await create_topic(b, "t")
            pid, epoch = await write_in_transaction(b, "tx", "t", [b"a"])
            assert (await fetch(b, "t", 0)).last_stable_offset == 0
            m = await b.call(27, 1, markers=[{
                "producer_id": pid, "producer_epoch": epoch, "transaction_result": True, "coordinator_epoch": 0,
                "topics": [{"name": "t", "partition_indexes": [0, 7]}]}])
            errors = {p.partition_index: p.error_code for p in m.markers[0].topics[0].partitions}
            assert errors == {0: E.none, 7: E.unknown_topic_or_partition}
            # what the coordinator's marker channel sends, sent by hand: the marker takes an offset and
            # makes the batch stable
            after = await fetch(b, "t", 0, read_committed=True)
            assert (after.high_watermark, after.last_stable_offset) == (2, 2)
            assert record_values(after.records) == [b"a"]

    trio.run(main)


def test_txn_offset_commit_is_pending_until_the_transaction_commits(tmp_path: Path) -> None:
    async def main() -> None:
        async with producer_of_tx(tmp_path) as (b, r):
            ids = {"transactional_id": "tx", "producer_id": r.producer_id, "producer_epoch": r.producer_epoch}
            assert (await b.call(25, 3, group_id="g", **ids)).error_code == E.none  # AddOffsetsToTxn
            c = await b.call(28, 3, group_id="g", generation_id=-1, member_id="", group_instance_id=None,
                             topics=[{"name": "t", "partitions": [
                                 {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                                  "committed_metadata": ""}]}], **ids)
            assert c.topics[0].partitions[0].error_code == E.none

            async def committed() -> tuple[Any, int]:
                f = await b.call(9, 8, groups=[{"group_id": "g", "topics": [
                    {"name": "t", "partition_indexes": [0]}]}], require_stable=True)
                p = f.groups[0].topics[0].partitions[0]
                return p.error_code, p.committed_offset

            # Kafka answers UNSTABLE_OFFSET_COMMIT to a stable fetch while the offset is pending
            assert (await committed())[0] == E.unstable_offset_commit
            assert await end_txn(b, "tx", r.producer_id, r.producer_epoch, True) == E.none
            with trio.fail_after(5):
                while (answer := await committed()) != (E.none, 5):
                    assert answer[0] == E.unstable_offset_commit, answer
                    await trio.sleep(0.01)

    trio.run(main)
