"""Tests for broker.produce_validation: Kafka's checks of one partition's records in a Produce request."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalite.broker.produce_validation import InvalidRecord, validate_produce_batches
from kafkalite.protocol.control_records import build_control_batch
from kafkalite.protocol.records import Record, build_batch, encode_batch


_records = st.lists(st.builds(Record, st.binary(max_size=8), st.binary(max_size=20), st.just(()),
                              st.integers(100, 105)), min_size=1, max_size=5)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=_records, where=st.floats(0, 1, exclude_max=True), flip=st.integers(1, 255))
def test_any_flipped_byte_in_the_crc_range_is_corrupt_message(records, where, flip):
    buf = bytearray(build_batch(records))
    covered = len(buf) - 21             # the CRC covers attributes (byte 21) to the end
    buf[21 + int(where * covered)] ^= flip
    with pytest.raises(InvalidRecord) as exc:
        validate_produce_batches(buf)
    # framing (length, magic) lies before byte 21, so the CRC check is what fails
    assert exc.value.error == "CORRUPT_MESSAGE"


def test_a_batch_built_by_kafka_python_is_accepted():
    for codec in (0, 1):
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=0,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                            batch_size=1 << 20)
        for i in range(5):
            builder.append(i, timestamp=500 + i, key=b"x%d" % i, value=b"y", headers=[("a", b"b")])
        info = validate_produce_batches(bytes(builder.build()))
        assert (info.batch_count, info.record_count, info.compression) == (1, 5, codec)


def _err(buf, **kw):
    with pytest.raises(InvalidRecord) as exc:
        validate_produce_batches(buf, **kw)
    return exc.value.error


def test_validate_accepts_a_client_batch():
    b = build_batch([Record(b"k", b"v", (), 7), Record(b"k", b"v", (), 9)], producer_id=4, producer_epoch=2,
                    base_sequence=10, transactional=True, compression=1)
    info = validate_produce_batches(b)
    assert info.batch_count == 1 and info.record_count == 2 and info.size_bytes == len(b)
    assert (info.producer_id, info.producer_epoch, info.is_transactional) == (4, 2, True)
    assert (info.base_sequence, info.last_sequence, info.max_timestamp, info.compression) == (10, 11, 9, 1)


def test_validate_errors_follow_kafka():
    good = build_batch([Record(b"k", b"v")])
    assert _err(b"") == "INVALID_RECORD"
    assert _err(good[:-3]) == "CORRUPT_MESSAGE"
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    assert _err(bad_crc) == "CORRUPT_MESSAGE"
    magic1 = bytearray(good)
    magic1[16] = 1
    assert _err(magic1) == "INVALID_RECORD"
    control = build_control_batch(True, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp_ms=0)
    assert _err(control) == "INVALID_RECORD"
    # record count inconsistent with lastOffsetDelta
    two = encode_batch([(0, 1, b"a", b"", ()), (1, 1, b"b", b"", ())], last_offset_delta=3)
    assert _err(two) == "INVALID_RECORD"
    # idempotent batch without a sequence
    noseq = build_batch([Record(b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=-1)
    assert _err(noseq) == "INVALID_RECORD"
    # base offset must be 0 from clients (UnifiedLog.analyzeAndValidateRecords)
    off = build_batch([Record(b"k", b"v")], base_offset=12)
    assert _err(off) == "INVALID_RECORD"
    assert validate_produce_batches(off, allow_nonzero_base_offset=True).record_count == 1
    # one batch per partition (ProduceRequest.validateRecords)
    assert _err(good + good) == "INVALID_RECORD"
    assert validate_produce_batches(good + good, single_batch=False).batch_count == 2


def test_validate_multiple_batches_must_share_producer():
    a = build_batch([Record(b"k", b"v")], producer_id=1, producer_epoch=0, base_sequence=0)
    b = build_batch([Record(b"k", b"v")], producer_id=2, producer_epoch=0, base_sequence=0)
    assert _err(a + b, single_batch=False) == "INVALID_RECORD"
    c = build_batch([Record(b"k", b"v")] * 2, producer_id=1, producer_epoch=0, base_sequence=1)
    info = validate_produce_batches(a + c, single_batch=False)
    assert (info.batch_count, info.record_count, info.base_sequence, info.last_sequence) == (2, 3, 0, 2)
