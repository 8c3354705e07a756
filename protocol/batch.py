"""Record batches, magic v2: the batch header and the walk over a buffer of batches (sans-IO).

Rules:
- A `BatchHeader` is a view: it reads its fields from the buffer on access and copies nothing,
  so it follows in-place patches (protocol.batch_patches) of the same buffer.
- `iter_batches` is the one walk over consecutive batches; it checks framing (length, magic,
  optionally the CRC) and raises `CorruptBatch` with the file position of the first bad batch.
- Nothing here decodes records (protocol.records) or decides what a broker accepts
  (broker.produce_validation).

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
"""

from __future__ import annotations

import struct
from typing import Callable, Iterator, NamedTuple

# what batches are read from: a request's bytes, a chunk read from a segment file, or a view
ReadableBuffer = bytes | bytearray | memoryview
# what in-place patches write to
WritableBuffer = bytearray | memoryview


def _crc32c_first_call(data: ReadableBuffer) -> int:
    """CRC-32C (Castagnoli) of `data`, by the crc32c package. Imported on first use: the
    package reads its own distribution metadata on import, a cost a broker start (ApiVersions,
    Metadata) need not pay. The first call puts the package's function in place of this one."""
    global crc32c
    from crc32c import crc32c as impl

    crc32c = impl
    return impl(data)


crc32c: Callable[[ReadableBuffer], int] = _crc32c_first_call


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

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1

# every header field in one unpack (BatchHeader.fields, broker.produce_validation)
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
assert HEADER_STRUCT.size == BATCH_HEADER_SIZE
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")


class CorruptBatch(ValueError):
    """A batch whose framing or checksum is broken (the log recovery and fetch paths)."""

    def __init__(self, reason: str, position: int = -1):
        super().__init__(reason)
        self.reason = reason
        self.position = position


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

    def __init__(self, buf: ReadableBuffer, pos: int = 0):
        self.buf = buf
        self.pos = pos

    def fields(self) -> HeaderFields:
        """All header fields in one unpack."""
        return HeaderFields._make(HEADER_STRUCT.unpack_from(self.buf, self.pos))

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


# --- walking a buffer of batches --------------------------------------------------------------

def iter_batches(buf: ReadableBuffer, start: int = 0, end: int | None = None, *, check_crc: bool = False,
                 partial_tail: bool = False, base: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header view) for consecutive batches in buf[start:end]: the one walk
    over batch headers (broker.produce_validation aside, which answers with Kafka's error codes).

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
