"""KIP-848 ConsumerGroupHeartbeat as Kafka 4.4 validates and answers it, at the protocol level
and through librdkafka's consumer: a member may (re-)join with an empty subscription (Kafka's
throwIfConsumerGroupHeartbeatRequestIsInvalid refuses only a first heartbeat that sets neither
names nor regex), which a consumer that subscribes, unsubscribes and subscribes again over many
topics does; kafkalite answered INVALID_REQUEST, a fatal error for the client.
"""

from __future__ import annotations

import datetime
import time
import uuid

import pytest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta

from compat_tests.test_streams_groups import wait_coordinator
from kafkalite.protocol.client import WireClient

pytestmark = [pytest.mark.groups, pytest.mark.timeout(180)]


def heartbeat(c: WireClient, group: str, member: str, epoch: int, *, names=None, regex=None, owned=None,
              rebalance_ms: int = 30000):
    return c.request(ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=i32(epoch), instance_id=None, rack_id=None,
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=rebalance_ms)),
        subscribed_topic_names=names, subscribed_topic_regex=regex, server_assignor=None,
        topic_partitions=owned))


RETRIABLE = (ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available)


def first_heartbeat(c: WireClient, group: str, member: str, **kw):
    """The joining heartbeat, again while the coordinator is still loading (Kafka, just started)."""
    deadline = time.monotonic() + 30
    while True:
        r = heartbeat(c, group, member, 0, **kw)
        if r.error_code not in RETRIABLE or time.monotonic() > deadline:
            return r
        time.sleep(0.3)


def test_join_with_an_empty_subscription_is_accepted(bootstrap):
    group = f"cgh-{uuid.uuid4().hex[:8]}"
    with WireClient(bootstrap) as c:
        wait_coordinator(c, group)
        member = str(uuid.uuid4())
        empty = first_heartbeat(c, group, member, names=(), owned=())
        assert (empty.error_code, empty.error_message) == (ErrorCode.none, None)
        assert empty.member_epoch >= 1 and empty.assignment is not None
        assert empty.assignment.topic_partitions == ()
        empty_regex = heartbeat(c, group, str(uuid.uuid4()), 0, regex="", owned=())
        assert empty_regex.error_code == ErrorCode.none
        neither = heartbeat(c, group, str(uuid.uuid4()), 0, owned=())
        assert (neither.error_code, neither.error_message) == (
            ErrorCode.invalid_request, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
        heartbeat(c, group, member, -1)


def test_subscribe_unsubscribe_resubscribe_over_many_topics(bootstrap, admin_client):
    """librdkafka's KIP-848 consumer cycling its subscription over 100 topics: no fatal error,
    and the last subscription's partitions are assigned."""
    from confluent_kafka import Consumer, KafkaError

    base = f"many-{uuid.uuid4().hex[:6]}"
    topics = [f"{base}-{i}" for i in range(100)]
    for t in topics:
        admin_client.create_topic(t, 1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{base}", "group.protocol": "consumer",
                         "auto.offset.reset": "earliest"})
    errors: list[KafkaError] = []
    try:
        for cycle in range(8):
            chosen = topics[cycle * 12:cycle * 12 + 12] if cycle % 2 else topics
            consumer.subscribe(chosen, on_assign=lambda c, ps: None)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                msg = consumer.poll(0.1)
                if msg is not None and msg.error() is not None:
                    errors.append(msg.error())
            consumer.unsubscribe()
            consumer.poll(0.1)
        consumer.subscribe(topics[:2])
        deadline = time.monotonic() + 30
        while {tp.topic for tp in consumer.assignment()} != set(topics[:2]):
            assert time.monotonic() < deadline, f"assignment {consumer.assignment()} errors {errors}"
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is not None:
                errors.append(msg.error())
        assert not [e for e in errors if e.fatal() or e.code() == KafkaError.INVALID_REQUEST], errors
    finally:
        consumer.close()
