"""Batch headers without the batches: a partition's segments and batches as the console shows them.

Rules:
- Reads headers only: a batch of a megabyte costs one small read of its 61-byte header (read in
  chunks of HEADER_CHUNK bytes), never the batch, unless its caller asks for it by its location.
- Takes the segment list it is given (lists are replaced, never mutated), which the log has
  leased for the walk (storage.log): none is closed under it. `batches_from`, for the replays of
  state, reads whole batches.
- `whole_batches_end` walks the headers of bytes a read already holds, to cut them after the last
  whole batch below a bound (storage.log's read).
"""

from __future__ import annotations

import struct
from typing import Iterator, NamedTuple, Sequence

from kafkalite.protocol.batch import BATCH_HEADER_SIZE, LENGTH_OFFSET, LOG_OVERHEAD, BatchHeader

from .segment import Segment

# bytes read at once when walking headers: several small batches per read
HEADER_CHUNK = 16 * 1024
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def whole_batches_end(data: bytes | memoryview, start: int, upper_bound: int) -> int:
    """Where the whole batches of `data` from `start` (a batch start) end: before the first batch
    that starts at or after offset `upper_bound` or is cut short by the end of `data`."""
    n = len(data)
    q = start
    unpack_i32 = _I32.unpack_from
    unpack_i64 = _I64.unpack_from
    while q + LOG_OVERHEAD <= n:
        if unpack_i64(data, q)[0] >= upper_bound:
            break
        total = unpack_i32(data, q + LENGTH_OFFSET)[0] + LOG_OVERHEAD
        if q + total > n:
            break
        q += total
    return q


class SegmentSummary(NamedTuple):
    """One segment as the console lists it."""

    base_offset: int
    next_offset: int
    size_bytes: int


class BatchLocation(NamedTuple):
    """Where a batch whose header was read lies, to read it whole when asked (`read`)."""

    segment: Segment
    position: int
    size: int

    def read(self) -> bytes:
        """The batch's bytes (OSError or ValueError when its segment was deleted meanwhile)."""
        return self.segment.pread(self.size, self.position)


def batches_from(segments: Sequence[Segment], offset: int) -> Iterator[tuple[int, bytes]]:
    """(base offset, batch bytes) of every batch whose last offset is >= offset, reading the
    segment files sequentially (the replays of producer, group and transaction state)."""
    for seg in segments:
        if seg.next_offset <= offset or seg.size == 0:
            continue
        start = 0
        if offset > seg.base_offset:
            found = seg.locate(offset)
            if found is None:
                continue
            start = found[0]
        for _pos, h in seg.iter_batches(start, seg.size):
            yield h.base_offset, h.bytes()


def batch_headers_from(segments: Sequence[Segment], offset: int) -> Iterator[tuple[int, BatchHeader, BatchLocation]]:
    """(base offset, header, location) of every batch whose last offset is >= offset, in order."""
    for seg in segments:
        if seg.next_offset <= offset or seg.size == 0:
            continue
        pos = seg.index_position(offset) if offset > seg.base_offset else 0
        size = seg.size
        buf, bstart = b"", pos
        while pos + BATCH_HEADER_SIZE <= size:
            rel = pos - bstart
            if rel + BATCH_HEADER_SIZE > len(buf):
                try:
                    buf = seg.pread(min(HEADER_CHUNK, size - pos), pos)
                except (OSError, ValueError):
                    return  # the segment was deleted by retention meanwhile
                bstart, rel = pos, 0
                if len(buf) < BATCH_HEADER_SIZE:
                    break
            h = BatchHeader(buf, rel)
            total = h.total_size
            if h.base_offset + h.last_offset_delta >= offset:
                yield h.base_offset, h, BatchLocation(seg, pos, total)
            pos += total
