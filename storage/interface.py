"""PartitionStorage: what the broker may ask of one partition's storage, one method per operation.

Rules:
- This is the whole seam between the broker and a partition's bytes on disk: the broker's
  `Partition` (broker.partition) holds a `PartitionStorage` and nothing else of this package's
  internals. `PartitionLog` (storage.log) is the engine that implements it; another engine (in
  memory, say) implements the same methods.
- Batches go in and come out as v2 record batch bytes; the storage assigns offsets, stamps the
  leader epoch (and LogAppendTime) and never checks producer rules (the broker's job).
- Offsets: `log_start_offset` is the first readable offset, `log_end_offset` the next to assign
  (the high watermark of a single broker). A read or a DeleteRecords outside
  [log_start_offset, log_end_offset] raises OffsetOutOfRange.
- append, read, read_region and the lookups run on the event loop and must not block on a lock;
  flush, compact, apply_retention may run in a worker thread.
- A typing Protocol: no runtime cost, no extra call per batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Protocol

from kafkalite.protocol.batch import BatchHeader
from kafkalite.protocol.regions import FileRegion

from .config import LogConfig
from .headers import BatchLocation, SegmentSummary
from .segment import AbortedTxn


class OffsetOutOfRange(Exception):
    """A read or a DeleteRecords outside [log_start_offset, log_end_offset]."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int):
        super().__init__(f"offset {offset} is outside [{log_start_offset}, {log_end_offset}]")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


@dataclass
class AppendInfo:
    """What an append assigned."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time_ms: int     # -1 with CreateTime
    log_start_offset: int


class PartitionStorage(Protocol):
    config: LogConfig
    log_start_offset: int
    log_end_offset: int
    # offsets at or after this stay through retention (the oldest open transaction's first offset)
    retention_floor: int | None

    # --- writes ---------------------------------------------------------------------------
    def append(self, batches: bytes | bytearray | memoryview, *, leader_epoch: int = 0,
               now_ms: int) -> AppendInfo:
        """Append validated v2 batches at log_end_offset: assign their offsets, stamp the
        leader epoch (and LogAppendTime when the topic uses it), and have every byte written
        (os.write) before returning. Produce, markers and the coordinators' records."""
        ...

    def append_aborted_txn(self, producer_id: int, first_offset: int, last_offset: int,
                           last_stable_offset: int) -> None:
        """Note an aborted transaction (its ABORT marker at last_offset) for read_committed
        fetches. Idempotent."""
        ...

    # --- reads ----------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, *, upper_bound: int | None = None,
             min_one: bool = True) -> bytes | memoryview:
        """Whole batches from the one holding `offset`, below `upper_bound` (log_end_offset;
        the LSO for read_committed), at most max_bytes but the first batch whole with min_one."""
        ...

    def read_region(self, offset: int, max_bytes: int, *, upper_bound: int | None = None,
                    min_one: bool = True) -> FileRegion | bytes:
        """What `read` returns, as a region of a file to send without copying (Fetch); the
        caller releases it. b"" when there is nothing."""
        ...

    def batches_from(self, offset: int) -> Iterator[tuple[int, bytes]]:
        """(base offset, batch bytes) of every batch whose last offset is >= offset, in order
        (state replay on start)."""
        ...

    def aborted_txns(self, start_offset: int, end_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start_offset, end_offset), in marker order
        (read_committed Fetch)."""
        ...

    def batch_headers_from(self, offset: int) -> Iterator[tuple[int, BatchHeader, BatchLocation]]:
        """(base offset, header, location) of every batch whose last offset is >= offset, in
        order, reading headers only; `location.read()` reads one batch whole (the console)."""
        ...

    def segment_summaries(self) -> list[SegmentSummary]:
        """(base offset, next offset, size in bytes) of every segment, oldest first (the console)."""
        ...

    # --- lookups --------------------------------------------------------------------------
    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after log_start_offset whose timestamp
        is >= timestamp_ms, or None (ListOffsets by time)."""
        ...

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the largest timestamp, or None
        (ListOffsets MAX_TIMESTAMP)."""
        ...

    @property
    def size_bytes(self) -> int:
        """Bytes the partition's batches take (DescribeLogDirs, metrics)."""
        ...

    # --- moving the start and the end -----------------------------------------------------
    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move log_start_offset up to `offset`, persisted; returns it."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Remove every record at or after `offset`; log_end_offset becomes `offset`."""
        ...

    def roll(self, now_ms: int | None = None) -> object:
        """Start a new segment at log_end_offset (no-op while the active one is empty)."""
        ...

    # --- maintenance (a worker thread) ------------------------------------------------------
    def apply_retention(self, now_ms: int) -> int:
        """Delete old segments by retention.ms and retention.bytes; returns how many went."""
        ...

    def compact(self, now_ms: int, *, first_unstable_offset: int | None) -> int:
        """Compact closed segments (cleanup.policy=compact), never at or after
        first_unstable_offset; returns how many segments were rewritten."""
        ...

    def flush(self) -> None:
        """fsync what was written so far (the fsync policy decides when)."""
        ...

    def update_config(self, config: LogConfig) -> None:
        """The topic's configs changed (AlterConfigs)."""
        ...

    # --- producer state snapshots -------------------------------------------------------------
    def write_producer_snapshot(self, offset: int, blob: bytes) -> None:
        """Keep the broker's producer state as of `offset` (at shutdown), atomically."""
        ...

    def latest_producer_snapshot(self) -> tuple[int, bytes] | None:
        """(offset, blob) of the newest intact snapshot at or below log_end_offset."""
        ...

    # --- lifetime ---------------------------------------------------------------------------
    @property
    def changed_since_open(self) -> bool:
        """Whether anything was written, truncated, rolled or compacted since the log was opened
        (a clean stop persists only the logs that changed)."""
        ...

    def close(self) -> None:
        """Persist, fsync (unless fsync=never) and mark a clean shutdown; a log unchanged since
        its open, or holding no data, only closes its files."""
        ...

    def copy_files(self, dest: Path, copy_dir: Callable[[Path, Path, str], int], now_ms: int) -> int:
        """A consistent copy of the partition's files (the snapshot control): the log is rolled so
        that every record so far lies in a sealed segment, indexes are persisted, and
        `copy_dir(directory, dest, active segment's file stem)` runs while nothing replaces a
        segment; returns what it returns (the bytes it copied)."""
        ...

    def delete(self, *, trash: Path | None = None) -> None:
        """Close and remove the partition's data (DeleteTopics); with `trash`, move its directory
        there instead, for the caller to remove later (the reset control deletes every topic)."""
        ...
