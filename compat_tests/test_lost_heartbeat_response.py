"""A KIP-848 static member whose ConsumerGroupHeartbeat response is lost on the wire, on Kafka 4.4
and kafkalite alike: a real consumer (group.protocol=consumer, group.instance.id; librdkafka
in-process, the Java client through compat_tests/groups/members.py) reaches the broker only
through compat_tests/lossy_proxy.py, which forwards a heartbeat (the broker applies it), drops
its response and leaves the connection silent, as a cut connection does. The lost answers are a
plain heartbeat's and those that bump the member's epoch (a second member joins, then leaves);
in between the consumer keeps consuming and committing. Recorded from the wire (every heartbeat
through the proxy) and from the client: the errors it reports, whether the member is fenced
(FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID), and whether a record before a committed offset
is delivered again.
"""

from __future__ import annotations

import struct
import time
import uuid
from typing import Any, Callable

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.groups.members import Member
from compat_tests.lossy_proxy import Exchange, LossyProxy
from kafkalite.protocol.client import decode_response
from kafkalite.protocol.messages import _reader, _skip_tagged_fields, peek_header, request_type

pytestmark = [pytest.mark.groups, pytest.mark.on_kafka_too, pytest.mark.timeout(240)]

HEARTBEAT = 68
# Heartbeats every second (Kafka's smallest allowed interval is a setting): the test waits for a
# few of them after each loss.
BROKER_CONFIG = {"group.consumer.heartbeat.interval.ms": 1000, "group.consumer.min.heartbeat.interval.ms": 1000,
                 "offsets.topic.num.partitions": 1}
PARTITIONS = 3
RECORDS_PER_PARTITION = 200
REQUEST_TIMEOUT_MS = 3000  # how long a client waits for a lost answer


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


class LibrdkafkaEtl:
    """confluent-kafka's consumer, polled here: commits what it consumed after every batch."""

    def __init__(self, bootstrap: str, group: str, topic: str, instance: str | None, feed: Callable[[], None]):
        from confluent_kafka import Consumer

        self.name, self.feed = instance or "dynamic", feed
        self.errors: list[str] = []
        self.fatal = False
        self.committed: dict[int, int] = {}  # partition -> offset committed by this consumer
        self.redelivered: list[tuple[int, int, int]] = []  # partition, offset, committed before
        self.consumed = 0
        static = {"group.instance.id": instance} if instance else {}
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer", **static,
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "max.poll.interval.ms": 60000,
            "socket.timeout.ms": REQUEST_TIMEOUT_MS, "error_cb": self._error})
        self.consumer.subscribe([topic])

    def _error(self, e: Any) -> None:
        from confluent_kafka import KafkaError

        self.errors.append(f"{self.name} error_cb: {e}")
        self.fatal = self.fatal or e.fatal() or e.code() == KafkaError._FATAL

    def assigned(self) -> int:
        return len(self.consumer.assignment())

    def step(self, seconds: float) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.fatal:
            self.feed()
            done: dict[int, int] = {}
            topic = ""
            for m in self.consumer.consume(50, 0.2):
                if m.error() is not None:
                    self._error(m.error())
                    continue
                topic, p, o = m.topic(), m.partition(), m.offset()
                if o < self.committed.get(p, 0):
                    self.redelivered.append((p, o, self.committed[p]))
                done[p] = max(done.get(p, -1), o + 1)
                self.consumed += 1
            if done and not self.fatal:
                try:
                    self.consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in done.items()],
                                         asynchronous=False)
                except KafkaException as e:
                    self.errors.append(f"{self.name} commit: {e.args[0]}")
                    continue
                for p, o in done.items():
                    self.committed[p] = max(self.committed.get(p, 0), o)

    def close(self) -> None:
        if not self.fatal:
            self.consumer.close()


class JavaEtl:
    """The Java client's KafkaConsumer (compat_tests/java/GroupMember.java), told to commit its
    positions every step; what it saw is read from its events, in order."""

    def __init__(self, bootstrap: str, group: str, topic: str, instance: str | None, feed: Callable[[], None]):
        self.name, self.feed = instance or "dynamic", feed
        self.member = Member("java", bootstrap, group, topic, protocol="consumer", instance_id=instance,
                             request_timeout_ms=REQUEST_TIMEOUT_MS, client_id=f"java-{self.name}",
                             report_commit_failures=True)

    @property
    def fatal(self) -> bool:
        return any(e.get("event") in ("error", "exit") for e in self._events())

    def _events(self) -> list[dict]:
        with self.member.cond:
            return list(self.member.events)

    @property
    def errors(self) -> list[str]:
        return [f"{self.name} {e}" for e in self._events() if e.get("event") in ("error", "commit_failed")]

    @property
    def consumed(self) -> int:
        return len(self.member.records())

    @property
    def redelivered(self) -> list[tuple[int, int, int]]:
        """Records below what this member had committed for their partition: a commit covers the
        records seen so far of the partitions it owned then."""
        owned: set[int] = set()
        seen: dict[int, int] = {}
        committed: dict[int, int] = {}
        again = []
        for e in self._events():
            kind = e.get("event")
            if kind == "assigned":
                owned = set(e["partitions"])
            elif kind == "record":
                p, o = e["partition"], e["offset"]
                if o < committed.get(p, 0):
                    again.append((p, o, committed[p]))
                seen[p] = max(seen.get(p, 0), o + 1)
            elif kind == "committed":
                committed.update({p: seen[p] for p in owned if p in seen})
        return again

    def assigned(self) -> int:
        return len(self.member.assignment)

    def step(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.fatal:
            self.feed()
            if self.member.proc.poll() is None:
                try:
                    self.member._send("commit")
                except OSError:
                    pass
            time.sleep(0.2)

    def close(self) -> None:
        self.member.close()


CLIENTS = {"librdkafka": LibrdkafkaEtl, "java": JavaEtl}


def describe(exchanges: list[Exchange]) -> list[str]:
    """One line per heartbeat seen: who sent which epoch, what came back, lost or not."""
    lines = []
    for e in exchanges:
        sent, got = heartbeat_request(e.request), heartbeat_response(e)
        owned = None if sent.topic_partitions is None else sum(len(t.partitions) for t in sent.topic_partitions)
        lines.append(f"{e.at - exchanges[0].at:6.2f}s {sent.instance_id or '-'}/{sent.member_id[:8]} epoch {sent.member_epoch} owned {owned}"
                     f" -> {got.error_code.name} epoch {got.member_epoch}{' LOST' if e.lost else ''}")
    return lines


def after_loss(proxy: LossyProxy, member: str, lost: Exchange, count: int) -> list[tuple[Any, Any]]:
    """The member's first `count` heartbeats after the lost one: (request, response) each."""
    mine = [e for e in proxy.exchanges(HEARTBEAT) if heartbeat_request(e.request).member_id == member]
    later = mine[mine.index(lost) + 1:][:count]
    return [(heartbeat_request(e.request), heartbeat_response(e)) for e in later]


def member_of(proxy: LossyProxy, instance: str) -> str | None:
    """The member id the coordinator answered to the static member `instance`'s join."""
    for e in proxy.exchanges(HEARTBEAT):
        sent, got = heartbeat_request(e.request), heartbeat_response(e)
        if sent.instance_id == instance and got.error_code == ErrorCode.none and got.member_id:
            return got.member_id
    return None


@pytest.mark.parametrize("client", list(CLIENTS))
def test_static_member_and_lost_heartbeat_responses(start_broker, client):
    """What Kafka 4.4 does, kafkalite does, for each client:
    - a plain heartbeat's answer lost (twice): the client times the request out, reconnects and
      heartbeats again with the same epoch, which is answered as before; no fencing;
    - the answer that bumps the epoch after the member gave a partition away (a second member
      joined) lost: the member comes back with its previous epoch and the partitions it owns
      (they fit its assignment), and gets the new epoch; meanwhile its commits, made with the
      previous epoch, are accepted (KIP-1251: it held those partitions at that epoch), so the
      clients report no error up to here;
    - the answer that bumps the epoch when the partition comes back (the other member left)
      lost: a retry with the previous epoch and the owned partitions gets the new epoch; a retry
      without them (null: librdkafka's, which sends them only when they changed) is fenced
      (FENCED_MEMBER_EPOCH: Kafka accepts the previous epoch only with owned partitions that
      fit), and the rejoin with epoch 0 under the same member and instance id is
      UNRELEASED_INSTANCE_ID (the instance id is not released), a fatal error for the consumer;
    - throughout, no record before an offset the member committed is delivered to it again.
    """
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    etl_of = CLIENTS[client]
    proxy = LossyProxy(watch={HEARTBEAT})
    etls: list[Any] = []
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

        def report() -> str:
            return "\n".join([f"{client} heartbeats through the proxy ({proxy.connections_accepted} connections):",
                               *describe(proxy.exchanges(HEARTBEAT)),
                               "client errors:", *(e for etl in etls for e in etl.errors),
                               f"redelivered before a committed offset: {[r for etl in etls for r in etl.redelivered]}"])

        def until(condition: Callable[[], bool], seconds: float) -> None:
            deadline = time.monotonic() + seconds
            while not condition():
                assert time.monotonic() < deadline, report()
                for etl in etls:
                    etl.step(0.2 / len(etls))

        first = etl_of(proxy.address, group, topic, "etl-1", feed)
        etls.append(first)
        until(lambda: first.assigned() == PARTITIONS and first.consumed >= 30, 60)
        member = member_of(proxy, "etl-1")
        assert member is not None, report()

        # 1. a plain heartbeat's answer, twice: the next heartbeat, same epoch, is answered alike
        for n in (1, 2):
            proxy.lose_responses(HEARTBEAT, 1, of_member(member))
            until(lambda n=n: len(proxy.lost) == n and len(after_loss(proxy, member, proxy.lost[-1], 1)) == 1, 30)
            lost = heartbeat_response(proxy.lost[-1])
            [(sent, got)] = after_loss(proxy, member, proxy.lost[-1], 1)
            assert (sent.member_epoch, got.error_code, got.member_epoch) == (
                lost.member_epoch, ErrorCode.none, lost.member_epoch), report()

        # 2. a second member joins: the first gives a partition away, and the answer to the
        # heartbeat that says so (with its owned partitions), bumping its epoch, is lost
        proxy.lose_responses(HEARTBEAT, 1, bumps_epoch_of(member))
        second = etl_of(proxy.address, group, topic, None, feed)  # dynamic: it leaves at once
        etls.append(second)
        until(lambda: len(proxy.lost) == 3 and len(after_loss(proxy, member, proxy.lost[-1], 1)) == 1, 40)
        before, bumped = heartbeat_request(proxy.lost[-1].request), heartbeat_response(proxy.lost[-1])
        [(sent, got)] = after_loss(proxy, member, proxy.lost[-1], 1)
        assert sent.member_epoch == before.member_epoch and sent.topic_partitions is not None, report()
        assert (got.error_code, got.member_epoch) == (ErrorCode.none, bumped.member_epoch), report()
        until(lambda: first.assigned() + second.assigned() == PARTITIONS and second.assigned() > 0, 30)
        # no error at all so far: commits made with the previous epoch while the bump was lost
        # are accepted for the partitions the member held (KIP-1251)
        assert [e for etl in etls for e in etl.errors] == [], report()

        # 3. the second leaves: the first's answer that gives the partition back with a new epoch
        # is lost
        proxy.lose_responses(HEARTBEAT, 1, bumps_epoch_of(member))
        etls.remove(second)
        second.close()
        until(lambda: len(proxy.lost) == 4 and len(after_loss(proxy, member, proxy.lost[-1], 1)) == 1, 30)
        before, bumped = heartbeat_request(proxy.lost[-1].request), heartbeat_response(proxy.lost[-1])
        [(sent, got)] = after_loss(proxy, member, proxy.lost[-1], 1)
        assert sent.member_epoch == before.member_epoch, report()
        if sent.topic_partitions is not None:
            assert (got.error_code, got.member_epoch) == (ErrorCode.none, bumped.member_epoch), report()
            until(lambda: first.assigned() == PARTITIONS, 30)
            assert not first.fatal, report()
        else:
            assert got.error_code == ErrorCode.fenced_member_epoch, report()
            until(lambda: first.fatal, 30)
            [_, (rejoin_sent, rejoin)] = after_loss(proxy, member, proxy.lost[-1], 2)
            assert (rejoin_sent.member_epoch, rejoin_sent.instance_id, rejoin.error_code) == (
                0, "etl-1", ErrorCode.unreleased_instance_id), report()
        first.step(2)
        print(report())
        assert [r for etl in [first, second] for r in etl.redelivered] == [], report()
        # what each client sends after a lost epoch bump (the same on both brokers): librdkafka
        # leaves out its unchanged owned partitions, Java resends them after a failed heartbeat
        assert (sent.topic_partitions is None) == (client == "librdkafka"), report()
    finally:
        for etl in etls:
            etl.close()
        proxy.close()
