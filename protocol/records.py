"""Record batches, magic v2: the bytes layer (sans-IO).

Layout of a v2 batch (big-endian), as in Kafka's DefaultRecordBatch:

    offset  size  field
       0     8    baseOffset
       8     4    batchLength            (bytes after this field: total size - 12)
      12     4    partitionLeaderEpoch
      16     1    magic (2)
      17     4    crc                    CRC-32C of bytes 21..end
      21     2    attributes             bits 0-2 compression, 3 timestamp type (1 = LogAppendTime),
                                         4 transactional, 5 control, 6 delete horizon set
      23     4    lastOffsetDelta
      27     8    baseTimestamp
      35     8    maxTimestamp
      43     8    producerId
      51     2    producerEpoch
      53     4    baseSequence
      57     4    recordCount
      61          records

Base offset, batch length and leader epoch sit before the CRC-covered range, so a broker
assigns offsets and stamps the leader epoch in place without recomputing the CRC.
LogAppendTime changes attributes and maxTimestamp, which are covered, so that patch
rewrites the CRC.

The produce and fetch paths only touch headers (`BatchHeader`, `iter_batches`,
`validate_produce_batches`); `decode_records` and the builders are for internal topics,
timestamp lookups, compaction and tests.
"""

from __future__ import annotations

import struct
import time
from typing import Any, Callable, Iterable, Iterator, NamedTuple


def _crc32c_first_call(data) -> int:
    """CRC-32C (Castagnoli) of `data`, by the crc32c package. Imported on first use: the
    package reads its own distribution metadata on import, a cost a broker start (ApiVersions,
    Metadata) need not pay. The first call puts the package's function in place of this one."""
    global crc32c
    from crc32c import crc32c as impl

    crc32c = impl
    return impl(data)


crc32c: Callable[[Any], int] = _crc32c_first_call


__all__ = [
    "BATCH_HEADER_SIZE", "LOG_OVERHEAD", "MIN_BATCH_LENGTH", "MAGIC",
    "COMPRESSION_NONE", "COMPRESSION_GZIP", "COMPRESSION_SNAPPY", "COMPRESSION_LZ4", "COMPRESSION_ZSTD",
    "CONTROL_ABORT", "CONTROL_COMMIT",
    "BatchHeader", "CorruptBatch", "InvalidRecord", "UnsupportedCompression",
    "iter_batches", "validate_produce_batches", "ProduceBatchesInfo",
    "set_base_offset", "set_partition_leader_epoch", "set_max_timestamp_and_log_append_time",
    "Record", "DecodedRecord", "build_batch", "encode_batch", "decode_records",
    "build_control_batch", "parse_control_record", "compress", "decompress", "increment_sequence",
    "recompress_batch",
]

# --- layout -------------------------------------------------------------------------------

BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12                                   # baseOffset + batchLength
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD  # 49: smallest legal batchLength
MAGIC = 2

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD = range(5)
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

# Control record types (Kafka's ControlRecordType): 0 ABORT, 1 COMMIT; 2.. are KRaft types.
CONTROL_ABORT = 0
CONTROL_COMMIT = 1

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == BATCH_HEADER_SIZE
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_LEN_AND_EPOCH = struct.Struct(">qii")   # baseOffset, batchLength, partitionLeaderEpoch


class CorruptBatch(ValueError):
    """A batch whose framing or checksum is broken (the log recovery and fetch paths)."""

    def __init__(self, reason: str, position: int = -1):
        super().__init__(reason)
        self.reason = reason
        self.position = position


class InvalidRecord(ValueError):
    """A produced batch Kafka would refuse; `error` is the Kafka error code name
    ('CORRUPT_MESSAGE' or 'INVALID_RECORD')."""

    def __init__(self, error: str, message: str):
        super().__init__(f"{error}: {message}")
        self.error = error
        self.error_code_name = error
        self.message = message


class UnsupportedCompression(RuntimeError):
    """The batch uses a codec we cannot decode here (cramjam missing, or an unknown codec id)."""


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: int32 arithmetic that wraps to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


class HeaderFields(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)


class BatchHeader:
    """A view of the 61-byte header of the batch at `pos` in `buf`; fields are read on
    access, so the view follows in-place patches of the buffer."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf, pos: int = 0):
        self.buf = buf
        self.pos = pos

    def fields(self) -> HeaderFields:
        """All header fields in one unpack."""
        return HeaderFields._make(_HEADER.unpack_from(self.buf, self.pos))

    @property
    def base_offset(self) -> int:
        return _I64.unpack_from(self.buf, self.pos)[0]

    @property
    def batch_length(self) -> int:
        return _I32.unpack_from(self.buf, self.pos + LENGTH_OFFSET)[0]

    @property
    def partition_leader_epoch(self) -> int:
        return _I32.unpack_from(self.buf, self.pos + PARTITION_LEADER_EPOCH_OFFSET)[0]

    @property
    def magic(self) -> int:
        return _I8.unpack_from(self.buf, self.pos + MAGIC_OFFSET)[0]

    @property
    def crc(self) -> int:
        return _U32.unpack_from(self.buf, self.pos + CRC_OFFSET)[0]

    @property
    def attributes(self) -> int:
        return _I16.unpack_from(self.buf, self.pos + ATTRIBUTES_OFFSET)[0]

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def last_offset_delta(self) -> int:
        return _I32.unpack_from(self.buf, self.pos + LAST_OFFSET_DELTA_OFFSET)[0]

    @property
    def base_timestamp(self) -> int:
        return _I64.unpack_from(self.buf, self.pos + BASE_TIMESTAMP_OFFSET)[0]

    @property
    def max_timestamp(self) -> int:
        return _I64.unpack_from(self.buf, self.pos + MAX_TIMESTAMP_OFFSET)[0]

    @property
    def producer_id(self) -> int:
        return _I64.unpack_from(self.buf, self.pos + PRODUCER_ID_OFFSET)[0]

    @property
    def producer_epoch(self) -> int:
        return _I16.unpack_from(self.buf, self.pos + PRODUCER_EPOCH_OFFSET)[0]

    @property
    def base_sequence(self) -> int:
        return _I32.unpack_from(self.buf, self.pos + BASE_SEQUENCE_OFFSET)[0]

    @property
    def record_count(self) -> int:
        return _I32.unpack_from(self.buf, self.pos + RECORDS_COUNT_OFFSET)[0]

    # derived
    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def total_size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_sequence(self) -> int:
        return self.fields().last_sequence

    def compute_crc(self) -> int:
        start = self.pos + ATTRIBUTES_OFFSET
        end = self.pos + self.total_size
        return crc32c(memoryview(self.buf)[start:end])

    def crc_ok(self) -> bool:
        return self.compute_crc() == self.crc

    def bytes(self) -> bytes:
        """A copy of the whole batch."""
        return bytes(memoryview(self.buf)[self.pos:self.pos + self.total_size])

    def __repr__(self) -> str:
        f = self.fields()
        return (f"BatchHeader(base_offset={f.base_offset}, last_offset_delta={f.last_offset_delta}, "
                f"length={f.batch_length}, records={f.record_count}, attributes={f.attributes:#x}, "
                f"producer_id={f.producer_id}, producer_epoch={f.producer_epoch}, "
                f"base_sequence={f.base_sequence})")


# --- in-place patching ----------------------------------------------------------------------

def set_base_offset(buf, pos: int, offset: int) -> None:
    """Assign the batch's base offset (outside the CRC)."""
    _I64.pack_into(buf, pos + BASE_OFFSET_OFFSET, offset)


def set_partition_leader_epoch(buf, pos: int, epoch: int) -> None:
    """Stamp the partition leader epoch (outside the CRC)."""
    _I32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_max_timestamp_and_log_append_time(buf, pos: int, timestamp_ms: int) -> None:
    """message.timestamp.type=LogAppendTime: set the timestamp-type bit and maxTimestamp,
    then rewrite the CRC (as Kafka's DefaultRecordBatch.setMaxTimestamp). Consumers then
    read every record's timestamp as the batch's maxTimestamp."""
    attrs = _I16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)[0]
    if attrs & TIMESTAMP_TYPE_MASK and _I64.unpack_from(buf, pos + MAX_TIMESTAMP_OFFSET)[0] == timestamp_ms:
        return
    _I16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attrs | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    _rewrite_crc(buf, pos)


def _rewrite_crc(buf, pos: int) -> None:
    length = _I32.unpack_from(buf, pos + LENGTH_OFFSET)[0]
    crc = crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET:pos + LOG_OVERHEAD + length])
    _U32.pack_into(buf, pos + CRC_OFFSET, crc)


# --- walking a buffer of batches --------------------------------------------------------------

def iter_batches(buf, start: int = 0, end: int | None = None, *, check_crc: bool = False,
                 partial_tail: bool = False, base: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header view) for consecutive batches in buf[start:end]: the one walk
    over batch headers (produce validation aside, which answers with Kafka's error codes).

    Raises CorruptBatch at the first batch whose length is below the minimum or runs
    past `end`, whose magic is not 2, or (with check_crc) whose CRC does not match. With
    `partial_tail` (buf is one chunk of a file), a batch cut off by `end` ends the walk
    instead. Positions in errors are given as `base` + position (the chunk's file position)."""
    n = len(buf) if end is None else end
    pos = start
    unpack_len = _I32.unpack_from
    unpack_magic = _I8.unpack_from
    while pos < n:
        at = base + pos
        if n - pos < LOG_OVERHEAD:
            if partial_tail:
                return
            raise CorruptBatch(f"{n - pos} trailing bytes at position {at} are too few for a batch", at)
        length = unpack_len(buf, pos + LENGTH_OFFSET)[0]
        if length < MIN_BATCH_LENGTH:
            raise CorruptBatch(f"batch length {length} at position {at} is below the minimum "
                               f"{MIN_BATCH_LENGTH}", at)
        total = length + LOG_OVERHEAD
        if pos + total > n:
            if partial_tail:
                return
            raise CorruptBatch(f"batch of {total} bytes at position {at} runs past the end ({base + n})", at)
        magic = unpack_magic(buf, pos + MAGIC_OFFSET)[0]
        if magic != MAGIC:
            raise CorruptBatch(f"batch at position {at} has magic {magic}, expected 2", at)
        header = BatchHeader(buf, pos)
        if check_crc and not header.crc_ok():
            raise CorruptBatch(f"batch at position {at} fails its CRC check", at)
        yield pos, header
        pos += total


class ProduceBatchesInfo(NamedTuple):
    """What Produce needs to know about one partition's records, from headers only."""
    batch_count: int
    record_count: int
    size_bytes: int            # all batches together
    max_batch_bytes: int       # the largest batch (max.message.bytes applies per batch)
    producer_id: int
    producer_epoch: int
    is_transactional: bool
    base_sequence: int         # of the first batch
    last_sequence: int         # of the last batch (int32 wrap as Kafka)
    first_timestamp: int       # base timestamp of the first batch
    max_timestamp: int         # over all batches
    compression: int           # codec id of the first batch
    last_offset_delta: int     # of the last batch; records span base..base+this when single


def validate_produce_batches(buf, *, single_batch: bool = True,
                             allow_nonzero_base_offset: bool = False) -> ProduceBatchesInfo:
    """Check one partition's records from a Produce request the way Kafka does, headers only.

    Kafka's order: ProduceRequest.validateRecords (a batch present, magic 2, exactly one
    batch), UnifiedLog.analyzeAndValidateRecords (base offset 0 from clients, size and CRC),
    LogValidator.validateBatch (offset range vs record count, no control batches, a producer
    id needs a sequence). Raises InvalidRecord('CORRUPT_MESSAGE' | 'INVALID_RECORD', text).

    `single_batch=False` accepts several batches per partition (Kafka does not); they must
    then share producer id, epoch and transactional flag."""
    n = len(buf)
    if n < LOG_OVERHEAD:
        if n == 0:
            raise InvalidRecord("INVALID_RECORD", "Produce requests must have at least one record batch per partition")
        raise InvalidRecord("CORRUPT_MESSAGE", f"{n} bytes are too few for a record batch")
    unpack = _HEADER.unpack_from
    pos = 0
    count = 0
    records = 0
    max_batch = 0
    max_ts = NO_TIMESTAMP
    first = None
    f = None
    while pos < n:
        if n - pos < LOG_OVERHEAD:
            raise InvalidRecord("CORRUPT_MESSAGE", f"{n - pos} trailing bytes after the last record batch")
        length = _I32.unpack_from(buf, pos + LENGTH_OFFSET)[0]
        total = length + LOG_OVERHEAD
        if length < MIN_BATCH_LENGTH:
            raise InvalidRecord("CORRUPT_MESSAGE",
                                f"Record batch is corrupt (the size {total} is smaller than the minimum "
                                f"allowed overhead {BATCH_HEADER_SIZE})")
        if pos + total > n:
            raise InvalidRecord("CORRUPT_MESSAGE",
                                f"record batch of {total} bytes at position {pos} runs past the end of the records ({n})")
        magic = _I8.unpack_from(buf, pos + MAGIC_OFFSET)[0]
        if magic != MAGIC:
            raise InvalidRecord("INVALID_RECORD",
                                "Produce requests are only allowed to contain record batches with magic version 2")
        if count == 1 and single_batch:
            raise InvalidRecord("INVALID_RECORD",
                                "Produce requests are only allowed to contain exactly one record batch per partition")
        f = unpack(buf, pos)
        (base_offset, _, _, _, crc, attrs, lod, base_ts, batch_max_ts, pid, epoch, base_seq, rcount) = f
        if base_offset != 0 and not allow_nonzero_base_offset:
            raise InvalidRecord("INVALID_RECORD",
                                f"The baseOffset of the record batch should be 0, but it is {base_offset}")
        if crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET:pos + total]) != crc:
            raise InvalidRecord("CORRUPT_MESSAGE", f"Record is corrupt (stored crc = {crc}) at position {pos}")
        if lod + 1 <= 0:
            raise InvalidRecord("INVALID_RECORD", f"Batch has an invalid offset range: last offset delta {lod}")
        if rcount <= 0:
            raise InvalidRecord("INVALID_RECORD", f"Invalid reported count for record batch: {rcount}")
        if rcount != lod + 1:
            raise InvalidRecord("INVALID_RECORD",
                                f"Inconsistent batch offset range [0, {lod}] and count of records {rcount}")
        if attrs & CONTROL_MASK:
            raise InvalidRecord("INVALID_RECORD", "Clients are not allowed to write control records")
        if pid >= 0 and base_seq < 0:
            raise InvalidRecord("INVALID_RECORD",
                                f"Invalid sequence number {base_seq} in record batch with producerId {pid}")
        if first is None:
            first = f
        elif (pid != first[9] or epoch != first[10]
              or (attrs & TRANSACTIONAL_MASK) != (first[5] & TRANSACTIONAL_MASK)):
            raise InvalidRecord("INVALID_RECORD",
                                "all record batches of a partition must share producer id, epoch and transactional flag")
        count += 1
        records += rcount
        if total > max_batch:
            max_batch = total
        if batch_max_ts > max_ts:
            max_ts = batch_max_ts
        pos += total
    last = f
    last_seq = NO_SEQUENCE if last[11] == NO_SEQUENCE else increment_sequence(last[11], last[6])
    return ProduceBatchesInfo(
        batch_count=count, record_count=records, size_bytes=n, max_batch_bytes=max_batch,
        producer_id=first[9], producer_epoch=first[10], is_transactional=bool(first[5] & TRANSACTIONAL_MASK),
        base_sequence=first[11], last_sequence=last_seq, first_timestamp=first[7], max_timestamp=max_ts,
        compression=first[5] & COMPRESSION_MASK, last_offset_delta=last[6],
    )


# --- compression ---------------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")   # magic, version, compatible version
_XERIAL_BLOCK = 32 * 1024

_cramjam: Any = None      # optional (snappy, lz4, zstd): imported when a batch first needs it


def _need_cramjam(codec: int):
    global _cramjam
    if _cramjam is None:
        try:
            import cramjam
        except ImportError:
            raise UnsupportedCompression(
                f"{COMPRESSION_NAMES.get(codec, codec)} batches need the optional 'cramjam' package "
                f"(pip install 'kafkalite[compression]')") from None
        _cramjam = cramjam
    return _cramjam


def decompress(codec: int, data) -> bytes:
    """Inflate the records section of a batch compressed with `codec`."""
    if codec == COMPRESSION_NONE:
        return bytes(data)
    if codec == COMPRESSION_GZIP:
        import gzip

        return gzip.decompress(bytes(data))
    if codec == COMPRESSION_SNAPPY:
        cj = _need_cramjam(codec)
        data = bytes(data)
        if data.startswith(_XERIAL_MAGIC):
            # Kafka's Java client uses xerial snappy-java framing: a 16-byte header, then
            # blocks of int32 length + raw snappy.
            out = []
            p = _XERIAL_HEADER.size
            while p < len(data):
                (blen,) = _I32.unpack_from(data, p)
                p += 4
                out.append(bytes(cj.snappy.decompress_raw(data[p:p + blen])))
                p += blen
            return b"".join(out)
        return bytes(cj.snappy.decompress_raw(data))   # plain raw snappy, as some clients send
    if codec == COMPRESSION_LZ4:
        return bytes(_need_cramjam(codec).lz4.decompress(bytes(data)))   # LZ4 frame format
    if codec == COMPRESSION_ZSTD:
        return bytes(_need_cramjam(codec).zstd.decompress(bytes(data)))
    raise UnsupportedCompression(f"unknown compression codec id {codec}")


def compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """Deflate a records section the way Kafka's clients frame each codec. `level` is a topic's
    compression.gzip/lz4/zstd.level (KIP-390); None or gzip's -1 take the codec's default."""
    if codec == COMPRESSION_NONE:
        return bytes(data)
    if codec == COMPRESSION_GZIP:
        import gzip

        return gzip.compress(bytes(data), compresslevel=6 if level is None or level < 0 else level)
    if codec == COMPRESSION_SNAPPY:
        cj = _need_cramjam(codec)
        parts = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)]
        for i in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cj.snappy.compress_raw(bytes(data[i:i + _XERIAL_BLOCK])))
            parts.append(_I32.pack(len(block)))
            parts.append(block)
        return b"".join(parts)
    if codec == COMPRESSION_LZ4:
        # Kafka's KafkaLZ4BlockInputStream decodes each block on its own: independent blocks.
        c = _need_cramjam(codec).lz4.Compressor(content_checksum=False, block_linked=False,
                                                **({} if level is None else {"level": level}))
        c.compress(bytes(data))
        return bytes(c.finish())
    if codec == COMPRESSION_ZSTD:
        if level is None:
            return bytes(_need_cramjam(codec).zstd.compress(bytes(data)))
        return bytes(_need_cramjam(codec).zstd.compress(bytes(data), level=level))
    raise UnsupportedCompression(f"unknown compression codec id {codec}")


# --- records: varints ----------------------------------------------------------------------------

def _zigzag_varint(value: int, out: bytearray) -> None:
    v = (value << 1) ^ (value >> 63)
    v &= (1 << 64) - 1
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _read_varint(buf, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptBatch("varint is too long")
    return (result >> 1) ^ -(result & 1), pos


class Record(NamedTuple):
    """A record to build into a batch."""
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple = ()                 # ((str, bytes | None), ...)
    timestamp_ms: int | None = None


class DecodedRecord(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple                      # ((str, bytes | None), ...)


def _encode_record(out: bytearray, offset_delta: int, timestamp_delta: int,
                   key, value, headers) -> None:
    body = bytearray()
    body.append(0)                                   # record attributes (unused)
    _zigzag_varint(timestamp_delta, body)
    _zigzag_varint(offset_delta, body)
    if key is None:
        _zigzag_varint(-1, body)
    else:
        _zigzag_varint(len(key), body)
        body += key
    if value is None:
        _zigzag_varint(-1, body)
    else:
        _zigzag_varint(len(value), body)
        body += value
    _zigzag_varint(len(headers), body)
    for hkey, hvalue in headers:
        hk = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey)
        _zigzag_varint(len(hk), body)
        body += hk
        if hvalue is None:
            _zigzag_varint(-1, body)
        else:
            _zigzag_varint(len(hvalue), body)
            body += hvalue
    _zigzag_varint(len(body), out)
    out += body


def encode_batch(entries: Iterable[tuple[int, int, bytes | None, bytes | None, tuple]], *,
                 base_offset: int = 0, producer_id: int = NO_PRODUCER_ID,
                 producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
                 transactional: bool = False, control: bool = False, partition_leader_epoch: int = 0,
                 compression: int = COMPRESSION_NONE, last_offset_delta: int | None = None,
                 log_append_time_ms: int | None = None, base_timestamp: int | None = None,
                 compression_level: int | None = None, delete_horizon_ms: int | None = None) -> bytearray:
    """Build a batch from (offset_delta, timestamp, key, value, headers) entries.

    Offset deltas are kept as given (a compacted batch keeps its records' offsets);
    `last_offset_delta` defaults to the last entry's delta (Kafka keeps the original last
    offset of a compacted batch so producer sequences stay right). `delete_horizon_ms` (set by
    the log cleaner, KIP-534) becomes the base timestamp with the delete-horizon attribute; the
    records' timestamps stay what they were (their deltas are taken from it)."""
    entries = list(entries)
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    if base_timestamp is None:
        base_timestamp = entries[0][1] if entries else NO_TIMESTAMP
    max_ts = NO_TIMESTAMP
    body = bytearray()
    for delta, ts, key, value, headers in entries:
        _encode_record(body, delta, ts - base_timestamp, key, value, headers)
        if ts > max_ts:
            max_ts = ts
    if last_offset_delta is None:
        last_offset_delta = entries[-1][0] if entries else 0
    if compression != COMPRESSION_NONE:
        body = compress(compression, bytes(body), compression_level)
    attrs = compression & COMPRESSION_MASK
    if transactional:
        attrs |= TRANSACTIONAL_MASK
    if control:
        attrs |= CONTROL_MASK
    if delete_horizon_ms is not None:
        attrs |= DELETE_HORIZON_MASK
    if log_append_time_ms is not None:
        attrs |= TIMESTAMP_TYPE_MASK
        max_ts = log_append_time_ms
    buf = bytearray(BATCH_HEADER_SIZE + len(body))
    _HEADER.pack_into(buf, 0, base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body),
                      partition_leader_epoch, MAGIC, 0, attrs, last_offset_delta, base_timestamp, max_ts,
                      producer_id, producer_epoch, base_sequence, len(entries))
    buf[BATCH_HEADER_SIZE:] = body
    _rewrite_crc(buf, 0)
    return buf


def build_batch(records: Iterable[Record], *, base_offset: int = 0, producer_id: int = NO_PRODUCER_ID,
                producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
                transactional: bool = False, control: bool = False, partition_leader_epoch: int = 0,
                timestamp_ms: int | None = None, compression: int = COMPRESSION_NONE) -> bytearray:
    """Build one v2 batch (offset deltas 0..n-1). A record without a timestamp gets
    `timestamp_ms`, or the current time."""
    default_ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    entries = []
    for i, r in enumerate(records):
        if not isinstance(r, Record):
            r = Record(*r)
        ts = default_ts if r.timestamp_ms is None else r.timestamp_ms
        entries.append((i, ts, r.key, r.value, tuple(r.headers)))
    return encode_batch(entries, base_offset=base_offset, producer_id=producer_id,
                        producer_epoch=producer_epoch, base_sequence=base_sequence,
                        transactional=transactional, control=control,
                        partition_leader_epoch=partition_leader_epoch, compression=compression,
                        base_timestamp=entries[0][1] if entries else default_ts)


def decode_records(batch, pos: int = 0) -> list[DecodedRecord]:
    """Decode every record of the batch at `pos` (any codec; not for the hot path).

    A LogAppendTime batch reports its maxTimestamp as every record's timestamp, as Kafka's
    clients read it."""
    h = BatchHeader(batch, pos)
    f = h.fields()
    if f.magic != MAGIC:
        raise CorruptBatch(f"cannot decode a batch with magic {f.magic}", pos)
    end = pos + f.batch_length + LOG_OVERHEAD
    if end > len(batch):
        raise CorruptBatch("batch runs past the end of the buffer", pos)
    codec = f.attributes & COMPRESSION_MASK
    mv = memoryview(batch)
    if codec == COMPRESSION_NONE:
        data = mv
        p = pos + BATCH_HEADER_SIZE
        stop = end
    else:
        data = decompress(codec, mv[pos + BATCH_HEADER_SIZE:end])
        p = 0
        stop = len(data)
    log_append = f.max_timestamp if f.attributes & TIMESTAMP_TYPE_MASK else None
    base_offset = f.base_offset
    base_ts = f.base_timestamp
    out = []
    try:
        for _ in range(f.record_count):
            length, p = _read_varint(data, p)
            rec_end = p + length
            if length < 0 or rec_end > stop:
                raise CorruptBatch(f"record of length {length} runs past the end of its batch", pos)
            p += 1                                          # attributes
            ts_delta, p = _read_varint(data, p)
            off_delta, p = _read_varint(data, p)
            klen, p = _read_varint(data, p)
            if klen < 0:
                key = None
            else:
                key = bytes(data[p:p + klen])
                p += klen
            vlen, p = _read_varint(data, p)
            if vlen < 0:
                value = None
            else:
                value = bytes(data[p:p + vlen])
                p += vlen
            hcount, p = _read_varint(data, p)
            if hcount < 0:
                raise CorruptBatch(f"negative header count {hcount}", pos)
            headers = []
            for _h in range(hcount):
                hklen, p = _read_varint(data, p)
                if hklen < 0:
                    raise CorruptBatch("null header key", pos)
                hkey = bytes(data[p:p + hklen]).decode("utf-8")
                p += hklen
                hvlen, p = _read_varint(data, p)
                if hvlen < 0:
                    hval = None
                else:
                    hval = bytes(data[p:p + hvlen])
                    p += hvlen
                headers.append((hkey, hval))
            if p != rec_end:
                raise CorruptBatch(f"record length {length} does not match its contents", pos)
            ts = log_append if log_append is not None else base_ts + ts_delta
            out.append(DecodedRecord(base_offset + off_delta, ts, key, value, tuple(headers)))
    except IndexError:
        raise CorruptBatch("records run past the end of their batch", pos) from None
    return out


# --- control records (transaction markers) ---------------------------------------------------------

_CONTROL_KEY = struct.Struct(">hh")        # version 0, type
_END_TXN_VALUE = struct.Struct(">hi")      # version 0, coordinator epoch


def build_control_batch(commit: bool, *, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                        timestamp_ms: int, base_offset: int = 0, partition_leader_epoch: int = 0) -> bytearray:
    """An end-transaction marker batch, as Kafka's MemoryRecords.withEndTransactionMarker:
    transactional + control attributes, base sequence -1, one record whose key is
    (version 0, type ABORT=0 | COMMIT=1) and value (version 0, coordinator epoch)."""
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _END_TXN_VALUE.pack(0, coordinator_epoch)
    return encode_batch([(0, timestamp_ms, key, value, ())], base_offset=base_offset,
                        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE,
                        transactional=True, control=True, partition_leader_epoch=partition_leader_epoch)


def control_record_type(batch, pos: int = 0) -> int:
    """The type id of the first record of a control batch (ABORT 0, COMMIT 1, others KRaft)."""
    recs = decode_records(batch, pos)
    if not recs or recs[0].key is None or len(recs[0].key) < 4:
        raise CorruptBatch("control record without a 4-byte key", pos)
    version, ctype = _CONTROL_KEY.unpack_from(recs[0].key)
    if version < 0:
        raise CorruptBatch(f"invalid control record key version {version}", pos)
    return ctype


def parse_control_record(batch, pos: int = 0) -> tuple[bool, int]:
    """(is_commit, coordinator_epoch) of an end-transaction marker batch. Raises ValueError
    for a batch that is not a COMMIT/ABORT marker."""
    h = BatchHeader(batch, pos)
    if not h.is_control:
        raise ValueError("not a control batch")
    recs = decode_records(batch, pos)
    if len(recs) != 1 or recs[0].key is None or len(recs[0].key) < 4:
        raise ValueError("a transaction marker batch holds exactly one record with a 4-byte key")
    version, ctype = _CONTROL_KEY.unpack_from(recs[0].key)
    if version < 0:
        raise ValueError(f"invalid control record key version {version}")
    if ctype not in (CONTROL_ABORT, CONTROL_COMMIT):
        raise ValueError(f"control record type {ctype} is not a transaction marker")
    value = recs[0].value
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise ValueError("end transaction marker value is shorter than 6 bytes")
    vversion, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    if vversion < 0:
        raise ValueError(f"invalid end transaction marker version {vversion}")
    return ctype == CONTROL_COMMIT, coordinator_epoch


def recompress_batch(batch, codec: int, level: int | None = None) -> bytearray:
    """The batch at the start of `batch` rewritten with `codec` (what Kafka's LogValidator does
    when a topic's compression.type differs from the producer's codec): same records, offsets,
    timestamps, headers, producer id/epoch, base sequence and transactional flag."""
    h = BatchHeader(batch, 0)
    f = h.fields()
    records = decode_records(batch, 0)
    entries = [(r.offset - f.base_offset, r.timestamp, r.key, r.value, r.headers) for r in records]
    log_append = f.max_timestamp if f.attributes & TIMESTAMP_TYPE_MASK else None
    return encode_batch(entries, base_offset=f.base_offset, producer_id=f.producer_id,
                        producer_epoch=f.producer_epoch, base_sequence=f.base_sequence,
                        transactional=bool(f.attributes & TRANSACTIONAL_MASK),
                        partition_leader_epoch=f.partition_leader_epoch, compression=codec,
                        last_offset_delta=f.last_offset_delta, log_append_time_ms=log_append,
                        base_timestamp=f.base_timestamp, compression_level=level)
