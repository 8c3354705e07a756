"""Transactions with every client: commit and abort across topics and partitions,
read_committed against read_uncommitted, a consumer held at the last stable offset by an open
transaction, fencing by a second producer with the same transactional.id, transaction
timeouts, sendOffsetsToTransaction with the consumer group metadata, and the admin view
(list/describe transactions, describe producers).

The producing side runs with each client (compat_tests/txn/<client>_txn.py, same operations);
what the log holds is read back with librdkafka (compat_tests/txn/rdkafka_txn.py).
"""

from __future__ import annotations

import importlib
import threading
import time
import uuid

import pytest

from compat_tests import brokers
from compat_tests.waiting import wait_until
from compat_tests.txn import rdkafka_txn as reader
from compat_tests.txn import time_out_while

pytestmark = pytest.mark.transactions

TXN_CLIENTS = {
    "librdkafka": "compat_tests.txn.rdkafka_txn",
    "java": "compat_tests.txn.java_txn",
    "aiokafka": "compat_tests.txn.aiokafka_txn",
    "kafkajs": "compat_tests.txn.kafkajs_txn",
    "kafka_python": "compat_tests.txn.kafka_python_txn",
    "franz": "compat_tests.txn.franz_txn",
    "sarama": "compat_tests.txn.sarama_txn",
}


@pytest.fixture(params=[pytest.param(n, marks=getattr(pytest.mark, n), id=n) for n in TXN_CLIENTS])
def txn_client(request):
    return importlib.import_module(TXN_CLIENTS[request.param])


def _tid(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


# --- commit and abort ----------------------------------------------------------------------------

def test_commit_and_abort_across_topics_and_partitions(txn_client, bootstrap, create_topic, topic_name):
    a = create_topic(topic_name + "-a", 2)
    b = create_topic(topic_name + "-b", 2)
    plan = [
        {"records": [[a, 0, "c1-a0"], [a, 1, "c1-a1"], [b, 0, "c1-b0"], [b, 1, "c1-b1"], [a, 0, "c1-a0'"]],
         "end": "commit"},
        {"records": [[a, 0, "x2-a0"], [a, 1, "x2-a1"], [b, 1, "x2-b1"]], "end": "abort"},
        {"records": [[a, 1, "c3-a1"], [b, 0, "c3-b0"]], "end": "commit"},
        {"records": [[b, 0, "x4-b0"]], "end": "abort"},
    ]
    txn_client.run_plan(bootstrap, _tid("plan"), plan)
    committed = {a: {0: ["c1-a0", "c1-a0'"], 1: ["c1-a1", "c3-a1"]},
                 b: {0: ["c1-b0", "c3-b0"], 1: ["c1-b1"]}}
    everything = {a: {0: ["c1-a0", "c1-a0'", "x2-a0"], 1: ["c1-a1", "x2-a1", "c3-a1"]},
                  b: {0: ["c1-b0", "c3-b0", "x4-b0"], 1: ["c1-b1", "x2-b1"]}}
    for topic in (a, b):
        rc = reader.read(bootstrap, topic, [0, 1], "read_committed")
        assert reader.values(rc) == committed[topic]
        ru = reader.read(bootstrap, topic, [0, 1], "read_uncommitted")
        assert reader.values(ru) == everything[topic]
        # offsets strictly increase and leave room for the markers
        for recs in rc.values():
            offs = [o for o, _v in recs]
            assert offs == sorted(offs)
    # nothing is left open: the last stable offset is the high watermark everywhere
    for topic in (a, b):
        assert reader.end_offsets(bootstrap, topic, [0, 1], "read_committed") == \
            reader.end_offsets(bootstrap, topic, [0, 1], "read_uncommitted")


# --- fencing and timeouts -----------------------------------------------------------------------------

def test_second_producer_fences_the_first(txn_client, bootstrap, create_topic, topic_name):
    topic = create_topic(topic_name, 1)
    err = txn_client.fence(bootstrap, _tid("fence"), topic)
    assert err in txn_client.FENCED_ERRORS, err
    values = reader.values(reader.read(bootstrap, topic, [0], "read_committed"))[0]
    assert values == ["winner"]


@pytest.fixture(scope="module")
def fast_timeout_broker(tmp_path_factory):
    brokers.requires_own_broker("a broker with a short transaction cleanup interval")
    with brokers.start(tmp_path_factory.mktemp("txn-timeout"), config={
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}) as b:
        yield b


def test_transaction_timeout_aborts_and_fences(txn_client, fast_timeout_broker, tmp_path):
    bs = fast_timeout_broker.bootstrap
    topic = "timeout-" + uuid.uuid4().hex[:8]
    reader_admin_create(bs, topic)
    # the broker aborts the transaction after its 1 s timeout: the abort marker after "late"
    # moves the last stable offset to 2; only then does the producer try to commit
    err = time_out_while(txn_client, bs, _tid("timeout"), topic, 1000, tmp_path / "aborted", lambda: wait_until(
        lambda: reader.end_offsets(bs, topic, [0], "read_committed")[0] == 2, 60, 0.1,
        "the broker's abort of the timed-out transaction"))
    assert err in txn_client.TIMEOUT_ERRORS, err
    assert reader.values(reader.read(bs, topic, [0], "read_committed"))[0] == []
    assert reader.values(reader.read(bs, topic, [0], "read_uncommitted"))[0] == ["late"]


def reader_admin_create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    from compat_tests.clients.librdkafka import LibrdkafkaClient
    LibrdkafkaClient(bootstrap).create_topic(topic, partitions)


# --- consume-transform-produce --------------------------------------------------------------------

def test_send_offsets_to_transaction(txn_client, bootstrap, create_topic, topic_name):
    source = create_topic(topic_name + "-in", 2)
    sink = create_topic(topic_name + "-out", 2)
    from compat_tests.clients.librdkafka import LibrdkafkaClient
    from compat_tests.clients.base import Msg
    src = LibrdkafkaClient(bootstrap)
    for p in (0, 1):
        src.produce(source, [Msg(value=f"v{p}-{i}".encode()) for i in range(20)], partition=p)
    group = "g-" + uuid.uuid4().hex[:8]
    copied = txn_client.copy(bootstrap, _tid("copy"), group, source, sink, 40)
    assert copied >= 40
    # Kafka writes the last commit's markers after EndTxn answered: wait until nothing is open
    wait_until(lambda: reader.end_offsets(bootstrap, sink, [0, 1], "read_committed")
               == reader.end_offsets(bootstrap, sink, [0, 1], "read_uncommitted"), 20, 0.1,
               "the sink's last transaction completed")
    out = reader.values(reader.read(bootstrap, sink, [0, 1], "read_committed"))
    for p in (0, 1):
        assert out[p] == [f"copied:v{p}-{i}" for i in range(20)]
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "broker.address.family": "v4"})
    try:
        committed = c.committed([TopicPartition(source, 0), TopicPartition(source, 1)], timeout=20)
    finally:
        c.close()
    assert [tp.offset for tp in committed] == [20, 20]


# --- the last stable offset ------------------------------------------------------------------------

def _before_and_an_open_transaction(bootstrap: str, topic: str, label: str, value: bytes):
    """A plain producer's "before", then a transactional producer's `value` in a transaction left
    open: (plain producer, transactional producer), both on partition 0 of `topic`."""
    from confluent_kafka import Producer
    plain = Producer({"bootstrap.servers": bootstrap, "broker.address.family": "v4", "linger.ms": 0})
    plain.produce(topic, value=b"before", partition=0)
    assert plain.flush(10) == 0
    txp = Producer({"bootstrap.servers": bootstrap, "broker.address.family": "v4",
                    "transactional.id": _tid(label), "linger.ms": 0})
    txp.init_transactions(30)
    txp.begin_transaction()
    txp.produce(topic, value=value, partition=0)
    assert txp.flush(10) == 0
    return plain, txp


def test_read_committed_consumer_waits_at_the_lso(bootstrap, create_topic, topic_name):
    """An open transaction holds read_committed readers at its first offset, even for records
    written after it by other producers; they see everything in offset order once it commits."""
    topic = create_topic(topic_name, 1)
    plain, txp = _before_and_an_open_transaction(bootstrap, topic, "lso", b"txn-1")
    plain.produce(topic, value=b"after", partition=0)
    plain.flush(10)
    rc_end = reader.end_offsets(bootstrap, topic, [0], "read_committed")[0]
    ru_end = reader.end_offsets(bootstrap, topic, [0], "read_uncommitted")[0]
    assert (rc_end, ru_end) == (1, 3)
    assert reader.values(reader.read(bootstrap, topic, [0], "read_committed"))[0] == ["before"]
    assert reader.values(reader.read(bootstrap, topic, [0], "read_uncommitted"))[0] == ["before", "txn-1", "after"]
    txp.produce(topic, value=b"txn-2", partition=0)
    txp.commit_transaction(30)
    assert reader.values(reader.read(bootstrap, topic, [0], "read_committed"))[0] == \
        ["before", "txn-1", "after", "txn-2"]


def test_waiting_read_committed_fetch_wakes_on_commit(bootstrap, create_topic, topic_name):
    """A read_committed fetch held at the LSO by an open transaction is answered when the
    transaction commits, not when its max wait runs out."""
    from confluent_kafka import Consumer, TopicPartition
    topic = create_topic(topic_name, 1)
    _, txp = _before_and_an_open_transaction(bootstrap, topic, "wake", b"held")
    max_wait_s = 20.0
    c = Consumer({"bootstrap.servers": bootstrap, "broker.address.family": "v4", "group.id": "w",
                  "isolation.level": "read_committed", "fetch.wait.max.ms": int(max_wait_s * 1000)})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    stop = threading.Event()

    def consume():
        while not stop.is_set():
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append((time.monotonic(), m.value()))

    t = threading.Thread(target=consume)
    t.start()
    try:
        # "before" arrived: the consumer's next fetch starts at the LSO, where "held" keeps it waiting
        wait_until(lambda: got, 30, what="the record before the transaction")
        assert [v for _, v in got] == [b"before"]
        committed_at = time.monotonic()
        txp.commit_transaction(30)
        wait_until(lambda: len(got) > 1, max_wait_s + 10, what="the held record after the commit")
    finally:
        stop.set()
        t.join()
        c.close()
    assert [v for _, v in got] == [b"before", b"held"]
    # answered by the commit, well before the fetch's 20 s max wait
    assert got[1][0] - committed_at < max_wait_s / 2


# --- admin: list/describe transactions, describe producers ------------------------------------------

@pytest.mark.java
@pytest.mark.admin
def test_admin_list_describe_transactions_and_producers(bootstrap, create_topic, topic_name):
    from confluent_kafka import Producer
    from compat_tests.txn import java_txn
    topic = create_topic(topic_name, 2)
    open_id, done_id = _tid("open"), _tid("done")
    reader_plan = [{"records": [[topic, 1, "committed"]], "end": "commit"}]
    reader.run_plan(bootstrap, done_id, reader_plan)
    p = Producer({"bootstrap.servers": bootstrap, "broker.address.family": "v4", "transactional.id": open_id,
                  "linger.ms": 0})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=0)
    p.flush(10)
    try:
        out = java_txn.admin(bootstrap, [open_id, done_id], topic, [0, 1])
    finally:
        p.abort_transaction(30)
    listed = {l["transactional_id"]: l for l in out["listed"]}
    assert listed[open_id]["state"] == "Ongoing"
    assert listed[done_id]["state"] == "CompleteCommit"
    assert open_id in out["ongoing"] and done_id not in out["ongoing"]
    d = out["described"][open_id]
    assert d["state"] == "Ongoing" and d["partitions"] == [[topic, 0]] and d["start_ms"] > 0
    assert d["producer_id"] == listed[open_id]["producer_id"]
    assert out["described"][done_id]["state"] == "CompleteCommit"
    assert out["described"][done_id]["partitions"] == []
    (p0,) = [s for s in out["producers"]["0"] if s["producer_id"] == d["producer_id"]]
    assert p0["txn_start_offset"] == 0 and p0["last_sequence"] == 0
    p1 = [s for s in out["producers"]["1"] if s["txn_start_offset"] == -1]
    assert p1 and p1[0]["producer_id"] == listed[done_id]["producer_id"]


# --- transactions v1 (KIP-890 off): the same clients on the original protocol -------------------------

@pytest.fixture(scope="module")
def tv1_broker(tmp_path_factory):
    """A broker whose finalized transaction.version is 1: 4.x clients fall back to
    AddPartitionsToTxn/AddOffsetsToTxn and EndTxn without epoch bumps."""
    brokers.requires_own_broker("a broker started with transaction.version=1")
    with brokers.start(tmp_path_factory.mktemp("tv1"), config={"transaction.version": 1}) as b:
        yield b


@pytest.mark.parametrize("client", [pytest.param("java", marks=pytest.mark.java),
                                    pytest.param("librdkafka", marks=pytest.mark.librdkafka)])
def test_transactions_v1_protocol(client, tv1_broker):
    mod = importlib.import_module(TXN_CLIENTS[client])
    bs = tv1_broker.bootstrap
    topic = "tv1-" + uuid.uuid4().hex[:8]
    reader_admin_create(bs, topic, 2)
    mod.run_plan(bs, _tid("tv1"), [
        {"records": [[topic, 0, "c1"], [topic, 1, "c1"]], "end": "commit"},
        {"records": [[topic, 0, "x2"]], "end": "abort"},
        {"records": [[topic, 1, "c3"]], "end": "commit"},
    ])
    assert reader.values(reader.read(bs, topic, [0, 1], "read_committed")) == {0: ["c1"], 1: ["c1", "c3"]}
    sink = "tv1-out-" + uuid.uuid4().hex[:8]
    reader_admin_create(bs, sink, 2)
    group = "g-" + uuid.uuid4().hex[:8]
    assert mod.copy(bs, _tid("tv1-copy"), group, topic, sink, 3) >= 3
    assert reader.values(reader.read(bs, sink, [0, 1], "read_committed")) == \
        {0: ["copied:c1"], 1: ["copied:c1", "copied:c3"]}
    assert mod.fence(bs, _tid("tv1-fence"), topic) in mod.FENCED_ERRORS
