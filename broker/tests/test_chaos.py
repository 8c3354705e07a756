"""Seeded chaos (broker.chaos): the schedule is a pure function of (seed, client id, API,
request number), never two faults in a row, only errors Kafka answers for the API; and on a
broker started with --chaos the faults reach the wire and the chaos-log lists them. Real clients
under chaos: compat_tests/test_chaos.py."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from kio.schema.errors import ErrorCode

import kafkalite
from kafkalite.broker.chaos import ERRORS, PROFILES, draw
from compat_tests.differ.core import request
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import Record, build_batch

from .test_admin import create_one

DEFAULT = PROFILES["default"]


def schedule(seed: int, client_id: str = "app", api_key: int = 0, n: int = 2000) -> list[tuple[str | None, int]]:
    return [(d.fault, d.pick) for d in (draw(seed, DEFAULT, client_id, api_key, i) for i in range(n))]


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    assert schedule(42) == schedule(42)
    assert schedule(42) != schedule(43)
    assert schedule(42, client_id="other") != schedule(42)
    assert schedule(42, api_key=1) != schedule(42)


def test_no_request_right_after_a_faulted_one_is_faulted():
    faults = [fault for fault, _ in schedule(7, n=5000)]
    assert any(faults)
    assert not any(a is not None and b is not None for a, b in zip(faults, faults[1:]))


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_each_profile_draws_every_kind_near_its_rate(profile):
    rates = PROFILES[profile]
    n = 20_000
    counts = Counter(draw(1, rates, "app", 0, i).fault for i in range(n))
    # a fault suppresses the next request's, so each rate is met a little below its figure
    for kind, rate in (("error", rates.error), ("close", rates.close), ("drop", rates.drop), ("delay", rates.delay)):
        assert 0.6 * rate * n <= counts[kind] <= 1.1 * rate * n, (kind, counts)
    assert all(1 <= pick <= rates.delay_ms_max for fault, pick in
               ((d.fault, d.pick) for d in (draw(1, rates, "app", 0, i) for i in range(n))) if fault == "delay")


def test_only_produce_and_fetch_responses_are_dropped_and_metadata_gets_no_error():
    for api_key in ERRORS:
        kinds = {fault for fault, _ in schedule(3, api_key=api_key, n=5000)}
        assert ("drop" in kinds) == (api_key in (0, 1)), api_key
        assert ("error" in kinds) == bool(ERRORS[api_key]), api_key


@pytest.fixture(scope="module")
def chaotic():
    with kafkalite.running(controls=0, chaos=42, config={"chaos.profile": "harsh"}) as b:
        yield b


def produce_one(wire: WireClient, topic: str, i: int) -> int:
    batch = build_batch([Record(key=None, value=f"v{i}".encode())])
    resp = wire.request(request(0, 9, transactional_id=None, acks=-1, timeout=5000, topic_data=[
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]))
    return resp.responses[0].partition_responses[0].error_code


def test_a_broker_started_with_chaos_answers_the_errors_its_log_lists(chaotic):
    controls = chaotic.controls
    assert controls.chaos() == {**controls.chaos(), "enabled": True, "seed": 42, "profile": "harsh"}
    topic = f"chaos-{uuid.uuid4().hex[:8]}"
    client_id = f"wire-{uuid.uuid4().hex[:6]}"
    with WireClient(chaotic.bootstrap) as admin:
        assert create_one(admin, topic, partitions=1, rf=1).error_code == ErrorCode.none
    answered: dict[int, int] = {}
    seq = 0
    wire = WireClient(chaotic.bootstrap, timeout=2.0, client_id=client_id)
    try:
        while seq < 60:
            try:
                answered[seq] = produce_one(wire, topic, seq)
            except (ConnectionError, OSError, EOFError):  # a close, or a drop's deaf connection timing out
                wire.close()
                wire = WireClient(chaotic.bootstrap, timeout=2.0, client_id=client_id)
            seq += 1
    finally:
        wire.close()
    logged = {e["api_seq"]: e for e in controls.chaos_log(api="Produce", client_id=client_id)}
    assert logged, "harsh chaos faulted none of 60 Produce requests"
    expected = {i: (d.fault, d.pick) for i in range(60) if (d := draw(42, PROFILES["harsh"], client_id, 0, i)).fault}
    assert {i: e["fault"] for i, e in logged.items()} == {i: f for i, (f, _) in expected.items()}
    for i, e in logged.items():
        if e["fault"] == "error":
            assert answered[i] == ErrorCode[e["error"].lower()]
            assert e["error"] in ("NOT_LEADER_OR_FOLLOWER", "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT")
        elif e["fault"] == "close":
            assert i not in answered
        elif e["fault"] == "delay":
            assert answered[i] == ErrorCode.none and 1 <= e["delay_ms"] <= PROFILES["harsh"].delay_ms_max
    assert all(answered[i] == ErrorCode.none for i in answered if i not in logged)


def test_the_chaos_control_restarts_the_schedule_and_stops_it(chaotic):
    controls = chaotic.controls
    started = controls.chaos(seed=5, profile="gentle")
    assert (started["enabled"], started["seed"], started["profile"], started["faults"]) == (True, 5, "gentle", 0)
    assert controls.chaos_log() == []
    stopped = controls.chaos(enabled=False)
    assert stopped["enabled"] is False and stopped["stopped"]["seed"] == 5
    assert controls.chaos() == {"enabled": False}
    with pytest.raises(Exception, match="chaos is not running"):
        controls.chaos_log()
    with pytest.raises(Exception, match="profile must be one of"):
        controls.chaos(seed=1, profile="wild")
    controls.chaos(seed=42, profile="harsh")
    controls.reset()  # disarms the faults, not chaos: it runs across a whole suite
    assert controls.chaos()["seed"] == 42


def test_kafkalite_chaos_in_the_environment_starts_chaos_and_a_bad_seed_is_refused():
    with kafkalite.running(controls=0, env={"KAFKALITE_CHAOS": "9", "KAFKALITE_CHAOS_PROFILE": "gentle"}) as b:
        state = b.controls.chaos()
        assert (state["enabled"], state["seed"], state["profile"]) == (True, 9, "gentle")
    with pytest.raises(RuntimeError, match="chaos must be an integer seed"):
        with kafkalite.running(chaos="abc"):
            pass  # pragma: no cover - the broker refuses to start


def test_without_chaos_no_request_is_faulted(controls_broker):
    assert controls_broker.controls.chaos() == {"enabled": False}
