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
from typing import Any, Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from compat_tests import brokers
from compat_tests.clients.librdkafka import LibrdkafkaClient
from compat_tests.waiting import wait_until
from kafkalite.tests import suite_brokers

pytestmark = [pytest.mark.controls, pytest.mark.librdkafka]

SEED = 42
# a dropped response costs the client its request timeout: short ones keep the test short
TIMEOUTS = {"socket.timeout.ms": 3000, "request.timeout.ms": 3000}


@pytest.fixture(scope="module")
def broker():
    brokers.requires_kafkalite("chaos is kafkalite's own")
    with suite_brokers.running(controls=0, chaos=SEED) as b:
        yield b


def new_topic(broker, partitions: int = 1) -> str:
    topic = f"chaos-{uuid.uuid4().hex[:8]}"
    LibrdkafkaClient(broker.bootstrap).create_topic(topic, partitions)
    return topic


def produce(bootstrap: str, topic: str, values: list[str], client_id: str, per_flush: int,
            settings: dict[str, Any] = TIMEOUTS) -> None:
    """Produce `values` keyed by themselves with an idempotent producer, flushing every `per_flush`;
    every delivery must succeed."""
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 2, **settings})
    errors: list[Any] = []
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), key=v.encode(), on_delivery=lambda err, _m: errors.append(err) if err else None)
        if (i + 1) % per_flush == 0:
            assert p.flush(60) == 0
    assert p.flush(60) == 0
    assert errors == []


def consume(consumer: Consumer, delivered: Counter[str], wanted: int, deadline: float,
            seen: Callable[[Any], None]) -> None:
    """Poll until `wanted` distinct values are counted in `delivered` or the deadline (monotonic)
    passes, calling `seen` with each record."""
    while len(delivered) < wanted and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        delivered[msg.value().decode()] += 1
        seen(msg)


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

    def seen(msg: Any) -> None:
        at[(msg.partition(), msg.offset())] = msg.value().decode()

    try:
        consume(consumer, delivered, len(values), time.monotonic() + 120, seen)
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


def run_transactions(broker, topic: str, settings: dict[str, Any] = TIMEOUTS, transactional_id: str | None = None,
                     client_id: str = "chaos-txn") -> tuple[list[str], Counter[tuple[str, str]]]:
    """40 transactions of 5 records from a librdkafka transactional producer, every fourth
    aborted; answers the records committed and the errors its requests other than Produce met."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "client.id": client_id,
                  "transactional.id": transactional_id or f"chaos-{uuid.uuid4().hex[:6]}", **settings})
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
    txn_faults = Counter((e["api"], e.get("error")) for e in broker.controls.chaos_log(client_id=client_id)
                         if e["fault"] == "error" and e["api"] != "produce")
    return committed, txn_faults


# --- moves: leaders and coordinators that really move, on three nodes -----------------------------

# librdkafka doubles a connection's reconnect backoff on every close up to 10 s: harsh chaos's
# closes on three nodes' connections stalled the producer 7-10 s at a time (44 s for 600 records,
# 15 s with this cap)
MOVES_CLIENT = {**TIMEOUTS, "reconnect.backoff.max.ms": 500}


@pytest.fixture(scope="module")
def three_nodes():
    brokers.requires_kafkalite("chaos is kafkalite's own")
    with suite_brokers.running(controls=0, chaos=SEED, nodes=3,
                               config={"chaos.profile": "harsh", "default.replication.factor": 3}) as b:
        yield b


def test_under_moves_an_idempotent_producer_and_a_read_committed_group_see_every_record_once(three_nodes):
    """harsh chaos on --nodes 3: leaders move under Produce and Fetch, the group's coordinator under
    its commits and heartbeats, a new topic is unknown to some first requests; every record is
    written once and consumed once, and the group's last commit is its position."""
    broker = three_nodes
    started = time.monotonic()
    topic = new_topic(broker, partitions=3)
    values = [f"record-{i}" for i in range(300)]
    produce(broker.bootstrap, topic, values, client_id="moves-producer", per_flush=3, settings=MOVES_CLIENT)

    group = f"moves-group-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "client.id": "moves-consumer", "group.id": group,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                         **MOVES_CLIENT})
    consumer.subscribe([topic])
    delivered: Counter[str] = Counter()
    position: dict[int, int] = {}
    produced_in = time.monotonic() - started
    deadline = time.monotonic() + 40

    def seen(msg: Any) -> None:
        position[msg.partition()] = msg.offset() + 1
        consumer.commit(asynchronous=True)  # a commit per record: many group requests for chaos to meet

    try:
        consume(consumer, delivered, len(values), deadline, seen)
        final = [TopicPartition(topic, p, o) for p, o in sorted(position.items())]
        while time.monotonic() < deadline:
            try:  # a commit that met NOT_COORDINATOR is made again on the coordinator found next
                consumer.commit(offsets=final, asynchronous=False)
                break
            except KafkaException:
                time.sleep(0.1)
        committed = {tp.partition: tp.offset for tp in consumer.committed(final, timeout=10)}
    finally:
        consumer.close()
    assert [v for v, n in delivered.items() if n > 1] == []
    assert set(delivered) == set(values)
    assert committed == position
    stored = [r["value"] for r in broker.controls.records(topic=topic, isolation="read_committed", max=10_000)]
    assert sorted(stored) == sorted(values)  # each record in the log once: no retried Produce written twice

    faults = broker.controls.chaos_log()
    moves = [e for e in faults if e["fault"] == "move"]
    leader_moves = [e for e in moves if e["topic"] == topic]
    group_moves = [e for e in moves if e.get("group") == group]
    assert leader_moves and group_moves, Counter(e["api"] for e in moves)
    assert all(e["from_node"] != e["to_node"] and {e["from_node"], e["to_node"]} <= {1, 2, 3} for e in moves)
    kinds = Counter(e["fault"] for e in faults)
    elapsed = time.monotonic() - started
    print(f"chaos seed {SEED} (harsh, 3 nodes) in {elapsed:.1f} s ({produced_in:.1f} s to produce): {len(faults)} faults {dict(kinds)}; "
          f"{len(leader_moves)} leader moves, {len(group_moves)} coordinator moves of the group")


def test_under_moves_a_transactional_producer_keeps_what_it_committed_and_nothing_it_aborted(three_nodes):
    """harsh chaos on --nodes 3: the transaction coordinator moves under the producer's transaction
    requests (and partition leaders under its Produce); the committed transactions are all there
    and the aborted ones are not."""
    broker = three_nodes
    topic = new_topic(broker, partitions=2)
    transactional_id = f"moves-{uuid.uuid4().hex[:6]}"
    # seed 42 draws a move for this client id's AddPartitionsToTxn #13 (broker.chaos.draw)
    committed, _ = run_transactions(broker, topic, MOVES_CLIENT, transactional_id, client_id="moves-txn")
    seen = [r["value"] for r in broker.controls.records(topic=topic, isolation="read_committed", max=1000)]
    assert sorted(seen) == sorted(committed)
    moves = broker.controls.chaos_log(fault="move", client_id="moves-txn")
    coordinator_moves = [e for e in moves if e.get("transactional_id") == transactional_id]
    assert coordinator_moves and all(e["topic"] == "__transaction_state" for e in coordinator_moves), moves
    print(f"chaos seed {SEED} (harsh, 3 nodes), transactional producer: {len(coordinator_moves)} coordinator "
          f"moves, {len(moves) - len(coordinator_moves)} leader moves")


@pytest.mark.java
def test_under_moves_the_java_client_produces_idempotently_and_its_group_reads_every_record_once(three_nodes):
    """The same with kafka-clients: an idempotent producer (20 producers of 10 records, one client
    id: seed 42 moves the leader under its Produce #0 and #6) and a read_committed classic group
    member (its Heartbeat #2 and #5 move the group's coordinator) on --nodes 3 under harsh chaos."""
    from compat_tests.clients.base import Msg
    from compat_tests.clients.java import JavaClient
    from compat_tests.groups.members import Member

    broker = three_nodes
    topic = new_topic(broker, partitions=3)
    values = [f"java-{i}" for i in range(200)]
    producer = JavaClient(broker.bootstrap, config={"client.id": "moves-java-producer", "request.timeout.ms": 3000})
    for i in range(0, len(values), 10):
        producer.produce(topic, [Msg(value=v.encode(), key=v.encode()) for v in values[i:i + 10]],
                         idempotent=True, acks="all")
    group = f"moves-java-{uuid.uuid4().hex[:6]}"
    member = Member("java", broker.bootstrap, group, topic, client_id="moves-java-member",
                    isolation="read_committed", request_timeout_ms=3000)

    def group_moves() -> list[dict[str, Any]]:
        return [e for e in broker.controls.chaos_log(fault="move", client_id="moves-java-member")
                if e.get("group") == group]

    try:
        records = member.wait_records(len(values), timeout=40)
        # the member may read everything before its third heartbeat: it stays until the move
        # (a heartbeat every 500 ms), then commits to the coordinator it finds next
        moved = wait_until(group_moves, timeout=20, what="a move of the group's coordinator")
        member.commit()
        read_all = member.records()  # nothing read again after the move
    finally:
        member.close()
    read = Counter(r["value"] for r in read_all)
    assert len(read_all) == len(records) == len(values)
    assert [v for v, n in read.items() if n > 1] == [] and set(read) == set(values)
    stored = [r["value"] for r in broker.controls.records(topic=topic, isolation="read_committed", max=10_000)]
    assert sorted(stored) == sorted(values)
    leader_moves = broker.controls.chaos_log(fault="move", client_id="moves-java-producer")
    assert [e for e in leader_moves if e["topic"] == topic], leader_moves
    print(f"chaos seed {SEED} (harsh, 3 nodes), Java: {len(leader_moves)} leader moves under the producer, "
          f"{len(moved)} coordinator moves under the group member")
