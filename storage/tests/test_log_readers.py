"""Readers against housekeeping: no read ever meets a closed file.

Retention, compaction and DeleteRecords replace and delete segments in worker threads while
reads run elsewhere (storage.log's rule "Threads"). Whatever the interleaving, a read answers
whole, correct batches of the old or the new segment, or OffsetOutOfRange when its offset fell
below the log start meanwhile: never a storage error. Here every kind of reader (plain reads,
file regions held across other work as a Fetch's sendfile holds them, header walks whose batches
are read by location, timestamp lookups, the startup replay's batch walk) runs in threads of its
own against a steady appender and three housekeeping threads. It runs at least READERS_SECONDS
(default 3) and until MIN_APPENDS records were appended, 60 s at the most, and stops at the first
failure; on a log that closed a retired segment under a reader it failed within a second.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import deque
from pathlib import Path

from kafkalite.protocol.batch import iter_batches
from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.protocol.regions import FileRegion
from kafkalite.storage import OffsetOutOfRange, PartitionLog

from .helpers import read_all, small_config

SECONDS = float(os.environ.get("READERS_SECONDS", "3"))
MIN_APPENDS = 1000
MAX_SECONDS = 60
KEYS = 7          # few keys: compaction rewrites segments on every pass
IN_FLIGHT = 6     # file regions a reader holds at once, as responses waiting for their socket


def _record_value(offset: int) -> bytes:
    return b"value-of-%d" % offset


def check_batches(data: bytes, offset: int) -> int:
    """Every record of `data` is whole (CRC) and the one appended at its offset; the first batch
    holds `offset` or lies after it. Returns how many records it checked."""
    n = 0
    first = True
    for pos, h in iter_batches(data, check_crc=True):
        if first:
            assert h.next_offset > offset, f"first batch ends at {h.next_offset}, read from {offset}"
            first = False
        for r in decode_records(data, pos):
            assert r.value == _record_value(r.offset), (r.offset, r.value)
            n += 1
    return n


class Readers:
    """The reader threads and what they saw."""

    def __init__(self, plog: PartitionLog):
        self.plog = plog
        self.started = time.monotonic()
        self.stopped = False
        self.appended = 0
        self.failed: list[BaseException] = []
        self.records_checked = 0
        self.regions_checked = 0
        self.out_of_range = 0
        self.compactions = 0

    def running(self) -> bool:
        if self.failed or self.stopped:
            return False
        ran = time.monotonic() - self.started
        return ran < MAX_SECONDS and (ran < SECONDS or self.appended < MIN_APPENDS)

    def guard(self, job):
        def run():
            try:
                job()
            except BaseException as e:  # noqa: B036 - reported by the test
                self.failed.append(e)
        return run

    def random_offset(self, rng: random.Random) -> int:
        start, end = self.plog.log_start_offset, self.plog.log_end_offset
        return rng.randint(start, max(start, end - 1))

    def plain(self, seed: int) -> None:
        rng = random.Random(seed)
        while self.running():
            offset = self.random_offset(rng)
            try:
                data = bytes(self.plog.read(offset, rng.choice((64, 512, 4096))))
            except OffsetOutOfRange:
                self.out_of_range += 1
                continue
            self.records_checked += check_batches(data, offset)

    def regions(self, seed: int) -> None:
        rng = random.Random(seed)
        held: deque[tuple[FileRegion, int]] = deque()
        try:
            while self.running():
                offset = self.random_offset(rng)
                try:
                    region = self.plog.read_region(offset, rng.choice((64, 512, 4096)))
                except OffsetOutOfRange:
                    self.out_of_range += 1
                    continue
                if isinstance(region, FileRegion):
                    held.append((region, offset))
                if len(held) > IN_FLIGHT:
                    old, old_offset = held.popleft()
                    try:
                        self.records_checked += check_batches(old.read(), old_offset)
                        self.regions_checked += 1
                    finally:
                        old.release()
        finally:
            for region, _ in held:
                region.release()

    def walks(self, seed: int) -> None:
        rng = random.Random(seed)
        while self.running():
            offset = self.random_offset(rng)
            for i, (_base, _h, where) in enumerate(self.plog.batch_headers_from(offset)):
                self.records_checked += check_batches(where.read(), 0)
                if i == 20:
                    break
            ts = self.random_offset(rng)
            found = self.plog.offset_for_timestamp(ts)
            assert found is None or found[1] >= ts
            self.plog.max_timestamp_offset()
            for i, (_base, batch) in enumerate(self.plog.batches_from(self.random_offset(rng))):
                self.records_checked += check_batches(batch, 0)
                if i == 20:
                    break


def housekeeping(readers: Readers, plog: PartitionLog, job: str) -> None:
    while readers.running():
        if job == "retention":
            plog.apply_retention(now_ms=plog.log_end_offset)
        elif job == "compaction":
            readers.compactions += plog.compact(plog.log_end_offset, first_unstable_offset=None)
            plog.flush()
        else:
            plog.delete_records_before(max(plog.log_start_offset, plog.log_end_offset - 300))
        time.sleep(0)   # let the others in


def test_reads_never_meet_a_closed_file_under_retention_compaction_and_delete_records(tmp_path: Path):
    # small segments, every batch indexed, retention by time (the records' timestamps are their
    # offsets and "now" is the log end: the oldest segments are always past retention.ms)
    cfg = small_config(segment_bytes=900, index_interval_bytes=0, cleanup_policy="compact,delete",
                       retention_ms=400, min_cleanable_dirty_ratio=0.01)
    plog = PartitionLog.open(tmp_path / "topic-0", cfg, now_ms=0)
    readers = Readers(plog)
    jobs = [readers.plain, readers.plain, readers.regions, readers.regions, readers.walks]
    threads = [threading.Thread(target=readers.guard(lambda j=j, s=s: j(s)), name=f"reader-{s}")
               for s, j in enumerate(jobs)]
    threads += [threading.Thread(target=readers.guard(lambda k=k: housekeeping(readers, plog, k)), name=k)
                for k in ("retention", "compaction", "delete-records")]
    for t in threads:
        t.start()
    try:
        while readers.running():
            offset = plog.log_end_offset
            plog.append(build_batch([Record(b"key-%d" % (offset % KEYS), _record_value(offset), (), offset)]),
                        now_ms=offset)
            readers.appended += 1
    finally:
        readers.stopped = True
        for t in threads:
            t.join()
    assert not readers.failed, f"{readers.failed[0]!r} after {readers.appended} appends"
    # the readers did read, and housekeeping did replace and delete segments under them
    assert readers.records_checked > 1000 and readers.regions_checked > 10, vars(readers)
    assert readers.compactions > 0 and plog.log_start_offset > 0, vars(readers)
    # what is left reads back whole, and again after a restart
    left = read_all(plog)
    assert left and all(v == _record_value(o) for o, v in left)
    plog.close()
    reopened = PartitionLog.open(tmp_path / "topic-0", cfg, now_ms=0)
    assert read_all(reopened) == left
    reopened.close()
