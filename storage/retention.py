"""Retention: how many of a log's oldest segments retention.ms and retention.bytes remove.

Rules:
- Only whole segments go, oldest first. The active (last) one goes too when it holds records
  and is past retention, as in Kafka's UnifiedLog.deletableSegments: the log rolls a new, empty
  active segment first (PartitionLog.apply_retention), so a topic nobody writes to any more
  empties by time and its log start reaches its end.
- By time: a segment whose largest record timestamp (its file's mtime when it has none) is
  older than retention.ms; by size: while the log is over retention.bytes by at least the
  segment's size. -1 turns either off.
- Never a segment holding offsets at or after `floor` (the first offset of the oldest open
  transaction, which the broker sets: an open transaction's records stay until it ends).
"""

from __future__ import annotations

import os

from .config import LogConfig
from .segment import Segment


def segments_past_retention(segs: list[Segment], cfg: LogConfig, now_ms: int, floor: int | None) -> int:
    """How many of `segs`, from the first, retention removes (all of them when the active one
    goes too)."""
    k = 0
    total = sum(s.size for s in segs)
    excess = total - cfg.retention_bytes if cfg.retention_bytes >= 0 else -1
    while k < len(segs):
        seg = segs[k]
        last = k == len(segs) - 1
        if last and seg.size == 0:
            break
        nxt = seg.next_offset if last else segs[k + 1].base_offset
        if floor is not None and nxt > floor:
            break
        by_time = False
        if cfg.retention_ms >= 0:
            largest = seg.max_timestamp if seg.max_timestamp >= 0 else _mtime_ms(seg)
            by_time = now_ms - largest > cfg.retention_ms
        by_size = excess >= 0 and excess - seg.size >= 0
        if not (by_time or by_size):
            break
        if by_size:
            excess -= seg.size
        k += 1
    return k


def _mtime_ms(seg: Segment) -> int:
    try:
        return int(os.stat(seg.log_path).st_mtime * 1000)
    except FileNotFoundError:
        return 0
