"""Transactions through kafka-python (3.x: KIP-98 producer, send_offsets_to_transaction with
the consumer's group metadata)."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer
from kafka.consumer.fetcher import OffsetAndMetadata
from kafka.errors import KafkaError

from compat_tests.waiting import wait_for_path

# What this client surfaces on Apache Kafka 4.4 (and kafkalite) for the fenced producer's next
# write, and for a commit after the broker aborted the transaction for its timeout.
FENCED_ERRORS = {"InvalidProducerEpochError"}
TIMEOUT_ERRORS = {"ProducerFencedError"}


def _producer(bootstrap: str, transactional_id: str, **extra) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id, linger_ms=5,
                         request_timeout_ms=15000, **extra)


def run_plan(bootstrap: str, transactional_id: str, txns: list[dict]) -> None:
    p = _producer(bootstrap, transactional_id)
    try:
        p.init_transactions()
        for txn in txns:
            p.begin_transaction()
            futs = [p.send(topic, value.encode(), partition=partition) for topic, partition, value in txn["records"]]
            p.flush()
            for f in futs:
                f.get(30)
            if txn["end"] == "commit":
                p.commit_transaction()
            else:
                p.abort_transaction()
    finally:
        p.close(5)


def _name(exc: BaseException) -> str:
    return type(exc).__name__


def fence(bootstrap: str, transactional_id: str, topic: str) -> str:
    a = _producer(bootstrap, transactional_id)
    a.init_transactions()
    a.begin_transaction()
    a.send(topic, b"zombie-1", partition=0).get(30)
    b = _producer(bootstrap, transactional_id)
    b.init_transactions()
    b.begin_transaction()
    b.send(topic, b"winner", partition=0).get(30)
    b.commit_transaction()
    b.close(5)
    name = "NONE"
    try:
        a.send(topic, b"zombie-2", partition=0).get(30)
        a.commit_transaction()
    except KafkaError as exc:
        name = _name(exc)
    a.close(1)
    return name


def time_out(bootstrap: str, transactional_id: str, topic: str, timeout_ms: int, until: str) -> str:
    p = _producer(bootstrap, transactional_id, transaction_timeout_ms=timeout_ms)
    p.init_transactions()
    p.begin_transaction()
    p.send(topic, b"late", partition=0).get(30)
    wait_for_path(until)
    name = "NONE"
    try:
        p.commit_transaction()
    except KafkaError as exc:
        name = _name(exc)
    p.close(1)
    return name


def copy(bootstrap: str, transactional_id: str, group: str, source: str, sink: str, count: int,
         timeout_s: float = 60.0) -> int:
    consumer = KafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group, isolation_level="read_committed",
                             enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=10000,
                             heartbeat_interval_ms=1000)
    producer = _producer(bootstrap, transactional_id)
    producer.init_transactions()
    copied = 0
    deadline = time.monotonic() + timeout_s
    try:
        while copied < count and time.monotonic() < deadline:
            batches = consumer.poll(timeout_ms=500, max_records=100)
            records = [r for rs in batches.values() for r in rs]
            if not records:
                continue
            producer.begin_transaction()
            for r in records:
                producer.send(sink, b"copied:" + r.value, key=r.key, partition=r.partition)
            offsets = {tp: OffsetAndMetadata(rs[-1].offset + 1, "", -1) for tp, rs in batches.items()}
            producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
            producer.commit_transaction()
            copied += len(records)
    finally:
        consumer.close()
        producer.close(5)
    return copied
