"""Transactions at the protocol level, with the broker's own wire client: producer id
allocation, KIP-890 part 1 verification of Produce v9-v11, implicit partition registration
on Produce v12+, EndTxn v5 epochs, CONCURRENT_TRANSACTIONS between the prepare and the
markers, and WriteTxnMarkers aborting a hanging transaction."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.errors import ErrorCode as E

import kio.schema.add_partitions_to_txn.v3.request as ap3
import kio.schema.add_partitions_to_txn.v4.request as ap4
import kio.schema.describe_transactions.v0.request as dt0
import kio.schema.end_txn.v3.request as et3
import kio.schema.end_txn.v5.request as et5
import kio.schema.init_producer_id.v4.request as ip4
import kio.schema.list_offsets.v7.request as lo7
import kio.schema.metadata.v12.request as md12
import kio.schema.produce.v9.request as p9
import kio.schema.produce.v11.request as p11
import kio.schema.produce.v12.request as p12
import kio.schema.write_txn_markers.v1.request as wm1
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import Record, build_batch
from kafkalite.tests import suite_brokers

MS = datetime.timedelta(milliseconds=1)


def _topic(wire, name=None):
    name = name or "tw-" + uuid.uuid4().hex[:8]
    wire.request(md12.MetadataRequest(topics=(md12.MetadataRequestTopic(topic_id=None, name=name),),
                                      allow_auto_topic_creation=True, include_topic_authorized_operations=False))
    return name


def _init(wire, tid, pid=-1, epoch=-1):
    r = wire.request(ip4.InitProducerIdRequest(transactional_id=tid, transaction_timeout=60000 * MS,
                                               producer_id=pid, producer_epoch=epoch))
    return r.error_code, r.producer_id, r.producer_epoch


def _produce(wire, mod, tid, topic, pid, epoch, seq, value=b"x"):
    batch = build_batch([Record(value=value)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                        transactional=tid is not None)
    req = mod.ProduceRequest(transactional_id=tid, acks=-1, timeout=5000 * MS, topic_data=(
        mod.TopicProduceData(name=topic, partition_data=(mod.PartitionProduceData(index=0, records=bytes(batch)),)),))
    return wire.request(req).responses[0].partition_responses[0]


def _describe(wire, tid):
    return wire.request(dt0.DescribeTransactionsRequest(transactional_ids=(tid,))).transaction_states[0]


def _lso(wire, topic):
    r = wire.request(lo7.ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=(
        lo7.ListOffsetsTopic(name=topic, partitions=(lo7.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1,
                                                                              timestamp=-1),)),)))
    return r.topics[0].partitions[0].offset


@pytest.fixture(scope="module")
def slow_markers():
    """A broker whose marker channel waits 400 ms per partition (broker.tests.slow_markers)."""
    with suite_brokers.running(module="kafkalite.broker.tests.slow_markers", extra_args=["--marker-delay-ms", "400"]) as b:
        yield b


def test_idempotent_producer_ids_are_unique(wire):
    ids = set()
    for _ in range(50):
        err, pid, epoch = _init(wire, None)
        assert err == E.none and epoch == 0
        ids.add(pid)
    assert len(ids) == 50
    err, pid, epoch = _init(wire, None, pid=min(ids), epoch=0)  # KIP-360 re-init: a fresh id
    assert err == E.none and pid not in ids


def test_produce_v9_v11_verify_the_partition_is_in_the_transaction(wire):
    topic = _topic(wire)
    tid = "verify-" + uuid.uuid4().hex[:6]
    _, pid, epoch = _init(wire, tid)
    assert _produce(wire, p9, tid, topic, pid, epoch, 0).error_code == E.invalid_txn_state
    assert _produce(wire, p11, tid, topic, pid, epoch, 0).error_code == E.transaction_abortable
    r = wire.request(ap3.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=(ap3.AddPartitionsToTxnTopic(name=topic, partitions=(0,)),)))
    assert r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == E.none
    assert _produce(wire, p11, tid, topic, pid, epoch, 0).error_code == E.none
    # a stale epoch is told INVALID_PRODUCER_EPOCH
    assert _produce(wire, p11, tid, topic, pid, epoch - 1 if epoch else 0, 1).error_code in (
        E.invalid_producer_epoch, E.none)
    v = wire.request(ap4.AddPartitionsToTxnRequest(transactions=(ap4.AddPartitionsToTxnTransaction(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, verify_only=True,
        topics=(ap4.AddPartitionsToTxnTopic(name=topic, partitions=(0, 1)),)),)))
    got = {p.partition_index: p.partition_error_code
           for p in v.results_by_transaction[0].topic_results[0].results_by_partition}
    assert got == {0: E.operation_not_attempted, 1: E.unknown_topic_or_partition}
    v = wire.request(ap4.AddPartitionsToTxnRequest(transactions=(ap4.AddPartitionsToTxnTransaction(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, verify_only=True,
        topics=(ap4.AddPartitionsToTxnTopic(name=topic, partitions=(0,)),)),)))
    assert v.results_by_transaction[0].topic_results[0].results_by_partition[0].partition_error_code == E.none
    r = wire.request(et3.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True))
    assert r.error_code == E.none


def test_produce_v12_adds_the_partition_and_end_txn_v5_bumps_the_epoch(wire):
    topic = _topic(wire)
    tid = "tv2-" + uuid.uuid4().hex[:6]
    _, pid, epoch = _init(wire, tid)
    assert _produce(wire, p12, tid, topic, pid, epoch, 0).error_code == E.none
    d = _describe(wire, tid)
    assert d.transaction_state == "Ongoing" and d.topics[0].topic == topic
    assert _lso(wire, topic) == 0
    r = wire.request(et5.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True))
    assert (r.error_code, r.producer_id, r.producer_epoch) == (E.none, pid, epoch + 1)
    # the old epoch is fenced from the next transaction
    assert _produce(wire, p12, tid, topic, pid, epoch, 1).error_code == E.invalid_producer_epoch
    assert _produce(wire, p12, tid, topic, pid, epoch + 1, 0).error_code == E.none
    r = wire.request(et5.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch + 1,
                                       committed=False))
    assert (r.error_code, r.producer_epoch) == (E.none, epoch + 2)


def test_concurrent_transactions_until_the_markers_are_written(slow_markers):
    with WireClient(slow_markers.bootstrap) as wire:
        topic = _topic(wire)
        tid = "conc-" + uuid.uuid4().hex[:6]
        _, pid, epoch = _init(wire, tid)
        assert _produce(wire, p12, tid, topic, pid, epoch, 0).error_code == E.none
        r = wire.request(et5.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True))
        assert r.error_code == E.none and r.producer_epoch == epoch + 1
        assert _describe(wire, tid).transaction_state == "PrepareCommit"
        assert _lso(wire, topic) == 0
        assert _init(wire, tid)[0] == E.concurrent_transactions
        r = wire.request(et5.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True))
        assert r.error_code == E.concurrent_transactions  # a retry while the markers are pending
        r = wire.request(ap3.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch + 1,
            v3_and_below_topics=(ap3.AddPartitionsToTxnTopic(name=topic, partitions=(0,)),)))
        assert r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == \
            E.concurrent_transactions
        # Produce v12 of the next transaction (the bumped epoch) is told to retry (NOT_ENOUGH_REPLICAS,
        # as Kafka does)
        assert _produce(wire, p12, tid, topic, pid, epoch + 1, 0).error_code == E.not_enough_replicas
        import time
        deadline = time.monotonic() + 10
        while _describe(wire, tid).transaction_state != "CompleteCommit" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _describe(wire, tid).transaction_state == "CompleteCommit"
        assert _lso(wire, topic) == 2


def test_write_txn_markers_aborts_a_hanging_transaction(wire):
    """What kafka-transactions.sh abort does: WriteTxnMarkers with the producer's id and epoch."""
    topic = _topic(wire)
    tid = "hang-" + uuid.uuid4().hex[:6]
    _, pid, epoch = _init(wire, tid)
    assert _produce(wire, p12, tid, topic, pid, epoch, 0).error_code == E.none
    assert _lso(wire, topic) == 0
    r = wire.request(wm1.WriteTxnMarkersRequest(markers=(wm1.WritableTxnMarker(
        producer_id=pid, producer_epoch=epoch, transaction_result=False, coordinator_epoch=0,
        topics=(wm1.WritableTxnMarkerTopic(name=topic, partition_indexes=(0, 7)),)),)))
    errs = {p.partition_index: p.error_code for p in r.markers[0].topics[0].partitions}
    assert errs == {0: E.none, 7: E.unknown_topic_or_partition}
    assert _lso(wire, topic) == 2


def test_a_transaction_open_at_shutdown_is_aborted_on_its_timeout_after_restart_without_any_request(tmp_path):
    """__transaction_state holds an Ongoing transaction: the restarted broker builds its
    transaction coordinator at start (broker.services), so the timeout aborts it although no
    client ever asks the coordinator anything again; only the LSO is read."""
    from compat_tests.waiting import wait_until

    tid = "recovered-" + uuid.uuid4().hex[:6]
    with suite_brokers.running(data_dir=tmp_path) as b, WireClient(b.bootstrap) as wire:
        topic = _topic(wire)
        r = wire.request(ip4.InitProducerIdRequest(transactional_id=tid, transaction_timeout=1500 * MS,
                                                   producer_id=-1, producer_epoch=-1))
        assert r.error_code == E.none
        assert _produce(wire, p12, tid, topic, r.producer_id, r.producer_epoch, 0).error_code == E.none
        assert _lso(wire, topic) == 0
    fast_scan = ["-c", "transaction.abort.timed.out.transaction.cleanup.interval.ms=100"]
    with suite_brokers.running(data_dir=tmp_path, extra_args=fast_scan) as b, WireClient(b.bootstrap) as wire:
        # the batch, then the ABORT marker: the LSO passes both once the abort is written
        wait_until(lambda: _lso(wire, topic) == 2, timeout=20, what="the recovered transaction aborted")


def test_transaction_state_topic_appears_with_the_first_transactional_id(tmp_path):
    """As on Kafka, a fresh broker has no internal topics; the transaction coordinator creates
    __transaction_state when a transactional id first needs it."""
    def topic_names(wire):
        r = wire.request(md12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False))
        return {t.name for t in r.topics}

    with suite_brokers.running(data_dir=tmp_path) as b, WireClient(b.bootstrap) as wire:
        assert not {n for n in topic_names(wire) if n.startswith("__")}
        assert _init(wire, "first-" + uuid.uuid4().hex[:6])[0] == E.none
        assert "__transaction_state" in topic_names(wire)


def test_an_idempotent_producer_creates_no_transaction_state_and_its_ids_survive_a_restart(tmp_path):
    """InitProducerId without a transactional id takes an id from the producer id blocks, not from
    the transaction coordinator: no __transaction_state appears (as on Kafka), and after a restart
    neither an idempotent nor a transactional producer is given an id handed out before it."""
    def init(wire, tid):
        r = wire.request(ip4.InitProducerIdRequest(transactional_id=tid, transaction_timeout=60_000 * MS,
                                                   producer_id=-1, producer_epoch=-1))
        assert r.error_code == E.none
        return r.producer_id, r.producer_epoch

    def topic_names(wire):
        r = wire.request(md12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False))
        return {t.name for t in r.topics}

    with suite_brokers.running(data_dir=tmp_path) as b, WireClient(b.bootstrap) as wire:
        first = [init(wire, None) for _ in range(3)]
        assert [epoch for _, epoch in first] == [0, 0, 0]
        assert len({pid for pid, _ in first}) == 3
        assert "__transaction_state" not in topic_names(wire)
        txn_pid, _ = init(wire, "after-idempotent-" + uuid.uuid4().hex[:6])
        assert "__transaction_state" in topic_names(wire)
    with suite_brokers.running(data_dir=tmp_path) as b, WireClient(b.bootstrap) as wire:
        later = [init(wire, None)[0], init(wire, "after-restart-" + uuid.uuid4().hex[:6])[0]]
    handed_out = {pid for pid, _ in first} | {txn_pid}
    assert txn_pid not in {pid for pid, _ in first}
    assert not handed_out & set(later) and len(set(later)) == 2
