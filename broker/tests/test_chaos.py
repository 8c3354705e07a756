"""Seeded chaos (broker.chaos): the schedule is a pure function of (seed, client id, API,
request number), never two faults in a row, only errors Kafka answers for the API; and on a
broker started with --chaos the faults reach the wire and the chaos-log lists them. Real clients
under chaos: compat_tests/test_chaos.py."""

from __future__ import annotations

import collections
import uuid
from collections import Counter

import pytest
import trio
from kio.schema.errors import ErrorCode

from kafkalite.broker import chaos
from kafkalite.broker.chaos import ERRORS, FRESH_REQUESTS, PROFILES, Profile, draw, unknown_draw
from compat_tests.differ.core import request
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import Record, build_batch
from kafkalite.tests import suite_brokers

from .test_admin import create_one
from .test_nodes import MS, address, ask, cluster_of, create_request, fetch_request, metadata_request, produce_request, produced

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
    # a request is faulted when its own draw is and the one before it is not (the retry rule): each
    # kind at its rate times the chance that the request before drew no fault
    total = rates.error + rates.close + rates.drop + rates.delay + rates.move
    for kind, rate in (("error", rates.error), ("close", rates.close), ("drop", rates.drop), ("delay", rates.delay),
                       ("move", rates.move)):
        expected = rate * (1 - total) * n
        assert 0.85 * expected <= counts[kind] <= 1.15 * expected, (kind, counts)
    assert all(1 <= pick <= rates.delay_ms_max for fault, pick in
               ((d.fault, d.pick) for d in (draw(1, rates, "app", 0, i) for i in range(n))) if fault == "delay")


def test_only_produce_and_fetch_responses_are_dropped_and_metadata_gets_no_error():
    for api_key in ERRORS:
        kinds = {fault for fault, _ in schedule(3, api_key=api_key, n=5000)}
        assert ("drop" in kinds) == (api_key in (0, 1)), api_key
        assert ("error" in kinds) == bool(ERRORS[api_key]), api_key
        # moves: the partition APIs and the group and transaction coordinators' (not FindCoordinator, Metadata)
        assert ("move" in kinds) == (api_key not in (3, 10)), api_key


def test_gentle_moves_nothing():
    assert PROFILES["gentle"].move == 0
    assert "move" not in {draw(1, PROFILES["gentle"], "app", 0, i).fault for i in range(20_000)}


@pytest.fixture(scope="module")
def chaotic():
    with suite_brokers.running(controls=0, chaos=42, config={"chaos.profile": "harsh"}) as b:
        yield b


def expected_faults(seed: int, profile: Profile, client_id: str, api_key: int, n: int, *,
                    fresh: int = 0) -> dict[int, tuple[str, int]]:
    """The faults requests 0..n-1 of one API from one client meet on one node, the first `fresh`
    of them naming only a topic created since chaos began: a drawn move has no other in-sync
    replica to go to there and faults nothing; a new topic's request not otherwise faulted may be
    answered unknown_topic, and the request after one is never faulted."""
    out: dict[int, tuple[str, int]] = {}
    for i in range(n):
        if i - 1 in out and out[i - 1][0] == "unknown_topic":
            continue
        d = draw(seed, profile, client_id, api_key, i)
        if d.fault is None and i < fresh and unknown_draw(seed, profile, client_id, api_key, i):
            out[i] = ("unknown_topic", 0)
        elif d.fault not in (None, "move"):
            out[i] = (d.fault, d.pick)
    return out


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
    expected = expected_faults(42, PROFILES["harsh"], client_id, 0, 60, fresh=FRESH_REQUESTS)
    assert {i: e["fault"] for i, e in logged.items()} == {i: f for i, (f, _) in expected.items()}
    for i, e in logged.items():
        if e["fault"] == "error":
            assert answered[i] == ErrorCode[e["error"].lower()]
            assert e["error"] in ("NOT_LEADER_OR_FOLLOWER", "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT")
        elif e["fault"] == "unknown_topic":  # the topic was created after chaos began
            assert answered[i] == ErrorCode.unknown_topic_or_partition and e["topics"] == [topic] and i < FRESH_REQUESTS
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
    with suite_brokers.running(controls=0, env={"KAFKALITE_CHAOS": "9", "KAFKALITE_CHAOS_PROFILE": "gentle"}) as b:
        state = b.controls.chaos()
        assert (state["enabled"], state["seed"], state["profile"]) == (True, 9, "gentle")
    with pytest.raises(RuntimeError, match="chaos must be an integer seed"):
        with suite_brokers.running(chaos="abc"):
            pass  # pragma: no cover - the broker refuses to start


def test_without_chaos_no_request_is_faulted(controls_broker):
    assert controls_broker.controls.chaos() == {"enabled": False}


# --- moves on three nodes (in-process, as broker/tests/test_nodes.py) ----------------------------

HARSH = PROFILES["harsh"]


def client_meeting(fault: str, api_key: int, seed: int = 42, profile: Profile = HARSH) -> str:
    """A client id whose first request of `api_key` draws `fault` (the schedule is a pure function)."""
    return next(c for i in range(10_000) if draw(seed, profile, c := f"client-{i}", api_key, 0).fault == fault)


def quiet_client(api_keys: tuple[int, ...], n: int = 4, seed: int = 42, profile: Profile = HARSH) -> str:
    """A client id whose first `n` requests of each of `api_keys` draw no fault."""
    return next(c for i in range(10_000) if all(
        draw(seed, profile, c := f"quiet-{i}", k, s).fault is None for k in api_keys for s in range(n)))


async def ask_as(broker, node: int, client_id: str, req):
    def call():
        with WireClient(address(broker, node), client_id=client_id) as c:
            return c.request(req)
    return await trio.to_thread.run_sync(call)


def test_a_move_hands_a_partitions_leadership_to_another_in_sync_replica_for_real(tmp_path):
    async def main():
        async with cluster_of(tmp_path) as broker:
            await ask(broker, 1, create_request("t", -1, -1, [[1, 2, 3]]))
            assert produced(await ask(broker, 1, produce_request("t"))).error_code == ErrorCode.none
            engine = chaos.start(broker, 42, "harsh")
            quiet = quiet_client((0, 1, 3))
            mover = client_meeting("move", 0)
            target = [2, 3][(draw(42, HARSH, mover, 0, 0).pick >> 32) % 2]
            refused = produced(await ask_as(broker, 1, mover, produce_request("t")))
            # the handler's own answer on a node that leads no more, naming the new leader (KIP-951)
            assert refused.error_code == ErrorCode.not_leader_or_follower
            assert (refused.current_leader.leader_id, refused.current_leader.leader_epoch) == (target, 1)
            for node in (1, 2, 3):
                shown = (await ask_as(broker, node, quiet, metadata_request("t"))).topics[0].partitions[0]
                assert (shown.leader_id, shown.leader_epoch, sorted(shown.isr_nodes)) == (target, 1, [1, 2, 3])
            # the retry (never faulted) goes through on the new leader; the old one fences its epoch
            assert produced(await ask_as(broker, target, mover, produce_request("t"))).error_code == ErrorCode.none
            stale = await ask_as(broker, 1, quiet, fetch_request("t", epoch=0))
            assert stale.responses[0].partitions[0].error_code == ErrorCode.fenced_leader_epoch
            read = (await ask_as(broker, target, quiet, fetch_request("t", epoch=1))).responses[0].partitions[0]
            assert (read.error_code, read.high_watermark) == (ErrorCode.none, 2)  # nothing acknowledged lost
            assert [e for e in engine.injected if e["fault"] == "move"] == [{
                "api": "produce", "api_key": 0, "api_seq": 0, "client_id": mover, "fault": "move",
                "time_ms": engine.injected[0]["time_ms"], "topic": "t", "partition": 0, "from_node": 1,
                "to_node": target, "leader_epoch": 1}]
            # a request to a node that leads nothing it names moves nothing, even on a drawn move
            other = client_meeting("move", 0, seed=7)
            chaos.start(broker, 7, "harsh")
            assert produced(await ask_as(broker, 1, other, produce_request("t"))).error_code == \
                ErrorCode.not_leader_or_follower
            assert broker.cluster.partition("t", 0).leader == target
            assert chaos.current(broker).injected == collections.deque()

    trio.run(main)


def test_a_move_on_a_group_request_moves_its_coordinator_with_the_offsets_intact(tmp_path):
    def commit(offset: int):
        return request(8, 8, group_id="g", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                       topics=[{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                             "committed_leader_epoch": -1,
                                                             "committed_metadata": None}]}])

    find = request(10, 4, key_type=0, coordinator_keys=["g"])
    fetch_offsets = request(9, 7, group_id="g", topics=None, require_stable=False)

    async def main():
        async with cluster_of(tmp_path) as broker:
            await ask(broker, 1, create_request("t", -1, -1, [[1, 2, 3]]))
            engine = chaos.start(broker, 42, "harsh")
            quiet = quiet_client((8, 9, 10))
            before = (await ask_as(broker, 1, quiet, find)).coordinators[0].node_id
            committed = await ask_as(broker, before, quiet, commit(5))
            assert committed.topics[0].partitions[0].error_code == ErrorCode.none
            mover = client_meeting("move", 8)
            refused = await ask_as(broker, before, mover, commit(7))
            assert refused.topics[0].partitions[0].error_code == ErrorCode.not_coordinator
            after = (await ask_as(broker, before, quiet, find)).coordinators[0].node_id
            assert after != before
            [moved] = [e for e in engine.injected if e["fault"] == "move"]
            assert (moved["group"], moved["topic"], moved["from_node"], moved["to_node"]) == (
                "g", "__consumer_offsets", before, after)
            # the new coordinator has the group's offsets; the old one answers NOT_COORDINATOR
            offsets = await ask_as(broker, after, quiet, fetch_offsets)
            assert (offsets.error_code, offsets.topics[0].partitions[0].committed_offset) == (ErrorCode.none, 5)
            assert (await ask_as(broker, before, quiet, fetch_offsets)).error_code == ErrorCode.not_coordinator
            retried = await ask_as(broker, after, mover, commit(7))
            assert retried.topics[0].partitions[0].error_code == ErrorCode.none

    trio.run(main)


def test_a_move_on_a_transaction_request_moves_its_coordinator_with_the_producer_id_intact(tmp_path):
    find = request(10, 4, key_type=1, coordinator_keys=["tx"])
    init = request(22, 4, transactional_id="tx", transaction_timeout=60_000 * MS, producer_id=-1,
                   producer_epoch=-1)

    async def main():
        async with cluster_of(tmp_path) as broker:
            engine = chaos.start(broker, 42, "harsh")
            quiet = quiet_client((10, 22))
            before = (await ask_as(broker, 1, quiet, find)).coordinators[0].node_id
            first = await ask_as(broker, before, quiet, init)
            assert first.error_code == ErrorCode.none
            mover = client_meeting("move", 22)
            assert (await ask_as(broker, before, mover, init)).error_code == ErrorCode.not_coordinator
            after = (await ask_as(broker, before, quiet, find)).coordinators[0].node_id
            [moved] = [e for e in engine.injected if e["fault"] == "move"]
            assert (moved["transactional_id"], moved["topic"], moved["from_node"], moved["to_node"]) == (
                "tx", "__transaction_state", before, after)
            again = await ask_as(broker, after, mover, init)  # the same producer id, the next epoch
            assert (again.error_code, again.producer_id, again.producer_epoch) == (
                ErrorCode.none, first.producer_id, first.producer_epoch + 1)

    trio.run(main)


def test_a_topic_created_since_chaos_began_is_unknown_to_some_of_a_clients_first_requests_only(tmp_path):
    def unknown_first(c: str, quiet_after: int = 8) -> bool:
        return (draw(42, HARSH, c, 0, 0).fault is None and unknown_draw(42, HARSH, c, 0, 0)
                and all(draw(42, HARSH, c, 0, s).fault is None for s in range(1, quiet_after)))

    async def main():
        async with cluster_of(tmp_path, nodes=1) as broker:
            await ask(broker, 1, create_request("old", 1, 1))
            engine = chaos.start(broker, 42, "harsh")
            await ask(broker, 1, create_request("new", 1, 1))  # CreateTopics is never faulted
            # `first` draws unknown_topic for its requests 3..7 too: past the window they must get through
            first = next(c for i in range(50_000) if unknown_first(c := f"u-{i}") and not unknown_draw(42, HARSH, c, 0, 2)
                         and all(unknown_draw(42, HARSH, c, 0, s) for s in range(3, 8)))
            second = next(c for i in range(20_000) if unknown_first(c := f"v-{i}"))
            answers = [produced(await ask_as(broker, 1, first, produce_request("new"))).error_code for _ in range(8)]
            # the first is answered as by a broker that has not learnt the topic; its retry gets
            # through, and after FRESH_REQUESTS requests naming it the topic is known for good
            assert answers == [ErrorCode.unknown_topic_or_partition] + [ErrorCode.none] * 7
            # a topic there before chaos began is never unknown, whatever the draw
            assert produced(await ask_as(broker, 1, second, produce_request("old"))).error_code == ErrorCode.none
            assert [(e["client_id"], e["api_seq"], e["fault"], e["error"], e["topics"]) for e in engine.injected] == [
                (first, 0, "unknown_topic", "UNKNOWN_TOPIC_OR_PARTITION", ["new"])]
            assert broker.cluster.partition("new", 0).high_watermark == 7  # the one answered so was not applied

    trio.run(main)
