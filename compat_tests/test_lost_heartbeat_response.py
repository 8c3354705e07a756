"""A KIP-848 static member whose ConsumerGroupHeartbeat response is lost on the wire, on Kafka 4.4
and kafkalite alike: librdkafka's consumer (group.protocol=consumer, group.instance.id) reaches
the broker only through compat_tests/lossy_proxy.py, which forwards a heartbeat (the broker
applies it), drops its response and leaves the connection silent, as a cut connection does. The
lost answers are a plain heartbeat's and those that bump the member's epoch (a second member
joins, then leaves); in between the consumer keeps consuming and committing. Recorded from the
wire (every heartbeat through the proxy) and from the client: the errors it reports, whether the
member is fenced (FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, UNKNOWN_MEMBER_ID), and whether
a record before a committed offset is delivered again.
"""

from __future__ import annotations

import struct
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.lossy_proxy import Exchange, LossyProxy
from kafkalite.protocol.client import decode_response
from kafkalite.protocol.messages import _reader, _skip_tagged_fields, peek_header, request_type

pytestmark = [pytest.mark.groups, pytest.mark.timeout(240)]

HEARTBEAT = 68
# Heartbeats every second (Kafka's smallest allowed interval is a setting): the test waits for a
# few of them after each loss.
BROKER_CONFIG = {"group.consumer.heartbeat.interval.ms": 1000, "group.consumer.min.heartbeat.interval.ms": 1000,
                 "offsets.topic.num.partitions": 1}
PARTITIONS = 3
RECORDS_PER_PARTITION = 200


def heartbeat_request(frame: bytes) -> Any:
    header, pos = peek_header(frame)
    rtype = request_type(header.api_key, header.api_version)
    pos = _skip_tagged_fields(frame, pos)
    body, _ = _reader(rtype)(frame, pos)
    return body


def heartbeat_response(e: Exchange) -> Any:
    return decode_response(e.api_key, e.api_version, e.response, e.correlation_id)


def bumps_epoch_of(member_id: str):
    """when(): the answer to `member_id`'s heartbeat that gives it a higher epoch than it sent."""
    def when(request: bytes, response: bytes) -> bool:
        sent = heartbeat_request(request)
        if sent.member_id != member_id or sent.member_epoch <= 0:
            return False
        (api_key, version) = struct.unpack_from(">hh", request, 0)
        got = decode_response(api_key, version, response)
        return got.error_code == ErrorCode.none and got.member_epoch > sent.member_epoch
    return when


def of_member(member_id: str):
    """when(): any answer to `member_id`'s heartbeat once it has joined."""
    def when(request: bytes, response: bytes) -> bool:
        sent = heartbeat_request(request)
        return sent.member_id == member_id and sent.member_epoch > 0
    return when


@dataclass
class Etl:
    """A consumer that commits what it consumed after every batch, and notes what it saw."""
    name: str
    consumer: Any
    committed: dict[int, int]          # shared: partition -> highest offset committed by the group
    feed: Any                          # produces a few more records, so there is always something new
    errors: list[str] = field(default_factory=list)
    redelivered: list[tuple[int, int, int]] = field(default_factory=list)  # partition, offset, committed
    consumed: int = 0

    def step(self, seconds: float) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.feed()
            msgs = self.consumer.consume(50, 0.2)
            done: dict[int, int] = {}
            for m in msgs:
                if m.error() is not None:
                    self.errors.append(f"{self.name} consume: {m.error()}")
                    if m.error().fatal():
                        return
                    continue
                p, o = m.partition(), m.offset()
                if o < self.committed.get(p, 0):
                    self.redelivered.append((p, o, self.committed[p]))
                done[p] = max(done.get(p, -1), o + 1)
                self.consumed += 1
            if done:
                try:
                    self.consumer.commit(offsets=[TopicPartition(m.topic(), p, o) for p, o in done.items()],
                                         asynchronous=False)
                except KafkaException as e:
                    self.errors.append(f"{self.name} commit: {e.args[0]}")
                    continue
                for p, o in done.items():
                    self.committed[p] = max(self.committed.get(p, 0), o)


def describe(exchanges: list[Exchange]) -> list[str]:
    """One line per heartbeat seen: who sent which epoch, what came back, lost or not."""
    lines = []
    for e in exchanges:
        sent, got = heartbeat_request(e.request), heartbeat_response(e)
        owned = None if sent.topic_partitions is None else sum(len(t.partitions) for t in sent.topic_partitions)
        lines.append(f"{sent.instance_id or '-'}/{sent.member_id[:8]} epoch {sent.member_epoch} owned {owned}"
                     f" -> {got.error_code.name} epoch {got.member_epoch}{' LOST' if e.lost else ''}")
    return lines


def after_loss(proxy: LossyProxy, member: str, lost: Exchange, count: int) -> list[tuple[Any, Any]]:
    """The member's first `count` heartbeats after the lost one: (request, response) each."""
    mine = [e for e in proxy.exchanges(HEARTBEAT) if heartbeat_request(e.request).member_id == member]
    later = mine[mine.index(lost) + 1:][:count]
    return [(heartbeat_request(e.request), heartbeat_response(e)) for e in later]


def test_static_member_and_lost_heartbeat_responses(start_broker):
    """What Kafka 4.4 does, kafkalite does:
    - a plain heartbeat's answer lost (twice): librdkafka times the request out, reconnects and
      heartbeats again with the same epoch, which is answered as before; no error, no fencing;
    - the answer that bumps the epoch after the member gave a partition away lost: the member
      comes back with its previous epoch and the partitions it owns (they fit its assignment),
      and gets the new epoch;
    - the answer that bumps the epoch when a partition comes back (the other member left) lost:
      librdkafka's next heartbeat repeats the previous epoch without owned partitions (null), so
      the member is fenced (FENCED_MEMBER_EPOCH: Kafka accepts the previous epoch only with owned
      partitions that fit); librdkafka rejoins with epoch 0 under the same member and instance
      id, which is UNRELEASED_INSTANCE_ID (the instance id is not released), a fatal error for
      the consumer;
    - throughout, no record before a committed offset is delivered again.
    """
    from confluent_kafka import Consumer, KafkaError, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    proxy = LossyProxy(watch={HEARTBEAT})
    try:
        broker = start_broker(BROKER_CONFIG, listeners={"LOSSY": "PLAINTEXT"}, advertised={"LOSSY": proxy.address})
        proxy.start(broker.listener("LOSSY"))
        topic = f"etl-{uuid.uuid4().hex[:8]}"
        group = f"etl-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # straight to the broker
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for p in range(PARTITIONS):
            for i in range(RECORDS_PER_PARTITION):
                producer.produce(topic, value=f"{p}:{i}".encode(), partition=p)
        assert producer.flush(30) == 0
        fed = [0]

        def feed() -> None:
            for p in range(PARTITIONS):
                producer.produce(topic, value=f"{p}:more-{fed[0]}".encode(), partition=p)
            fed[0] += 1
            producer.poll(0)

        committed: dict[int, int] = {}
        client_errors: list[KafkaError] = []

        def consumer(instance: str | None) -> Any:
            static = {"group.instance.id": instance} if instance else {}
            return Consumer({
                "bootstrap.servers": proxy.address, "group.id": group, "group.protocol": "consumer",
                **static, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                # a lost answer is noticed after this long (librdkafka's request timeout)
                "socket.timeout.ms": 3000, "max.poll.interval.ms": 60000,
                "error_cb": client_errors.append})

        first = Etl("etl-1", consumer("etl-1"), committed, feed)
        second: Etl | None = None

        def report() -> str:
            etls = [first, *([second] if second else [])]
            return "\n".join([f"heartbeats (first member {first.consumer.memberid()}):",
                               *describe(proxy.exchanges(HEARTBEAT)),
                               "client errors:", *map(str, client_errors), *(e for etl in etls for e in etl.errors),
                               f"redelivered before the committed offset: {[r for etl in etls for r in etl.redelivered]}"])

        def until(condition, seconds: float, *etls: Etl) -> None:
            deadline = time.monotonic() + seconds
            while not condition():
                assert time.monotonic() < deadline, report()
                for etl in etls:
                    etl.step(0.2)

        first.consumer.subscribe([topic])
        until(lambda: len(first.consumer.assignment()) == PARTITIONS and first.consumed >= 30, 60, first)
        member = first.consumer.memberid()

        # 1. a plain heartbeat's answer, twice: the next heartbeat, same epoch, is answered alike
        for n in (1, 2):
            proxy.lose_responses(HEARTBEAT, 1, of_member(member))
            until(lambda n=n: len(proxy.lost) == n and len(after_loss(proxy, member, proxy.lost[-1], 1)) == 1,
                  30, first)
            lost = heartbeat_response(proxy.lost[-1])
            [(sent, got)] = after_loss(proxy, member, proxy.lost[-1], 1)
            assert (sent.member_epoch, got.error_code, got.member_epoch) == (
                lost.member_epoch, ErrorCode.none, lost.member_epoch), report()

        # 2. a second member joins: the first gives a partition away, and the answer to the
        # heartbeat that says so (with its owned partitions), bumping its epoch, is lost
        second = Etl("etl-2", consumer(None), committed, feed)  # dynamic: it leaves at once
        proxy.lose_responses(HEARTBEAT, 1, bumps_epoch_of(member))
        second.consumer.subscribe([topic])
        until(lambda: len(proxy.lost) == 3 and len(after_loss(proxy, member, proxy.lost[-1], 1)) == 1,
              40, first, second)
        before, bumped = heartbeat_request(proxy.lost[-1].request), heartbeat_response(proxy.lost[-1])
        [(sent, got)] = after_loss(proxy, member, proxy.lost[-1], 1)
        assert sent.member_epoch == before.member_epoch and sent.topic_partitions is not None, report()
        assert (got.error_code, got.member_epoch) == (ErrorCode.none, bumped.member_epoch), report()
        until(lambda: len(first.consumer.assignment()) + len(second.consumer.assignment()) == PARTITIONS
              and len(second.consumer.assignment()) > 0, 30, first, second)
        assert not [e for e in client_errors if e.fatal()], report()

        # 3. the second leaves: the first's answer that gives the partition back with a new epoch
        # is lost, and librdkafka repeats its previous epoch without owned partitions
        proxy.lose_responses(HEARTBEAT, 1, bumps_epoch_of(member))
        second.consumer.close()
        until(lambda: any(e.fatal() for e in client_errors) or any(m.startswith("etl-1 consume: ") and "FATAL" in m
                                                                    for m in first.errors), 40, first)
        assert len(proxy.lost) == 4, report()
        before = heartbeat_request(proxy.lost[-1].request)
        (fenced_sent, fenced), (rejoin_sent, rejoin) = after_loss(proxy, member, proxy.lost[-1], 2)
        assert (fenced_sent.member_epoch, fenced_sent.topic_partitions, fenced.error_code) == (
            before.member_epoch, None, ErrorCode.fenced_member_epoch), report()
        assert (rejoin_sent.member_epoch, rejoin_sent.instance_id, rejoin.error_code) == (
            0, "etl-1", ErrorCode.unreleased_instance_id), report()
        print(report())
        assert first.redelivered == [] and second.redelivered == [], report()
        first.consumer.close()
    finally:
        proxy.close()
