"""Stamping appended batches: what the log writes into a client's batches on their way to disk.

Rules:
- Only what Kafka's log stamps: each batch's base offset and partition leader epoch, and with
  LogAppendTime its max timestamp (inside the CRC, which is computed anew).
- A bytearray is stamped in place. Immutable bytes are never copied: each batch's first 16 bytes
  (base offset, length, leader epoch: outside the CRC) are made anew and the rest is written
  straight from the caller's buffer (`stamped_parts`, for one os.writev). Only LogAppendTime, which
  rewrites bytes inside the CRC, copies immutable input (the log does, before `stamp_in_place`).
- Headers are read once (one unpack of each batch's header); nothing here touches records.
"""

from __future__ import annotations

import struct

from kafkalite.protocol.batch import (BASE_OFFSET_OFFSET, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET,
                                      PARTITION_LEADER_EPOCH_OFFSET, iter_batches)
from kafkalite.protocol.batch_patches import (
    set_base_offset, set_max_timestamp_and_log_append_time, set_partition_leader_epoch,
)

from .files import Buffer

# baseOffset, batchLength, partitionLeaderEpoch: the head of a batch the log stamps
_STAMP = struct.Struct(">qii")
assert (BASE_OFFSET_OFFSET, LENGTH_OFFSET, PARTITION_LEADER_EPOCH_OFFSET, _STAMP.size) == (0, 8, 12, MAGIC_OFFSET)

# (position in the buffer, total size, last offset delta, max timestamp) of one batch: plain
# tuples, as the append path makes one per batch
Span = tuple[int, int, int, int]


def batch_spans(buf: Buffer) -> tuple[list[Span], int, int]:
    """The spans of the whole batches in `buf`, how many offsets they take together, and their
    largest max timestamp (-1 when none has one)."""
    spans: list[Span] = []
    count = 0
    max_timestamp = -1
    for pos, h in iter_batches(buf):
        f = h.fields()  # one unpack of the whole header
        lod = f.last_offset_delta
        ts = f.max_timestamp
        if ts > max_timestamp:
            max_timestamp = ts
        spans.append((pos, f.batch_length + LOG_OVERHEAD, lod, ts))
        count += lod + 1
    return spans, count, max_timestamp


def stamp_in_place(buf: bytearray, spans: list[Span], first_offset: int, leader_epoch: int,
                   log_append_time_ms: int | None) -> None:
    """Give the batches their offsets from `first_offset` and the leader epoch, and with
    LogAppendTime (`log_append_time_ms`) that time as their max timestamp."""
    offset = first_offset
    for pos, _size, lod, _ts in spans:
        set_base_offset(buf, pos, offset)
        set_partition_leader_epoch(buf, pos, leader_epoch)
        if log_append_time_ms is not None:
            set_max_timestamp_and_log_append_time(buf, pos, log_append_time_ms)
        offset += lod + 1


def stamped_parts(buf: Buffer, spans: list[Span], first_offset: int, leader_epoch: int) -> list[Buffer]:
    """The batches of immutable `buf` stamped as `stamp_in_place` stamps them (without
    LogAppendTime), as parts to write one after another: each batch's new head, then the rest of
    it as a view of `buf`."""
    view = memoryview(buf)
    parts: list[Buffer] = []
    offset = first_offset
    for pos, size, lod, _ts in spans:
        parts.append(_STAMP.pack(offset, size - LOG_OVERHEAD, leader_epoch))
        parts.append(view[pos + _STAMP.size:pos + size])
        offset += lod + 1
    return parts
