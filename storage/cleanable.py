"""Which part of a compacted log the cleaner may clean now, and whether it cleans it: Kafka 4.4's
LogCleanerManager.cleanableOffsets, maxCompactionDelay and the filter of
grabFilthiestCompactedLog, over one log's segments.

Rules, after Kafka:
- The dirty segments are the closed ones from the one holding the first dirty offset (the
  cleaner's checkpoint) on; the active segment is never cleaned.
- The first uncleanable offset is the lowest of: the last stable offset (an open transaction's
  data is not cleaned), the active segment's base offset, and, when min.compaction.lag.ms > 0,
  the base offset of the first dirty segment whose largest timestamp is later than
  now - min.compaction.lag.ms. A segment's largest timestamp is its largest record timestamp
  (LogAppendTime where the topic stamps it), or the file's modification time when it holds no
  timestamp (Kafka's LogSegment.largestTimestamp). Only whole segments below that offset are
  cleaned: the segment holding it is the first one left alone.
- The compaction delay is how far the earliest dirty segment is past max.compaction.lag.ms, by
  the timestamp of the segment's first batch (its largest timestamp; Kafka's rollingBasedTimestamp),
  batches without one not counting; a delay above 0 makes the log a "must clean" log.
- A log is cleaned when it has cleanable bytes and must be cleaned, or when its cleanable ratio
  (cleanable bytes over clean plus cleanable bytes) is above min.cleanable.dirty.ratio; a log
  holding no bytes in either part is not looked at.
- `now_ms` is the broker's clock (broker.clock), so the clock control moves both lags.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from .config import LogConfig
from .segment import Segment


@dataclass(frozen=True)
class Cleanable:
    """One log as the cleaner sees it at `now_ms` (Kafka's LogToClean)."""

    first_dirty_offset: int
    first_uncleanable_offset: int   # a segment's base offset: the segments below it are cleaned
    segment_count: int              # how many leading segments lie below first_uncleanable_offset
    clean_bytes: int                # Kafka's cleanBytes: the segments below the first dirty offset
    cleanable_bytes: int            # the segments from the first dirty offset to the first uncleanable one
    compaction_delay_ms: int        # how long past max.compaction.lag.ms the earliest dirty segment is

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def need_compaction_now(self) -> bool:
        """A "must clean" log: max.compaction.lag.ms has passed for a dirty segment."""
        return self.compaction_delay_ms > 0

    def should_clean(self, min_cleanable_ratio: float) -> bool:
        if self.total_bytes == 0:
            return False
        return (self.need_compaction_now and self.cleanable_bytes > 0) or self.cleanable_ratio > min_cleanable_ratio


def cleanable(segs: Sequence[Segment], last_stable_offset: int, first_dirty_offset: int, now_ms: int,
              config: LogConfig) -> Cleanable:
    """`segs` oldest first, the last one active; `first_dirty_offset` at or above the log start."""
    closed = segs[:-1]
    dirty = [seg for i, seg in enumerate(closed) if segs[i + 1].base_offset > first_dirty_offset]
    uncleanable = min(last_stable_offset, segs[-1].base_offset)
    min_lag = max(config.min_compaction_lag_ms, 0)
    if min_lag > 0:
        young = next((seg for seg in dirty if largest_timestamp(seg) > now_ms - min_lag), None)
        if young is not None:
            uncleanable = min(uncleanable, young.base_offset)
    uncleanable = max(first_dirty_offset, uncleanable)
    # Kafka's calculateCleanableBytes: the segment holding the uncleanable offset is the first
    # one left alone
    count = sum(1 for i, _seg in enumerate(closed) if segs[i + 1].base_offset <= uncleanable)
    first_uncleanable = segs[count].base_offset
    low = min(first_dirty_offset, first_uncleanable)
    clean_bytes = sum(seg.size for seg in segs if seg.base_offset < first_dirty_offset)
    cleanable_bytes = sum(seg.size for i, seg in enumerate(segs[:count]) if segs[i + 1].base_offset > low)
    return Cleanable(first_dirty_offset, first_uncleanable, count, clean_bytes, cleanable_bytes,
                     compaction_delay(dirty, now_ms, config.max_compaction_lag_ms))


def compaction_delay(dirty: Sequence[Segment], now_ms: int, max_compaction_lag_ms: int) -> int:
    """Kafka's maxCompactionDelay over the dirty closed segments."""
    stamps = [seg.first_batch_timestamp for seg in dirty if seg.first_batch_timestamp > 0]
    if not stamps:
        return 0
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    return max(clean_until - min(stamps), 0)


def largest_timestamp(seg: Segment) -> int:
    """Kafka's LogSegment.largestTimestamp: the largest record timestamp, else the file's
    modification time."""
    if seg.max_timestamp >= 0:
        return seg.max_timestamp
    return os.stat(seg.log_path).st_mtime_ns // 1_000_000
