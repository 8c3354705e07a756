"""Tests for the batch layer: protocol.batch (header view, CRC, the walk), protocol.batch_patches,
protocol.codecs, protocol.records (build/decode) and protocol.control_records (markers)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.protocol.batch import (BATCH_HEADER_SIZE, COMPRESSION_LZ4, COMPRESSION_SNAPPY, MIN_BATCH_LENGTH,
                                      BatchHeader, CorruptBatch, increment_sequence, iter_batches)
from kafkalite.protocol.batch_patches import (
    set_base_offset, set_max_timestamp_and_log_append_time, set_partition_leader_epoch,
)
from kafkalite.protocol.codecs import UnsupportedCompression, compress, decompress
from kafkalite.protocol.control_records import build_control_batch, control_record_type, parse_control_record
from kafkalite.protocol.records import (DecodedRecord, Record, _read_varint, _zigzag_varint, build_batch, decode_records,
                                        encode_batch)


# --- an independent CRC-32C (Castagnoli, reflected 0x82F63B78) for the golden test ---------------

def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def slow_crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def test_slow_crc_matches_the_standard_check_value():
    assert slow_crc32c(b"123456789") == 0xE3069283


# --- golden bytes, derived by hand from the v2 format ------------------------------------------------

def golden_batch() -> bytes:
    # one record: key b"k", value b"v", no headers, timestamp 1000
    # record body: attributes 0, timestampDelta 0, offsetDelta 0, keyLength zigzag(1)=2, 'k',
    #              valueLength 2, 'v', header count 0  -> 8 bytes; length prefix zigzag(8)=0x10
    record = bytes([0x10, 0x00, 0x00, 0x00, 0x02, ord("k"), 0x02, ord("v"), 0x00])
    after_crc = (
        bytes.fromhex("0000")                 # attributes
        + bytes.fromhex("00000000")           # lastOffsetDelta
        + bytes.fromhex("00000000000003e8")   # baseTimestamp 1000
        + bytes.fromhex("00000000000003e8")   # maxTimestamp 1000
        + bytes.fromhex("ffffffffffffffff")   # producerId -1
        + bytes.fromhex("ffff")               # producerEpoch -1
        + bytes.fromhex("ffffffff")           # baseSequence -1
        + bytes.fromhex("00000001")           # record count
        + record
    )
    crc = slow_crc32c(after_crc)
    return (bytes.fromhex("0000000000000000")     # baseOffset
            + struct.pack(">i", 4 + 1 + 4 + len(after_crc))  # batchLength = 58
            + bytes.fromhex("00000000")           # partitionLeaderEpoch
            + b"\x02"                             # magic
            + struct.pack(">I", crc)
            + after_crc)


def test_golden_batch_built_and_decoded():
    golden = golden_batch()
    assert len(golden) == 70
    built = build_batch([Record(b"k", b"v", (), 1000)])
    assert bytes(built) == golden
    h = BatchHeader(golden)
    assert (h.base_offset, h.batch_length, h.magic, h.record_count) == (0, 58, 2, 1)
    assert h.crc_ok() and h.total_size == 70 and h.next_offset == 1
    assert decode_records(golden) == [DecodedRecord(0, 1000, b"k", b"v", ())]


def test_golden_control_batch_bytes():
    b = build_control_batch(True, producer_id=7, producer_epoch=3, coordinator_epoch=9, timestamp_ms=123)
    h = BatchHeader(b)
    assert h.attributes == 0x30 and h.is_control and h.is_transactional
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.record_count) == (7, 3, -1, 1)
    assert h.crc == slow_crc32c(bytes(b[21:]))
    rec = decode_records(b)[0]
    assert rec.key == b"\x00\x00\x00\x01"            # version 0, COMMIT = 1
    assert rec.value == b"\x00\x00\x00\x00\x00\x09"  # version 0, coordinator epoch 9
    assert rec.timestamp == 123
    assert parse_control_record(b) == (True, 9)
    a = build_control_batch(False, producer_id=7, producer_epoch=3, coordinator_epoch=-1, timestamp_ms=5)
    assert decode_records(a)[0].key == b"\x00\x00\x00\x00"   # ABORT = 0
    assert parse_control_record(a) == (False, -1)


def test_parse_control_record_rejects_other_batches():
    with pytest.raises(ValueError):
        parse_control_record(build_batch([Record(b"k", b"v")]))
    other = encode_batch([(0, 1, b"\x00\x00\x00\x02", b"", ())], control=True, transactional=False)
    with pytest.raises(ValueError):
        parse_control_record(other)
    assert control_record_type(other) == 2


# --- header fields -------------------------------------------------------------------------------

def test_header_fields_and_derived_values():
    b = build_batch([Record(b"a", b"1", (), 10), Record(b"b", b"2", (), 30), Record(b"c", b"3", (), 20)],
                    base_offset=100, producer_id=42, producer_epoch=7, base_sequence=5, transactional=True,
                    partition_leader_epoch=9)
    h = BatchHeader(b)
    f = h.fields()
    assert f.base_offset == h.base_offset == 100
    assert h.last_offset_delta == 2 and h.last_offset == 102 and h.next_offset == 103
    assert h.base_timestamp == 10 and h.max_timestamp == 30
    assert h.producer_id == 42 and h.producer_epoch == 7 and h.base_sequence == 5 and h.last_sequence == 7
    assert h.is_transactional and not h.is_control and h.compression == 0 and h.timestamp_type == 0
    assert h.partition_leader_epoch == 9 and h.record_count == 3 and h.total_size == len(b)
    assert h.bytes() == bytes(b)


def test_last_sequence_wraps_like_kafka():
    b = build_batch([Record(b"k", b"v")] * 3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    assert BatchHeader(b).last_sequence == 0
    assert increment_sequence(2**31 - 1, 1) == 0
    assert increment_sequence(5, 3) == 8
    assert BatchHeader(build_batch([Record()])).last_sequence == -1


def test_header_view_at_offset_in_memoryview():
    b1 = build_batch([Record(b"x", b"y")])
    b2 = build_batch([Record(b"z", b"w")] * 2, base_offset=1)
    buf = memoryview(bytearray(b1 + b2))
    positions = [(p, h.base_offset, h.record_count) for p, h in iter_batches(buf, check_crc=True)]
    assert positions == [(0, 0, 1), (len(b1), 1, 2)]


# --- patching --------------------------------------------------------------------------------------

@settings(deadline=None)
@given(offset=st.integers(0, 2**62), epoch=st.integers(-1, 2**31 - 1))
def test_patching_offset_and_epoch_keeps_crc(offset, epoch):
    buf = bytearray(b"\xaa" * 7) + build_batch([Record(b"k", b"v", (), 5)] * 3)
    set_base_offset(buf, 7, offset)
    set_partition_leader_epoch(buf, 7, epoch)
    h = BatchHeader(buf, 7)
    assert h.base_offset == offset and h.partition_leader_epoch == epoch and h.crc_ok()
    assert [r.offset for r in decode_records(buf, 7)] == [offset, offset + 1, offset + 2]


def test_log_append_time_patch_rewrites_crc_and_record_timestamps():
    buf = bytearray(build_batch([Record(b"k", b"v", (), 5), Record(b"k", b"v", (), 9)]))
    mv = memoryview(buf)
    set_max_timestamp_and_log_append_time(mv, 0, 123456)
    h = BatchHeader(buf)
    assert h.crc_ok() and h.timestamp_type == 1 and h.max_timestamp == 123456 and h.base_timestamp == 5
    assert [r.timestamp for r in decode_records(buf)] == [123456, 123456]


# --- CRC detects every single-byte change in the covered range ---------------------------------------

@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_crc_detects_any_flipped_byte(data):
    n = data.draw(st.integers(1, 5))
    recs = [Record(data.draw(st.binary(max_size=8)), data.draw(st.binary(max_size=20)), (), 100 + i)
            for i in range(n)]
    buf = bytearray(build_batch(recs))
    pos = data.draw(st.integers(21, len(buf) - 1))
    flip = data.draw(st.integers(1, 255))
    buf[pos] ^= flip
    assert not BatchHeader(buf).crc_ok()
    # framing (length, magic) lies before byte 21, so the CRC check is what fails
    assert len(list(iter_batches(buf))) == 1
    with pytest.raises(CorruptBatch, match="CRC"):
        list(iter_batches(buf, check_crc=True))


# --- round trips ------------------------------------------------------------------------------------

_headers = st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=10))), max_size=3)
_record = st.builds(Record, st.one_of(st.none(), st.binary(max_size=30)),
                    st.one_of(st.none(), st.binary(max_size=200)), _headers.map(tuple),
                    st.integers(0, 2**41))


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(st.lists(_record, min_size=1, max_size=6), min_size=1, max_size=4),
       codec=st.sampled_from([0, 1, 2, 3, 4]))
def test_build_iterate_decode_round_trip(batches, codec):
    buf = bytearray()
    offset = 0
    expected = []
    for recs in batches:
        buf += build_batch(recs, base_offset=offset, compression=codec)
        for i, r in enumerate(recs):
            expected.append(DecodedRecord(offset + i, r.timestamp_ms, r.key, r.value, tuple(r.headers)))
        offset += len(recs)
    got = []
    n = 0
    for pos, h in iter_batches(buf, check_crc=True):
        assert h.compression == codec
        got.extend(decode_records(buf, pos))
        n += 1
    assert n == len(batches)
    assert got == expected


def test_varints_round_trip_extremes():
    for v in (0, 1, -1, 63, -64, 64, 2**31 - 1, -2**31, 2**63 - 1, -2**63):
        out = bytearray()
        _zigzag_varint(v, out)
        assert _read_varint(out, 0) == (v, len(out))


def test_negative_timestamp_delta():
    b = build_batch([Record(b"a", b"", (), 1000), Record(b"b", b"", (), 10)])
    assert [r.timestamp for r in decode_records(b)] == [1000, 10]
    assert BatchHeader(b).max_timestamp == 1000


# --- compression framing -------------------------------------------------------------------------

def test_snappy_uses_xerial_framing_and_accepts_raw():
    cramjam = pytest.importorskip("cramjam")
    payload = bytes(range(256)) * 300
    framed = compress(COMPRESSION_SNAPPY, payload)
    assert framed.startswith(b"\x82SNAPPY\x00") and struct.unpack_from(">ii", framed, 8) == (1, 1)
    assert decompress(COMPRESSION_SNAPPY, framed) == payload
    raw = bytes(cramjam.snappy.compress_raw(payload))
    assert decompress(COMPRESSION_SNAPPY, raw) == payload


def test_lz4_frames_have_independent_blocks():
    pytest.importorskip("cramjam")
    framed = compress(COMPRESSION_LZ4, b"x" * 300000)
    assert framed[:4] == b"\x04\x22\x4d\x18"
    flg = framed[4]
    assert flg & 0x20                      # block independence: Kafka decodes blocks one by one
    assert decompress(COMPRESSION_LZ4, framed) == b"x" * 300000


def test_unknown_codec():
    with pytest.raises(UnsupportedCompression):
        decompress(6, b"")


def test_cross_check_with_kafka_python_if_installed():
    mod = pytest.importorskip("kafka.record.default_records")
    for codec in (0, 1):
        b = build_batch([Record(b"k%d" % i, b"v" * 50, (("h", b"1"),), 100 + i) for i in range(5)],
                        compression=codec, producer_id=3, producer_epoch=1, base_sequence=0)
        kb = mod.DefaultRecordBatch(bytes(b))
        assert kb.validate_crc()
        assert [(r.offset, r.timestamp, r.key, r.value) for r in kb] == \
            [(r.offset, r.timestamp, r.key, r.value) for r in decode_records(b)]
        builder = mod.DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=0,
                                                producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                                batch_size=1 << 20)
        for i in range(5):
            builder.append(i, timestamp=500 + i, key=b"x%d" % i, value=b"y", headers=[("a", b"b")])
        data = bytes(builder.build())
        assert [h.record_count for _, h in iter_batches(data, check_crc=True)] == [5]
        assert [(r.offset, r.timestamp, r.key, r.headers) for r in decode_records(data)] == \
            [(i, 500 + i, b"x%d" % i, (("a", b"b"),)) for i in range(5)]


# --- framing errors ----------------------------------------------------------------------------------

def test_iter_batches_framing_errors():
    good = build_batch([Record(b"k", b"v")])
    with pytest.raises(CorruptBatch, match="runs past"):
        list(iter_batches(good[:-1]))
    with pytest.raises(CorruptBatch, match="too few"):
        list(iter_batches(good + b"\x00" * 5))
    short = bytearray(good)
    struct.pack_into(">i", short, 8, 48)
    with pytest.raises(CorruptBatch, match="minimum"):
        list(iter_batches(short))
    bad_magic = bytearray(good)
    bad_magic[16] = 1
    with pytest.raises(CorruptBatch, match="magic"):
        list(iter_batches(bad_magic))
    # without check_crc a bad CRC passes framing
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    assert len(list(iter_batches(bad_crc))) == 1
    assert list(iter_batches(b"")) == []


def test_decode_rejects_truncated_records():
    b = bytearray(build_batch([Record(b"key", b"value")]))
    # claim two records: the second runs past the end
    struct.pack_into(">i", b, 57, 2)
    with pytest.raises(CorruptBatch):
        decode_records(b)


def test_header_size_constant():
    assert BATCH_HEADER_SIZE == 61 and MIN_BATCH_LENGTH == 49
