"""Transactions through confluent-kafka (librdkafka): the scenario operations and the
reference reader."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from compat_tests.waiting import wait_for_path


def _producer(bootstrap: str, transactional_id: str, **extra) -> Producer:
    conf = {"bootstrap.servers": bootstrap, "broker.address.family": "v4", "transactional.id": transactional_id,
            "linger.ms": 5, "message.timeout.ms": 30000}
    conf.update(extra)
    return Producer(conf)


def run_plan(bootstrap: str, transactional_id: str, txns: list[dict], **config) -> None:
    """Run each transaction of `txns` ({"records": [[topic, partition, value], ...], "end": "commit"
    or "abort"}) in order; `config`: more librdkafka settings (security, ...)."""
    p = _producer(bootstrap, transactional_id, **config)
    p.init_transactions(30)
    for txn in txns:
        p.begin_transaction()
        for topic, partition, value in txn["records"]:
            p.produce(topic, value=value.encode(), partition=partition)
        assert p.flush(30) == 0
        if txn["end"] == "commit":
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)


def error_name(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0].name()
    return type(exc).__name__


def fence(bootstrap: str, transactional_id: str, topic: str) -> str:
    a = _producer(bootstrap, transactional_id)
    a.init_transactions(30)
    a.begin_transaction()
    a.produce(topic, value=b"zombie-1", partition=0)
    assert a.flush(30) == 0
    b = _producer(bootstrap, transactional_id)
    b.init_transactions(30)
    b.begin_transaction()
    b.produce(topic, value=b"winner", partition=0)
    b.commit_transaction(30)
    try:
        a.produce(topic, value=b"zombie-2", partition=0)
        a.flush(30)
        a.commit_transaction(30)
    except KafkaException as exc:
        return error_name(exc)
    return "NONE"


def time_out(bootstrap: str, transactional_id: str, topic: str, timeout_ms: int, until: str) -> str:
    p = _producer(bootstrap, transactional_id, **{"transaction.timeout.ms": timeout_ms, "message.timeout.ms": timeout_ms})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"late", partition=0)
    assert p.flush(30) == 0
    wait_for_path(until)
    try:
        p.commit_transaction(30)
    except KafkaException as exc:
        return error_name(exc)
    return "NONE"


def copy(bootstrap: str, transactional_id: str, group: str, source: str, sink: str, count: int,
         timeout_s: float = 60.0, batch: int = 50) -> int:
    """Consume-transform-produce with send_offsets_to_transaction and the consumer's group
    metadata (KIP-447). Returns the number of records copied (committed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "broker.address.family": "v4", "group.id": group,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 10000})
    producer = _producer(bootstrap, transactional_id)
    producer.init_transactions(30)
    consumer.subscribe([source])
    copied = 0
    deadline = time.monotonic() + timeout_s
    try:
        while copied < count and time.monotonic() < deadline:
            msgs = consumer.consume(batch, 0.5)
            msgs = [m for m in msgs if m.error() is None]
            if not msgs:
                continue
            producer.begin_transaction()
            for m in msgs:
                producer.produce(sink, value=b"copied:" + m.value(), key=m.key(), partition=m.partition())
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            copied += len(msgs)
    finally:
        consumer.close()
    return copied


# --- the reference reader ----------------------------------------------------------------------

def end_offsets(bootstrap: str, topic: str, partitions: list[int], isolation: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "broker.address.family": "v4",
                  "group.id": "txn-reader-" + uuid.uuid4().hex[:6], "isolation.level": isolation})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=20, cached=False)[1] for p in partitions}
    finally:
        c.close()


def read(bootstrap: str, topic: str, partitions: list[int], isolation: str = "read_committed",
         timeout_s: float = 30.0, ends: dict[int, int] | None = None) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of the partitions up to their end (LSO for read_committed, high watermark
    otherwise), as {partition: [(offset, value), ...]} in offset order."""
    if ends is None:
        ends = end_offsets(bootstrap, topic, partitions, isolation)
    c = Consumer({"bootstrap.servers": bootstrap, "broker.address.family": "v4",
                  "group.id": "txn-reader-" + uuid.uuid4().hex[:6], "isolation.level": isolation,
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in partitions}
    todo = {p for p in partitions if ends[p] > 0}
    c.assign([TopicPartition(topic, p, 0) for p in todo])
    deadline = time.monotonic() + timeout_s
    try:
        while todo and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                out[m.partition()].append((m.offset(), m.value()))
            for tp in c.position([TopicPartition(topic, p) for p in list(todo)]):
                if tp.offset >= ends[tp.partition]:
                    todo.discard(tp.partition)
        if todo:
            raise TimeoutError(f"{topic} {sorted(todo)}: not read to {ends} in {timeout_s}s ({ {p: len(v) for p, v in out.items()} })")
    finally:
        c.close()
    return out


def values(records: dict[int, list[tuple[int, bytes]]]) -> dict[int, list[str]]:
    return {p: [v.decode() for _o, v in recs] for p, recs in records.items()}


# errors a fenced or timed-out producer may report (librdkafka names)
# What this client surfaces on Apache Kafka 4.4 (and kafkalite) for the fenced producer's next
# write, and for a commit after the broker aborted the transaction for its timeout.
FENCED_ERRORS = {"_FENCED"}
TIMEOUT_ERRORS = {"_FENCED"}
