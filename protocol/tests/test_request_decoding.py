"""Requests whose declared lengths or nulls do not fit their schema are undecodable, never a crash
request, as in Kafka's generated readers (input found by fault_tests' fuzzer)."""

from __future__ import annotations

import io
import struct

import pytest
import kio.schema.find_coordinator.v4.request as fc4
import kio.schema.produce.v9.request as pr9
from kio.serial import entity_writer

from kafkalite.protocol.messages import MalformedRequest, parse_request, peek_header


def _frame(api_key: int, version: int, body: bytes, flexible: bool) -> bytes:
    return struct.pack(">hhih", api_key, version, 1, 1) + b"c" + (b"\0" if flexible else b"") + body


def test_null_array_where_the_schema_has_no_null_is_malformed():
    # FindCoordinator v4: key type 0, coordinator_keys as compact array length -1 (0), no tags
    frame = _frame(10, 4, b"\0\0\0", flexible=True)
    header, size = peek_header(frame)
    with pytest.raises(MalformedRequest, match="coordinator_keys"):
        parse_request(frame, header, size)


def test_nullable_fields_may_still_be_null():
    req = pr9.ProduceRequest(transactional_id=None, acks=1, timeout=__import__("datetime").timedelta(seconds=1),
                             topic_data=(pr9.TopicProduceData(name="t", partition_data=(
                                 pr9.PartitionProduceData(index=0, records=None),)),))
    buf = io.BytesIO()
    entity_writer(pr9.ProduceRequest)(buf, req)
    frame = _frame(0, 9, buf.getvalue(), flexible=True)
    header, size = peek_header(frame)
    assert parse_request(frame, header, size).topic_data[0].partition_data[0].records is None


def test_null_inside_a_nested_array_is_malformed():
    buf = io.BytesIO()
    entity_writer(fc4.FindCoordinatorRequest)(buf, fc4.FindCoordinatorRequest(key_type=0, coordinator_keys=("g",)))
    good = buf.getvalue()
    # the one key's compact string length 1+1 -> 0 (null)
    bad = good[:2] + b"\0" + good[4:]
    frame = _frame(10, 4, bad, flexible=True)
    header, size = peek_header(frame)
    with pytest.raises(MalformedRequest):
        parse_request(frame, header, size)


def test_array_longer_than_the_frame_is_malformed_before_kio_reserves_room_for_it():
    # IncrementalAlterConfigs v1: compact array length 0xFFFFFFFF; kio's native reader would
    # try to reserve that many entries and abort the process
    frame = _frame(44, 1, b"\xff\xff\xff\xff\x0e", flexible=True)
    header, size = peek_header(frame)
    with pytest.raises(MalformedRequest, match="array of"):
        parse_request(frame, header, size)
    # the same in a non-flexible version: int32 length
    frame = _frame(44, 0, b"\x7f\xff\xff\xf0\x00", flexible=False)
    header, size = peek_header(frame)
    with pytest.raises(MalformedRequest, match="array of"):
        parse_request(frame, header, size)
