"""A consumer application (confluent-kafka, committing each record) reaches a Stable group and
lag 0, and the test knows it from the broker's waits (`wait-group`, `wait-committed`), with no
client-side polling or sleeping. bench/waits_stress.py runs this scenario many times under load,
beside the same scenario written as such tests usually are (AdminClient polling with sleeps).
"""

from __future__ import annotations

import threading
import uuid
from typing import Callable

import pytest
from confluent_kafka import Consumer, Producer

RECORDS = 20


class ConsumerApp:
    """The application under test: consumes a topic in a group and commits after each record."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        self.stop = threading.Event()
        self.consumed = 0
        self.error: BaseException | None = None
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False, "session.timeout.ms": 10_000})
        self.consumer.subscribe([topic])
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                msg = self.consumer.poll(0.1)
                if msg is None or msg.error():
                    continue
                self.consumed += 1
                self.consumer.commit(message=msg, asynchronous=False)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        self.consumer.close()
        if self.error is not None:
            raise self.error


def produce(bootstrap: str, topic: str, n: int = RECORDS) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, key=b"k%d" % (i % 3), value=b"v%d" % i)
    assert producer.flush(30) == 0


def scenario(bootstrap: str, create_topic: Callable[[str, int], None],
             wait_for_group: Callable[[str, str], None], wait_for_lag_zero: Callable[[str, str], None]) -> None:
    """The application joins, records arrive, the application catches up; the test checks the
    group and then the lag with the two functions given."""
    topic = f"lag-{uuid.uuid4().hex[:8]}"
    group = f"app-{topic}"
    create_topic(topic, 3)
    app = ConsumerApp(bootstrap, group, topic)
    try:
        wait_for_group(group, topic)
        produce(bootstrap, topic)
        wait_for_lag_zero(group, topic)
        assert app.consumed >= RECORDS
    finally:
        app.close()


def with_waits(broker, timeout_ms: int = 30_000) -> None:
    """The scenario checked with the broker's waits."""
    from compat_tests.clients.librdkafka import LibrdkafkaClient

    def wait_for_group(group: str, topic: str) -> None:
        described = broker.wait_for_group(group, members=1, timeout_ms=timeout_ms)
        assert sorted(described["members"][0]["assignment"]) == [f"{topic}-{p}" for p in range(3)]

    def wait_for_lag_zero(group: str, topic: str) -> None:
        rows = broker.wait_for_committed(group, topic, timeout_ms=timeout_ms)
        assert sum(r["committed_offset"] for r in rows) == RECORDS

    scenario(broker.bootstrap, LibrdkafkaClient(broker.bootstrap).create_topic, wait_for_group, wait_for_lag_zero)


@pytest.fixture(scope="module")
def broker(controls_broker):
    return controls_broker


def test_group_and_lag_zero_with_the_waits(broker):
    with_waits(broker)
