"""What the Spark tests write and read with a client other than Spark: confluent-kafka (librdkafka),
through the compatibility suite's adapters where they do the job."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from compat_tests.clients.base import Msg
from compat_tests.clients.librdkafka import LibrdkafkaAdmin, LibrdkafkaClient


def produce(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes | None, int | None]]) -> None:
    """Produces (partition, key, value, timestamp ms or None) in order with an idempotent producer."""
    LibrdkafkaClient(bootstrap).produce(
        topic, [Msg(value=v, key=k, partition=p, timestamp_ms=ts) for p, k, v, ts in records], idempotent=True)


def admin(bootstrap: str) -> LibrdkafkaAdmin:
    return LibrdkafkaAdmin(bootstrap)


def read_all(bootstrap: str, topic: str, isolation: str = "read_uncommitted", timeout_s: float = 30.0) -> list[Msg]:
    """Every record of every partition of the topic, from the log start to the end (the high
    watermark, or under read_committed the last stable offset), in (partition, offset) order."""
    c = Consumer({"bootstrap.servers": bootstrap, "broker.address.family": "v4", "log_level": 5,
                  "group.id": f"spark-tests-read-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    out: list[Msg] = []
    try:
        partitions = sorted(c.list_topics(topic, timeout=20).topics[topic].partitions)
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        pending = set(partitions)
        deadline = time.monotonic() + timeout_s
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: partitions {sorted(pending)} did not reach their end in {timeout_s}s")
            for m in c.consume(500, timeout=0.5):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        pending.discard(m.partition())
                        continue
                    raise KafkaException(m.error())
                _, ts = m.timestamp()
                out.append(Msg(value=m.value(), key=m.key(), headers=tuple(m.headers() or ()), timestamp_ms=ts,
                               partition=m.partition(), offset=m.offset()))
    finally:
        c.close()
    return sorted(out, key=lambda m: (m.partition, m.offset))


def producer(bootstrap: str, transactional_id: str | None = None) -> Producer:
    """A transactional producer, its transactions initialised (which fences and aborts what an
    earlier producer with the same transactional.id left open)."""
    p = Producer({"bootstrap.servers": bootstrap, "broker.address.family": "v4", "log_level": 5,
                  "transactional.id": transactional_id or f"spark-tests-{uuid.uuid4().hex[:8]}",
                  "linger.ms": 5, "message.timeout.ms": 30000})
    p.init_transactions(30)
    return p


def send(p: Producer, topic: str, partition: int | None, values: list[bytes]) -> None:
    """Produces the values (as key and value) inside the open transaction and waits for their acknowledgements."""
    for v in values:
        if partition is None:
            p.produce(topic, value=v, key=v)
        else:
            p.produce(topic, value=v, key=v, partition=partition)
    assert p.flush(30) == 0


def run_plan(bootstrap: str, topic: str, plan: list[tuple[str, list[bytes]]], partition: int = 0) -> None:
    """Runs transactions in order, each ("commit" | "abort", values), all on one partition."""
    p = producer(bootstrap)
    for end, values in plan:
        p.begin_transaction()
        send(p, topic, partition, values)
        if end == "commit":
            p.commit_transaction(30)
        elif end == "abort":
            p.abort_transaction(30)
        else:
            raise ValueError(f"a transaction ends with commit or abort, not {end!r}")
