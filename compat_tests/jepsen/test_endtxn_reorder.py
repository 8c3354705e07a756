"""The reordered EndTxn of Jepsen's Kafka analyses, crafted with raw requests: the EndTxn of
transaction N is delayed in the network, the client's retry of it gets through and the client
begins transaction N+1; then the delayed EndTxn arrives. Under transactions v2 (KIP-890 part 2)
every EndTxn bumps the producer epoch, so the late request carries the epoch of N and must be
refused: it must neither commit nor abort N+1, whose records stay invisible to read_committed
until N+1's own EndTxn.

Same assertions on kafkalite and on Apache Kafka (``--broker=kafka``).
"""

from __future__ import annotations

import datetime
import time
import uuid

import pytest
from kio.schema.errors import ErrorCode as E

import kio.schema.describe_transactions.v0.request as dt0
import kio.schema.end_txn.v5.request as et5
import kio.schema.find_coordinator.v4.request as fc4
import kio.schema.init_producer_id.v5.request as ip5
import kio.schema.list_offsets.v7.request as lo7
import kio.schema.metadata.v12.request as md12
import kio.schema.produce.v12.request as p12
from compat_tests.waiting import wait_until
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import Record, build_batch

pytestmark = [pytest.mark.jepsen, pytest.mark.transactions]

MS = datetime.timedelta(milliseconds=1)
RETRIABLE = {E.coordinator_load_in_progress, E.coordinator_not_available, E.not_coordinator,
             E.concurrent_transactions, E.unknown_topic_or_partition, E.not_leader_or_follower}


def _retry(call, what: str, timeout: float = 60.0):
    """Kafka answers retriable errors while it creates and loads its internal topics."""
    deadline = time.monotonic() + timeout
    while True:
        r = call()
        if r.error_code not in RETRIABLE or time.monotonic() > deadline:
            assert r.error_code == E.none, f"{what}: {r.error_code!r}"
            return r
        time.sleep(0.2)


def _produce(wire, tid, topic, pid, epoch, seq, value):
    batch = build_batch([Record(value=value)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                        transactional=True)
    req = p12.ProduceRequest(transactional_id=tid, acks=-1, timeout=5000 * MS, topic_data=(
        p12.TopicProduceData(name=topic, partition_data=(p12.PartitionProduceData(index=0, records=bytes(batch)),)),))
    return wire.request(req).responses[0].partition_responses[0]


def _end(wire, tid, pid, epoch, commit):
    return wire.request(et5.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                          committed=commit))


def _offsets(wire, topic):
    """(last stable offset, high watermark) of partition 0."""
    out = []
    for isolation in (1, 0):
        r = wire.request(lo7.ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=(
            lo7.ListOffsetsTopic(name=topic, partitions=(
                lo7.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1),)),)))
        out.append(r.topics[0].partitions[0].offset)
    return tuple(out)


def _state(wire, tid):
    return wire.request(dt0.DescribeTransactionsRequest(transactional_ids=(tid,))).transaction_states[0]


@pytest.mark.parametrize("late_commit", [True, False], ids=["late-commit", "late-abort"])
def test_a_late_end_txn_of_the_previous_transaction_is_refused(bootstrap, late_commit):
    topic = "reorder-" + uuid.uuid4().hex[:8]
    tid = "reorder-" + uuid.uuid4().hex[:8]
    with WireClient(bootstrap) as wire:
        _retry(lambda: wire.request(md12.MetadataRequest(
            topics=(md12.MetadataRequestTopic(topic_id=None, name=topic),), allow_auto_topic_creation=True,
            include_topic_authorized_operations=False)).topics[0], "metadata")
        # FindCoordinator first: it is what makes Kafka create __transaction_state.
        _retry(lambda: wire.request(fc4.FindCoordinatorRequest(key_type=1, coordinator_keys=(tid,))).coordinators[0],
               "find coordinator")
        init = _retry(lambda: wire.request(ip5.InitProducerIdRequest(
            transactional_id=tid, transaction_timeout=60000 * MS, producer_id=-1, producer_epoch=-1)), "init")
        pid, epoch = init.producer_id, init.producer_epoch

        # Transaction N: one record, then its EndTxn (the retry that got through).
        _retry(lambda: _produce(wire, tid, topic, pid, epoch, 0, b"n"), "produce N")
        r = _retry(lambda: _end(wire, tid, pid, epoch, True), "EndTxn N")
        assert r.producer_epoch == epoch + 1  # KIP-890: every EndTxn bumps the epoch
        wait_until(lambda: _offsets(wire, topic) == (2, 2), 30, what="N's commit marker")

        # Transaction N+1 begins: one record at the new epoch.
        _retry(lambda: _produce(wire, tid, topic, pid, epoch + 1, 0, b"n+1"), "produce N+1")
        wait_until(lambda: _state(wire, tid).transaction_state == "Ongoing", 30, what="N+1 ongoing")

        # The delayed EndTxn of N arrives now, with N's epoch.
        late = _end(wire, tid, pid, epoch, late_commit)
        assert late.error_code == E.producer_fenced, late
        # Had the late EndTxn been taken, the coordinator would be completing a transaction now
        # (PrepareCommit/PrepareAbort, its markers on their way), not Ongoing at the new epoch; a
        # marker written meanwhile would show in the offsets below at N+1's own end, which waits
        # for the log to hold exactly four entries (N, its marker, N+1, its marker).
        st = _state(wire, tid)
        assert (st.transaction_state, st.producer_epoch) == ("Ongoing", epoch + 1)
        assert _offsets(wire, topic) == (2, 3), "N+1's record must stay above the LSO"

        # N+1 ends by its own EndTxn, at its own epoch.
        r = _retry(lambda: _end(wire, tid, pid, epoch + 1, True), "EndTxn N+1")
        assert r.producer_epoch == epoch + 2
        wait_until(lambda: _offsets(wire, topic) == (4, 4), 30, what="N+1's commit marker (and no other)")
