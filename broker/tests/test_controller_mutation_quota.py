"""The controller mutation quota (KIP-599): Kafka's TokenBucket arithmetic and the strict and
permissive rules (broker.quotas), and on the wire CreateTopics, CreatePartitions and DeleteTopics
recorded against `controller_mutation_rate` (broker.handlers.admin_topics, broker.throttling).
compat_tests/test_quotas.py drives the same refusal on kafkalite and Apache Kafka."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request
from kafkalite.broker.quotas import ClientQuotas, ThrottlingQuotaExceeded, TokenBucket
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers

NOW = 1_700_000_000_000  # an epoch time, as the broker's clock gives


class FakeClock:
    def __init__(self) -> None:
        self.ms = NOW

    def __call__(self) -> int:
        return self.ms


def quotas_with(tmp_path, entity, rate: float) -> ClientQuotas:
    quotas = ClientQuotas(tmp_path)
    assert quotas.alter([(entity, [("controller_mutation_rate", rate)])], validate_only=False)[0][1] == ErrorCode.none
    return quotas


# --- arithmetic -------------------------------------------------------------------------------


def test_token_bucket_starts_full_refills_at_the_rate_and_goes_into_debt():
    bucket = TokenBucket()
    assert TokenBucket.burst(2.0) == 22.0  # 2/s x 11 windows of 1 s
    assert bucket.measure(2.0, NOW) == 22.0  # empty at time 0: the first look fills it
    bucket.record(25, 2.0, NOW)
    assert bucket.tokens == -3.0
    assert bucket.measure(2.0, NOW + 500) == pytest.approx(-2.0)  # refilled 1 token in 0.5 s
    assert bucket.measure(2.0, NOW + 60_000) == 22.0  # never above the burst
    bucket.record(-100, 2.0, NOW + 60_000)  # a negative record cannot overfill it either
    assert bucket.tokens == 22.0


def test_strict_quota_refuses_only_once_in_debt(tmp_path):
    clock = FakeClock()
    quotas = quotas_with(tmp_path, {"client-id": "c"}, 1.0)
    first = quotas.controller_mutation_quota("User:ANONYMOUS", "c", True, clock)
    assert first is not None
    first.record(6)   # 11 -> 5
    first.record(7)   # 5 is not in debt: taken, to -2
    assert first.throttle_time() == 0  # the request that goes into debt is not throttled
    with pytest.raises(ThrottlingQuotaExceeded) as refused:
        first.record(1)  # a later topic of the same request is refused
    assert refused.value.throttle_ms == 2_000 and first.throttle_time() == 2_000
    clock.ms += 300
    assert first.throttle_time() == 1_700  # less the time since it was computed
    second = quotas.controller_mutation_quota("User:ANONYMOUS", "c", True, clock)
    with pytest.raises(ThrottlingQuotaExceeded) as refused:
        second.record(1)
    assert refused.value.throttle_ms == 1_700  # the same bucket, refilled for 0.3 s
    clock.ms += 1_700  # the debt is paid
    third = quotas.controller_mutation_quota("User:ANONYMOUS", "c", True, clock)
    third.record(4)
    assert third.throttle_time() == 0 and third.bucket.tokens == pytest.approx(-4.0)


def test_permissive_quota_accepts_and_throttles_once_in_debt(tmp_path):
    clock = FakeClock()
    quotas = quotas_with(tmp_path, {"client-id": "c"}, 2.0)
    quota = quotas.controller_mutation_quota("User:ANONYMOUS", "c", False, clock)
    quota.record(22)  # the whole burst: 0 tokens, not in debt
    assert quota.throttle_time() == 0
    quota.record(3)   # -3 at 2/s: 1.5 s
    assert quota.throttle_time() == 1_500
    quota.record(1)   # -4: 2 s
    assert quota.throttle_time() == 2_000
    clock.ms += 2_500
    assert quota.throttle_time() == 0


def test_quota_entity_resolution_is_the_client_quotas_one(tmp_path):
    clock = FakeClock()
    quotas = ClientQuotas(tmp_path)
    assert quotas.controller_mutation_quota("User:alice", "c1", True, clock) is None  # no quota at all
    quotas.alter([({"user": "alice"}, [("controller_mutation_rate", 1.0)]),
                  ({"client-id": "c1"}, [("controller_mutation_rate", 100.0)]),
                  ({"user": "bob"}, [("producer_byte_rate", 1000.0)])], validate_only=False)
    alice1 = quotas.controller_mutation_quota("User:alice", "c1", True, clock)
    alice2 = quotas.controller_mutation_quota("User:alice", "c2", True, clock)
    # the user quota beats the client id's, and alice's clients share its bucket
    assert alice1.bound == 1.0 and alice1.bucket is alice2.bucket
    assert quotas.controller_mutation_quota("User:bob", "c1", True, clock).bound == 100.0
    assert quotas.controller_mutation_quota("User:bob", "c2", True, clock) is None  # no mutation quota for it
    alice1.record(12)
    with pytest.raises(ThrottlingQuotaExceeded):
        alice2.record(1)


# --- on the wire ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(controls=0) as b:
        yield b


def set_rate(bootstrap: str, client_id: str, rate: float | None) -> None:
    with WireClient(bootstrap) as wire:
        resp = wire.request(request(49, 1, validate_only=False, entries=[
            {"entity": [{"entity_type": "client-id", "entity_name": client_id}],
             "ops": [{"key": "controller_mutation_rate", "value": rate or 0.0, "remove": rate is None}]}]))
    assert [e.error_code for e in resp.entries] == [ErrorCode.none]


def send(bootstrap: str, client_id: str, req):
    """One request on a connection of its own: a throttled connection is muted after its answer."""
    with WireClient(bootstrap, client_id=client_id) as wire:
        return wire.request(req)


def create_topics(version: int, topics: dict[str, int], validate_only: bool = False):
    return request(19, version, timeout=5000, validate_only=validate_only, topics=[
        {"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [], "configs": []}
        for n, p in topics.items()])


def outcome(resp, results="topics"):
    return ([(r.name, r.error_code, r.error_message) for r in getattr(resp, results)],
            resp.throttle_time.total_seconds() * 1000)


@pytest.fixture
def slow_client(broker):
    """A client id at 0.1 partition/s: a burst of 1.1 partitions, and a debt that lasts."""
    client_id = f"mutations-{uuid.uuid4().hex[:6]}"
    set_rate(broker.bootstrap, client_id, 0.1)
    yield client_id
    set_rate(broker.bootstrap, client_id, None)


def test_create_topics_refused_in_debt_and_what_counts(broker, slow_client):
    b, name = broker.bootstrap, f"cm-{uuid.uuid4().hex[:6]}"
    with WireClient(b) as admin:  # another client id, not limited
        admin.request(create_topics(7, {f"{name}-old": 1}))
    # an error before the quota (an existing topic) takes nothing
    topics, throttle = outcome(send(b, slow_client, create_topics(7, {f"{name}-old": 5})))
    assert topics == [(f"{name}-old", ErrorCode.topic_already_exists, f"Topic '{name}-old' already exists.")]
    # validate_only counts: 1 of the 1.1 tokens
    topics, throttle = outcome(send(b, slow_client, create_topics(7, {f"{name}-v": 1}, validate_only=True)))
    assert topics == [(f"{name}-v", ErrorCode.none, None)] and throttle == 0
    # 0.1 left, not in debt: the first topic takes it to -1.9, the second is refused
    topics, throttle = outcome(send(b, slow_client, create_topics(7, {f"{name}-a": 2, f"{name}-b": 1})))
    assert topics == [(f"{name}-a", ErrorCode.none, None),
                      (f"{name}-b", ErrorCode.throttling_quota_exceeded, None)]
    assert 18_000 < throttle <= 19_000  # 1.9 tokens at 0.1/s
    with WireClient(b) as admin:
        described = admin.request(request(3, 12, topics=[{"name": f"{name}-a", "topic_id": uuid.UUID(int=0)},
                                                         {"name": f"{name}-b", "topic_id": uuid.UUID(int=0)}],
                                          allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    assert [(t.name, t.error_code, len(t.partitions)) for t in described.topics] == [
        (f"{name}-a", ErrorCode.none, 2), (f"{name}-b", ErrorCode.unknown_topic_or_partition, 0)]
    # v5 is permissive: accepted in debt, and throttled for the deeper debt
    topics, throttle = outcome(send(b, slow_client, create_topics(5, {f"{name}-c": 1})))
    assert topics == [(f"{name}-c", ErrorCode.none, None)] and 28_000 < throttle <= 29_000


def test_create_partitions_and_delete_topics_count_partitions(broker, slow_client):
    b, name = broker.bootstrap, f"cm-{uuid.uuid4().hex[:6]}"
    with WireClient(b) as admin:
        admin.request(create_topics(7, {f"{name}-x": 1, f"{name}-y": 3}))

    def add_partitions(version, count):
        return request(37, version, timeout=5000, validate_only=False,
                       topics=[{"name": f"{name}-x", "count": count, "assignments": None}])

    # CreatePartitions v3 (strict): 1 -> 3 adds 2 partitions, into debt
    assert outcome(send(b, slow_client, add_partitions(3, 3)), "results") == ([(f"{name}-x", ErrorCode.none, None)], 0)
    results, throttle = outcome(send(b, slow_client, add_partitions(3, 4)), "results")
    assert results == [(f"{name}-x", ErrorCode.throttling_quota_exceeded, None)] and 8_000 < throttle <= 9_000
    # v2 is permissive: accepted, throttled
    results, throttle = outcome(send(b, slow_client, add_partitions(2, 4)), "results")
    assert results == [(f"{name}-x", ErrorCode.none, None)] and 18_000 < throttle <= 19_000

    def delete(version):
        return request(20, version, timeout=5000, topic_names=[f"{name}-y"])

    # DeleteTopics v5 (strict) in debt: refused, the topic kept
    resp = send(b, slow_client, delete(5))
    assert [(r.name, r.error_code, r.error_message) for r in resp.responses] == [
        (f"{name}-y", ErrorCode.throttling_quota_exceeded, None)]
    assert resp.throttle_time.total_seconds() > 18
    # v4 is permissive: deleted, its 3 partitions throttled for
    resp = send(b, slow_client, delete(4))
    assert [(r.name, r.error_code) for r in resp.responses] == [(f"{name}-y", ErrorCode.none)]
    assert 48 < resp.throttle_time.total_seconds() <= 49
