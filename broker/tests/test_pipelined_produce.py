"""Pipelined Produce requests: answers held back while the next Produce is already received go
out in order, all of them, and never wait for a request that may block or for data not yet sent."""

from __future__ import annotations

import socket
import uuid

from kio.schema.errors import ErrorCode

import kio.schema.fetch.v12.request as f12
import kio.schema.produce.v9.request as p9
from kafkalite.protocol.client import WireClient, decode_response
from kafkalite.protocol.records import build_batch

from .test_wire import MS, metadata, records


def _produce_request(topic: str, batch, acks: int = -1, partition: int = 0):
    return p9.ProduceRequest(
        transactional_id=None, acks=acks, timeout=1000 * MS,
        topic_data=(p9.TopicProduceData(name=topic, partition_data=(
            p9.PartitionProduceData(index=partition, records=bytes(batch)),)),),
    )


def _frame(wire: WireClient, request, correlation_id: int) -> bytes:
    payload = wire.encode(request, correlation_id)
    return len(payload).to_bytes(4, "big") + payload


def _produce_answer(wire: WireClient, correlation_id: int):
    resp = decode_response(0, 9, wire.recv_frame(), correlation_id)
    return resp.responses[0].partition_responses[0]


def _two_produces(wire: WireClient, name: str, *, second_acks: int = -1) -> bytes:
    """The frames of two produces to `name` sent back to back: record 0 (correlation id 1) and
    record 1 (id 2, with `second_acks`)."""
    return (_frame(wire, _produce_request(name, build_batch(records(1))), 1)
            + _frame(wire, _produce_request(name, build_batch(records(1, 1)), acks=second_acks), 2))


def test_pipelined_produce_answers_all_in_order(broker):
    name = f"pipe-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as wire:
        metadata(wire, name)
        # 20 requests in one send: the broker finds most of them already received
        wire.sock.sendall(b"".join(_frame(wire, _produce_request(name, build_batch(records(2, 2 * i))), 100 + i)
                                   for i in range(20)))
        for i in range(20):
            r = _produce_answer(wire, 100 + i)
            assert r.error_code == ErrorCode.none and r.base_offset == 2 * i


def test_produce_answer_is_not_held_behind_a_waiting_fetch(broker):
    name = f"pipe-{uuid.uuid4().hex[:6]}"
    empty = f"pipe-empty-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap, timeout=2.0) as wire:
        metadata(wire, name, empty)
        fetch = f12.FetchRequest(
            max_wait=4000 * MS, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
            topics=(f12.FetchTopic(topic=empty, partitions=(
                f12.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),),
            forgotten_topics_data=(), rack_id="")
        wire.sock.sendall(_two_produces(wire, name) + _frame(wire, fetch, 3))
        # both answers come before the fetch's 4 s wait is over (the socket times out after 2 s)
        assert _produce_answer(wire, 1).base_offset == 0
        assert _produce_answer(wire, 2).base_offset == 1


def test_answer_before_an_acks0_produce_is_sent(broker):
    name = f"pipe-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap, timeout=2.0) as wire:
        metadata(wire, name)
        # the acks=0 request gets no answer and nothing follows it: the first answer must not wait
        wire.sock.sendall(_two_produces(wire, name, second_acks=0))
        assert _produce_answer(wire, 1).base_offset == 0


def test_answers_go_out_before_an_acks0_error_closes_the_connection(broker):
    name = f"pipe-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap, timeout=5.0) as wire:
        metadata(wire, name)
        wire.sock.sendall(_two_produces(wire, name)
                          + _frame(wire, _produce_request(f"unknown-{uuid.uuid4().hex}", build_batch(records(1)),
                                                          acks=0), 3))
        assert _produce_answer(wire, 1).base_offset == 0
        assert _produce_answer(wire, 2).base_offset == 1
        # Kafka closes the connection on an error of an acks=0 produce
        wire.sock.settimeout(5.0)
        try:
            assert wire.sock.recv(1) == b""
        except ConnectionResetError:
            pass
        except socket.timeout:
            raise AssertionError("the connection stayed open after an acks=0 error") from None
