"""One log segment: `<base offset>.log` and its indexes, as Kafka lays them out.

- `.log`        consecutive v2 record batches, appended with os.write on an O_APPEND fd.
- `.index`      sparse offset index: (relative base offset int32, position int32) big-endian,
                one entry per `index.interval.bytes` of appended data. The entry names the
                batch that *starts* at the position (Kafka stores the last offset of the
                appended records; with whole-batch reads the base offset is the one needed).
- `.timeindex`  (max timestamp so far int64, relative offset int32): written with each
                offset-index entry when the segment's max timestamp has grown, and once more
                when the segment is rolled or closed. The offset is the base offset of the
                batch where that max timestamp was first seen. Every batch written before an
                entry has timestamps <= its timestamp, which is all a lookup needs.
- `.txnindex`   aborted transactions whose ABORT marker lies in this segment: Kafka's
                AbortedTxn layout (version int16 0, producerId, firstOffset, lastOffset,
                lastStableOffset, int64 each).

Index entries live in memory (arrays) and are appended to their files on flush, roll and
close; a missing, short or inconsistent index file is rebuilt from the log.

The `.log` file's descriptor belongs to the process-wide cache of open files
(storage.open_files): every use borrows it (`pread`, `write`, `truncate_file`, `fsync`), and a
segment nobody has used lately holds no descriptor at all.
"""

from __future__ import annotations

import logging
import os
import struct
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple

from kafkalite.protocol.batch import (
    INT32_MAX, LAST_OFFSET_DELTA_OFFSET, LENGTH_OFFSET, LOG_OVERHEAD, MAX_TIMESTAMP_OFFSET, MIN_BATCH_LENGTH,
    BatchHeader, CorruptBatch, iter_batches,
)

from kafkalite.protocol.regions import FileRegion

from .files import Buffer, append_file, unlink, write_all, write_atomic, writev_all
from .open_files import OPEN_FILES, open_segment_file

if TYPE_CHECKING:
    from .config import LogConfig

log = logging.getLogger("kafkalite.storage")

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_TXN_ENTRY = struct.Struct(">hqqqq")
_BASE_AND_LENGTH = struct.Struct(">qi")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

# header bytes locate() needs: up to and including lastOffsetDelta
_LOCATE_HEADER = LAST_OFFSET_DELTA_OFFSET + 4
SCAN_CHUNK = 1 << 20
LOCATE_CHUNK = 16 * 1024
HEADER_CHUNK = 4096         # batches_end: the first read, enough for a few batch headers
HEADER_CHUNK_MAX = 256 * 1024   # ... growing while the batches are small (many headers per read)


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


# the index arrays of every segment without entries (most of them, at many partitions): shared,
# so never appended to (Segment replaces them with its own on its first entry)
_NO_INT32 = array("i")
_NO_INT64 = array("q")


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class Segment:
    """A segment of a partition log. Not thread-safe by itself; PartitionLog coordinates.

    Memory is per partition times the partition count, so a segment keeps only what it cannot
    derive: slots instead of a dict, its directory as the log's string and its file paths made
    when a file is opened (not five kept Path objects), and the shared empty index arrays until
    its first index entry."""

    __slots__ = ("directory", "base_offset", "_fd", "_pins", "_leases", "_closed", "_held", "size",
                 "next_offset", "max_timestamp", "max_timestamp_offset", "first_batch_timestamp",
                 "created_ms", "bytes_since_index", "idx_off", "idx_pos", "tidx_ts", "tidx_off",
                 "persisted_idx", "persisted_tidx", "rewrite_indexes", "txns", "dirty")

    def __init__(self, directory: str | os.PathLike[str], base_offset: int, created_ms: int):
        self.directory = os.fspath(directory)   # the log's own string, shared
        self.base_offset = base_offset
        self._fd = -1                           # open descriptor, owned by OPEN_FILES
        self._pins = 0                          # borrowers of _fd right now
        self._leases = 0                        # reads under way that must find the file open
        self._closed = False
        self._held = False                      # kept open until close (file deleted or replaced)
        self.size = 0
        self.next_offset = base_offset          # last offset + 1 of the data held here
        self.max_timestamp = -1
        self.max_timestamp_offset = -1          # base offset of the batch where it was first seen
        self.first_batch_timestamp = -1         # max timestamp of the first batch (segment.ms rolls)
        self.created_ms = created_ms
        self.bytes_since_index = 0
        # the index entries; while empty, the shared arrays below (never appended to: the first
        # entry replaces them, see _add_offset_entry and _add_time_entry)
        self.idx_off = _NO_INT32                # relative base offsets of indexed batches
        self.idx_pos = _NO_INT64                # their positions
        self.tidx_ts = _NO_INT64
        self.tidx_off = _NO_INT32
        self.persisted_idx = 0                  # entries already in the .index file
        self.persisted_tidx = 0
        self.rewrite_indexes = False            # files must be rewritten whole (after a rebuild)
        self.txns: list[AbortedTxn] = []
        self.dirty = False                      # written since the last fsync

    def _file(self, suffix: str) -> Path:
        return Path(self.directory, f"{segment_name(self.base_offset)}{suffix}")

    @property
    def log_path(self) -> Path:
        return self._file(".log")

    @property
    def index_path(self) -> Path:
        return self._file(".index")

    @property
    def time_index_path(self) -> Path:
        return self._file(".timeindex")

    @property
    def txn_index_path(self) -> Path:
        return self._file(".txnindex")

    # --- lifecycle -------------------------------------------------------------------------------
    @classmethod
    def create(cls, directory: str | os.PathLike[str], base_offset: int, now_ms: int) -> "Segment":
        """A new empty segment, its file made (index files a former one left at its name go)."""
        seg = cls(directory, base_offset, now_ms)
        for p in (seg.index_path, seg.time_index_path, seg.txn_index_path):
            unlink(p)
        seg.make_file()
        return seg

    def make_file(self) -> None:
        """The empty .log file of a segment made in memory (a new log's first, on its first write)."""
        OPEN_FILES.adopt(self, open_segment_file(self.log_path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC))
        self.dirty = True

    @classmethod
    def load(cls, directory: str | os.PathLike[str], base_offset: int, now_ms: int, *, recover: bool,
             index_interval: int) -> "Segment":
        """Open an existing segment. With `recover`, every batch is checked (length, magic,
        CRC), a bad tail is truncated and the indexes are rebuilt; otherwise the index files
        are loaded if they are consistent and only the batches after the last index entry
        are scanned."""
        seg = cls(directory, base_offset, now_ms)
        seg.size = seg.file_size()
        seg._load_txn_index()
        if recover or not seg._load_indexes():
            seg.rebuild(index_interval, check_crc=True)
        else:
            start = seg.idx_pos[-1] if seg.idx_pos else 0
            if not seg._scan(start, index_interval, check_crc=False):
                seg.rebuild(index_interval, check_crc=True)
            elif seg.size:
                seg.first_batch_timestamp = _I64.unpack(seg.pread(8, MAX_TIMESTAMP_OFFSET))[0]
        return seg

    def close(self) -> None:
        """Done with the file for good: its descriptor closes now or when its last borrower
        returns it."""
        OPEN_FILES.close(self)

    # --- the .log file, through the cache of open files ------------------------------------------
    @property
    def is_open(self) -> bool:
        """Whether the segment holds a descriptor right now (the cache may close it any time)."""
        return self._fd >= 0

    def pread(self, n: int, pos: int) -> bytes:
        fd = OPEN_FILES.acquire(self)
        try:
            return os.pread(fd, n, pos)
        finally:
            OPEN_FILES.release(self)

    def region(self, pos: int, length: int) -> FileRegion:
        """`length` bytes at `pos` as a FileRegion: the descriptor stays pinned open (whatever
        the cache or the log does meanwhile) until the region is released."""
        fd = OPEN_FILES.acquire(self)
        return FileRegion(fd, pos, length, lambda: OPEN_FILES.release(self))

    def batches_end(self, pos: int, limit: int, upper_bound: int) -> int:
        """Walk whole batches from `pos` (a batch start) and return where the run stops: at
        the first batch that starts at or after offset `upper_bound`, would end past position
        `limit`, or is cut short by the end of the data. Reads batch headers only (HEADER_CHUNK
        at a time, more while each read holds several), not the record data in between."""
        end = min(limit, self.size)
        unpack_i64 = _I64.unpack_from
        unpack_i32 = _I32.unpack_from
        q = pos
        chunk = HEADER_CHUNK
        fd = OPEN_FILES.acquire(self)      # one pin for the whole walk, not one per chunk
        try:
            while q + LOG_OVERHEAD <= end:
                buf = os.pread(fd, min(chunk, end - q), q)
                n = len(buf)
                rel = 0
                headers = 0
                while rel + LOG_OVERHEAD <= n:
                    if unpack_i64(buf, rel)[0] >= upper_bound:
                        return q + rel
                    total = unpack_i32(buf, rel + LENGTH_OFFSET)[0] + LOG_OVERHEAD
                    if total < MIN_BATCH_LENGTH + LOG_OVERHEAD or q + rel + total > end:
                        return q + rel
                    rel += total
                    headers += 1
                if rel == 0:
                    return q
                q += rel
                if headers >= 4 and chunk < HEADER_CHUNK_MAX:
                    chunk *= 4      # small batches: fewer, larger reads
            return q
        finally:
            OPEN_FILES.release(self)

    def write(self, data: Buffer) -> None:
        """Append every byte of `data` at the end, or nothing: a failed write is cut off
        again, so no partial batch stays behind an error."""
        self._append(write_all, data)

    def writev(self, parts: list[Buffer]) -> None:
        """write() of the concatenation of `parts` (one os.writev, no joined copy)."""
        self._append(writev_all, parts)

    def _append(self, write: Callable[[int, Any], None], data: Buffer | list[Buffer]) -> None:
        fd = OPEN_FILES.acquire(self)
        try:
            try:
                write(fd, data)
            except BaseException:
                os.ftruncate(fd, self.size)
                raise
        finally:
            OPEN_FILES.release(self)

    def truncate_file(self, size: int) -> None:
        fd = OPEN_FILES.acquire(self)
        try:
            os.ftruncate(fd, size)
        finally:
            OPEN_FILES.release(self)

    def file_size(self) -> int:
        fd = OPEN_FILES.acquire(self)
        try:
            return os.fstat(fd).st_size
        finally:
            OPEN_FILES.release(self)

    def fsync(self) -> None:
        fd = OPEN_FILES.acquire(self)
        try:
            os.fsync(fd)
        finally:
            OPEN_FILES.release(self)

    def hold_file(self) -> None:
        """Keep the file open until close(): its path is about to be deleted or replaced."""
        OPEN_FILES.hold(self)

    def delete_files(self) -> None:
        if not self._closed:
            try:
                self.hold_file()    # readers of the retired segment keep their data until close
            except FileNotFoundError:
                pass
        for p in (self.log_path, self.index_path, self.time_index_path, self.txn_index_path):
            unlink(p)

    # --- appending ---------------------------------------------------------------------------------
    def should_roll(self, incoming: int, max_ts_in: int, now_ms: int, last_offset: int, cfg: "LogConfig") -> bool:
        """Kafka's LogSegment.shouldRoll for an append of `incoming` bytes whose largest timestamp
        is `max_ts_in` and last offset `last_offset`: past segment.bytes, past segment.ms, or past
        what the int32 relative offsets of the indexes can hold."""
        if self.size + incoming > cfg.segment_bytes:
            return True
        # Kafka's LogSegment.timeWaitedForRoll: by record timestamps when the segment has
        # one, else by the segment's creation time
        if self.first_batch_timestamp >= 0 and max_ts_in >= 0:
            waited = max_ts_in - self.first_batch_timestamp
        else:
            waited = now_ms - self.created_ms
        if waited > cfg.segment_ms:
            return True
        return last_offset - self.base_offset > INT32_MAX

    def note_batch(self, pos: int, base_offset: int, next_offset: int, max_ts: int, size: int,
                   index_interval: int) -> None:
        """Account for a batch now in the file at `pos` (append, rebuild and tail scans)."""
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.max_timestamp_offset = base_offset
        if self.bytes_since_index > index_interval:
            # the value before its key (in both): a lookup in another thread (a reader while
            # the loop appends) that finds an offset or a timestamp finds what it points to
            self._add_offset_entry(pos, base_offset - self.base_offset)
            if not self.tidx_ts or self.max_timestamp > self.tidx_ts[-1]:
                self._add_time_entry()
            self.bytes_since_index = 0
        self.bytes_since_index += size
        self.next_offset = next_offset
        self.size = pos + size

    def add_final_time_entry(self) -> None:
        """Kafka appends the segment's max timestamp to its time index when it stops being
        active, so the last entry carries the segment's largest timestamp."""
        if self.max_timestamp >= 0 and (not self.tidx_ts or self.max_timestamp > self.tidx_ts[-1]):
            self._add_time_entry()

    def _add_offset_entry(self, pos: int, relative_offset: int) -> None:
        # the first entry replaces the shared empty arrays instead of appending to them
        if self.idx_off:
            self.idx_pos.append(pos)
            self.idx_off.append(relative_offset)
        else:
            self.idx_pos = array("q", (pos,))
            self.idx_off = array("i", (relative_offset,))

    def _add_time_entry(self) -> None:
        """The segment's max timestamp so far, with the offset where it was first seen."""
        relative_offset = self.max_timestamp_offset - self.base_offset
        if self.tidx_ts:
            self.tidx_off.append(relative_offset)
            self.tidx_ts.append(self.max_timestamp)
        else:
            self.tidx_off = array("i", (relative_offset,))
            self.tidx_ts = array("q", (self.max_timestamp,))

    def unpersisted(self) -> bool:
        """Whether a flush has anything of this segment to write or fsync (read without the log's
        lock: a write racing it is seen by the next flush)."""
        return (self.dirty or self.rewrite_indexes or len(self.idx_off) > self.persisted_idx
                or len(self.tidx_ts) > self.persisted_tidx)

    def persist_indexes(self, *, fsync: bool = False) -> None:
        """Write index entries that are only in memory to the index files."""
        if self.rewrite_indexes:
            n = min(len(self.idx_off), len(self.idx_pos))
            tn = min(len(self.tidx_ts), len(self.tidx_off))
            write_atomic(self.index_path, _pack_offset_entries(self.idx_off, self.idx_pos, 0, n), fsync)
            write_atomic(self.time_index_path, _pack_time_entries(self.tidx_ts, self.tidx_off, 0, tn), fsync)
            self.persisted_idx = n
            self.persisted_tidx = tn
            self.rewrite_indexes = False
            return
        # flush() runs in a worker thread while the event loop appends: take only entries
        # whose two halves are both in place
        n = min(len(self.idx_off), len(self.idx_pos))
        if n > self.persisted_idx:
            append_file(self.index_path, _pack_offset_entries(self.idx_off, self.idx_pos, self.persisted_idx, n),
                         fsync)
            self.persisted_idx = n
        n = min(len(self.tidx_ts), len(self.tidx_off))
        if n > self.persisted_tidx:
            append_file(self.time_index_path,
                         _pack_time_entries(self.tidx_ts, self.tidx_off, self.persisted_tidx, n), fsync)
            self.persisted_tidx = n

    def ensure_index_files(self) -> None:
        """Create the index files a segment with too few bytes for an entry has not written yet:
        an open finds both and loads them instead of rebuilding them, so that a segment is not
        rebuilt and rewritten at every start and stop."""
        for p in (self.index_path, self.time_index_path):
            if not p.exists():
                append_file(p, b"", fsync=False)

    # --- lookups -------------------------------------------------------------------------------------
    def index_position(self, offset: int) -> int:
        """Position of the last indexed batch whose base offset is <= offset (0 if none)."""
        i = bisect_right(self.idx_off, offset - self.base_offset) - 1
        return self.idx_pos[i] if i >= 0 else 0

    def locate(self, offset: int, start: int | None = None) -> tuple[int, int, int] | None:
        """(position, base offset, total size) of the first batch whose last offset is >=
        offset, or None when the segment holds nothing at or after it. Reads headers only."""
        size = self.size
        pos = self.index_position(offset) if start is None else start
        unpack = _BASE_AND_LENGTH.unpack_from
        unpack_i32 = _I32.unpack_from
        while pos < size:
            buf = self.pread(min(LOCATE_CHUNK, size - pos), pos)
            n = len(buf)
            if n == 0:
                break
            rel = 0
            while rel + _LOCATE_HEADER <= n:
                base, length = unpack(buf, rel)
                if length < MIN_BATCH_LENGTH:
                    raise CorruptBatch(f"batch length {length} at position {pos + rel} in {self.log_path}",
                                       pos + rel)
                if base + unpack_i32(buf, rel + LAST_OFFSET_DELTA_OFFSET)[0] >= offset:
                    return pos + rel, base, length + LOG_OVERHEAD
                rel += length + LOG_OVERHEAD
            if rel == 0 and n < _LOCATE_HEADER:
                raise CorruptBatch(f"truncated batch header at position {pos} in {self.log_path}", pos)
            pos += rel
        return None

    def time_lookup_position(self, timestamp: int) -> int:
        """Where to start scanning for the first record with timestamp >= `timestamp`."""
        i = bisect_left(self.tidx_ts, timestamp) - 1
        if i < 0:
            return 0
        return self.index_position(self.base_offset + self.tidx_off[i])

    def iter_batches(self, start: int = 0, end: int | None = None, *,
                     check_crc: bool = False) -> Iterator[tuple[int, BatchHeader]]:
        """Sequential scan of whole batches, read in chunks and walked by protocol.records'
        iter_batches (header views into the current chunk)."""
        end = self.size if end is None else end
        pos = start
        want = SCAN_CHUNK
        while pos < end:
            asked = min(want, end - pos)
            buf = self.pread(asked, pos)
            # a chunk that reaches `end` (or a short read) holds the last batch: cut off, it is corrupt
            last = len(buf) < asked or pos + len(buf) >= end
            consumed = 0
            for rel, h in iter_batches(buf, check_crc=check_crc, partial_tail=not last, base=pos):
                yield pos + rel, h
                consumed = rel + h.total_size
            if consumed == 0:
                want *= 2  # the next batch is larger than the chunk
                continue
            pos += consumed
            want = SCAN_CHUNK

    # --- recovery ---------------------------------------------------------------------------------------
    def rebuild(self, index_interval: int, *, check_crc: bool) -> None:
        """Rebuild the in-memory indexes and the segment's bookkeeping from the log,
        truncating the file at the first invalid batch."""
        self.idx_off = _NO_INT32
        self.idx_pos = _NO_INT64
        self.tidx_ts = _NO_INT64
        self.tidx_off = _NO_INT32
        self.max_timestamp = -1
        self.max_timestamp_offset = -1
        self.bytes_since_index = 0
        self.next_offset = self.base_offset
        self.rewrite_indexes = True
        self._scan(0, index_interval, check_crc=check_crc)
        self.first_batch_timestamp = -1
        if self.size:
            self.first_batch_timestamp = _I64.unpack(self.pread(8, MAX_TIMESTAMP_OFFSET))[0]

    def _scan(self, start: int, index_interval: int, *, check_crc: bool) -> bool:
        """Account for the batches from `start` to the end of the file; truncate the file at
        the first invalid batch. Returns False when something was truncated."""
        file_size = self.file_size()
        valid_end = start
        prev_next = self.base_offset
        self.bytes_since_index = 0    # the batch at `start` is indexed already (or is at 0)
        ok = True
        try:
            for pos, h in self.iter_batches(start, file_size, check_crc=check_crc):
                f = h.fields()
                if f.base_offset < prev_next:
                    raise CorruptBatch(f"batch at position {pos} has base offset {f.base_offset}, "
                                       f"below {prev_next}", pos)
                nxt = f.base_offset + f.last_offset_delta + 1
                if nxt - 1 - self.base_offset > INT32_MAX:
                    # the base offset is outside the CRC: a damaged one can point past what
                    # the segment's int32 relative offsets can index (we roll long before)
                    raise CorruptBatch(f"batch at position {pos} has last offset {nxt - 1}, beyond "
                                       f"the segment's offset range", pos)
                total = f.batch_length + LOG_OVERHEAD
                self.note_batch(pos, f.base_offset, nxt, f.max_timestamp, total, index_interval)
                prev_next = nxt
                valid_end = pos + total
        except CorruptBatch as e:
            ok = False
            log.warning("%s: %s; truncating the segment from %d to %d bytes", self.log_path, e.reason,
                        file_size, valid_end)
        if valid_end < file_size:
            self.truncate_file(valid_end)
            self.dirty = True
        self.size = valid_end
        return ok

    def _load_indexes(self) -> bool:
        """Load .index and .timeindex if present and consistent with the log."""
        try:
            raw = self.index_path.read_bytes()
            traw = self.time_index_path.read_bytes()
        except FileNotFoundError:
            return False
        if len(raw) % _OFFSET_ENTRY.size or len(traw) % _TIME_ENTRY.size:
            return False
        offs = array("i")
        poss = array("q")
        prev_off = -1
        prev_pos = -1
        for rel, pos in _OFFSET_ENTRY.iter_unpack(raw):
            if rel <= prev_off or pos <= prev_pos or pos >= self.size:
                return False
            offs.append(rel)
            poss.append(pos)
            prev_off, prev_pos = rel, pos
        tts = array("q")
        toff = array("i")
        prev_ts = -(2**63)
        for ts, rel in _TIME_ENTRY.iter_unpack(traw):
            if ts < prev_ts or rel < 0:
                return False
            tts.append(ts)
            toff.append(rel)
            prev_ts = ts
        if poss:
            head = self.pread(LOG_OVERHEAD, poss[-1])
            if len(head) < LOG_OVERHEAD or BatchHeader(head).base_offset != self.base_offset + offs[-1]:
                return False
        # files without entries leave the shared empty arrays in place
        self.idx_off, self.idx_pos = (offs, poss) if offs else (_NO_INT32, _NO_INT64)
        self.tidx_ts, self.tidx_off = (tts, toff) if tts else (_NO_INT64, _NO_INT32)
        self.persisted_idx = len(offs)
        self.persisted_tidx = len(tts)
        if tts:
            self.max_timestamp = tts[-1]
            self.max_timestamp_offset = self.base_offset + toff[-1]
        return True

    # --- truncation ----------------------------------------------------------------------------------------
    def truncate_to(self, offset: int, index_interval: int) -> None:
        """Remove every batch whose last offset is >= offset (a batch holding `offset` goes
        whole, as Kafka's LogSegment.truncateTo)."""
        found = self.locate(offset)
        if found is None:
            return
        pos = found[0]
        self.truncate_file(pos)
        self.size = pos
        self.dirty = True
        self.rebuild(index_interval, check_crc=False)
        self.txns = [t for t in self.txns if t.last_offset < offset]
        self._rewrite_txn_index()

    # --- transaction index ------------------------------------------------------------------------------------
    def _load_txn_index(self) -> None:
        try:
            raw = self.txn_index_path.read_bytes()
        except FileNotFoundError:
            return
        usable = len(raw) - len(raw) % _TXN_ENTRY.size
        for _version, pid, first, last, lso in _TXN_ENTRY.iter_unpack(raw[:usable]):
            self.txns.append(AbortedTxn(pid, first, last, lso))
        if usable != len(raw):
            log.warning("%s: dropping a torn entry at its end", self.txn_index_path)
            self._rewrite_txn_index()

    def append_txn(self, txn: AbortedTxn) -> None:
        self.txns.append(txn)
        append_file(self.txn_index_path, _TXN_ENTRY.pack(0, *txn), fsync=False)

    def _rewrite_txn_index(self) -> None:
        if not self.txns:
            unlink(self.txn_index_path)
            return
        write_atomic(self.txn_index_path, b"".join(_TXN_ENTRY.pack(0, *t) for t in self.txns), fsync=False)

    def __repr__(self) -> str:
        return (f"Segment(base={self.base_offset}, next={self.next_offset}, size={self.size}, "
                f"max_ts={self.max_timestamp})")


# --- file helpers -------------------------------------------------------------------------------------

def _pack_offset_entries(offs: array, poss: array, start: int, end: int) -> bytes:
    pack = _OFFSET_ENTRY.pack
    return b"".join(pack(offs[i], poss[i]) for i in range(start, end))


def _pack_time_entries(tss: array, offs: array, start: int, end: int) -> bytes:
    pack = _TIME_ENTRY.pack
    return b"".join(pack(tss[i], offs[i]) for i in range(start, end))
