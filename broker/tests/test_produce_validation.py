"""Tests for broker.produce_validation: Kafka's checks of one partition's records in a Produce request."""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kio.schema.errors import ErrorCode

from kafkalite.broker.produce_validation import (Accepted, InvalidRecord, ProducePolicy, Refused, validate_produce,
                                                 validate_produce_batches)
from kafkalite.protocol.control_records import build_control_batch
from kafkalite.protocol.records import Record, build_batch, decode_records, encode_batch


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


# --- validate_produce: the broker's rules for one partition, in Kafka's order ---------------------

class _Topic:
    def __init__(self, policy: ProducePolicy, name: str = "t") -> None:
        self.name = name
        self.policy = policy

    @property
    def internal(self) -> bool:
        return self.name.startswith("__")


_DEFAULTS = ProducePolicy()


class _Partition:
    def __init__(self, policy: ProducePolicy = _DEFAULTS, *, name: str = "t", isr: tuple[int, ...] = (1,)):
        self.topic = _Topic(policy, name)
        self.index = 0
        self.isr = list(isr)


def _now_batch(*records: Record, **kw) -> bytearray:
    return build_batch(records, timestamp_ms=int(time.time() * 1000), **kw)


def test_a_valid_batch_is_accepted_as_the_bytes_that_came():
    records = _now_batch(Record(b"k", b"v"), producer_id=3, producer_epoch=0, base_sequence=0, transactional=True)
    accepted = validate_produce(_Partition(), records, 1, None)
    assert isinstance(accepted, Accepted)
    # no copy on the hot path: the handler appends the request's own buffer
    assert accepted.records is records and accepted.header.buf is records
    assert accepted.is_transactional and accepted.header.producer_id == 3


def test_an_internal_topic_is_refused_before_leadership_and_the_isr():
    not_leader = Refused(ErrorCode.not_leader_or_follower, "elsewhere")
    got = validate_produce(_Partition(name="__consumer_offsets", isr=()), _now_batch(Record(b"k")), -1, not_leader)
    assert isinstance(got, Refused) and got.error == ErrorCode.invalid_topic_exception
    assert validate_produce(_Partition(isr=()), _now_batch(Record(b"k")), -1, not_leader) is not_leader


def test_acks_all_needs_min_insync_replicas_before_the_batch_is_read():
    policy = ProducePolicy(min_insync_replicas=2)
    got = validate_produce(_Partition(policy, isr=(1,)), b"not a batch", -1, None)
    assert isinstance(got, Refused) and got.error == ErrorCode.not_enough_replicas
    assert "min.isr requirement of 2 for partition t-0" in (got.message or "")
    # acks=1 does not ask for the ISR; the bad batch is then what is refused
    got = validate_produce(_Partition(policy, isr=(1,)), b"not a batch", 1, None)
    assert isinstance(got, Refused) and got.error == ErrorCode.corrupt_message
    assert not got.with_log_start_offset


def test_max_message_bytes_and_a_missing_batch():
    batch = _now_batch(Record(b"k", b"v" * 100))
    got = validate_produce(_Partition(ProducePolicy(max_message_bytes=len(batch) - 1)), batch, 1, None)
    assert isinstance(got, Refused) and got.error == ErrorCode.message_too_large
    assert isinstance(validate_produce(_Partition(ProducePolicy(max_message_bytes=len(batch))), batch, 1, None),
                      Accepted)
    got = validate_produce(_Partition(), None, 1, None)
    assert isinstance(got, Refused) and got.error == ErrorCode.invalid_record


def test_timestamps_out_of_range_name_each_record_and_answer_the_log_start_offset():
    now = int(time.time() * 1000)
    batch = build_batch([Record(b"a", b"1", (), now), Record(b"b", b"2", (), now + 10_000_000)])
    got = validate_produce(_Partition(), batch, 1, None)
    assert isinstance(got, Refused) and got.error == ErrorCode.invalid_timestamp
    assert [i for i, _m in got.record_errors] == [1] and got.with_log_start_offset
    # LogAppendTime topics take any CreateTime
    assert isinstance(validate_produce(_Partition(ProducePolicy(log_append_time=True)), batch, 1, None), Accepted)


def test_a_compacted_topic_refuses_keyless_records_by_index():
    batch = _now_batch(Record(b"k", b"1"), Record(None, b"2"), Record(None, b"3"))
    got = validate_produce(_Partition(ProducePolicy(compacted=True)), batch, 1, None)
    assert isinstance(got, Refused) and got.error == ErrorCode.invalid_record
    assert [i for i, _m in got.record_errors] == [1, 2] and got.with_log_start_offset


def test_the_topic_compression_type_rewrites_the_batch():
    batch = _now_batch(Record(b"k", b"v" * 200), Record(b"k2", b"w" * 200))
    got = validate_produce(_Partition(ProducePolicy(compression=1)), batch, 1, None)
    assert isinstance(got, Accepted) and got.records is not batch
    assert got.header.compression == 1 and got.header.buf is got.records
    assert [r.value for r in decode_records(got.records)] == [b"v" * 200, b"w" * 200]
    # the rewritten batch is held to max.message.bytes too
    # (random bytes do not compress: gzip's framing makes the batch larger than it came)
    incompressible = _now_batch(Record(b"k", os.urandom(300)))
    got = validate_produce(_Partition(ProducePolicy(compression=1, max_message_bytes=len(incompressible))),
                           incompressible, 1, None)
    assert isinstance(got, Refused) and got.error == ErrorCode.message_too_large
    assert "after recompression" in (got.message or "")
