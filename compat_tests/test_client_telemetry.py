"""Client telemetry (KIP-714) with real clients on kafkalite started with client.telemetry.enable
(Apache Kafka serves these APIs only with a receiver plugin of the user's, which Kafka does not
ship): a client-metrics subscription set with the Java Admin's incrementalAlterConfigs, then a Java
consumer and a librdkafka producer push their metrics, which the client-telemetry control shows."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer

from compat_tests import brokers
from compat_tests.clients.base import Msg
from compat_tests.clients.java import JavaClient
from compat_tests.waiting import wait_until
from kafkalite.tests import suite_brokers

pytestmark = [pytest.mark.controls, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def broker():
    brokers.requires_kafkalite("Apache Kafka pushes telemetry only to a receiver plugin; kafkalite keeps it")
    # one subscription for producers and consumers, pushed every second
    with suite_brokers.running(config={"client.telemetry.enable": "true"}, controls=0) as b:
        JavaClient(b.bootstrap).admin({"op": "incrementalAlterConfigs", "resources": [{
            "type": "client_metrics", "name": f"all-producers-{uuid.uuid4().hex[:6]}",
            "ops": [{"op": "SET", "name": "metrics", "value": "org.apache.kafka.producer.,org.apache.kafka.consumer."},
                    {"op": "SET", "name": "interval.ms", "value": "1000"}]}]})
        yield b


def _pushed(broker, client_id: str) -> list[str]:
    names: set[str] = set()
    for inst in broker.controls.call("client-telemetry", client_id=client_id):
        for push in inst["pushes"]:
            names.update(push["metrics"] or ())
    return sorted(names)


def test_java_consumer_pushes_its_metrics(broker):
    """A Java consumer that waits for more records than there are lives long enough to push."""
    client_id = f"java-telemetry-{uuid.uuid4().hex[:6]}"
    topic = f"telemetry-{uuid.uuid4().hex[:6]}"
    java = JavaClient(broker.bootstrap, config={"client.id": client_id})
    java.create_topic(topic)
    java.produce(topic, [Msg(b"k", b"v")] * 3)
    with pytest.raises(TimeoutError):
        java.consume(topic, [0], 10, timeout_s=4)
    names = wait_until(lambda: _pushed(broker, client_id), timeout=10, what="the Java consumer's telemetry")
    assert any(n.startswith("org.apache.kafka.consumer.") for n in names), names


def test_librdkafka_producer_pushes_its_metrics(broker):
    client_id = f"rdk-telemetry-{uuid.uuid4().hex[:6]}"
    topic = f"telemetry-{uuid.uuid4().hex[:6]}"
    JavaClient(broker.bootstrap).create_topic(topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": client_id, "enable.metrics.push": True})
    deadline = time.monotonic() + 20
    while not _pushed(broker, client_id) and time.monotonic() < deadline:
        producer.produce(topic, b"v")
        producer.poll(0.5)
    producer.flush(10)
    names = _pushed(broker, client_id)
    assert any(n.startswith("org.apache.kafka.producer.") for n in names), names
