"""A handler that raises is answered with UNKNOWN_SERVER_ERROR in its API's own response shape,
on a connection that stays open (Kafka's RequestHandlerHelper.sendErrorOrCloseConnection); an
acks=0 Produce, which has no response, closes the connection instead.

Every handler is made to raise through the dispatch hooks (fault_tests.failing_handlers). The
wire client sends a request of every API key at every version the broker serves, each naming one
of everything (topic, partition, group, resource, member), and reads back that every error code
of the answer is UNKNOWN_SERVER_ERROR; real clients (confluent-kafka, the Java driver) see the
error for Produce, Fetch, Metadata, a group API and an admin API and carry on.
"""

from __future__ import annotations

import dataclasses
import functools
import datetime
import re
import time
import typing
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial.errors import OutOfBoundValue

from kafkalite.broker.handlers import load_all
from kafkalite.protocol.apis import API_TABLE
from kafkalite.protocol.client import WireClient, decode_response
from kafkalite.protocol.error_responses import error_response
from kafkalite.protocol.messages import encode_response, request_type
from kafkalite.tests import suite_brokers

from .failing_handlers import RAISED

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]

MODULE = "fault_tests.failing_handlers"


# where Kafka's error response has no error code to carry: DescribeLogDirs before v3 (its
# getErrorResponse sets only the top-level error code, which v3 added; the results stay empty)
NO_ERROR_FIELD = {(35, 0), (35, 1), (35, 2)}


def _sample_scalar(kafka_type: str | None) -> Any:
    if kafka_type in ("int8", "int16", "int32", "int64", "uint16"):
        return 1
    if kafka_type == "float64":
        return 1.0
    if kafka_type == "string":
        return "x"
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "bool":
        return False
    if kafka_type == "uuid":
        return uuid.UUID(int=1)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=1)
    if kafka_type == "datetime_i64":
        return datetime.datetime.fromtimestamp(1, datetime.timezone.utc)
    raise AssertionError(f"no sample for kafka type {kafka_type!r}")


def sample(entity: type) -> Any:
    """An instance of a request entity with one entry in every array (a topic, a partition, a
    group, a member, ...) and a value in every field."""
    hints = typing.get_type_hints(entity)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(entity):
        tp = hints[f.name]
        args = typing.get_args(tp)
        if type(None) in args:  # nullable: give it a value anyway
            tp = next(a for a in args if a is not type(None))
        is_array = typing.get_origin(tp) is tuple
        inner = typing.get_args(tp)[0] if is_array else tp
        one = sample(inner) if dataclasses.is_dataclass(inner) else _sample_scalar(f.metadata.get("kafka_type"))
        values[f.name] = (one,) if is_array else one
    return entity(**values)


def error_codes(entity: Any) -> list[tuple[str, int]]:
    """(path, value) of every error-code field in a response, nested entries included."""
    out: list[tuple[str, int]] = []

    def walk(obj: Any, path: str) -> None:
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.metadata.get("kafka_type") == "error_code":
                out.append((f"{path}{f.name}", int(value)))
            elif isinstance(value, tuple):
                for i, v in enumerate(value):
                    if dataclasses.is_dataclass(v):
                        walk(v, f"{path}{f.name}[{i}].")
            elif dataclasses.is_dataclass(value):
                walk(value, f"{path}{f.name}.")

    walk(entity, "")
    return out


def _answer_codes(client: WireClient, request: Any) -> list[tuple[str, int]]:
    """The error codes of the broker's answer to `request`, which must be byte for byte Kafka's
    getErrorResponse shape with UNKNOWN_SERVER_ERROR (protocol.error_responses). Read back with
    kio where kio can: it refuses the -1 timestamps of some answers (delegation tokens,
    DescribeTransactions), as Kafka sends them."""
    rtype = type(request)
    key, version = rtype.__api_key__, rtype.__version__
    client.correlation_id += 1
    client.send_raw(client.encode(request, client.correlation_id))
    frame = client.recv_frame()
    expected = error_response(key, version, request, ErrorCode.unknown_server_error)
    assert frame == encode_response(key, version, client.correlation_id, expected)[4:], f"{rtype.__name__} v{version}"
    try:
        decoded = decode_response(key, version, frame, client.correlation_id)
    except OutOfBoundValue as exc:
        assert "negative timestamp" in str(exc), exc
        return error_codes(expected)
    assert error_codes(decoded) == error_codes(expected)
    return error_codes(decoded)


def _every_version() -> list[tuple[int, int]]:
    return [(key, v) for key, rng in sorted(API_TABLE.items()) for v in range(rng.min_version, rng.max_version + 1)]


def test_every_api_key_and_version_answers_unknown_server_error_on_an_open_connection():
    load_all()  # fills API_TABLE
    cases = _every_version()
    assert len({k for k, _ in cases}) >= 60, "the API table is not filled"
    with suite_brokers.running(module=MODULE, controls=0, log_level="INFO") as broker:
        broker.controls.call("test-raise-in-handlers", api_keys=sorted(API_TABLE))
        wrong: list[str] = []
        # one connection for every request: each answer proves the connection stayed open
        with WireClient(broker.bootstrap) as client:
            for key, version in cases:
                request = sample(request_type(key, version))
                if key == 0:
                    request = dataclasses.replace(request, acks=-1)
                codes = _answer_codes(client, request)
                if not codes and (key, version) in NO_ERROR_FIELD:
                    continue
                if not codes or any(code != ErrorCode.unknown_server_error for _, code in codes):
                    wrong.append(f"{type(request).__name__} v{version}: {codes}")
        assert not wrong, "answers without UNKNOWN_SERVER_ERROR everywhere:\n" + "\n".join(wrong)
        text = broker.log_text()
        # logged once each, with its traceback
        assert text.count("answered UNKNOWN_SERVER_ERROR") == len(cases)
        assert text.count(f"RuntimeError: {RAISED}") == len(cases)
        assert text.count("Traceback (most recent call last)") == len(cases)


def test_a_failing_acks0_produce_closes_the_connection_as_kafka_does():
    import kio.schema.produce.v11.request as p11

    with suite_brokers.running(module=MODULE, controls=0, log_level="INFO") as broker:
        broker.controls.call("test-raise-in-handlers", api_keys=[0])
        with WireClient(broker.bootstrap) as client:
            request = dataclasses.replace(sample(p11.ProduceRequest), acks=0)
            client.send_only(request)
            client.sock.settimeout(10)
            try:
                closed = client.sock.recv(1) == b""
            except ConnectionResetError:
                closed = True
            assert closed, "the connection stayed open after a failing acks=0 Produce"
        text = broker.log_text()
        assert re.search(r"error handling \w+ v11 from .*; closing the connection", text), text[-2000:]
        assert text.count(f"RuntimeError: {RAISED}") == 1


def test_confluent_kafka_meets_unknown_server_error_and_goes_on_over_the_same_connections():
    """librdkafka through its own connections: a failing CreateTopics, Produce, Metadata,
    JoinGroup and Fetch each reach it as UNKNOWN (Kafka's UNKNOWN_SERVER_ERROR, -1) or are
    retried, the next request succeeds, and the broker never closes a connection."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"se-{uuid.uuid4().hex[:8]}"
    with suite_brokers.running(module=MODULE, controls=0, log_level="INFO") as broker:
        fail_once = functools.partial(broker.controls.call, "test-raise-in-handlers", count=1)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        fail_once(api_keys=[19])  # CreateTopics: an admin API
        with pytest.raises(KafkaException) as refused:
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
        assert refused.value.args[0].code() == KafkaError.UNKNOWN
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)

        fail_once(api_keys=[3])  # Metadata
        with pytest.raises(KafkaException) as refused:
            admin.list_topics(timeout=20)
        assert refused.value.args[0].code() == KafkaError.UNKNOWN
        assert topic in admin.list_topics(timeout=20).topics

        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        producer.list_topics(topic, timeout=20)
        fail_once(api_keys=[0])  # Produce
        delivered: list = []
        for value in (b"refused", b"kept"):
            producer.produce(topic, value, on_delivery=lambda err, msg: delivered.append(err and err.code()))
            assert producer.flush(20) == 0
        assert delivered == [KafkaError.UNKNOWN, None]

        fail_once(api_keys=[11, 1])  # JoinGroup (a group API) and Fetch
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            consumer.subscribe([topic])
            errors, got = [], None
            deadline = time.monotonic() + 60
            while got is None and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    errors.append(msg.error().code())
                else:
                    got = msg.value()
            assert got == b"kept"
            assert errors == [KafkaError.UNKNOWN]  # JoinGroup's; a failed Fetch is retried
        finally:
            consumer.close()
        text = broker.log_text()
        for api in ("create_topics", "metadata", "produce", "join_group", "fetch"):
            assert re.search(rf"error handling {api} v\d+ .*; answered UNKNOWN_SERVER_ERROR", text), api
        assert "closing connection" not in text and "closing the connection" not in text
        del producer, admin  # their threads end before the broker does
