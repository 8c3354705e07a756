"""Records inside a v2 batch: building batches from records and decoding them back (sans-IO).

Rules:
- Not for the produce and fetch paths, which only touch headers (protocol.batch); these are for
  internal topics, timestamp lookups, compaction, recompression and tests.
- Record fields are varints (zigzag) as in Kafka's DefaultRecord; offset deltas are kept as
  given, so a compacted batch keeps its records' offsets.
- A LogAppendTime batch reports its maxTimestamp as every record's timestamp, as Kafka's
  clients read it.
"""

from __future__ import annotations

import time
from typing import Iterable, NamedTuple, Sequence

from .batch import (BATCH_HEADER_SIZE, COMPRESSION_MASK, COMPRESSION_NONE, CONTROL_MASK, DELETE_HORIZON_MASK,
                    HEADER_STRUCT,
                    LOG_OVERHEAD, MAGIC, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
                    TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK, BatchHeader, CorruptBatch, ReadableBuffer)
from .batch_patches import rewrite_crc
from .codecs import compress, decompress

# --- records: varints ----------------------------------------------------------------------------

def _zigzag_varint(value: int, out: bytearray) -> None:
    v = (value << 1) ^ (value >> 63)
    v &= (1 << 64) - 1
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _read_varint(buf: ReadableBuffer, pos: int) -> tuple[int, int]:
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


def _nullable_bytes(data: bytes | None, body: bytearray) -> None:
    """A record field of varint length then bytes; a null is length -1 and nothing after."""
    if data is None:
        _zigzag_varint(-1, body)
    else:
        _zigzag_varint(len(data), body)
        body += data


def _encode_record(out: bytearray, offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                   headers: Sequence[tuple[str | bytes, bytes | None]]) -> None:
    body = bytearray()
    body.append(0)                                   # record attributes (unused)
    _zigzag_varint(timestamp_delta, body)
    _zigzag_varint(offset_delta, body)
    _nullable_bytes(key, body)
    _nullable_bytes(value, body)
    _zigzag_varint(len(headers), body)
    for hkey, hvalue in headers:
        _nullable_bytes(hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey), body)
        _nullable_bytes(hvalue, body)
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
    payload: bytes | bytearray = body
    if compression != COMPRESSION_NONE:
        payload = compress(compression, bytes(body), compression_level)
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
    buf = bytearray(BATCH_HEADER_SIZE + len(payload))
    HEADER_STRUCT.pack_into(buf, 0, base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(payload),
                            partition_leader_epoch, MAGIC, 0, attrs, last_offset_delta, base_timestamp, max_ts,
                            producer_id, producer_epoch, base_sequence, len(entries))
    buf[BATCH_HEADER_SIZE:] = payload
    rewrite_crc(buf, 0)
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


def _read_nullable_bytes(data: ReadableBuffer, p: int) -> tuple[bytes | None, int]:
    """What _nullable_bytes wrote at `p`, and the position after it."""
    n, p = _read_varint(data, p)
    if n < 0:
        return None, p
    return bytes(data[p:p + n]), p + n


def decode_records(batch: ReadableBuffer, pos: int = 0) -> list[DecodedRecord]:
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
    data: bytes | memoryview
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
            key, p = _read_nullable_bytes(data, p)
            value, p = _read_nullable_bytes(data, p)
            hcount, p = _read_varint(data, p)
            if hcount < 0:
                raise CorruptBatch(f"negative header count {hcount}", pos)
            headers = []
            for _h in range(hcount):
                hkey, p = _read_nullable_bytes(data, p)
                if hkey is None:
                    raise CorruptBatch("null header key", pos)
                hval, p = _read_nullable_bytes(data, p)
                headers.append((hkey.decode("utf-8"), hval))
            if p != rec_end:
                raise CorruptBatch(f"record length {length} does not match its contents", pos)
            ts = log_append if log_append is not None else base_ts + ts_delta
            out.append(DecodedRecord(base_offset + off_delta, ts, key, value, tuple(headers)))
    except IndexError:
        raise CorruptBatch("records run past the end of their batch", pos) from None
    return out



def recompress_batch(batch: ReadableBuffer, codec: int, level: int | None = None) -> bytearray:
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
