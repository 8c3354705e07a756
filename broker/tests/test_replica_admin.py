"""ElectLeaders and partition reassignments on three nodes (broker.reassignments,
broker.handlers.replica_admin): a held reassignment with its adding and removing replicas in
ListPartitionReassignments and Metadata, cancelled and completed; one in progress while its new
replica catches up (the broker's clock); a preferred election after the leader moved; an unclean
election after the in-sync replicas went down; an unknown election type refused; a held
reassignment gone with its deleted topic and with the reset control. compat_tests/differ holds
the refusals against Apache Kafka ("elect leaders", "partition reassignments")."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request
from compat_tests.waiting import wait_until
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers

from .test_admin import create_one


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(config={"nodes": 3}, controls=0) as b:
        yield b


@pytest.fixture
def topic(broker):
    name = f"replicas-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as wire:
        assert create_one(wire, name, partitions=1, rf=2).error_code == ErrorCode.none
    return name


def metadata(wire, topic):
    return wire.request(request(3, 12, topics=[{"name": topic, "topic_id": None}], allow_auto_topic_creation=False,
                                include_topic_authorized_operations=False))


def replicas(wire, topic):
    p = metadata(wire, topic).topics[0].partitions[0]
    return list(p.replica_nodes), list(p.isr_nodes), p.leader_id


def address_of_another_node(wire, topic, node):
    """host:port of a node other than `node`: taking a node down closes the connections it holds."""
    other = next(b for b in metadata(wire, topic).brokers if b.node_id != node)
    return f"{other.host}:{other.port}"


def reassign(wire, topic, target, allow_rf_change=True):
    resp = wire.request(request(45, 1, timeout=5000, allow_replication_factor_change=allow_rf_change, topics=[
        {"name": topic, "partitions": [{"partition_index": 0, "replicas": target}]}]))
    p = resp.responses[0].partitions[0]
    return p.error_code, p.error_message


def listed(wire):
    resp = wire.request(request(46, 0, timeout=5000, topics=None))
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in resp.topics for p in t.partitions}


def held_reassignment(broker, wire, topic):
    """Reassignments held, and one started that replaces the partition's first replica with the
    third node: returns the replicas before and the target."""
    before = replicas(wire, topic)[0]
    target = [n for n in (1, 2, 3) if n not in before] + [before[1]]
    broker.controls.call("hold-reassignments", held=True)
    assert reassign(wire, topic, target) == (ErrorCode.none, None)
    return before, target


def test_held_reassignment_then_completed(broker, topic):
    with WireClient(broker.bootstrap) as wire:
        try:
            before, target = held_reassignment(broker, wire, topic)
            merged = target + [before[0]]
            assert listed(wire)[(topic, 0)] == (merged, [target[0]], [before[0]])
            assert replicas(wire, topic)[0] == merged
            # cancelled: the original replicas return
            assert reassign(wire, topic, None) == (ErrorCode.none, None)
            assert replicas(wire, topic)[0] == before and (topic, 0) not in listed(wire)
            assert reassign(wire, topic, None)[0] == ErrorCode.no_reassignment_in_progress
            assert reassign(wire, topic, target) == (ErrorCode.none, None)
        finally:
            assert broker.controls.call("hold-reassignments", held=False)["completed"] >= 1
        after, isr, new_leader = replicas(wire, topic)
        assert after == target and sorted(isr) == sorted(target) and new_leader in target
        assert reassign(wire, topic, [1, 2, 3], allow_rf_change=False) == (
            ErrorCode.invalid_replication_factor,
            "The replication factor is changed from 2 to 3 but allowReplicationFactorChange is false")
        assert reassign(wire, topic, [4])[0] == ErrorCode.invalid_replica_assignment


def delete_topic(wire, topic):
    resp = wire.request(request(20, 6, timeout=5000, topics=[{"name": topic, "topic_id": None}]))
    assert resp.responses[0].error_code == ErrorCode.none


def test_a_held_reassignment_goes_with_its_topic(broker, topic):
    """Deleted with its topic, a held reassignment is not applied to the next topic of that name."""
    with WireClient(broker.bootstrap) as wire:
        try:
            held_reassignment(broker, wire, topic)
            assert (topic, 0) in listed(wire)
            delete_topic(wire, topic)
            assert (topic, 0) not in listed(wire)
            assert create_one(wire, topic, partitions=1, rf=2).error_code == ErrorCode.none
            again, _isr, _leader = replicas(wire, topic)
            assert (topic, 0) not in listed(wire)
        finally:
            released = broker.controls.call("hold-reassignments", held=False)
        assert released["completed"] == 0
        assert replicas(wire, topic)[0] == again


def test_reset_ends_held_reassignments(broker, topic):
    with WireClient(broker.bootstrap) as wire:
        _before, target = held_reassignment(broker, wire, topic)
        broker.controls.call("reset")
        assert listed(wire) == {}
        assert broker.controls.call("list-reassignments") == []
        # the hold went with the reset: a new reassignment completes once its replicas caught up
        assert create_one(wire, topic, partitions=1, rf=2).error_code == ErrorCode.none
        assert reassign(wire, topic, target) == (ErrorCode.none, None)
        wait_until(lambda: listed(wire) == {}, timeout=30, what="the reassignment completed")
        assert replicas(wire, topic)[0] == target


def test_reassignment_in_progress_until_caught_up(broker, topic):
    """A move that adds a replica is listed in progress right after it is made, as on Kafka, until
    reassignment.catch.up.ms (500 ms) of the broker's clock have passed: manual time holds it, an
    advance finishes it; on the system clock it finishes by itself. A move within the ISR
    (reordering the replicas) completes within its request, as Kafka's controller completes it."""
    with WireClient(broker.bootstrap) as wire:
        before, _isr, _leader = replicas(wire, topic)
        target = [n for n in (1, 2, 3) if n not in before] + [before[1]]
        broker.controls.call("set-clock", mode="manual")
        try:
            assert reassign(wire, topic, target) == (ErrorCode.none, None)
            assert listed(wire)[(topic, 0)] == (target + [before[0]], [target[0]], [before[0]])
            broker.controls.call("advance-clock", ms=499)
            assert (topic, 0) in listed(wire)
            broker.controls.call("advance-clock", ms=1)
            assert (topic, 0) not in listed(wire)
            after, isr, leader = replicas(wire, topic)
            assert after == target and sorted(isr) == sorted(target) and leader in target
        finally:
            broker.controls.call("set-clock", mode="system")
        assert reassign(wire, topic, [target[1], target[0]]) == (ErrorCode.none, None)
        assert (topic, 0) not in listed(wire) and replicas(wire, topic)[0] == [target[1], target[0]]
        assert reassign(wire, topic, before) == (ErrorCode.none, None)
        wait_until(lambda: (topic, 0) not in listed(wire), timeout=30, what="the reassignment completed")
        assert replicas(wire, topic)[0] == before


def test_reassignment_completes_after_a_reset(broker):
    """The reset control replaces the reassignments' state (it does when one is held); a move made
    after it still completes by itself (the task that completes them is woken by the new state)."""
    broker.controls.call("hold-reassignments", held=True)
    broker.controls.call("reset")
    name = f"replicas-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as wire:
        assert create_one(wire, name, partitions=1, rf=2).error_code == ErrorCode.none
        before = replicas(wire, name)[0]
        target = [n for n in (1, 2, 3) if n not in before] + [before[1]]
        assert reassign(wire, name, target) == (ErrorCode.none, None)
        wait_until(lambda: (name, 0) not in listed(wire), timeout=30, what="the reassignment completed")
        assert replicas(wire, name)[0] == target


def elect(wire, topic, election_type, version=2):
    resp = wire.request(request(43, version, election_type=election_type, timeout=5000,
                                topic_partitions=[{"topic": topic, "partitions": [0]}]))
    p = resp.replica_election_results[0].partition_result[0]
    return p.error_code, p.error_message


def test_preferred_and_unclean_elections(broker, topic):
    with WireClient(broker.bootstrap) as bootstrap:
        reps, _isr, _leader = replicas(bootstrap, topic)
        address = address_of_another_node(bootstrap, topic, reps[0])
    with WireClient(address) as wire:
        assert elect(wire, topic, 0, version=0) == (ErrorCode.election_not_needed,
                                                    "Leader election not needed for topic partition.")
        broker.controls.call("move-leader", topic=topic, partition=0, node=reps[1])
        assert replicas(wire, topic)[2] == reps[1]
        assert elect(wire, topic, 0) == (ErrorCode.none, None)
        assert replicas(wire, topic)[2] == reps[0]
        assert elect(wire, topic, 1)[0] == ErrorCode.election_not_needed  # unclean: the leader is up
        broker.controls.call("shrink-isr", topic=topic, partition=0, replicas=[reps[0]])
        broker.controls.call("node-down", node=reps[0])
        try:
            assert replicas(wire, topic)[2] == -1
            assert elect(wire, topic, 0)[0] == ErrorCode.preferred_leader_not_available
            assert elect(wire, topic, 1) == (ErrorCode.none, None)  # the out-of-sync replica takes over
            _reps, isr, leader = replicas(wire, topic)
            assert leader == reps[1] and isr == [reps[1]]
        finally:
            broker.controls.call("node-up", node=reps[0])


def test_an_unknown_election_type_elects_nothing(broker, topic):
    """Kafka's controller refuses an election type other than PREFERRED (0) and UNCLEAN (1) with
    INVALID_REQUEST on the answer and on every partition (compat_tests/differ: "elect leaders of
    an unknown election type")."""
    with WireClient(broker.bootstrap) as bootstrap:
        reps, _isr, _leader = replicas(bootstrap, topic)
        address = address_of_another_node(bootstrap, topic, reps[0])
    with WireClient(address) as wire:
        broker.controls.call("move-leader", topic=topic, partition=0, node=reps[1])
        for election_type in (2, -1):
            resp = wire.request(request(43, 2, election_type=election_type, timeout=5000,
                                        topic_partitions=[{"topic": topic, "partitions": [0]}]))
            assert resp.error_code == ErrorCode.invalid_request
            p = resp.replica_election_results[0].partition_result[0]
            assert (p.error_code, p.error_message) == (ErrorCode.invalid_request,
                                                       f"Unknown election type {election_type}")
        assert replicas(wire, topic)[2] == reps[1]
