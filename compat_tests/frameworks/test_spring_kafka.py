"""Spring Boot 4.0 with Spring for Apache Kafka (spring-kafka 4.0.x), unmodified, against the broker.

The application (spring/SpringEosApp.java) consumes, transforms and produces in one Kafka
transaction per delivery with the consumed offset sent to it; a delivery that throws after
producing is rolled back, retried, then sent to a dead-letter topic; a container without
transactions retries and dead-letters with DefaultErrorHandler; a transactional KafkaTemplate
commits one transaction and rolls one back. Everything is checked on the broker with read_committed
and read_uncommitted consumers, and again after a restart (offsets were committed with the
transactions, so nothing is processed twice).
"""

from __future__ import annotations

import collections
import time
import uuid

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka import ConsumerGroupTopicPartitions

from compat_tests.clients.librdkafka import LibrdkafkaAdmin
from compat_tests.frameworks import read_all
from compat_tests.frameworks.spring_app import SpringApp, topics

pytestmark = [pytest.mark.frameworks, pytest.mark.spring]

PARTITIONS = {"in": 3, "out": 3, "in-dlt": 1, "plain": 1, "plain-dlt": 1, "events": 1}


def _produce(bootstrap: str, topic: str, values: list[str]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for v in values:
        p.produce(topic, key=f"k-{v}", value=v)
    assert p.flush(30) == 0


_partitions: dict[str, int] = {}  # topic name -> partition count, as created


def _values(bootstrap: str, topic: str, isolation: str = "read_committed") -> collections.Counter:
    return collections.Counter(v for _, _, v, _ in read_all(bootstrap, topic, _partitions[topic], isolation=isolation))


def _wait(pred, timeout: float, what: str, app: SpringApp) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not seen in {timeout}s; events {app.events[-10:]}\n{app.log_tail()}")
        time.sleep(0.2)


def test_spring_transactions_rollback_and_dead_letters(bootstrap, tmp_path):
    prefix = f"spring-{uuid.uuid4().hex[:8]}"
    names = topics(prefix)
    group = f"{prefix}-group"
    admin = LibrdkafkaAdmin(bootstrap)
    for role, name in names.items():
        admin.create_topic(name, PARTITIONS[role])
        _partitions[name] = PARTITIONS[role]
    _produce(bootstrap, names["in"], ["a", "b", "fail-1", "c"])
    _produce(bootstrap, names["plain"], ["x", "poison", "y"])

    app = SpringApp("spring", bootstrap, names, group, tmp_path / "spring.log")
    try:
        app.wait_for(lambda e: e.get("event") == "ready", timeout=90)
        _wait(lambda: _values(bootstrap, names["in-dlt"]) and _values(bootstrap, names["plain-dlt"])
              and all(app.attempts("tx", v) for v in "abc") and all(app.attempts("plain", v) for v in "xy"),
              90, "both dead letters and every record", app)
    finally:
        app.close()

    # One delivery per record, three for the failing one (two retries), then its dead letter.
    assert {v: app.attempts("tx", v) for v in ("a", "b", "c", "fail-1")} == {"a": 1, "b": 1, "c": 1, "fail-1": 3}
    assert {v: app.attempts("plain", v) for v in ("x", "poison", "y")} == {"x": 1, "poison": 3, "y": 1}

    # read_committed sees each transformed record once and never the rolled-back ones; the aborted
    # records are in the log (read_uncommitted sees the three attempts).
    assert _values(bootstrap, names["out"]) == collections.Counter({"A": 1, "B": 1, "C": 1})
    uncommitted = _values(bootstrap, names["out"], "read_uncommitted")
    assert uncommitted["FAIL-1"] == 3 and uncommitted["A"] == 1, uncommitted

    for dlt, value, message in ((names["in-dlt"], "fail-1", "refused after producing fail-1"),
                                (names["plain-dlt"], "poison", "cannot handle poison")):
        (record,) = read_all(bootstrap, dlt, 1)
        assert record[2] == value
        headers = {k: (v or b"").decode(errors="replace") for k, v in record[3]}
        assert message in headers["kafka_dlt-exception-message"], headers
        assert headers["kafka_dlt-original-topic"] == names["in" if dlt == names["in-dlt"] else "plain"]

    # The transactional KafkaTemplate: one committed transaction, one rolled back.
    assert _values(bootstrap, names["events"]) == collections.Counter({"started-1": 1, "started-2": 1, "started-3": 1})
    assert _values(bootstrap, names["events"], "read_uncommitted")["aborted-1"] == 1

    # The offsets went with the transactions: the group has consumed every input record (an empty
    # partition has no committed offset).
    group_admin = AdminClient({"bootstrap.servers": bootstrap})
    res = group_admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(names["in"], p) for p in range(3)])])
    committed = {tp.partition: tp.offset for tp in res[group].result(timeout=20).topic_partitions}
    ends = admin.list_offsets(names["in"], range(3), "latest")
    assert {p: o for p, o in committed.items() if o >= 0} == {p: ends[p][0] for p in range(3) if ends[p][0] > 0}

    # Restarted, the application goes on from those offsets: only the new record is processed.
    _produce(bootstrap, names["in"], ["d"])
    again = SpringApp("spring-restarted", bootstrap, names, group, tmp_path / "spring-restarted.log")
    try:
        again.wait_for(lambda e: e.get("event") == "attempt" and e["value"] == "d", timeout=90)
        _wait(lambda: _values(bootstrap, names["out"])["D"] == 1, 30, "D in the output", again)
    finally:
        again.close()
    assert [e["value"] for e in again.events if e.get("event") == "attempt" and e["listener"] == "tx"] == ["d"]
    assert _values(bootstrap, names["out"]) == collections.Counter({"A": 1, "B": 1, "C": 1, "D": 1})
