"""Client telemetry (broker.telemetry): subscription validation, what a client instance is asked
for, the push rules (one early push after a get, then one per interval, terminating last), and
the metric names read from an OTLP payload. Kafka's answers to the same requests are compared in
compat_tests/differ ("client telemetry"); real clients push in compat_tests/test_client_telemetry.py."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from kafkalite.broker.telemetry import ClientTelemetry, TelemetryConfigError, metric_names, validate


@pytest.mark.parametrize("props,message", [
    ({"interval.ms": "10"}, "Invalid value 10 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
    ({"no.such.key": "1"}, "Unknown client metrics configuration: no.such.key"),
    ({"match": "nobody=x"}, "Illegal client matching pattern: nobody=x"),
    ({"match": "client_id=["}, "Illegal client matching pattern: client_id=["),
])
def test_refusals(props, message):
    with pytest.raises(TelemetryConfigError) as exc:
        validate(props)
    assert exc.value.message == message


def _field(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_subscription_and_push_rules(tmp_path):
    t = ClientTelemetry(tmp_path)
    code, iid, inst = t.get(None, "c1", ("127.0.0.1", "5000"), now=0)
    assert code == ErrorCode.none and inst.metrics == () and inst.interval_ms == 300_000
    t.alter("s", {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000", "match": "client_id=c1"},
            validate_only=False)
    t.alter("other", {"metrics": "*", "match": "client_id=nobody"}, validate_only=False)
    code, iid2, inst = t.get(iid, "c1", ("127.0.0.1", "5000"), now=10)
    assert (code, iid2, inst.metrics, inst.interval_ms) == (ErrorCode.none, iid, ("org.apache.kafka.producer.",), 1000)
    assert t.get(iid, "c1", ("127.0.0.1", "5000"), now=20)[0] == ErrorCode.throttling_quota_exceeded
    payload = _field(1, _field(2, _field(2, _field(1, b"org.apache.kafka.producer.record.send.rate"))))
    sub = inst.subscription_id
    assert t.push(iid, sub, False, 0, payload, now=30) == ErrorCode.none          # the one early push
    assert t.push(iid, sub, False, 0, payload, now=40) == ErrorCode.throttling_quota_exceeded
    assert t.push(iid, sub + 1, False, 0, payload, now=2000) == ErrorCode.unknown_subscription_id
    assert t.push(iid, sub, False, 9, payload, now=4000) == ErrorCode.unsupported_compression_type
    assert t.push(None, sub, False, 0, payload, now=5000) == ErrorCode.invalid_request
    assert t.push(iid, sub, True, 0, payload, now=5001) == ErrorCode.none         # terminating: any time
    assert t.push(iid, sub, True, 0, payload, now=9000) == ErrorCode.invalid_request
    assert inst.pushes[0]["metrics"] == ["org.apache.kafka.producer.record.send.rate"]
    assert t.push(uuid.uuid4(), sub, False, 0, b"", now=1) == ErrorCode.unknown_subscription_id
    assert ClientTelemetry(tmp_path).subscriptions == t.subscriptions
    assert metric_names(0, b"\xff\xff") is None
