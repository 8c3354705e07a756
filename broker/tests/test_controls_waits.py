"""The controls that answer a test's questions, with confluent-kafka as the client: `records`
(every field, binary and null bytes, transactions committed, aborted and open, read_committed),
`wait-records` returning on the append that satisfies it, `expect-no-records` (200, 409 at once,
the manual clock counting its duration), `wait-group` (classic and KIP-848 groups),
`wait-committed` (lag 0; a transaction's pending offsets do not count), `wait-idle`, and the
408 answer's shape over plain HTTP."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafkalite.controls import WaitFailed
from kafkalite.tests import suite_brokers


@pytest.fixture(scope="module")
def broker(controls_broker):
    return controls_broker


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _produce(broker, topic: str, *records: tuple, config: dict | None = None) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, **(config or {})})
    for key, value, headers in records:
        producer.produce(topic, key=key, value=value, headers=headers, partition=0)
    assert producer.flush(15) == 0


def _post(broker, name: str, **arguments) -> tuple[int, dict]:
    req = urllib.request.Request(f"{broker.controls_url}controls/{name}", data=json.dumps(arguments).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class Trickle:
    """A producer writing one record every `interval` seconds until stopped: what arrives while
    a wait runs, whenever the wait began."""

    def __init__(self, broker, topic: str, interval: float = 0.1):
        self.stop = threading.Event()
        self.producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        self.thread = threading.Thread(target=self._run, args=(topic, interval), daemon=True)
        self.thread.start()

    def _run(self, topic: str, interval: float) -> None:
        n = 0
        while not self.stop.is_set():
            self.producer.produce(topic, key=b"late", value=b"late-%d" % n, partition=0)
            self.producer.flush(10)
            n += 1
            self.stop.wait(interval)

    def __enter__(self) -> "Trickle":
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(30)


def test_records_fields_binary_null_and_headers(broker):
    topic = _topic("rec")
    _produce(broker, topic, (b"k1", b"hello", [("trace", b"t-1"), ("bin", b"\xff")]),
             (None, b"\xff\x00\x01", None), (b"k3", None, None))
    got = broker.records(topic)
    assert [r["offset"] for r in got] == [0, 1, 2]
    first, binary, tombstone = got
    assert (first["partition"], first["key"], first["value"], first["transaction"], first["producer_id"]) == \
        (0, "k1", "hello", None, first["producer_id"])
    assert first["headers"] == [{"key": "trace", "value": "t-1"}, {"key": "bin", "value": {"base64": "/w=="}}]
    assert isinstance(first["timestamp"], int) and first["timestamp"] > 0
    assert binary["key"] is None and binary["value"] == {"base64": "/wAB"}
    assert tombstone["key"] == "k3" and tombstone["value"] is None
    assert [r["offset"] for r in broker.records(topic, from_offset=1, max=1)] == [1]


def test_records_transactions_committed_aborted_open(broker):
    topic = _topic("txrec")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(15)
    for value, commit in ((b"kept", True), (b"dropped", False)):
        producer.begin_transaction()
        producer.produce(topic, value=value, partition=0)
        producer.flush(15)  # librdkafka's abort purges what it has not sent yet
        producer.commit_transaction(15) if commit else producer.abort_transaction(15)
    producer.begin_transaction()
    producer.produce(topic, value=b"pending", partition=0)
    producer.flush(15)
    try:
        every = broker.records(topic)
        assert [(r["value"], r["transaction"]) for r in every] == \
            [("kept", "committed"), ("dropped", "aborted"), ("pending", "open")]
        assert all(r["producer_id"] >= 0 for r in every)
        # as a read_committed consumer: the aborted record left out, nothing past the LSO
        assert [r["value"] for r in broker.records(topic, isolation="read_committed")] == ["kept"]
        status, answer = _post(broker, "wait-idle", timeout_ms=200)
        assert status == 408 and set(answer) == {"error", "state"}
        whats = {b["what"] for b in answer["state"]["busy"]}
        assert {"transaction", "partition"} <= whats, answer
        assert f"tx-{topic}" in answer["error"]
    finally:
        producer.commit_transaction(15)
    assert [r["value"] for r in broker.records(topic, isolation="read_committed")] == ["kept", "pending"]
    assert broker.wait_idle(timeout_ms=10_000)["idle"] is True


def test_wait_records_returns_on_the_append(broker):
    topic = _topic("wait")
    _produce(broker, topic, (b"a", b"first", None))
    done: dict = {}

    def wait():
        done["records"] = broker.wait_for_records(topic, count=2, value_contains="order-", timeout_ms=30_000)
        done["at"] = time.monotonic()

    waiter = threading.Thread(target=wait)
    waiter.start()
    _produce(broker, topic, (b"b", b"order-1", None), (b"c", b"noise", None), (b"d", b"order-2", [("x", b"1")]))
    appended = time.monotonic()
    waiter.join(30)
    assert [r["value"] for r in done["records"]] == ["order-1", "order-2"]
    assert done["at"] - appended < 5  # woken by the append, not by its timeout
    assert broker.wait_for_records(topic, key="d")[0]["offset"] == 3
    assert broker.wait_for_records(topic, header="x=1")[0]["value"] == "order-2"
    assert broker.wait_for_records(topic, header="x")[0]["key"] == "d"


def test_wait_records_408_shape(broker):
    topic = _topic("miss")
    _produce(broker, topic, (b"k", b"almost", None))
    status, answer = _post(broker, "wait-records", topic=topic, count=2, timeout_ms=300)
    assert status == 408 and set(answer) == {"error", "state"}
    state = answer["state"]
    assert "1 of 2" in answer["error"]
    assert [r["value"] for r in state["matched"]] == ["almost"]
    assert state["partitions"][0]["high_watermark"] == 1
    assert [r["value"] for r in state["partitions"][0]["newest_records"]] == ["almost"]
    with pytest.raises(WaitFailed) as failed:
        broker.wait_for_records(topic, count=2, timeout_ms=200)
    assert isinstance(failed.value, AssertionError) and failed.value.status == 408
    assert '"almost"' in str(failed.value)  # the message carries the state
    status, answer = _post(broker, "wait-records", topic=f"{topic}-absent", timeout_ms=100)
    assert status == 408 and answer["state"]["exists"] is False
    status, answer = _post(broker, "wait-records", topic=topic, count=0)
    assert status == 400 and "count" in answer["error"]


def test_expect_no_records(broker):
    topic = _topic("none")
    _produce(broker, topic, (b"k", b"before", None))
    started = time.monotonic()
    broker.expect_no_records(topic, for_ms=300)  # what was there before does not count
    assert time.monotonic() - started >= 0.3
    with Trickle(broker, topic), pytest.raises(WaitFailed) as failed:
        broker.expect_no_records(topic, for_ms=20_000)
    assert failed.value.status == 409
    assert failed.value.state["matched"][0]["key"] == "late"
    assert time.monotonic() - started < 15  # answered on the arrival, not after for_ms
    broker.expect_no_records(topic, for_ms=200, key="other")  # a filter that nothing matches


def test_expect_no_records_follows_the_manual_clock(broker):
    topic = _topic("clock")
    _produce(broker, topic, (b"k", b"v", None))
    broker.controls.set_clock(mode="manual")
    try:
        # the broker's clock stands still: a minute of it has not passed after 300 ms of wall time
        status, answer = _post(broker, "expect-no-records", topic=topic, for_ms=60_000, timeout_ms=300)
        assert status == 408 and "manual" in answer["error"]
        result: dict = {}
        waiter = threading.Thread(target=lambda: result.update(
            answer=_post(broker, "expect-no-records", topic=topic, for_ms=60_000, timeout_ms=30_000)))
        waiter.start()
        # an advance before the wait began does not count for it: advance until it answers
        while waiter.is_alive():
            broker.controls.advance_clock(ms=60_000)
            waiter.join(0.5)
        status, answer = result["answer"]
        assert status == 200 and answer["result"]["records"] == []
        assert answer["result"]["clock_ms"] >= 60_000
    finally:
        broker.controls.set_clock(mode="system")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_wait_group_and_lag_zero(broker, protocol):
    topic = _topic(f"grp-{protocol}")
    group = f"g-{topic}"
    _produce(broker, topic, *((b"k%d" % i, b"v%d" % i, None) for i in range(5)))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "group.protocol": protocol})
    try:
        consumer.subscribe([topic])
        described = None
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 5 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                seen += 1
            if described is None and seen:
                described = broker.wait_for_group(group, members=1, timeout_ms=30_000)
        assert seen == 5
        assert described["type"] == protocol and described["state"] == "Stable"
        (member,) = described["members"]
        assert member["assignment"] == [f"{topic}-0"]
        with pytest.raises(WaitFailed) as failed:
            broker.wait_for_committed(group, topic, timeout_ms=200)
        assert failed.value.state["short"][0]["target"] == 5
        consumer.commit(asynchronous=False)
        (row,) = broker.wait_for_committed(group, topic, timeout_ms=30_000)
        assert (row["committed_offset"], row["lag"]) == (5, 0)
        assert broker.wait_for_committed(group, topic, partition=0, offset=3)[0]["committed_offset"] == 5
    finally:
        consumer.close()
    status, answer = _post(broker, "wait-group", group=group, timeout_ms=200)
    assert status == 408 and answer["state"]["members"] == []
    assert "Empty" in answer["error"]


def test_wait_committed_counts_transactional_offsets_once_committed(broker):
    topic = _topic("txoff")
    group = f"g-{topic}"
    _produce(broker, topic, (b"k", b"v", None))
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(15)
    producer.begin_transaction()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 1)], consumer.consumer_group_metadata(), 15)
        status, answer = _post(broker, "wait-committed", group=group, topic=topic, timeout_ms=300)
        assert status == 408
        (short,) = answer["state"]["short"]
        assert (short["committed_offset"], short["pending_offset"]) == (None, 1)
        producer.commit_transaction(15)
        (row,) = broker.wait_for_committed(group, topic, timeout_ms=30_000)
        assert row["committed_offset"] == 1 and row["lag"] == 0
    finally:
        consumer.close()


def test_request_log_on_by_default_with_errors_and_times(broker):
    topic = _topic("log")
    _produce(broker, topic, (b"k", b"v", None), config={"client.id": "logged-producer"})
    produces = broker.controls.requests(client_id="logged-producer").of("Produce")
    assert produces and all(e["error"] == "NONE" and e["response_ms"] >= 0 for e in produces)
    # auto.offset.reset=error: librdkafka hands the out-of-range answer to poll() as an error
    # (_AUTO_OFFSET_RESET) instead of resetting quietly, so the test waits for that answer
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}", "client.id": "logged-reader",
                         "auto.offset.reset": "error"})
    try:
        # an offset past the end: Kafka answers OFFSET_OUT_OF_RANGE at the partition level
        consumer.assign([TopicPartition(topic, 0, 50)])
        deadline = time.monotonic() + 30
        message = None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(1.0)
        assert message is not None and message.error() is not None
        assert message.error().code() == KafkaError._AUTO_OFFSET_RESET
    finally:
        consumer.close()
    fetches = broker.controls.requests(client_id="logged-reader").of("Fetch")
    assert "OFFSET_OUT_OF_RANGE" in {e["error"] for e in fetches}


def test_wait_idle_names_a_response_held_by_a_delay_fault(broker):
    topic = _topic("held")
    _produce(broker, topic, (b"k", b"first", None))
    broker.controls.delay_responses(api="Produce", ms=5_000, count=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    try:
        producer.produce(topic, value=b"held", partition=0)
        producer.poll(0)
        # appended, its answer held back by the fault
        broker.wait_for_records(topic, count=2, isolation="read_uncommitted")
        status, answer = _post(broker, "wait-idle", timeout_ms=200)
        assert status == 408 and {"what": "held responses", "count": 1} in answer["state"]["busy"]
        assert broker.wait_idle(timeout_ms=30_000)["idle"] is True  # once the answer went out
        assert producer.flush(15) == 0
    finally:
        broker.controls.clear_faults()


def test_records_decode_registered_values():
    """With the schema registry on, a value in Confluent's wire format (magic 0, a registered
    schema id) also comes decoded, as the console decodes it."""
    import struct


    with suite_brokers.running(controls=0, schema_registry=0) as b:
        schema = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]}
        req = urllib.request.Request(f"{b.schema_registry_url}subjects/orders-value/versions",
                                     data=json.dumps({"schema": json.dumps(schema)}).encode(), method="POST",
                                     headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            schema_id = json.load(resp)["id"]
        value = b"\x00" + struct.pack(">I", schema_id) + b"\x0e"  # Avro int 7, zigzag
        _produce(b, "orders", (b"k", value, None), (b"plain", b"text", None))
        registered, plain = b.records("orders")
        assert registered["value"] == value.decode()  # these six bytes happen to be UTF-8
        assert registered["value_schema"]["schema_id"] == schema_id
        assert json.loads(registered["value_schema"]["json"]) == {"id": 7}
        assert "value_schema" not in plain and plain["value"] == "text"
