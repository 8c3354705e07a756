"""Error injection at the protocol level: what a faulted request gets (an error in the API's
shape, nothing, a closed connection, a late answer), that the filters and counts hold, and that
bad arguments are refused with a text. Real clients meet the same faults in
compat_tests/test_controls.py."""

from __future__ import annotations

import socket
import time
import uuid

import pytest
from kio.schema.errors import ErrorCode

import kafkalite
from compat_tests.differ.core import request
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import Record, build_batch

from .test_admin import create_one


@pytest.fixture(scope="module")
def broker(controls_broker):
    return controls_broker


@pytest.fixture
def controls(broker):
    yield broker.controls
    broker.controls.clear_faults()


@pytest.fixture
def topic(broker):
    name = f"faults-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap) as wire:
        assert create_one(wire, name, partitions=2, rf=1).error_code == ErrorCode.none
    return name


def produce_request(topic, partitions=(0,)):
    batch = bytes(build_batch([Record(key=None, value=b"v", timestamp_ms=1_700_000_000_000)]))
    return request(0, 9, transactional_id=None, acks=-1, timeout=5000, topic_data=[
        {"name": topic, "partition_data": [{"index": p, "records": batch} for p in partitions]}])


def produce(broker, topic, partitions=(0,), client_id="faults-test"):
    with WireClient(broker.bootstrap, client_id=client_id) as wire:
        return wire.request(produce_request(topic, partitions)).responses[0].partition_responses


def test_error_in_every_partition_of_the_response_and_nothing_applied(broker, controls, topic):
    armed = controls.fail_requests(api="Produce", error="NOT_LEADER_OR_FOLLOWER", topic=topic)
    assert armed["api_key"] == 0 and armed["error_code"] == 6 and armed["remaining"] == 1
    parts = produce(broker, topic, (0, 1))
    assert [(p.index, p.error_code, p.base_offset) for p in parts] == [
        (0, ErrorCode.not_leader_or_follower, -1), (1, ErrorCode.not_leader_or_follower, -1)]
    # count=1: the next request is served, and the faulted one was never appended
    assert [(p.error_code, p.base_offset) for p in produce(broker, topic, (0, 1))] == [
        (ErrorCode.none, 0), (ErrorCode.none, 0)]
    assert controls.list_faults() == []


def test_filters_topic_and_client_id_and_count(broker, controls, topic):
    other = f"{topic}-other"
    with WireClient(broker.bootstrap) as wire:
        wire.request(request(19, 7, timeout=5000, validate_only=False, topics=[
            {"name": other, "num_partitions": 1, "replication_factor": 1, "configs": []}]))
    controls.fail_requests(api=0, error=19, count=2, topic=topic, client_id="victim")
    assert produce(broker, other, client_id="victim")[0].error_code == ErrorCode.none
    assert produce(broker, topic, client_id="bystander")[0].error_code == ErrorCode.none
    assert produce(broker, topic, client_id="victim")[0].error_code == ErrorCode.not_enough_replicas
    (left,) = controls.list_faults()
    assert (left["remaining"], left["hits"], left["error"]) == (1, 1, "NOT_ENOUGH_REPLICAS")
    assert produce(broker, topic, client_id="victim")[0].error_code == ErrorCode.not_enough_replicas
    assert produce(broker, topic, client_id="victim")[0].error_code == ErrorCode.none


def test_until_cleared_and_a_coordinator_error_by_transactional_id(broker, controls):
    controls.fail_requests(api="FindCoordinator", error="COORDINATOR_LOAD_IN_PROGRESS", count=None,
                           transactional_id="tx-1")
    with WireClient(broker.bootstrap) as wire:
        for _ in range(3):
            resp = wire.request(request(10, 4, key_type=1, coordinator_keys=["tx-1"]))
            assert [(c.key, c.error_code, c.node_id) for c in resp.coordinators] == [
                ("tx-1", ErrorCode.coordinator_load_in_progress, -1)]
        resp = wire.request(request(10, 4, key_type=1, coordinator_keys=["tx-2"]))
        assert resp.coordinators[0].error_code == ErrorCode.none
        assert controls.clear_faults() == 1
        resp = wire.request(request(10, 4, key_type=1, coordinator_keys=["tx-1"]))
        assert resp.coordinators[0].error_code == ErrorCode.none


def test_drop_applies_the_request_and_the_connection_goes_deaf(broker, controls, topic):
    controls.drop_responses(api="produce", topic=topic)
    wire = WireClient(broker.bootstrap, timeout=1.5)
    try:
        wire.send_only(produce_request(topic))
        with pytest.raises(socket.timeout):
            wire.recv_frame()
        # the connection is still open but answers nothing more
        wire.send_only(request(3, 12, topics=None, allow_auto_topic_creation=False,
                               include_topic_authorized_operations=False))
        with pytest.raises(socket.timeout):
            wire.recv_frame()
    finally:
        wire.close()
    # the dropped produce was applied: the next record lands after it
    assert produce(broker, topic)[0].base_offset == 1


def test_close_does_not_apply_the_request(broker, controls, topic):
    controls.close_connections(api="Produce")
    with WireClient(broker.bootstrap) as wire:
        wire.send_only(produce_request(topic))
        with pytest.raises((ConnectionError, EOFError, OSError)):
            wire.recv_frame()
    assert produce(broker, topic)[0].base_offset == 0


def test_delay_holds_the_response(broker, controls, topic):
    controls.delay_responses(api="Produce", ms=700)
    t0 = time.monotonic()
    assert produce(broker, topic)[0].base_offset == 0
    assert time.monotonic() - t0 >= 0.7
    # count=1: spent on that request; the next one is not held
    assert controls.list_faults() == []
    assert produce(broker, topic)[0].base_offset == 1


def test_acks_0_produce_with_an_error_closes_the_connection(broker, controls, topic):
    controls.fail_requests(api="Produce", error="NOT_LEADER_OR_FOLLOWER")
    batch = bytes(build_batch([Record(key=None, value=b"v", timestamp_ms=1_700_000_000_000)]))
    with WireClient(broker.bootstrap) as wire:
        wire.send_only(request(0, 9, transactional_id=None, acks=0, timeout=5000, topic_data=[
            {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]))
        with pytest.raises((ConnectionError, EOFError, OSError)):
            wire.recv_frame()


@pytest.mark.parametrize("name, args, text", [
    ("fail-requests", {"api": "NoSuchApi", "error": 6}, "no Kafka API named 'NoSuchApi'"),
    ("fail-requests", {"api": "Produce", "error": "NO_SUCH_ERROR"}, "no Kafka error 'NO_SUCH_ERROR'"),
    ("fail-requests", {"api": "Produce", "error": 0}, "not NONE"),
    ("fail-requests", {"api": "ApiVersions", "error": 35}, "ApiVersions cannot be faulted"),
    ("fail-requests", {"api": 9999, "error": 6}, "is not served"),
    ("fail-requests", {"api": "Produce", "error": 6, "count": 0}, "count must be a positive integer"),
    ("delay-responses", {"api": "Produce", "ms": -1}, "ms must be a non-negative integer"),
    ("drop-responses", {"api": "Produce", "topic": 3}, "topic must be a string"),
    ("clear-faults", {"id": 123456}, "no armed fault with id 123456"),
])
def test_bad_arguments_are_refused_with_a_text(controls, name, args, text):
    with pytest.raises(kafkalite.ControlFailed) as info:
        controls.call(name, **args)
    assert info.value.status == 400 and text in info.value.text
    assert controls.list_faults() == []
