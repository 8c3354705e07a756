"""Seeded chaos (kafkalite --chaos SEED, broker.chaos) seen by real clients: an idempotent
confluent-kafka producer and a read_committed group consumer lose and duplicate nothing while the
chaos log shows dozens of faults of several kinds, and the same seed with the same requests meets
the same Produce faults again (another seed, other ones); a transactional producer's committed
transactions stay committed and its aborted ones out through coordinator errors on every
transaction API. Chaos is kafkalite's own."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

import kafkalite
from compat_tests import brokers
from compat_tests.clients.librdkafka import LibrdkafkaClient

pytestmark = [pytest.mark.controls, pytest.mark.librdkafka]

SEED = 42
# a dropped response costs the client its request timeout: short ones keep the test short
TIMEOUTS = {"socket.timeout.ms": 3000, "request.timeout.ms": 3000}


@pytest.fixture(scope="module")
def broker():
    brokers.requires_kafkalite("chaos is kafkalite's own")
    with kafkalite.running(controls=0, chaos=SEED) as b:
        yield b


def new_topic(broker, partitions: int = 1) -> str:
    topic = f"chaos-{uuid.uuid4().hex[:8]}"
    LibrdkafkaClient(broker.bootstrap).create_topic(topic, partitions)
    return topic


def produce(bootstrap: str, topic: str, values: list[str], client_id: str, per_flush: int) -> None:
    """Produce `values` keyed by themselves with an idempotent producer, flushing every `per_flush`;
    every delivery must succeed."""
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 2, **TIMEOUTS})
    errors: list[Any] = []
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), key=v.encode(), on_delivery=lambda err, _m: errors.append(err) if err else None)
        if (i + 1) % per_flush == 0:
            assert p.flush(60) == 0
    assert p.flush(60) == 0
    assert errors == []


def test_an_idempotent_producer_and_a_read_committed_consumer_see_every_record_once_under_chaos(broker):
    topic = new_topic(broker, partitions=3)
    values = [f"record-{i}" for i in range(1500)]
    produce(broker.bootstrap, topic, values, client_id="chaos-producer", per_flush=5)

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "client.id": "chaos-consumer",
                         "group.id": f"chaos-group-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "fetch.wait.max.ms": 100,
                         # small fetches and frequent commits: many requests for chaos to meet
                         "max.partition.fetch.bytes": 2048, "fetch.max.bytes": 4096, "message.max.bytes": 4096,
                         "auto.commit.interval.ms": 200, **TIMEOUTS})
    consumer.subscribe([topic])
    delivered: Counter[str] = Counter()
    at: dict[tuple[int, int], str] = {}
    deadline = time.monotonic() + 120
    try:
        while len(delivered) < len(values) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            value = msg.value().decode()
            delivered[value] += 1
            at[(msg.partition(), msg.offset())] = value
    finally:
        consumer.close()
    # the log holds each record once (no duplicate from a retried Produce) and the consumer saw all
    assert sorted(at.values()) == sorted(values)
    assert [v for v, n in delivered.items() if n > 1] == []
    assert set(delivered) == set(values)

    faults = broker.controls.chaos_log()
    kinds = Counter(e["fault"] for e in faults)
    errors = Counter(e["error"] for e in faults if e["fault"] == "error")
    apis = Counter(e["api"] for e in faults)
    assert len(faults) >= 24, kinds
    assert {"error", "delay", "close"} <= set(kinds), kinds
    assert len(errors) >= 2 and {"produce", "fetch"} <= set(apis), (errors, apis)
    print(f"chaos seed {SEED}: {len(faults)} faults {dict(kinds)}; errors {dict(errors)}; by api {dict(apis)}")


def produce_faults(broker, seed: int) -> list[tuple[int, str, str | None]]:
    """Restart chaos with `seed`, produce the same 40 records one request at a time from the
    same client id, and answer the Produce faults that client met."""
    broker.controls.chaos(seed=seed)
    produce(broker.bootstrap, new_topic(broker), [f"r{i}" for i in range(40)], client_id="replayed", per_flush=1)
    return [(e["api_seq"], e["fault"], e.get("error")) for e in
            broker.controls.chaos_log(api="Produce", client_id="replayed")]


def test_the_same_seed_and_requests_meet_the_same_produce_faults_and_another_seed_others(broker):
    first = produce_faults(broker, SEED)
    again = produce_faults(broker, SEED)
    other = produce_faults(broker, SEED + 1)
    assert first, "seed 42 faulted none of 40 Produce requests"
    assert again == first
    assert other != first
    broker.controls.chaos(seed=SEED)


def test_a_transactional_producer_under_chaos_keeps_what_it_committed_and_nothing_it_aborted(broker):
    topic = new_topic(broker, partitions=2)
    broker.controls.chaos(seed=SEED, profile="harsh")
    try:
        committed, txn_faults = run_transactions(broker, topic)
    finally:
        broker.controls.chaos(seed=SEED)
    seen = [r["value"] for r in broker.controls.records(topic=topic, isolation="read_committed", max=1000)]
    assert sorted(seen) == sorted(committed)
    assert sum(txn_faults.values()) >= 3, txn_faults
    print(f"chaos seed {SEED} (harsh), transactional producer: errors beside Produce {dict(txn_faults)}")


def run_transactions(broker, topic: str) -> tuple[list[str], Counter[tuple[str, str]]]:
    """40 transactions of 5 records from a librdkafka transactional producer, every fourth
    aborted; answers the records committed and the errors its requests other than Produce met."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "chaos-txn",
                  "transactional.id": f"chaos-{uuid.uuid4().hex[:6]}", **TIMEOUTS})
    p.init_transactions(60)
    committed: list[str] = []
    for t in range(40):
        p.begin_transaction()
        batch = [f"txn{t}-{i}" for i in range(5)]
        for v in batch:
            p.produce(topic, v.encode(), key=v.encode())
        if t % 4 == 3:
            p.abort_transaction(60)
        else:
            p.commit_transaction(60)
            committed += batch
    txn_faults = Counter((e["api"], e.get("error")) for e in broker.controls.chaos_log(client_id="chaos-txn")
                         if e["fault"] == "error" and e["api"] != "produce")
    return committed, txn_faults
