"""KIP-848 ConsumerGroupHeartbeat as Kafka 4.4 validates and answers it, at the protocol level
and through librdkafka's consumer: a member may (re-)join with an empty subscription (Kafka's
throwIfConsumerGroupHeartbeatRequestIsInvalid refuses only a first heartbeat that sets neither
names nor regex), which a consumer that subscribes, unsubscribes and subscribes again over many
topics does; kafkalite answered INVALID_REQUEST, a fatal error for the client. A member whose
epoch-bumping response was lost comes back with its previous epoch: accepted only with owned
partitions that fit its assignment; kafkalite accepted it without them, and let a static member
rejoin over its own unreleased instance id. A member asked to revoke again after reporting a
revocation done stays at its epoch, so the retry of that heartbeat is answered; kafkalite bumped
the epoch and fenced the retry.
"""

from __future__ import annotations

import datetime
import time
import uuid

import pytest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest, TopicPartitions
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta

from compat_tests.test_streams_groups import wait_coordinator
from kafkalite.protocol.client import WireClient

pytestmark = [pytest.mark.groups, pytest.mark.on_kafka_too, pytest.mark.timeout(180)]


def heartbeat(c: WireClient, group: str, member: str, epoch: int, *, names=None, regex=None, owned=None,
              rebalance_ms: int = 30000, instance: str | None = None):
    return c.request(ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=i32(epoch), instance_id=instance, rack_id=None,
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


def owned_of(assignment) -> tuple[TopicPartitions, ...]:
    """The owned-partitions field that acknowledges a response's assignment."""
    return tuple(TopicPartitions(topic_id=tp.topic_id, partitions=tuple(tp.partitions))
                 for tp in assignment.topic_partitions)


def bumped_epoch_then_lost(c: WireClient, group: str, member: str, first: str, second: str, instance=None):
    """A member that owns `first`'s partitions at epoch E subscribes to `second` as well: the
    coordinator answers epoch E+1 with both topics' partitions, an answer the test treats as
    lost. Returns (E, what the member owns at E, the E+1 answer)."""
    joined = first_heartbeat(c, group, member, names=(first,), owned=(), instance=instance)
    assert joined.error_code == ErrorCode.none and joined.assignment is not None, joined
    owned = owned_of(joined.assignment)
    ack = heartbeat(c, group, member, joined.member_epoch, owned=owned, instance=instance)
    assert ack.error_code == ErrorCode.none and ack.member_epoch == joined.member_epoch, ack
    bumped = heartbeat(c, group, member, joined.member_epoch, names=(first, second), owned=owned,
                       instance=instance)
    deadline = time.monotonic() + 30
    # Kafka may compute the new target assignment a heartbeat or two later
    while bumped.error_code == ErrorCode.none and bumped.member_epoch == joined.member_epoch:
        assert time.monotonic() < deadline, bumped
        time.sleep(0.2)
        bumped = heartbeat(c, group, member, joined.member_epoch, owned=owned, instance=instance)
    assert bumped.error_code == ErrorCode.none and bumped.member_epoch > joined.member_epoch, bumped
    return joined.member_epoch, owned, bumped


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
def test_previous_epoch_after_a_lost_response(bootstrap, create_topic, static):
    """The response that bumped a member's epoch is lost and the member heartbeats again with
    its previous epoch: Kafka accepts it when the member sends the partitions it owns and they
    are a subset of its assignment (throwIfConsumerGroupMemberEpochIsInvalid), and fences it
    (FENCED_MEMBER_EPOCH) when the owned partitions are left out (null: isSubset is false) or
    name a partition it is not assigned."""
    first = create_topic(f"lost-a-{uuid.uuid4().hex[:6]}", 2)
    second = create_topic(f"lost-b-{uuid.uuid4().hex[:6]}", 2)
    group = f"lost-{uuid.uuid4().hex[:8]}"
    instance = f"i-{uuid.uuid4().hex[:6]}" if static else None
    with WireClient(bootstrap) as c:
        wait_coordinator(c, group)
        member = str(uuid.uuid4())
        previous, owned, bumped = bumped_epoch_then_lost(c, group, member, first, second, instance)
        again = heartbeat(c, group, member, previous, owned=owned, instance=instance)
        assert (again.error_code, again.member_epoch) == (ErrorCode.none, bumped.member_epoch), again
        unknown_owned = heartbeat(c, group, member, previous, instance=instance)
        assert unknown_owned.error_code == ErrorCode.fenced_member_epoch, unknown_owned
        foreign = TopicPartitions(topic_id=uuid.uuid4(), partitions=(i32(0),))
        not_assigned = heartbeat(c, group, member, previous, owned=owned + (foreign,), instance=instance)
        assert not_assigned.error_code == ErrorCode.fenced_member_epoch, not_assigned
        # the member is still the group's: its current epoch is answered
        current = heartbeat(c, group, member, bumped.member_epoch, owned=owned_of(bumped.assignment),
                            instance=instance)
        assert (current.error_code, current.member_epoch) == (ErrorCode.none, bumped.member_epoch), current
        # rejoining with epoch 0 and its own member id while still in the group: a dynamic member
        # gets its assignment back; a static member's instance id is not released (only a leave
        # with epoch -2 releases it), so Kafka refuses it
        rejoin = heartbeat(c, group, member, 0, names=(first, second), owned=(), instance=instance)
        if static:
            assert (rejoin.error_code, rejoin.error_message) == (
                ErrorCode.unreleased_instance_id,
                f"Static member {member} with instance id {instance} cannot join the group because the instance "
                f"id is owned by {member} member."), rejoin
            left = heartbeat(c, group, member, -2, instance=instance)
            assert (left.error_code, left.member_epoch) == (ErrorCode.none, -2), left
            back = heartbeat(c, group, member, 0, names=(first, second), owned=(), instance=instance)
            assert back.error_code == ErrorCode.none and back.assignment is not None, back
            assert sorted(len(tp.partitions) for tp in back.assignment.topic_partitions) == [2, 2], back
        else:
            assert (rejoin.error_code, rejoin.member_epoch) == (ErrorCode.none, bumped.member_epoch), rejoin
        heartbeat(c, group, member, -1, instance=instance)


def test_regex_subscription_changes_get_every_partition(bootstrap, create_topic):
    """librdkafka's KIP-848 consumer moving its regex from one topic to another and then to both
    is assigned every partition the regex matches each time (2, 2, then 4): the report of a
    regex change that was assigned 1 of its 2 partitions did not reproduce on either broker."""
    from confluent_kafka import Consumer

    base = f"rx{uuid.uuid4().hex[:6]}"
    first = create_topic(f"{base}-a", 2)
    second = create_topic(f"{base}-b", 2)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{base}", "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000})
    try:
        for regex, topics in ((f"^{base}-a$", {first}), (f"^{base}-b$", {second}),
                              (f"^{base}-(a|b)$", {first, second})):
            consumer.subscribe([regex])
            want = {(t, p) for t in topics for p in (0, 1)}
            deadline = time.monotonic() + 45
            while {(tp.topic, tp.partition) for tp in consumer.assignment()} != want:
                assert time.monotonic() < deadline, (regex, consumer.assignment())
                msg = consumer.poll(0.2)
                assert msg is None or msg.error() is None or not msg.error().fatal(), msg.error()
    finally:
        consumer.close()


def test_commit_with_the_previous_epoch_after_a_lost_response(bootstrap, create_topic):
    """KIP-1251 (Kafka 4.4): a member whose epoch-bumping answer was lost commits with its
    previous epoch; the commit is accepted for partitions it held at that epoch, and refused
    (STALE_MEMBER_EPOCH) for a partition given with the new epoch, for an epoch before the
    assignment, and for an epoch newer than the member's."""
    from kio.schema.offset_commit.v9.request import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                     OffsetCommitRequestTopic)

    first = create_topic(f"commit-a-{uuid.uuid4().hex[:6]}", 2)
    second = create_topic(f"commit-b-{uuid.uuid4().hex[:6]}", 2)
    group = f"commit-{uuid.uuid4().hex[:8]}"
    with WireClient(bootstrap) as c:
        wait_coordinator(c, group)
        member = str(uuid.uuid4())
        previous, _owned, bumped = bumped_epoch_then_lost(c, group, member, first, second)

        def commit(topic: str, epoch: int) -> ErrorCode:
            r = c.request(OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=i32(epoch), member_id=member, group_instance_id=None,
                topics=(OffsetCommitRequestTopic(name=topic, partitions=(OffsetCommitRequestPartition(
                    partition_index=i32(0), committed_offset=1, committed_leader_epoch=i32(-1),
                    committed_metadata=None),)),)))
            return r.topics[0].partitions[0].error_code

        assert commit(first, previous) == ErrorCode.none
        assert commit(second, previous) == ErrorCode.stale_member_epoch
        assert commit(first, bumped.member_epoch) == ErrorCode.none
        assert commit(first, previous - 1) == ErrorCode.stale_member_epoch
        assert commit(first, bumped.member_epoch + 1) == ErrorCode.stale_member_epoch
        heartbeat(c, group, member, -1)


def test_asked_to_revoke_again_keeps_the_epoch_and_a_lost_answer_is_retried(bootstrap, create_topic):
    """A member asked to revoke reports it done after a third member joined, so the target takes
    more away: Kafka keeps the member at its epoch (CurrentAssignmentBuilder revokes at the
    member's own epoch) and the same heartbeat sent again, its answer lost, is answered. kafkalite
    moved the member to epoch+1 and fenced that retry (FENCED_MEMBER_EPOCH): franz-go's consumer
    then dropped its partitions without committing and read their records again."""
    topic = create_topic(f"again-{uuid.uuid4().hex[:6]}", 6)
    group = f"again-{uuid.uuid4().hex[:8]}"
    a, b, c = (str(uuid.uuid4()) for _ in range(3))

    def count(r) -> int:
        return sum(len(tp.partitions) for tp in r.assignment.topic_partitions)

    def until(fn, done, what: str):
        deadline = time.monotonic() + 30
        r = fn()
        # Kafka may compute a new target assignment a heartbeat or two later
        while not (r.error_code == ErrorCode.none and done(r)):
            assert r.error_code == ErrorCode.none and time.monotonic() < deadline, (what, r)
            time.sleep(0.2)
            r = fn()
        return r

    with WireClient(bootstrap) as conn:
        wait_coordinator(conn, group)
        joined = first_heartbeat(conn, group, a, names=(topic,), owned=())
        assert joined.error_code == ErrorCode.none, joined
        everything = until(lambda: heartbeat(conn, group, a, joined.member_epoch, names=(topic,), owned=()),
                           lambda r: r.assignment is not None and count(r) == 6, "a gets every partition")
        epoch = everything.member_epoch
        owned = owned_of(everything.assignment)
        b_joined = first_heartbeat(conn, group, b, names=(topic,), owned=())
        assert b_joined.error_code == ErrorCode.none, b_joined
        asked = until(lambda: heartbeat(conn, group, a, epoch, names=(topic,), owned=owned),
                      lambda r: r.assignment is not None and count(r) < 6, "a is asked to revoke")
        assert asked.member_epoch == epoch, asked
        kept = owned_of(asked.assignment)
        b_epoch = until(lambda: heartbeat(conn, group, b, b_joined.member_epoch, names=(topic,), owned=()),
                        lambda r: r.member_epoch > epoch, "b's target").member_epoch
        c_joined = first_heartbeat(conn, group, c, names=(topic,), owned=())
        assert c_joined.error_code == ErrorCode.none, c_joined
        until(lambda: heartbeat(conn, group, c, c_joined.member_epoch or b_epoch, names=(topic,), owned=()),
              lambda r: r.member_epoch > b_epoch, "c's target")
        # a reports the first revocation done: the target now takes more away, at the same epoch
        again = heartbeat(conn, group, a, epoch, names=(topic,), owned=kept)
        assert (again.error_code, again.member_epoch) == (ErrorCode.none, epoch), again
        assert again.assignment is not None and count(again) < count(asked), again
        # that answer is lost: the member sends the same heartbeat again
        retried = heartbeat(conn, group, a, epoch, names=(topic,), owned=kept)
        assert (retried.error_code, retried.member_epoch) == (ErrorCode.none, epoch), retried
        for member in (a, b, c):
            heartbeat(conn, group, member, -1)
