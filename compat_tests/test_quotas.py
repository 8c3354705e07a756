"""Client quotas with real clients, on kafkalite and on Apache Kafka (COMPAT_BROKER=kafka):

- the Java Admin client sets, describes and removes user, client-id and default quotas
  (AlterClientQuotas / DescribeClientQuotas);
- a Java producer and consumer over their byte rates see the throttle in their metrics
  (produce-throttle-time-max, fetch-throttle-time-max), as on Kafka;
- a librdkafka (confluent-kafka) producer and consumer over theirs get throttle callbacks
  (throttle_cb) naming the broker and a throttle time;
- a client id with a `controller_mutation_rate` (KIP-599) creates topics over its burst
  (validate_only counts): the CreateTopics that takes the token bucket into debt is accepted,
  the next strict one (v6+) is refused with THROTTLING_QUOTA_EXCEEDED and the time until the
  debt is paid, and its connection muted that long; a permissive one (v5) is accepted and
  throttled, and once the debt is paid topics are created again.

A quota of 1000 B/s and one record of 12 kB: Kafka's rate is measured over at least ten one-second
windows, so the record takes the rate to 1200 B/s and the answer carries about 2 s of throttle.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kio.schema.errors import ErrorCode

from compat_tests.clients.java import JavaClient, run
from compat_tests.differ.core import request
from compat_tests.waiting import wait_until
from kafkalite.protocol.client import WireClient

pytestmark = [pytest.mark.cluster_admin, pytest.mark.timeout(180)]

RATE = 1000.0
RECORD = 12_000


def _alter(bootstrap: str, client_id: str, values: dict[str, float | None]) -> None:
    with WireClient(bootstrap) as wire:
        resp = wire.request(request(49, 1, validate_only=False, entries=[
            {"entity": [{"entity_type": "client-id", "entity_name": client_id}],
             "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in values.items()]}]))
    assert [e.error_code for e in resp.entries] == [ErrorCode.none]


def _described(bootstrap: str, client_id: str) -> bool:
    with WireClient(bootstrap) as wire:
        resp = wire.request(request(48, 1, strict=True, components=[
            {"entity_type": "client-id", "match_type": 0, "match": client_id}]))
    return len(resp.entries or ()) == 1


def _set(bootstrap: str, client_id: str, values: dict[str, float | None]) -> None:
    """`values` for `client_id`, waited for until the broker's quota managers have them.

    Kafka's broker applies a metadata change to the image DescribeClientQuotas answers from, then
    to its quota managers (another publisher of the same change), so "described" alone can come
    a moment too early. A broker publishes changes one at a time, in order: a second change, made
    once the first is described, is described only after every publisher has taken the first."""
    _alter(bootstrap, client_id, values)
    wait_until(lambda: _described(bootstrap, client_id), timeout=20, what="the quota to be described")
    marker = f"{client_id}.applied"
    _alter(bootstrap, marker, {"request_percentage": 1000.0})
    wait_until(lambda: _described(bootstrap, marker), timeout=20, what="a later quota change to be described")
    _alter(bootstrap, marker, {"request_percentage": None})


@pytest.fixture
def throttled_client(bootstrap):
    client_id = f"throttled-{uuid.uuid4().hex[:8]}"
    _set(bootstrap, client_id, {"producer_byte_rate": RATE, "consumer_byte_rate": RATE})
    yield client_id
    _alter(bootstrap, client_id, {"producer_byte_rate": None, "consumer_byte_rate": None})


def test_java_admin_client_quotas(bootstrap):
    user, client = f"u-{uuid.uuid4().hex[:8]}", f"c-{uuid.uuid4().hex[:8]}"
    java = JavaClient(bootstrap)
    entries = [{"entity": {"user": user}, "ops": {"producer_byte_rate": 1048576, "request_percentage": 200.5}},
               {"entity": {"user": user, "client-id": client}, "ops": {"consumer_byte_rate": 2048}}]
    java.admin({"op": "alterClientQuotas", "entries": entries})

    def described():
        (found,) = java.admin({"op": "describeClientQuotas", "components": [{"entity_type": "user", "match": user}]})
        return found if len(found) == 2 else None

    found = wait_until(described, timeout=20, what="the quotas to be described")
    assert sorted(found, key=lambda e: len(e["entity"])) == [
        {"entity": {"user": user}, "values": {"producer_byte_rate": 1048576.0, "request_percentage": 200.5}},
        {"entity": {"client-id": client, "user": user}, "values": {"consumer_byte_rate": 2048.0}}]
    (strict,) = java.admin({"op": "describeClientQuotas", "strict": True,
                            "components": [{"entity_type": "user", "match": user}]})
    assert [e["entity"] for e in strict] == [{"user": user}]
    refused = java.admin({"op": "alterClientQuotas", "entries": [{"entity": {"user": user},
                                                                  "ops": {"producer_byte_rate": 1.5}}]},
                         raise_errors=False)[0]
    assert refused.code == "INVALID_REQUEST" and "cannot be a fractional value" in refused.message
    java.admin({"op": "alterClientQuotas", "entries": [
        {"entity": {"user": user}, "ops": {"producer_byte_rate": None, "request_percentage": None}},
        {"entity": {"user": user, "client-id": client}, "ops": {"consumer_byte_rate": None}}]})
    wait_until(lambda: java.admin({"op": "describeClientQuotas",
                                   "components": [{"entity_type": "user", "match": user}]})[0] == [],
               timeout=20, what="the quotas to be removed")


def test_java_producer_and_consumer_see_the_throttle(bootstrap, create_topic, throttled_client):
    topic = create_topic(f"throttled-java-{uuid.uuid4().hex[:6]}")
    (line,) = [x for x in run({"cmd": "throttle", "bootstrap": bootstrap, "topic": topic, "records": 1,
                               "size": RECORD, "config": {"client.id": throttled_client}}, timeout=90)
               if "produce_throttle_time_max" in x]
    # about 2 s each: (12 kB / 10 s - 1000 B/s) / 1000 B/s * 10 s
    assert 1_500 <= line["produce_throttle_time_max"] <= 3_000, line
    assert 1_500 <= line["fetch_throttle_time_max"] <= 3_000, line


def test_librdkafka_producer_and_consumer_get_throttle_callbacks(bootstrap, create_topic, throttled_client):
    topic = create_topic(f"throttled-rdk-{uuid.uuid4().hex[:6]}")
    events: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": throttled_client,
                         "throttle_cb": events.append, "linger.ms": 0})
    producer.produce(topic, value=b"x" * RECORD, partition=0)
    assert producer.flush(30) == 0
    deadline = time.monotonic() + 15
    while not events and time.monotonic() < deadline:
        producer.poll(0.2)
    assert events, "the producer got no throttle callback"
    assert events[0].throttle_time >= 1.5 and events[0].broker_name
    fetch_events: list = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": throttled_client, "group.id": throttled_client,
                         "enable.auto.commit": False, "throttle_cb": fetch_events.append})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 20
        while not fetch_events and time.monotonic() < deadline:
            consumer.poll(0.2)
    finally:
        consumer.close()
    assert fetch_events, "the consumer got no throttle callback"
    assert fetch_events[0].throttle_time >= 1.5


def _create(wire: WireClient, version: int, topic: str, partitions: int, validate_only: bool = False):
    """One CreateTopics; returns (the topic's error code and message, the throttle time in ms)."""
    resp = wire.request(request(19, version, timeout=10_000, validate_only=validate_only, topics=[
        {"name": topic, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}]))
    (result,) = resp.topics
    return (result.error_code, result.error_message), resp.throttle_time.total_seconds() * 1000


def test_controller_mutation_rate_refuses_creations_in_debt(bootstrap):
    """Rate 1 partition/s: the bucket holds 11 (controller.quota.window.num 11 x 1 s windows)."""
    client_id = f"mutations-{uuid.uuid4().hex[:8]}"
    name = f"mutation-{uuid.uuid4().hex[:6]}"
    _set(bootstrap, client_id, {"controller_mutation_rate": 1.0})
    try:
        with WireClient(bootstrap, client_id=client_id) as wire:
            # the bucket is full; a validate_only request counts too: 2 of 11
            assert _create(wire, 7, f"{name}-a", 2, validate_only=True) == ((ErrorCode.none, None), 0)
            # 11 partitions take it to -2, and the request is accepted unthrottled
            assert _create(wire, 7, f"{name}-a", 11) == ((ErrorCode.none, None), 0)
            # in debt: a strict CreateTopics is refused, with the time until the debt is paid (< 2 s)
            refused, refused_ms = _create(wire, 7, f"{name}-b", 1)
            assert refused == (ErrorCode.throttling_quota_exceeded, None)
            assert 0 < refused_ms <= 2_000
            # the connection is muted that long; then a permissive CreateTopics (v5), with the
            # debt about paid, is accepted and throttled for its own 2 partitions of debt
            t0 = time.monotonic()
            accepted, permissive_ms = _create(wire, 5, f"{name}-c", 2)
            assert time.monotonic() - t0 >= refused_ms / 1000 - 0.2
            assert accepted == (ErrorCode.none, None)
            assert 0 < permissive_ms <= 2_000
        # the debt paid (permissive_ms from now), the refused topic is created: a strict request
        # refused meanwhile records nothing, so asking again until it is accepted waits for that
        with WireClient(bootstrap, client_id=client_id) as wire:
            wait_until(lambda: _create(wire, 7, f"{name}-b", 1) == ((ErrorCode.none, None), 0), timeout=30,
                       interval=0.1, what="the debt to be paid and the refused topic created")
    finally:
        _alter(bootstrap, client_id, {"controller_mutation_rate": None})
