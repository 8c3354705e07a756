"""Timestamp lookups over a log's segments: ListOffsets by timestamp and MAX_TIMESTAMP.

Rules:
- Only records at or after the log start offset count.
- Segments are skipped by their largest timestamp, then the time index finds where to start in
  a segment; records are decoded only in the batches that may hold the answer (not a hot path).
- Callers pass a snapshot of the segment list (the log replaces it, never mutates it in place).
"""

from __future__ import annotations

from kafkalite.protocol.records import decode_records

from .segment import Segment


def offset_for_timestamp(segments: list[Segment], start: int, timestamp_ms: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after log_start_offset whose
    timestamp is >= timestamp_ms, or None; `start` is the log start offset."""
    for seg in segments:
        if seg.max_timestamp < timestamp_ms or seg.next_offset <= start or seg.size == 0:
            continue
        pos = seg.time_lookup_position(timestamp_ms)
        for _bpos, h in seg.iter_batches(pos, seg.size):
            f = h.fields()
            if f.base_offset + f.last_offset_delta < start or f.max_timestamp < timestamp_ms:
                continue
            for rec in decode_records(h.buf, h.pos):
                if rec.timestamp >= timestamp_ms and rec.offset >= start:
                    return rec.offset, rec.timestamp
    return None

def max_timestamp_offset(segments: list[Segment], start: int) -> tuple[int, int] | None:
    """ListOffsets MAX_TIMESTAMP: (offset, timestamp) of the first record at or after
    log_start_offset carrying the largest timestamp, or None for an empty log."""
    best_ts = -1
    best_off = None
    for seg in segments:
        if seg.size == 0 or seg.next_offset <= start or seg.max_timestamp <= best_ts:
            continue
        if seg.base_offset >= start:
            # the segment's max is a candidate; find its first record
            target = seg.max_timestamp
            pos = seg.index_position(seg.max_timestamp_offset)
            for _bpos, h in seg.iter_batches(pos, seg.size):
                if h.max_timestamp == target:
                    rec = next((r for r in decode_records(h.buf, h.pos) if r.timestamp == target), None)
                    if rec is not None:
                        best_ts, best_off = target, rec.offset
                        break
        else:
            # log start inside this segment: only records from it count
            found = seg.locate(start)
            if found is None:
                continue
            for _bpos, h in seg.iter_batches(found[0], seg.size):
                if h.max_timestamp <= best_ts:
                    continue
                for r in decode_records(h.buf, h.pos):
                    if r.offset >= start and r.timestamp > best_ts:
                        best_ts, best_off = r.timestamp, r.offset
    return None if best_off is None else (best_off, best_ts)
