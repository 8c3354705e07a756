"""A KIP-848 regex subscription (SubscribedTopicRegex) that changes while two members are
assigned, on kafkalite or Apache Kafka 4.4 (``COMPAT_BROKER=kafka``), with two confluent-kafka
consumers (group.protocol=consumer) in one group: a matching topic is created, a matching topic
is deleted, then both members replace the regex. After each change the members must converge to
what the brokers' uniform assignor gives for the topics the regex matches: every partition owned,
by one member only, the two within one partition of each other; and no partition may be owned by
both members at any moment on the way (each consumer's assignment is sampled at every poll).

Kafka resolves a group's regexes after the heartbeat that needs it and at most every 10 s, so a
new topic can take about 10 s to be assigned, on both brokers; each step allows 60 s.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from compat_tests.test_static_group_rebalance import create_topic

pytestmark = [pytest.mark.groups, pytest.mark.librdkafka, pytest.mark.on_kafka_too, pytest.mark.timeout(300)]

STEP_TIMEOUT_S = 60.0


class Members:
    """The group's two consumers, polled in turn; every sample of their assignments is checked
    for a partition owned twice."""

    def __init__(self, bootstrap: str, group: str) -> None:
        from confluent_kafka import Consumer

        self.errors: list[str] = []
        self.consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                                    "client.id": f"member-{i}", "error_cb": self._error,
                                    "topic.metadata.refresh.interval.ms": 1000})
                          for i in range(2)]
        self.owned_twice: list[str] = []

    def _error(self, e: Any) -> None:
        self.errors.append(str(e))

    def subscribe(self, regex: str) -> None:
        for c in self.consumers:
            c.subscribe([regex])

    def sample(self) -> list[set[tuple[str, int]]]:
        owned = []
        for c in self.consumers:
            m = c.poll(0.1)
            assert m is None or m.error() is None or not m.error().fatal(), m.error()
            owned.append({(p.topic, p.partition) for p in c.assignment()})
        if owned[0] & owned[1]:
            self.owned_twice.append(f"{sorted(owned[0] & owned[1])} at {time.monotonic():.1f}")
        return owned

    def converge(self, what: str, topics: dict[str, int]) -> list[set[tuple[str, int]]]:
        want = {(t, p) for t, n in topics.items() for p in range(n)}
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while True:
            owned = self.sample()
            assert not self.owned_twice, f"{what}: a partition owned by both members: {self.owned_twice}"
            if owned[0] | owned[1] == want and abs(len(owned[0]) - len(owned[1])) <= 1:
                return owned
            assert time.monotonic() < deadline, (
                f"{what}: not converged in {STEP_TIMEOUT_S}s: member 0 {sorted(owned[0])}, "
                f"member 1 {sorted(owned[1])}, want {sorted(want)}")

    def close(self) -> None:
        for c in self.consumers:
            c.close()


def test_members_follow_a_regex_through_topic_changes_and_its_replacement(bootstrap):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    base = f"rx{uuid.uuid4().hex[:10]}"
    a1, a2, a3, b1 = f"{base}_a1", f"{base}_a2", f"{base}_a3", f"{base}_b1"
    for name, n in ((a1, 3), (a2, 2), (b1, 3)):
        create_topic(bootstrap, name, n)
    members = Members(bootstrap, f"g-{base}")
    try:
        members.subscribe(f"^{base}_a.*")
        members.converge("first assignment", {a1: 3, a2: 2})
        create_topic(bootstrap, a3, 4)
        members.converge("a matching topic created", {a1: 3, a2: 2, a3: 4})
        admin.delete_topics([a1])[a1].result(30)
        members.converge("a matching topic deleted", {a2: 2, a3: 4})
        members.subscribe(f"^{base}_(a2|b.*)")
        members.converge("the regex replaced", {a2: 2, b1: 3})
        assert not [e for e in members.errors if "fatal" in e.lower()], members.errors
    finally:
        members.close()
        for f in admin.delete_topics([a2, a3, b1]).values():
            f.result(30)
