"""The test controls seen by real clients (kafkalite only: Apache Kafka has no such controls).

- a Produce response dropped after the append: the idempotent producer (Java, librdkafka) times
  the request out, retries it on a new connection and the broker deduplicates it: every record
  is in the log exactly once;
- NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS injected into the transaction coordinator's
  APIs: the Java transactional producer finds the coordinator again, retries and commits;
- a response delayed beyond request.timeout.ms: the client's timeout and retry, no duplicate;
- advance-clock past transaction.timeout.ms: the open transaction is aborted at once, the Java
  producer's commit fails as on Kafka and read_committed sees nothing of it;
- --kafka-version 3.9: the Java producer runs transactions v1 (no epoch bump per transaction)
  and a Java consumer with group.protocol=consumer fails as against Kafka 3.9.
"""

from __future__ import annotations

import re
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer

from compat_tests import brokers
from compat_tests.clients.base import Msg
from compat_tests.clients.java import JavaClient
from compat_tests.clients.librdkafka import LibrdkafkaClient
from compat_tests.differ.core import request
from compat_tests.groups.members import Member
from compat_tests.txn import java_txn
from compat_tests.txn import rdkafka_txn as reader
from compat_tests.txn import time_out_while
from compat_tests.waiting import wait_until
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers

pytestmark = pytest.mark.controls


@pytest.fixture(scope="module")
def broker():
    brokers.requires_kafkalite("the test controls are kafkalite's own")
    # a timeout scan far away: only the clock's jump can explain an abort within the test
    with suite_brokers.running(controls=0, metrics_port=0, config={
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": 600_000}) as b:
        yield b


@pytest.fixture
def controls(broker):
    yield broker.controls
    broker.controls.clear_faults()


def new_topic(broker, partitions=1) -> str:
    topic = f"controls-{uuid.uuid4().hex[:8]}"
    LibrdkafkaClient(broker.bootstrap).create_topic(topic, partitions)
    return topic


def produce_requests(broker) -> int:
    with urllib.request.urlopen(broker.metrics_url, timeout=10) as r:
        text = r.read().decode()
    m = re.search(r'^kafkalite_requests_total\{api="produce",api_key="0"\} (\d+)$', text, re.M)
    return int(m.group(1)) if m else 0


def values(broker, topic, isolation="read_uncommitted") -> list[str]:
    return reader.values(reader.read(broker.bootstrap, topic, [0], isolation))[0]


def produce_librdkafka(bootstrap, topic, vals, **conf):
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5, **conf})
    errors = []
    for v in vals:
        p.produce(topic, v.encode(), partition=0, on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert p.flush(60) == 0
    assert errors == []


@pytest.mark.parametrize("client", [pytest.param("java", marks=pytest.mark.java),
                                    pytest.param("librdkafka", marks=pytest.mark.librdkafka)])
def test_dropped_produce_response_is_retried_and_deduplicated(broker, controls, client):
    topic = new_topic(broker)
    vals = [f"v{i}" for i in range(20)]
    controls.drop_responses(api="Produce", topic=topic)
    before = produce_requests(broker)
    if client == "java":
        JavaClient(broker.bootstrap).produce(topic, [Msg(value=v.encode()) for v in vals], partition=0,
                                             idempotent=True, config={"request.timeout.ms": 2000, "linger.ms": 50})
    else:
        produce_librdkafka(broker.bootstrap, topic, vals, **{"socket.timeout.ms": 2000, "linger.ms": 50})
    assert values(broker, topic) == vals
    assert controls.list_faults() == []  # the drop happened...
    assert produce_requests(broker) - before > 1  # ...and was followed by the retry
    assert "dropped the response to produce" in broker.log_text()


@pytest.mark.java
def test_coordinator_errors_are_retried_by_the_java_transactional_producer(broker, controls):
    topic = new_topic(broker)
    tid = f"controls-tx-{uuid.uuid4().hex[:6]}"
    controls.fail_requests(api="InitProducerId", error="COORDINATOR_LOAD_IN_PROGRESS", count=2, transactional_id=tid)
    controls.fail_requests(api="EndTxn", error="NOT_COORDINATOR", transactional_id=tid)
    controls.fail_requests(api="FindCoordinator", error="COORDINATOR_NOT_AVAILABLE", transactional_id=tid)
    java_txn.run_plan(broker.bootstrap, tid, [
        {"records": [[topic, 0, "a"], [topic, 0, "b"]], "end": "commit"},
        {"records": [[topic, 0, "c"]], "end": "commit"},
    ])
    assert controls.list_faults() == []  # every injected error was met and retried past
    assert values(broker, topic, "read_committed") == ["a", "b", "c"]


@pytest.mark.java
def test_a_response_delayed_beyond_the_request_timeout_is_retried_once(broker, controls):
    topic = new_topic(broker)
    controls.delay_responses(api="Produce", ms=3500, topic=topic)
    JavaClient(broker.bootstrap).produce(topic, [Msg(value=b"late")], partition=0, idempotent=True,
                                         config={"request.timeout.ms": 1500})
    # the client gave up on the delayed request (and retried: produce() returned with the record
    # acknowledged); the broker had applied it, so the retry was recognised as its duplicate
    wait_until(lambda: "closed the connection before the delayed response to produce" in broker.log_text(),
               10, 0.2, "the delayed response to find its connection closed")
    assert values(broker, topic) == ["late"]


@pytest.mark.java
def test_advance_clock_past_the_transaction_timeout_aborts_at_once(broker, controls, tmp_path):
    topic = new_topic(broker)

    def abort_by_the_clock() -> None:
        # the producer has written "late" in its open transaction and waits
        (held,) = broker.wait_for_records(topic, isolation="read_uncommitted", timeout_ms=60_000)
        assert held["transaction"] == "open"
        assert reader.end_offsets(broker.bootstrap, topic, [0], "read_committed")[0] == 0
        controls.advance_clock(ms=60_001)
        # aborted by the time the control returns: the abort marker is written, the LSO moved past it
        assert reader.end_offsets(broker.bootstrap, topic, [0], "read_committed")[0] == 2

    err = time_out_while(java_txn, broker.bootstrap, f"controls-to-{uuid.uuid4().hex[:6]}", topic, 60_000,
                         tmp_path / "go-on", abort_by_the_clock)
    assert err in java_txn.TIMEOUT_ERRORS, err
    assert values(broker, topic, "read_committed") == []
    assert values(broker, topic) == ["late"]


def producer_epoch(bootstrap, tid) -> int:
    with WireClient(bootstrap) as w:
        (state,) = w.request(request(65, 0, transactional_ids=[tid])).transaction_states
    return state.producer_epoch


@pytest.mark.java
def test_kafka_3_9_gets_transactions_v1_from_the_java_producer():
    brokers.requires_kafkalite("--kafka-version is kafkalite's")
    plan = lambda t: [{"records": [[t, 0, "a"]], "end": "commit"},  # noqa: E731
                      {"records": [[t, 0, "b"]], "end": "commit"}]
    for version, epoch in (("3.9", 0), (None, 2)):
        with suite_brokers.running(kafka_version=version) as b:
            topic = new_topic(b)
            tid = f"controls-tv-{uuid.uuid4().hex[:6]}"
            java_txn.run_plan(b.bootstrap, tid, plan(topic))
            assert reader.values(reader.read(b.bootstrap, topic, [0], "read_committed"))[0] == ["a", "b"]
            # transactions v2 bump the epoch at every commit; v1 (3.9) keeps InitProducerId's
            assert producer_epoch(b.bootstrap, tid) == epoch, version


@pytest.mark.java
def test_kafka_3_9_refuses_the_java_consumer_protocol():
    brokers.requires_kafkalite("--kafka-version is kafkalite's")
    with suite_brokers.running(kafka_version="3.9") as b:
        topic = new_topic(b)
        member = Member("java", b.bootstrap, f"g-{uuid.uuid4().hex[:6]}", topic, protocol="consumer")
        try:
            member.wait_for(lambda m: any(e.get("event") == "error" for e in m.events), 60, "the consumer's failure")
        finally:
            member.proc.kill()
            member.proc.wait()
        (error,) = [e for e in member.events if e.get("event") == "error"]
        assert "UnsupportedVersionException" in error["message"], error
