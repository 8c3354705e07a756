"""Records and transactions written by another client than the one under test: confluent-kafka
(librdkafka)."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer


def produce(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes | None, int | None]]) -> None:
    """Produces (partition, key, value, timestamp ms or None) in order with an idempotent producer."""
    p = Producer({"bootstrap.servers": bootstrap, "broker.address.family": "v4", "enable.idempotence": True,
                  "linger.ms": 5, "message.timeout.ms": 30000})
    errors = []
    for partition, key, value, ts in records:
        p.produce(topic, value=value, key=key, partition=partition, timestamp=ts or 0,
                  on_delivery=lambda err, _msg: err and errors.append(err))
    assert p.flush(30) == 0 and not errors, errors


def producer(bootstrap: str, name: str = "spark-tests") -> Producer:
    """A transactional producer, its transactions initialised."""
    p = Producer({"bootstrap.servers": bootstrap, "broker.address.family": "v4",
                  "transactional.id": f"{name}-{uuid.uuid4().hex[:8]}", "linger.ms": 5,
                  "message.timeout.ms": 30000})
    p.init_transactions(30)
    return p


def send(p: Producer, topic: str, partition: int, values: list[bytes]) -> None:
    """Produces the values inside the open transaction and waits for their acknowledgements."""
    for v in values:
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
