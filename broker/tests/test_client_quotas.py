"""Client quotas: Kafka's rate and throttle arithmetic and quota resolution (broker.quotas), and on
the wire DescribeClientQuotas / AlterClientQuotas, a produce and a fetch throttled by their byte
rates (throttle_time_ms, the muted connection, the empty throttled fetch) and the throttle-client
control. The same requests are compared with Apache Kafka in compat_tests/differ
(quota_conversations.py) and driven by real clients in compat_tests/test_quotas.py."""

from __future__ import annotations

import time
import uuid
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request
from kafkalite.broker.quotas import FETCH, PRODUCE, REQUEST, ClientQuotas, Rate, entity_text
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import Record, build_batch
from kafkalite.tests import suite_brokers


def comp(entity_type, match_type, match=None):
    return SimpleNamespace(entity_type=entity_type, match_type=match_type, match=match)


# --- arithmetic -------------------------------------------------------------------------------


def test_rate_counts_at_least_ten_windows():
    rate = Rate()
    rate.record(20_000, 0)
    # one sample: the window is stretched to (samples - 1) full windows, 10 s
    assert rate.window_ms(0) == 10_000
    assert rate.measure(0) == 2_000.0
    rate.record(10_000, 9_500)    # a second sample, 9.5 s later: 9 full windows, stretched to 10.5 s
    assert rate.window_ms(9_500) == 10_500
    assert rate.measure(9_500) == pytest.approx(30_000 / 10.5)
    # at 15 s the first sample is older than 11 windows: purged, and the window starts at 9.5 s
    assert rate.measure(15_000) == pytest.approx(10_000 / 10.5)


def test_throttle_time_is_kafkas(tmp_path):
    quotas = ClientQuotas(tmp_path)
    quotas.alter([({"client-id": "c"}, [("producer_byte_rate", 1000.0)])], validate_only=False)
    # 20000 bytes at once against 1000 B/s: rate 2000 over 10 s -> (2000-1000)/1000 * 10000 ms
    assert quotas.record(PRODUCE, "ANONYMOUS", "c", 20_000, 1_000) == 10_000
    assert quotas.record(PRODUCE, "ANONYMOUS", "other", 20_000, 1_000) == 0  # no quota for it
    assert quotas.record(FETCH, "ANONYMOUS", "c", 10**9, 1_000) == 0         # no fetch quota at all
    quotas.alter([({"client-id": None}, [("request_percentage", 1.0)])], validate_only=False)
    # the request quota's throttle is capped at one window
    assert quotas.record(REQUEST, "ANONYMOUS", "x", 500.0, 1_000) == 1_000


def test_quota_precedence_and_shared_sensors(tmp_path):
    quotas = ClientQuotas(tmp_path)
    quotas.alter([({"user": "alice"}, [("producer_byte_rate", 100.0)]),
                  ({"client-id": "c1"}, [("producer_byte_rate", 5000.0)]),
                  ({"user": None, "client-id": None}, [("consumer_byte_rate", 7.0)])], validate_only=False)
    assert quotas.metric_tags(PRODUCE, "alice", "c1") == ("alice", "")   # user beats client-id
    assert quotas.metric_tags(PRODUCE, "bob", "c1") == ("", "c1")
    assert quotas.quota_limit(PRODUCE, ("alice", "")) == 100.0
    assert quotas.metric_tags(FETCH, "bob", "c9") == ("bob", "c9")        # default user + default client
    assert quotas.quota_limit(FETCH, ("bob", "c9")) == 7.0
    # alice's clients share one user-level rate
    assert quotas.record(PRODUCE, "alice", "c1", 900, 0) == 0
    assert quotas.record(PRODUCE, "alice", "c2", 900, 0) > 0


def test_alter_validation_messages(tmp_path):
    quotas = ClientQuotas(tmp_path)
    results = quotas.alter([
        ({}, [("producer_byte_rate", 1.0)]),
        ({"user": ""}, [("producer_byte_rate", 1.0)]),
        ({"group": "g"}, [("producer_byte_rate", 1.0)]),
        ({"user": "u"}, [("connection_creation_rate", 1.0)]),
        ({"client-id": "c"}, [("producer_byte_rate", 1.5)]),
        ({"ip": "not an address"}, [("connection_creation_rate", 1.0)]),
        ({"user": "u", "ip": "1.2.3.4"}, [("producer_byte_rate", 1.0)]),
        ({"user": "z"}, [("request_percentage", 0.0)]),
        ({"user": "z2"}, [("request_percentage", float("inf"))]),
        ({"ip": "10.0.0.1"}, [("connection_creation_rate", 3e9)]),
        ({"user": "d"}, [("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)]),
        ({"user": "ok", "client-id": "c"}, [("request_percentage", 12.5)]),
        ({"user": "ok", "client-id": "c"}, [("request_percentage", 13.0)]),
    ], validate_only=False)
    messages = [(m if code != ErrorCode.none else None) for _e, code, m in results]
    assert messages == [
        "Invalid empty client quota entity",
        "Empty user not supported",
        "Unhandled client quota entity type: group",
        "Invalid configuration key connection_creation_rate",
        "producer_byte_rate cannot be a fractional value.",
        "not an address is not a valid IP or resolvable host.",
        "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
        "Quota request_percentage must be greater than 0",
        "Quota request_percentage must be a finite number",
        "Proposed value for connection_creation_rate is too large for an INT.",
        "Ignoring duplicate entity ClientQuotaEntity(entries={user=d})",
        "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c, user=ok})",
    ]
    assert quotas.values == {}  # nothing valid was applied: the last entity is a duplicate
    assert entity_text({"user": "u", "client-id": "c"}) == "ClientQuotaEntity(entries={client-id=c, user=u})"


def test_describe_filters(tmp_path):
    quotas = ClientQuotas(tmp_path)
    quotas.alter([({"user": "a"}, [("producer_byte_rate", 1.0)]),
                  ({"user": "a", "client-id": "c"}, [("consumer_byte_rate", 2.0)]),
                  ({"user": None}, [("request_percentage", 3.0)]),
                  ({"ip": "127.0.0.1"}, [("connection_creation_rate", 4.0)])], validate_only=False)
    found = lambda comps, strict=False: sorted(dict(e) .__repr__() for e, _v in quotas.describe(comps, strict))  # noqa: E731
    assert found([comp("user", 0, "a")]) == ["{'client-id': 'c', 'user': 'a'}", "{'user': 'a'}"]
    assert found([comp("user", 0, "a")], strict=True) == ["{'user': 'a'}"]
    assert found([comp("user", 1)]) == ["{'user': None}"]
    assert found([comp("client-id", 2)]) == ["{'client-id': 'c', 'user': 'a'}"]
    assert len(found([])) == 4 and found([], strict=True) == []
    for comps, code in (([comp("", 2)], ErrorCode.invalid_request), ([comp("group", 2)], ErrorCode.unsupported_version),
                        ([comp("user", 0)], ErrorCode.invalid_request), ([comp("user", 1, "x")], ErrorCode.invalid_request),
                        ([comp("user", 2), comp("user", 2)], ErrorCode.invalid_request),
                        ([comp("ip", 2), comp("user", 2)], ErrorCode.invalid_request),
                        ([comp("user", 7)], ErrorCode.invalid_request)):
        with pytest.raises(Exception) as exc:
            quotas.describe(comps, False)
        assert exc.value.code == code  # type: ignore[attr-defined]
    assert ClientQuotas(tmp_path).values == quotas.values  # persisted


# --- on the wire --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(controls=0) as b:
        yield b


def alter(wire, entity, ops, v=1, validate_only=False):
    return wire.request(request(49, v, validate_only=validate_only, entries=[
        {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
         "ops": [{"key": k, "value": val if val is not None else 0.0, "remove": val is None} for k, val in ops]}]))


def describe(wire, components, strict=False, v=1):
    return wire.request(request(48, v, strict=strict, components=[
        {"entity_type": t, "match_type": m, "match": n} for t, m, n in components]))


@pytest.mark.parametrize("v", [0, 1])
def test_alter_and_describe_on_the_wire(broker, v):
    client = f"quota-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as wire:
        resp = alter(wire, [("client-id", client)], [("producer_byte_rate", 1024.0), ("request_percentage", 50.0)], v)
        assert [(e.error_code, e.error_message) for e in resp.entries] == [(ErrorCode.none, None)]
        resp = describe(wire, [("client-id", 0, client)], v=v)
        assert resp.error_code == ErrorCode.none
        assert [(x.entity_type, x.entity_name) for x in resp.entries[0].entity] == [("client-id", client)]
        assert sorted((x.key, x.value) for x in resp.entries[0].values) == [
            ("producer_byte_rate", 1024.0), ("request_percentage", 50.0)]
        alter(wire, [("client-id", client)], [("producer_byte_rate", None), ("request_percentage", None)], v)
        assert describe(wire, [("client-id", 0, client)], v=v).entries == ()
        resp = describe(wire, [("nope", 2, None)], v=v)
        assert (resp.error_code, resp.error_message, resp.entries) == (
            ErrorCode.unsupported_version, "Unsupported entity type nope", None)


def produce_req(topic, size):
    batch = bytes(build_batch([Record(key=None, value=b"x" * size, timestamp_ms=int(time.time() * 1000))]))
    return request(0, 9, transactional_id=None, acks=1, timeout=5000,
                   topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}])


def fetch_req(topic, session_epoch=-1):
    return request(1, 12, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                   session_id=0, session_epoch=session_epoch, rack_id="", forgotten_topics_data=[], topics=[
                       {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                                                        "current_leader_epoch": -1, "log_start_offset": -1}]}])


def test_byte_rate_quotas_throttle_and_mute(broker):
    topic = f"quota-{uuid.uuid4().hex[:6]}"
    client = f"throttled-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as admin:
        admin.request(request(19, 7, timeout=5000, validate_only=False, topics=[
            {"name": topic, "num_partitions": 1, "replication_factor": 1, "configs": []}]))
        alter(admin, [("client-id", client)], [("producer_byte_rate", 2000.0), ("consumer_byte_rate", 2000.0)])
    try:
        with WireClient(broker.bootstrap, client_id=client) as wire:
            first = wire.request(produce_req(topic, 22_000))
            # 22 kB and the request's headers against 2000 B/s over 10 s: (2200+ - 2000) / 2000 * 10 s
            assert first.responses[0].partition_responses[0].error_code == ErrorCode.none
            throttle_ms = first.throttle_time.total_seconds() * 1000
            assert 1_000 <= throttle_ms < 1_200
            t0 = time.monotonic()
            wire.request(request(18, 3, client_software_name="t", client_software_version="1"))
            assert time.monotonic() - t0 >= throttle_ms / 1000 - 0.2  # muted until the throttle ran out
            fetched = wire.request(fetch_req(topic))
            # the first fetch of 22 kB is over the fetch quota: answered empty, throttled
            assert fetched.throttle_time.total_seconds() >= 1 and fetched.responses == ()
            assert fetched.error_code == ErrorCode.none and fetched.session_id == 0
    finally:
        with WireClient(broker.bootstrap) as admin:
            alter(admin, [("client-id", client)], [("producer_byte_rate", None), ("consumer_byte_rate", None)])


def test_throttle_client_control(broker):
    topic = f"forced-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as admin:
        admin.request(request(19, 7, timeout=5000, validate_only=False, topics=[
            {"name": topic, "num_partitions": 1, "replication_factor": 1, "configs": []}]))
    armed = broker.controls.call("throttle-client", ms=300, count=2, client_id="slowed")
    assert armed["remaining"] == 2
    with WireClient(broker.bootstrap, client_id="other") as other:
        assert other.request(produce_req(topic, 10)).throttle_time.total_seconds() == 0
    with WireClient(broker.bootstrap, client_id="slowed") as wire:
        assert wire.request(produce_req(topic, 10)).throttle_time.total_seconds() == pytest.approx(0.3)
        resp = wire.request(fetch_req(topic))
        assert resp.throttle_time.total_seconds() == pytest.approx(0.3) and resp.responses == ()
        assert wire.request(fetch_req(topic)).throttle_time.total_seconds() == 0
    assert broker.controls.call("list-throttles") == []
    broker.controls.call("throttle-client", ms=100, count=None)
    assert broker.controls.call("clear-throttles") == {"cleared": 1}
    with pytest.raises(Exception, match="ms must be a positive"):
        broker.controls.call("throttle-client", ms=0)


@pytest.mark.parametrize("version", range(3, 14))
def test_throttled_accepted_produce_answer_decodes(version):
    """broker.throttling sets throttle_time_ms inside produce's own encoding (encode_accepted)."""
    from kafkalite.broker.handlers.produce import PartitionResult, encode_accepted, encoded_with_throttle_time
    from kafkalite.protocol.client import decode_response
    from kafkalite.protocol.messages import encode_response

    tdata = SimpleNamespace(topic_id=uuid.uuid4()) if version >= 13 else SimpleNamespace(name="t")
    body = encode_accepted(version, [(tdata, [(0, PartitionResult(base_offset=5, log_append_time=-1,
                                                                  log_start_offset=0))])])
    frame = encode_response(0, version, 9, encoded_with_throttle_time(body, version, 1234))
    resp = decode_response(0, version, frame[4:], 9)  # without the size prefix, as recv_frame returns it
    assert resp.throttle_time.total_seconds() == 1.234
    assert resp.responses[0].partition_responses[0].base_offset == 5
