"""librdkafka's static-membership scenario (tests/0102-static_group_rebalance.c, v2.15.0,
do_test_static_group_rebalance, classic protocol) with confluent-kafka, on a cluster of three
nodes: kafkalite ``--nodes 3`` or three Apache Kafka 4.4 processes (compat_tests/cluster.py).
Like the rest of the groups suite it runs on kafkalite in the full command; ``COMPAT_BROKER=kafka``
runs it on Kafka (three JVMs, about a minute, so not in the full command's Kafka pass).

Two consumers with group.instance.id consumer1 and consumer2 subscribe to ``^<topic>.*``
(session.timeout.ms 6000, max.poll.interval.ms 9000, topic.metadata.refresh.interval.ms 2000,
metadata.max.age.ms 5000) and go through 0102's steps: the first assignment; consumer2's restart
with its instance id, which must give it its partitions back with no rebalance of consumer1; a
new topic matching the pattern (both revoked and assigned); consumer2's unsubscribe (LeaveGroup)
and subscribe; consumer2 past max.poll.interval.ms; consumer1 closed and evicted after the
session timeout. As in 0102, each member has one expected rebalance event at a time, set by the
scenario before it waits: any other event fails it (0102's rebalance_cb), and so does a wait
that times out, any consumer error, and a record read twice or not at all.

0102's rebalance callback calls rd_kafka_yield so that a poll serves one rebalance event and
returns to the test; confluent-kafka does exactly that when a callback raises (and poll()
raises it again), which is how the callbacks here yield. 0102 runs on clusters with Kafka's
default group.initial.rebalance.delay.ms (3000): the two members subscribe together and must
form the first generation together, which both brokers are given here. With no delay (the
default of kafkalite and of the suite's Kafka) the first step depends on when each member's
first JoinGroup leaves: librdkafka holds a pattern subscription's first join until it has
up-to-date metadata, and in the runs that failed so the second member's came about 1.95 s after
the first's (topic.metadata.refresh.interval.ms is 2 s), beyond kafkalite's 100 ms window for
members forming a group together: the first member forms the first generation alone.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from compat_tests.brokers import requires_own_broker
from compat_tests.cluster import Cluster
from compat_tests.waiting import wait_until

pytestmark = [pytest.mark.groups, pytest.mark.librdkafka, pytest.mark.timeout(600)]

ASSIGN, REVOKE = "ASSIGN", "REVOKE"
RECORDS = 100
SESSION_TIMEOUT_MS = 6000
MAX_POLL_INTERVAL_MS = 9000
# 0102's settings (test_create_consumer sets session.timeout.ms to 6000 as well)
CONSUMER_CONFIG = {
    "max.poll.interval.ms": MAX_POLL_INTERVAL_MS, "session.timeout.ms": SESSION_TIMEOUT_MS,
    "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 2000,
    "metadata.max.age.ms": 5000, "enable.partition.eof": True, "group.protocol": "classic",
}
# Kafka's default, which librdkafka's test clusters keep (kafkalite's default is 0)
BROKER_CONFIG = {"group.initial.rebalance.delay.ms": "3000"}
POLL_SLICE_S = 0.19  # below confluent-kafka's 200 ms poll chunks (see Member.poll)


class RebalanceYield(Exception):
    """Raised by the rebalance callbacks so that poll() returns after one event (rd_kafka_yield)."""


class ScenarioFailed(AssertionError):
    pass


@dataclass
class Member:
    """One consumer of the scenario (0102's _consumer_t): the rebalance event it expects next,
    when it was last assigned and revoked, and every event it saw (for the failure message)."""

    name: str
    bootstrap: str
    group: str
    pattern: str
    testid: str
    seen: list[tuple[str, int, int]]  # (topic, partition, offset) of every record of the test, by both
    consumer: Any = None
    expected: str | None = None  # 0102's expected_rb_event; None is RD_KAFKA_RESP_ERR_NO_ERROR
    step: str = ""
    events: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    assigned_at: float = 0.0
    revoked_at: float = 0.0
    partition_cnt: int = 0
    t0: float = field(default_factory=time.monotonic)
    yielding: bool = True

    def create(self) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer({**CONSUMER_CONFIG, "bootstrap.servers": self.bootstrap, "group.id": self.group,
                                  "group.instance.id": self.name, "client.id": self.name})
        self.yielding = True

    def subscribe(self) -> None:
        self.consumer.subscribe([self.pattern], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_revoke)  # a lost assignment is a revoke in C

    def _note_event(self, kind: str, partitions: list[Any]) -> None:
        self.events.append(f"{self.elapsed()} {self.step}: {kind} "
                           f"{sorted((p.topic[-3:], p.partition) for p in partitions)}")
        if kind != self.expected:  # 0102: "Expected rebalance event %s got %s"
            self.unexpected.append(f"{self.name} at {self.step!r}: expected "
                                   f"{self.expected or 'no rebalance event'}, got {kind}")
        self.expected = None

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self._note_event(ASSIGN, partitions)
        self.partition_cnt = len(partitions)
        self.assigned_at = time.monotonic()
        consumer.assign(partitions)
        if self.yielding:
            raise RebalanceYield()

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self._note_event(REVOKE, partitions)
        self.revoked_at = time.monotonic()
        consumer.unassign()
        if self.yielding:
            raise RebalanceYield()

    def elapsed(self) -> str:
        return f"{time.monotonic() - self.t0:.1f}s"

    def poll(self, timeout: float) -> Any:
        """rd_kafka_consumer_poll(timeout) with 0102's yield: a record or an error, or None when
        the timeout passed or a rebalance event was served. confluent-kafka splits a poll of
        200 ms or more into 200 ms polls and goes on after a callback raised (dropping a record
        that comes meanwhile); a shorter poll is one rd_kafka_consumer_poll, which a yield ends."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                m = self.consumer.poll(min(POLL_SLICE_S, max(0.0, deadline - time.monotonic())))
            except RebalanceYield:
                m = None
                break
            if m is not None or time.monotonic() >= deadline:
                break
        check(self)
        return m

    def poll_once(self, timeout: float) -> str | None:
        """0102's test_consumer_poll_once: a record of the test is noted, an EOF is said, any
        other error fails."""
        m = self.poll(timeout)
        if m is None:
            return None
        if m.error() is not None:
            if m.error().name() == "_PARTITION_EOF":
                return "eof"
            self.fail(str(m.error()))
        self.note(m)
        return "record"

    def note(self, m: Any) -> None:
        if m.value() is not None and m.value().decode().startswith(f"testid={self.testid} "):
            self.seen.append((m.topic(), m.partition(), m.offset()))

    def close(self) -> None:
        """test_consumer_close: the close serves the revoke event (with no yield: nothing polls)."""
        self.yielding = False
        self.consumer.close()
        self.consumer = None
        check(self)

    def fail(self, what: str) -> None:
        raise ScenarioFailed(f"{self.name} at {self.step!r}, {self.elapsed()}: {what}; events: {self.events}")


def check(m: Member) -> None:
    if m.unexpected:
        m.fail(m.unexpected[0])


def wait_rebalance(m: Member, start: float, target: str, timeout: float | None) -> bool:
    """0102's static_member_wait_rebalance0: poll `m` (1 s at a time) until its assign or revoke
    time is past `start`; False when `timeout` (seconds; None: no limit) passes first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while deadline is None or time.monotonic() <= deadline:
        if getattr(m, target) > start:
            return True
        m.poll_once(1.0)
    return False


def expect_rebalance(m: Member, start: float, target: str, timeout: float | None) -> None:
    """0102's static_member_expect_rebalance."""
    if not wait_rebalance(m, start, target, timeout):
        m.fail(f"timed out waiting for {m.expected} ({target})")


def wait_polling_other(m: Member, other: Member, start: float, target: str) -> None:
    """0102's loops that wait for `m`'s event a second at a time and poll `other` (0 ms) in
    between, so that the other static member stays within max.poll.interval.ms."""
    while not wait_rebalance(m, start, target, 1.0):
        other.poll_once(0)


def both_expect(event: str, first: Member, other: Member, start: float) -> None:
    """0102's pair of waits for an event both members expect: `first`'s while `other` is polled
    in between, then `other`'s."""
    first.expected = other.expected = event
    target = "assigned_at" if event == ASSIGN else "revoked_at"
    wait_polling_other(first, other, start, target)
    expect_rebalance(other, start, target, None)


def steps(name: str, *members: Member) -> None:
    for m in members:
        m.step = name
        m.events.append(f"{m.elapsed()} -- {name}")


def serve_queue(m: Member) -> None:
    """0102's test_consumer_poll("serve.queue", ..., partition_cnt EOFs): every poll must
    return something within 10 s."""
    eofs = 0
    while eofs < m.partition_cnt:
        r = m.poll_once(10.0)
        if r is None:
            m.fail(f"consumer_poll() timeout ({eofs}/{m.partition_cnt} eof)")
        eofs += r == "eof"


def verify_records(seen: list[tuple[str, int, int]], what: str) -> None:
    """test_msgver_verify(TEST_MSGVER_ALL): every record once."""
    if len(seen) != RECORDS or len(set(seen)) != len(seen):
        raise ScenarioFailed(f"{what}: {len(seen)} records read, {len(set(seen))} distinct, {RECORDS} produced")


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    """test_create_topic_wait_exists: created, and led on every partition."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)

    def led() -> bool:
        t = admin.list_topics(name, timeout=5).topics.get(name)
        return t is not None and t.error is None and len(t.partitions) == partitions and all(
            p.leader >= 0 for p in t.partitions.values())
    wait_until(led, 30, 0.1, f"{name} with {partitions} led partitions")


def static_group_rebalance(bootstrap: str) -> dict[str, float]:
    """0102's do_test_static_group_rebalance; raises ScenarioFailed at the first step that does
    not go as 0102 expects. Returns the two durations 0102 times (and only warns about on CI):
    consumer2's restart (within session.timeout.ms) and consumer1's eviction (2 s to 10 s)."""
    from confluent_kafka import Producer

    testid = uuid.uuid4().hex[:12]
    topic = f"static-0102-{testid}"
    create_topic(bootstrap, topic, 3)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):  # test_produce_msgs_easy: no key, the partitioner spreads them
        producer.produce(topic, value=f"testid={testid} msg={i}".encode())
    assert producer.flush(30) == 0
    producer.close()

    seen: list[tuple[str, int, int]] = []
    c = [Member(f"consumer{i + 1}", bootstrap, topic, f"^{topic}.*", testid, seen) for i in range(2)]
    timings: dict[str, float] = {}
    try:
        c[0].create()
        c[1].create()
        wait_until(lambda: topic in c[1].consumer.list_topics(topic, timeout=5).topics, 5, 0.1, f"{topic} known")
        c[0].subscribe()
        c[1].subscribe()

        steps("first assignment", *c)
        start = time.monotonic()
        both_expect(ASSIGN, c[0], c[1], start)
        serve_queue(c[0])
        serve_queue(c[1])
        verify_records(seen, "first verify")

        steps("consumer restart", *c)  # only consumer2 sees rebalance events
        c[1].expected = REVOKE
        t_close = time.monotonic()
        c[1].close()
        c[1].create()
        c[1].subscribe()
        c[1].expected = ASSIGN
        start = time.monotonic()
        wait_polling_other(c[1], c[0], start, "assigned_at")
        timings["restart_ms"] = (time.monotonic() - t_close) * 1000  # 0102: 0..6000

        steps("subscription expansion", *c)
        create_topic(bootstrap, f"{topic}new", 1)
        start = time.monotonic()
        both_expect(REVOKE, c[0], c[1], start)
        both_expect(ASSIGN, c[0], c[1], start)

        steps("consumer unsubscribe", *c)  # a LeaveGroup, which bumps the generation
        start = time.monotonic()
        c[1].consumer.unsubscribe()
        c[0].expected = c[1].expected = REVOKE
        expect_rebalance(c[1], start, "revoked_at", None)
        expect_rebalance(c[0], start, "revoked_at", None)
        c[0].expected = ASSIGN  # a generation of consumer1 alone
        expect_rebalance(c[0], start, "assigned_at", None)
        steps("consumer resubscribe", *c)
        start = time.monotonic()
        c[1].subscribe()
        c[0].expected = REVOKE
        expect_rebalance(c[0], start, "revoked_at", None)
        both_expect(ASSIGN, c[1], c[0], start)

        # consumer2 stops polling: past max.poll.interval.ms consumer1 gets every partition
        steps("max poll violation", *c)
        start = time.monotonic()
        c[1].expected = c[0].expected = REVOKE
        expect_rebalance(c[0], start, "revoked_at", None)
        c[0].expected = ASSIGN
        expect_rebalance(c[0], start, "assigned_at", None)
        # consumer2 polls again and rejoins
        steps("rejoin after max poll violation", *c)
        start = time.monotonic()
        c[0].expected = REVOKE
        poll_expect_err(c[1], 1.0, "_MAX_POLL_EXCEEDED")
        wait_polling_other(c[0], c[1], start, "revoked_at")
        expect_rebalance(c[1], start, "revoked_at", None)
        both_expect(ASSIGN, c[1], c[0], start)

        # consumer1 closes, a static member sending no LeaveGroup: evicted after its session
        steps("session timeout eviction", *c)
        start = time.monotonic()
        c[0].expected = REVOKE
        c[0].close()
        c[1].expected = REVOKE
        expect_rebalance(c[1], start, "revoked_at", 2 * 7.0)
        c[1].expected = ASSIGN
        expect_rebalance(c[1], start, "assigned_at", 2.0)
        timings["eviction_ms"] = (time.monotonic() - start) * 1000  # 0102: 2000..10000

        steps("final close", c[1])
        c[1].expected = REVOKE
        c[1].close()
        verify_records(seen, "final validation")
    except AssertionError as e:
        raise ScenarioFailed(f"group {topic}: {e}") from e
    finally:
        for m in c:
            if m.consumer is not None:
                try:
                    m.consumer.close()
                except Exception:  # noqa: BLE001 - closing after a failure; the failure is what is raised
                    pass
    return timings


def poll_expect_err(m: Member, timeout: float, error: str) -> None:
    """0102's test_consumer_poll_expect_err: within `timeout`, the error `error`; any other
    error fails, records are noted."""
    deadline = time.monotonic() + timeout
    while True:
        msg = m.poll(timeout)
        if msg is not None and msg.error() is not None:
            if msg.error().name() == error:
                return
            m.fail(f"unexpected error {msg.error()} where {error} was expected")
        if msg is not None:
            m.note(msg)
        if time.monotonic() > deadline:
            m.fail(f"expected error {error} not seen in {timeout} s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    requires_own_broker("a cluster of three nodes")
    c = Cluster(tmp_path_factory.mktemp("cluster"), config=BROKER_CONFIG)
    try:
        yield c
    finally:
        c.close()


def test_static_group_rebalance(cluster):
    timings = static_group_rebalance(cluster.bootstrap)
    print(f"0102 timings: {timings}")

