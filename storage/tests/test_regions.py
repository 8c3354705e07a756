"""read_region: the same whole batches as read(), as a region of the segment file."""

from __future__ import annotations

import random

from kafkalite.storage import PartitionLog
from kafkalite.storage.open_files import OPEN_FILES

from .helpers import batch, small_config


def _as_bytes(region) -> bytes:
    if not region:
        return b""
    try:
        return region.read()
    finally:
        region.release()


def test_read_region_returns_what_read_returns(tmp_path):
    plog = PartitionLog.open(tmp_path / "t-0", small_config(segment_bytes=4096), now_ms=0)
    for i in range(120):
        plog.append(batch(1 + i % 4, tag=str(i), size=20 + 7 * (i % 30)), now_ms=0)
    assert len(plog.segments) > 3
    rng = random.Random(3)
    for _ in range(2000):
        offset = rng.randrange(0, plog.log_end_offset + 1)
        max_bytes = rng.choice([0, 1, 61, 500, 1000, 3000, 5000, 1 << 20])
        upper = rng.choice([None, rng.randrange(0, plog.log_end_offset + 2)])
        min_one = rng.random() < 0.5
        want = bytes(plog.read(offset, max_bytes, upper_bound=upper, min_one=min_one))
        got = _as_bytes(plog.read_region(offset, max_bytes, upper_bound=upper, min_one=min_one))
        assert got == want, (offset, max_bytes, upper, min_one)
    plog.close()


def test_read_region_of_many_small_batches_in_one_segment(tmp_path):
    # batches_end reads larger chunks while each holds many headers: the run still stops at
    # the same batch as read()'s
    plog = PartitionLog.open(tmp_path / "t-0", small_config(segment_bytes=1 << 30), now_ms=0)
    for i in range(3000):
        plog.append(batch(1 + i % 3, tag=str(i), size=10 + i % 50), now_ms=0)
    assert len(plog.segments) == 1
    rng = random.Random(5)
    for _ in range(300):
        offset = rng.randrange(0, plog.log_end_offset)
        max_bytes = rng.choice([100, 5000, 40_000, 150_000, 1 << 20])
        upper = rng.choice([None, rng.randrange(offset, plog.log_end_offset + 2)])
        want = bytes(plog.read(offset, max_bytes, upper_bound=upper))
        got = _as_bytes(plog.read_region(offset, max_bytes, upper_bound=upper))
        assert got == want, (offset, max_bytes, upper)


def test_a_region_keeps_its_file_open_until_released(tmp_path):
    old = OPEN_FILES.limit
    OPEN_FILES.set_limit(2)
    try:
        plog = PartitionLog.open(tmp_path / "t-0", small_config(), now_ms=0)
        plog.append(batch(3, tag="a"), now_ms=0)
        region = plog.read_region(0, 1 << 20)
        others = [PartitionLog.open(tmp_path / f"o-{i}", small_config(), now_ms=0) for i in range(4)]
        for p in others:     # a new log opens its file with its first write
            p.append(batch(1), now_ms=0)
        seg = plog.segments[0]
        assert seg.is_open                    # pinned: the cache went over its limit instead
        data = region.read()
        region.release()
        region.release()                      # twice is harmless
        others.append(PartitionLog.open(tmp_path / "o-last", small_config(), now_ms=0))
        others[-1].append(batch(1), now_ms=0)
        assert not seg.is_open                # released: the least recently used goes
        assert data == bytes(plog.read(0, 1 << 20))
        for p in others + [plog]:
            p.close()
    finally:
        OPEN_FILES.set_limit(old)
