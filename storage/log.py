"""PartitionLog: one partition's log on disk, a directory of segments as Kafka lays it out;
the storage engine behind storage.interface.PartitionStorage.

Rules:
- The append and read paths touch batch headers only, copy no batch they need not copy, and
  take no lock; everything that replaces segments serialises on the log's lock.
- Segments are replaced as a list, never mutated in place, so a reader holding the old list
  stays consistent.
- The jobs around the log live beside it: segment files and indexes (storage.segment),
  recovery of a segment (storage.segment), compaction (storage.compaction), retention
  (storage.retention), timestamp lookups (storage.timestamps), producer snapshots
  (storage.snapshots).

Offsets: `log_start_offset` is the first readable offset (persisted in
`log-start-offset.checkpoint` when DeleteRecords or retention moves it);
`log_end_offset` is the next offset to assign, the high watermark of a single broker.

A new partition costs no file until its first write: open() of a missing (or empty) directory
makes neither it nor the first segment file, which the first write that needs them makes
(`_make`: the directory, the empty segment file, and an fsync of the parent directory with the
next flush); reads, lookups and close of a log never written touch no file.

Durability: append() has written every byte to the segment file with os.write before it
returns, so acknowledged data survives kill -9 of the process; flush() fsyncs (the broker
calls it per its fsync policy, from a worker thread). On open, a log without the clean
shutdown marker has its last segment scanned batch by batch (length, magic, CRC) and cut
at the first bad batch; missing or inconsistent index files are rebuilt from the log.

A clean stop costs what changed: the clean-shutdown marker stays in place while the log is
unchanged since it was opened, and goes (unlinked before the first byte is written) on its first
change; close() of a log unchanged since its open, or holding no data, only closes its files,
so stopping a broker with many idle partitions writes and fsyncs nothing for them. An empty
log without the marker recovers nothing on the next open (there is no tail to check).

Threads: append, read and the lookups run on the broker's event loop and take no lock.
flush, compact and apply_retention may run in a worker thread; they, roll, truncation,
DeleteRecords and close serialise on one lock. Every read leases the segments it reads
(storage.open_files) between finding them in the list and its last byte; a sendfile region
pins its file until it is released. A segment that leaves the log (retention, DeleteRecords,
the cleaner's replacement) is closed at once, and its file stays open, under the name it had,
until the last lease and the last region end: a read sees the old segment or the new one,
whole, and never a closed file. A lease on a segment closed meanwhile is refused and the read
looks at the list again, where the log start has already moved: a read from below it answers
OffsetOutOfRange (Kafka closes such files after file.delete.delay.ms instead; a lease ends
exactly when the read does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
import time
from bisect import bisect_right
from operator import attrgetter
from pathlib import Path
from typing import Callable, Iterator

from kafkalite.protocol.regions import FileRegion
from kafkalite.protocol.batch import BatchHeader

from .config import LogConfig
from .compaction import compact_segments
from .files import fsync_path, unlink, write_atomic
from .interface import AppendInfo, OffsetOutOfRange
from .headers import BatchLocation, SegmentSummary, batch_headers_from, batches_from, whole_batches_end
from .open_files import OPEN_FILES, leased, segments_kept_leaving
from .recovery import CLEAN_SHUTDOWN_FILE, scan, write_log_start_checkpoint
from .segment import AbortedTxn, Segment
from .retention import segments_past_retention
from .snapshots import SNAPSHOT_SUFFIX, latest_snapshot, remove_snapshots_after, write_snapshot
from .stamping import batch_spans, stamp_in_place, stamped_parts
from .timestamps import max_timestamp_offset, offset_for_timestamp

log = logging.getLogger("kafkalite.storage")

_base = attrgetter("base_offset")
# Looks at the segment list a read makes before giving up: it looks again only when a segment
# of the list it read was closed in between, which housekeeping does once per change
LEASE_ATTEMPTS = 1000


def _now_ms() -> int:
    return int(time.time() * 1000)


class PartitionLog:
    def __init__(self, directory: str | os.PathLike[str], config: LogConfig):
        self._directory = os.fspath(directory)   # a str, shared with the segments: not a Path each
        self.config = config
        self.segments: list[Segment] = []      # replaced, never mutated in place
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.retention_floor: int | None = None
        # the log cleaner's checkpoint: where the records not cleaned yet start (in memory: a
        # restart cleans the whole log once more)
        self.first_dirty_offset = 0
        self._lock = threading.RLock()
        self._dir_dirty = False
        self._txn_dirty: dict[Path, None] = {}   # txnindex files to fsync (a set costs 3x)
        self._closed = False
        # the clean-shutdown marker is on disk and the log has not changed since it was opened
        self._clean_marker = False
        self._changed = False     # changed since open: the next close persists, fsyncs and marks
        self.created = False      # open found no directory: no records, no snapshot to replay
        # the directory and the first segment file are not on disk yet (made by the first write)
        self._unmade = False
        self._parent_dirty = False   # the directory was made: its entry in the data dir to fsync

    @property
    def directory(self) -> Path:
        return Path(self._directory)

    # --- open / recovery -----------------------------------------------------------------------
    @classmethod
    def open(cls, directory: str | os.PathLike[str], config: LogConfig, *, now_ms: int | None = None) -> "PartitionLog":
        """Recover the log in the partition directory, or a new log whose directory and first
        segment its first write makes (`_make`)."""
        now = _now_ms() if now_ms is None else now_ms
        self = cls(directory, config)
        found = scan(self._directory, config, now)
        if found is None:       # a new partition: nothing to recover, no checkpoint, no snapshot
            self.segments = [Segment(self._directory, 0, now)]
            self.created = self._unmade = True
            return self
        names, clean, checkpoint, segs = found.names, found.clean, found.checkpoint, found.segments
        if not segs:
            segs.append(Segment.create(self._directory, checkpoint or 0, now))
            self._dir_dirty = True
        self.segments = segs
        self.log_end_offset = segs[-1].next_offset
        self.log_start_offset = max(checkpoint or 0, segs[0].base_offset)
        self._clean_marker = clean
        if self.log_start_offset > self.log_end_offset:
            # the data behind the checkpointed start offset was lost: start over there
            log.warning("%s: log start offset %d is past the recovered end %d; starting an empty log there",
                        self._directory, self.log_start_offset, self.log_end_offset)
            self._truncate_fully_and_start_at(self.log_start_offset, now)
        if any(name.endswith(SNAPSHOT_SUFFIX) for name in names):
            remove_snapshots_after(self.directory, self.log_end_offset)
        return self

    def _make(self) -> None:
        """The directory and the first segment file of a new log, on its first write (raises
        OSError, the log still unmade, when the disk refuses)."""
        with self._lock:
            if self._unmade:
                os.makedirs(self._directory, exist_ok=True)
                self.segments[0].make_file()
                self._unmade = False
                self._dir_dirty = self._parent_dirty = True

    @property
    def changed_since_open(self) -> bool:
        """Whether anything was written, truncated, rolled or compacted since the log was opened."""
        return self._changed

    def _empty(self) -> bool:
        return all(s.size == 0 for s in self.segments)

    def _begin_change(self) -> None:
        """Before the first change since a clean open: the marker goes, so that a crash from here
        on recovers the tail of the log."""
        if self._clean_marker:
            unlink(self.directory / CLEAN_SHUTDOWN_FILE)
            self._clean_marker = False
            self._dir_dirty = True
        self._changed = True

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    # --- append --------------------------------------------------------------------------------
    def append(self, batches: bytes | bytearray | memoryview, *, leader_epoch: int = 0, now_ms: int) -> AppendInfo:
        """Append already-validated v2 batches: assign offsets from log_end_offset, stamp the
        leader epoch and LogAppendTime if configured (storage.stamping: immutable input is not
        copied but for LogAppendTime), and write them with os.write before returning."""
        buf = batches
        n = len(buf)
        if n == 0:
            raise ValueError("nothing to append")
        spans, count, max_in = batch_spans(buf)
        log_append = self.config.log_append_time
        if log_append:
            max_in = now_ms
            if not isinstance(buf, bytearray):
                buf = bytearray(buf)

        if not self._changed:
            if self._unmade:
                self._make()
            self._begin_change()
        seg = self.segments[-1]
        if seg.size > 0 and seg.should_roll(n, max_in, now_ms, self.log_end_offset + count - 1, self.config):
            seg = self.roll(now_ms)

        first = self.log_end_offset
        start_size = seg.size
        if isinstance(buf, bytearray):
            stamp_in_place(buf, spans, first, leader_epoch, now_ms if log_append else None)
            seg.write(buf)
        else:
            seg.writev(stamped_parts(buf, spans, first, leader_epoch))
        seg.dirty = True

        interval = self.config.index_interval_bytes
        offset = first
        max_ts = -1
        for bpos, size, lod, ts in spans:
            bts = now_ms if log_append else ts  # LogAppendTime was stamped into the batch above
            if bts > max_ts:
                max_ts = bts
            seg.note_batch(start_size + bpos, offset, offset + lod + 1, bts, size, interval)
            offset += lod + 1
        if start_size == 0:
            seg.first_batch_timestamp = now_ms if log_append else spans[0][3]
        self.log_end_offset = offset
        return AppendInfo(first, offset - 1, max_ts, now_ms if log_append else -1, self.log_start_offset)

    def roll(self, now_ms: int | None = None) -> Segment:
        """Start a new active segment at log_end_offset (no-op while the active one is empty)."""
        now = _now_ms() if now_ms is None else now_ms
        with self._lock:
            old = self.segments[-1]
            if old.size == 0:
                return old
            self._begin_change()
            old.add_final_time_entry()
            old.persist_indexes()
            new = Segment.create(self._directory, self.log_end_offset, now)
            self.segments = self.segments + [new]
            self._dir_dirty = True
            return new

    # --- read ----------------------------------------------------------------------------------
    def _first_batch(self, offset: int, upper_bound: int | None) -> tuple[Segment, int, int, int] | None:
        """(segment, position, total size, upper bound) of the batch that contains `offset`,
        or None when there is nothing to read below `upper_bound` (default log_end_offset).
        The segment comes leased: the caller reads it, then unleases it."""
        for _attempt in range(LEASE_ATTEMPTS):
            # the list first, then the offsets: housekeeping moves the log start before it
            # replaces the list, so a new list is never read with an old start
            segs = self.segments
            log_start_offset = self.log_start_offset
            leo = self.log_end_offset
            if offset < log_start_offset or offset > leo:
                raise OffsetOutOfRange(offset, log_start_offset, leo)
            ub = leo if upper_bound is None else min(upper_bound, leo)
            if offset >= ub:
                return None
            i = max(bisect_right(segs, offset, key=_base) - 1, 0)
            while i < len(segs):
                seg = segs[i]
                if seg.base_offset >= ub:
                    return None
                if not OPEN_FILES.lease((seg,)):
                    break       # closed since the list was read: read the list again
                try:
                    found = seg.locate(offset)
                except BaseException:
                    OPEN_FILES.unlease((seg,))
                    raise
                if found is not None and found[1] < ub:
                    pos, _base_offset, first_size = found
                    return seg, pos, first_size, ub
                OPEN_FILES.unlease((seg,))
                if found is not None:
                    return None
                i += 1
            else:
                return None
        raise segments_kept_leaving(self.directory)

    def _leased_segments(self) -> contextlib.AbstractContextManager[list[Segment]]:
        """The segment list as it is now, every segment of it leased for the block (the walks
        and lookups that may read any of them)."""
        return leased(lambda: self.segments, self._directory, LEASE_ATTEMPTS)

    def read(self, offset: int, max_bytes: int, *, upper_bound: int | None = None,
             min_one: bool = True) -> bytes | memoryview:
        """Whole batches from the batch that contains `offset`, below `upper_bound` (default
        log_end_offset; the LSO for read_committed), at most max_bytes except that the first
        batch is returned whole when min_one. Reads from one segment per call."""
        first = self._first_batch(offset, upper_bound)
        if first is None:
            return b""
        seg, pos, first_size, ub = first
        try:
            if first_size > max_bytes:
                return seg.pread(first_size, pos) if min_one else b""
            data = seg.pread(min(max_bytes, seg.size - pos), pos)
        finally:
            OPEN_FILES.unlease((seg,))
        q = whole_batches_end(data, first_size, ub)
        if q >= len(data):
            return data
        return memoryview(data)[:q]

    def read_region(self, offset: int, max_bytes: int, *, upper_bound: int | None = None,
                    min_one: bool = True) -> FileRegion | bytes:
        """What read() returns, as a FileRegion of the segment file (b"" when there is
        nothing): the same whole batches, found by reading batch headers only. The caller
        must release() the region."""
        first = self._first_batch(offset, upper_bound)
        if first is None:
            return b""
        seg, pos, first_size, ub = first
        try:
            if first_size > max_bytes:
                return seg.region(pos, first_size) if min_one else b""
            end = seg.batches_end(pos + first_size, pos + max_bytes, ub)
            return seg.region(pos, end - pos)
        finally:
            OPEN_FILES.unlease((seg,))   # the region pins the file from here

    def batches_from(self, offset: int) -> Iterator[tuple[int, bytes]]:
        """(base offset, batch bytes) of every batch whose last offset is >= offset, reading
        the segment files sequentially (startup replay of producer, group and txn state)."""
        with self._leased_segments() as segs:
            yield from batches_from(segs, offset)

    def batch_headers_from(self, offset: int) -> Iterator[tuple[int, BatchHeader, BatchLocation]]:
        """Headers of the batches whose last offset is >= offset (storage.headers); a location's
        `read()` finds its segment open while the walk goes on."""
        with self._leased_segments() as segs:
            yield from batch_headers_from(segs, offset)

    def segment_summaries(self) -> list[SegmentSummary]:
        return [SegmentSummary(s.base_offset, s.next_offset, s.size) for s in list(self.segments)]

    # --- timestamps (storage.timestamps) -------------------------------------------------------
    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after log_start_offset whose
        timestamp is >= timestamp_ms, or None."""
        with self._leased_segments() as segs:
            return offset_for_timestamp(segs, self.log_start_offset, timestamp_ms)

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """ListOffsets MAX_TIMESTAMP: (offset, timestamp) of the first record at or after
        log_start_offset carrying the largest timestamp, or None for an empty log."""
        with self._leased_segments() as segs:
            return max_timestamp_offset(segs, self.log_start_offset)

    # --- moving the start, truncating, retention -----------------------------------------------
    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move log_start_offset up to `offset` (persisted) and delete the
        segments wholly below it. Returns the new log_start_offset."""
        with self._lock:
            if offset > self.log_end_offset:
                raise OffsetOutOfRange(offset, self.log_start_offset, self.log_end_offset)
            if offset > self.log_start_offset:
                self.log_start_offset = offset
                self._write_log_start_checkpoint()
                self._delete_segments_below_start()
            return self.log_start_offset

    def _delete_segments_below_start(self) -> int:
        segs = self.segments
        k = 0
        while k < len(segs) - 1 and segs[k + 1].base_offset <= self.log_start_offset:
            k += 1
        if k:
            self._drop_segments(k)
        return k

    def _drop_segments(self, k: int) -> None:
        """Remove the first k segments (never the active one)."""
        gone, kept = self.segments[:k], self.segments[k:]
        if kept[0].base_offset > self.log_start_offset:
            # the start moves before the list: a read that finds the new list finds it moved
            self.log_start_offset = kept[0].base_offset
            self._write_log_start_checkpoint()
        self.segments = kept
        self._retire(gone)

    def _retire(self, gone: list[Segment]) -> None:
        """Delete the files of segments that left the list and close them: their readers keep
        the open files until their leases end."""
        self._begin_change()
        for seg in gone:
            seg.delete_files()
            seg.close()
        self._dir_dirty = True

    def truncate_to(self, offset: int) -> None:
        """Remove every record at or after `offset`; log_end_offset becomes `offset`."""
        with self._lock:
            if offset >= self.log_end_offset:
                return
            self._begin_change()
            if offset < self.segments[0].base_offset or offset < self.log_start_offset:
                self._truncate_fully_and_start_at(offset, _now_ms())
                return
            segs = self.segments
            k = len(segs)
            while k > 1 and segs[k - 1].base_offset > offset:
                k -= 1
            gone = segs[k:]
            self.segments = segs[:k]
            self._retire(gone)
            active = self.segments[-1]
            active.truncate_to(offset, self.config.index_interval_bytes)
            self.log_end_offset = offset
            self.first_dirty_offset = min(self.first_dirty_offset, offset)  # the cleaner's checkpoint too
            remove_snapshots_after(self.directory, offset)

    def _truncate_fully_and_start_at(self, offset: int, now_ms: int) -> None:
        self._begin_change()
        gone = self.segments
        for seg in gone:    # before the new segment takes the name one of them may have
            seg.delete_files()
        self.log_start_offset = self.log_end_offset = self.first_dirty_offset = offset
        self._write_log_start_checkpoint()
        self.segments = [Segment.create(self._directory, offset, now_ms)]
        for seg in gone:
            seg.close()
        self._dir_dirty = True
        remove_snapshots_after(self.directory, offset)

    def apply_retention(self, now_ms: int) -> int:
        """Delete whole old segments by retention.ms and retention.bytes (cleanup.policy
        must include delete), and segments wholly below log_start_offset. The active segment
        too when it is past retention (after rolling an empty one, as Kafka does); never one
        holding offsets at or after retention_floor. Returns how many segments were deleted."""
        with self._lock:
            deleted = self._delete_segments_below_start()
            cfg = self.config
            if not cfg.delete_enabled:
                return deleted
            k = segments_past_retention(self.segments, cfg, now_ms, self.retention_floor)
            if k == len(self.segments):
                self.roll(now_ms)   # the active segment goes too: a new, empty one takes its place
            if k:
                self._drop_segments(k)
            return deleted + k

    # --- compaction ----------------------------------------------------------------------------
    def compact(self, now_ms: int, *, first_unstable_offset: int | None) -> int:
        """Compact the closed segments below the first unstable offset (storage.compaction
        writes the replacements; the log swaps them in). Returns how many were rewritten."""
        with self._lock:
            cfg = self.config
            replaced, self.first_dirty_offset = compact_segments(
                self.segments, self.log_end_offset, first_unstable_offset,
                first_dirty_offset=max(self.first_dirty_offset, self.log_start_offset), now_ms=now_ms, config=cfg)
            if replaced:
                self._begin_change()
                old = self.segments
                self.segments = [replaced.get(i, seg) for i, seg in enumerate(old)]
                # the old files are held (the cleaner replaced their names): closed when their
                # readers' leases end
                for i in replaced:
                    old[i].close()
                self._dir_dirty = True
            return len(replaced)

    # --- transaction index ---------------------------------------------------------------------
    def append_aborted_txn(self, producer_id: int, first_offset: int, last_offset: int,
                           last_stable_offset: int) -> None:
        """Record an aborted transaction in the .txnindex of the segment holding its ABORT
        marker (last_offset). Idempotent: an identical entry is not added twice."""
        with self._lock:
            segs = self.segments
            i = max(bisect_right(segs, last_offset, key=_base) - 1, 0)
            seg = segs[i]
            txn = AbortedTxn(producer_id, first_offset, last_offset, last_stable_offset)
            for t in seg.txns:
                if t[:3] == txn[:3]:
                    return
            self._begin_change()
            seg.append_txn(txn)
            self._txn_dirty[seg.txn_index_path] = None

    def aborted_txns(self, start_offset: int, end_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start_offset, end_offset): last_offset >=
        start_offset and first_offset < end_offset, in marker order."""
        segs = self.segments
        i = max(bisect_right(segs, start_offset, key=_base) - 1, 0)
        out = []
        for seg in segs[i:]:
            for t in seg.txns:
                if t.last_offset >= start_offset and t.first_offset < end_offset:
                    out.append(t)
        return out

    # --- producer state snapshots (storage.snapshots) ------------------------------------------
    def write_producer_snapshot(self, offset: int, blob: bytes) -> None:
        """Write `<offset>.snapshot` atomically (temp file, fsync, rename); keep the newest two."""
        self._make()
        write_snapshot(self.directory, offset, blob, fsync=self.config.fsync != "never")
        self._dir_dirty = True

    def latest_producer_snapshot(self) -> tuple[int, bytes] | None:
        """(offset, blob) of the newest intact snapshot at or below log_end_offset."""
        return latest_snapshot(self.directory, self.log_end_offset)

    def _write_log_start_checkpoint(self) -> None:
        self._make()
        write_log_start_checkpoint(self.directory, self.log_start_offset, fsync=self.config.fsync != "never")
        self._dir_dirty = True

    # --- flush / close / delete ----------------------------------------------------------------
    def flush(self) -> None:
        """fsync the log data, the index entries so far, new files, the directory and, once made,
        its entry in the data dir (nothing for a log never written since its open: it holds
        nothing acknowledged to keep). Housekeeping asks every partition each flush interval: one
        with nothing waiting answers without its lock, so a pass costs what changed."""
        if self._unmade or not (self._dir_dirty or self._parent_dirty or self._txn_dirty
                                or any(s.unpersisted() for s in self.segments)):
            return
        with self._lock:
            if self._closed or (not self._changed and self._empty()):
                return
            segs = list(self.segments)
            for seg in segs:
                seg.persist_indexes()
            dirty = [s for s in segs if s.dirty]
            for s in dirty:
                s.dirty = False
            OPEN_FILES.lease(dirty)     # none is closed under the lock; housekeeping may close them after it
            txn_paths = list(self._txn_dirty)
            self._txn_dirty.clear()
            dir_dirty, parent_dirty = self._dir_dirty, self._parent_dirty
            self._dir_dirty = self._parent_dirty = False
        try:
            for s in dirty:
                try:
                    s.fsync()
                except OSError:
                    s.dirty = True      # not on disk: the next flush tries again
                    raise
        finally:
            OPEN_FILES.unlease(dirty)
        for p in txn_paths:
            fsync_path(p)
        if dir_dirty:
            fsync_path(self.directory)
        if parent_dirty:
            fsync_path(self.directory.parent)

    def close(self) -> None:
        """Persist indexes, fsync (unless fsync=never), write the clean-shutdown marker; a log
        unchanged since its open (its marker is still there) or holding no data only closes its files."""
        with self._lock:
            if self._closed:
                return
            if self._clean_marker or (not self._changed and self._empty()):
                self._closed = True
                for seg in self.segments:
                    if self._clean_marker:
                        seg.persist_indexes()   # only indexes rebuilt at open: no I/O otherwise
                    seg.close()
                return
            for seg in self.segments:
                seg.add_final_time_entry()
                seg.persist_indexes()
                seg.ensure_index_files()
        if self.config.fsync != "never":
            self.flush()
        with self._lock:
            self._closed = True
            write_atomic(self.directory / CLEAN_SHUTDOWN_FILE, b"", fsync=self.config.fsync != "never")
            if self.config.fsync != "never":
                fsync_path(self.directory)
            for seg in self.segments:
                seg.close()

    def copy_files(self, dest: Path, copy_dir: Callable[[Path, Path, str], int], now_ms: int) -> int:
        with self._lock:  # a flush or compaction in a worker thread swaps files under it
            self._make()
            self.roll(now_ms)
            for seg in self.segments:
                seg.persist_indexes()
            return copy_dir(self.directory, dest, self.segments[-1].log_path.stem)

    def delete(self, *, trash: Path | None = None) -> None:
        """Close and remove the partition directory (DeleteTopics); with `trash`, move it into that
        directory instead, for the caller to remove later (a rename is much cheaper than removing
        a directory on some file systems)."""
        with self._lock:
            self._closed = True
            for seg in self.segments:
                seg.close()
            if trash is not None:
                with contextlib.suppress(OSError):
                    os.rename(self.directory, trash / self.directory.name)
                    return
            shutil.rmtree(self.directory, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"PartitionLog({self.directory}, start={self.log_start_offset}, end={self.log_end_offset}, "
                f"segments={len(self.segments)})")

