"""The bounded cache of open segment files: many logs under a small limit lose nothing."""

from __future__ import annotations

import os
import threading

import pytest

from kafkalite.storage import PartitionLog
from kafkalite.storage.open_files import OPEN_FILES, OpenFiles

from .helpers import batch, crash, read_all, small_config


@pytest.fixture
def limit3():
    old = OPEN_FILES.limit
    OPEN_FILES.set_limit(3)
    yield OPEN_FILES
    OPEN_FILES.set_limit(old)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _open_segments(logs) -> int:
    # counted on these logs only: other tests of the session may have left files in the cache
    return sum(seg.is_open for plog in logs for seg in plog.segments)


def test_many_logs_share_a_few_descriptors(tmp_path, limit3):
    before = _open_fds()
    logs = [PartitionLog.open(tmp_path / f"t-{i}", small_config(), now_ms=0) for i in range(40)]
    assert _open_segments(logs) <= 3
    # interleaved appends (several rolls each: segment.bytes is 1 KiB) and reads
    for rnd in range(6):
        for i, plog in enumerate(logs):
            plog.append(batch(3, tag=f"{i}.{rnd}", size=60), now_ms=0)
            if rnd % 2:
                assert plog.read(0, 1 << 20)
    assert all(len(p.segments) > 1 for p in logs)
    assert _open_segments(logs) <= 3
    assert _open_fds() - before <= 3
    for i, plog in enumerate(logs):
        got = [v for _o, v in read_all(plog)]
        assert [v.rstrip(b".") for v in got] == [f"{i}.{r}:{k}".encode() for r in range(6) for k in range(3)]
    for plog in logs:
        plog.close()
    assert _open_fds() <= before
    # and they reopen with everything in them
    again = [PartitionLog.open(tmp_path / f"t-{i}", small_config(), now_ms=0) for i in range(40)]
    assert [p.log_end_offset for p in again] == [18] * 40
    assert len(read_all(again[7])) == 18
    for plog in again:
        plog.close()


def test_a_closed_descriptor_is_reopened_for_append_truncate_and_fsync(tmp_path, limit3):
    plog = PartitionLog.open(tmp_path / "a", small_config(fsync="always"), now_ms=0)
    plog.append(batch(2, tag="a"), now_ms=0)
    others = [PartitionLog.open(tmp_path / f"o{i}", small_config(), now_ms=0) for i in range(5)]
    for p in others:        # a new log opens its file with its first write
        p.append(batch(1), now_ms=0)
    assert not plog.segments[-1].is_open           # pushed out by the others
    plog.append(batch(2, tag="b"), now_ms=0)
    plog.flush()
    plog.append(batch(2, tag="c"), now_ms=0)
    for p in others:
        p.append(batch(1), now_ms=0)
    plog.truncate_to(4)
    assert plog.log_end_offset == 4
    crash(plog)
    reopened = PartitionLog.open(tmp_path / "a", small_config(), now_ms=0)
    assert [v.rstrip(b".") for _o, v in read_all(reopened)] == [b"a:0", b"a:1", b"b:0", b"b:1"]
    for p in others + [reopened]:
        p.close()


def test_deleted_and_compacted_segments_are_read_from_their_own_files(tmp_path, limit3):
    plog = PartitionLog.open(tmp_path / "c", small_config(cleanup_policy="compact"), now_ms=0)
    for r in range(8):
        plog.append(batch(3, tag=f"r{r}", key=b"same", size=60), now_ms=0)
    old = list(plog.segments)
    # a reader that leased the segment list before the cleaner swapped files
    assert OPEN_FILES.lease(old)
    assert plog.compact(0, first_unstable_offset=None) > 0
    others = [PartitionLog.open(tmp_path / f"o{i}", small_config(), now_ms=0) for i in range(5)]
    assert old[0].locate(0) is not None           # still the pre-compaction file: offset 0 is there
    assert old[0].pread(8, 0) == (0).to_bytes(8, "big")
    plog.delete_records_before(plog.segments[-1].base_offset)
    assert old[0].pread(8, 0) == (0).to_bytes(8, "big")   # deleted now, and still read whole
    assert not OPEN_FILES.lease(old[:1])          # a new reader finds it closed and looks again
    OPEN_FILES.unlease(old)
    with pytest.raises(OSError):                  # the last lease gone, so is the file
        old[0].pread(8, 0)
    for p in others + [plog]:
        p.close()
    assert all(not s.is_open for s in old)


def test_a_borrowed_descriptor_is_never_closed_under_its_user(tmp_path):
    cache = OpenFiles(2)

    class F:
        def __init__(self, path):
            self.log_path = path
            self._fd, self._pins, self._leases, self._closed, self._held = -1, 0, 0, False, False

    files = []
    for i in range(6):
        p = tmp_path / f"f{i}"
        p.write_bytes(b"x" * i)
        files.append(F(p))
    fds = [cache.acquire(f) for f in files[:4]]      # four borrowed at once: over the limit
    assert len(cache) == 4 and all(f._fd >= 0 for f in files[:4])
    assert [os.fstat(fd).st_size for fd in fds] == [0, 1, 2, 3]
    for f in files[:4]:
        cache.release(f)
    assert len(cache) == 2                          # back under the limit once returned
    errors = []

    def hammer(k):
        try:
            for n in range(300):
                f = files[(n + k) % 6]
                fd = cache.acquire(f)
                try:
                    assert os.fstat(fd).st_size == files.index(f)
                finally:
                    cache.release(f)
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(cache) <= 2
    for f in files:
        cache.close(f)
    assert len(cache) == 0
