"""Shared helpers for the storage tests."""

from __future__ import annotations

from pathlib import Path

from kafkalite.protocol.batch import iter_batches
from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.storage import LogConfig, PartitionLog


def batch(n: int = 1, *, tag: str = "", ts: int = 1000, key: bytes | None = None, size: int = 10,
          **kw) -> bytearray:
    """A client-style batch (base offset 0) of n records whose values say `tag` and index."""
    recs = [Record(key if key is not None else f"k{i}".encode(), f"{tag}:{i}".encode().ljust(size, b"."), (), ts + i)
            for i in range(n)]
    return build_batch(recs, **kw)


def values(data) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of every batch in `data`."""
    out = []
    buf = bytes(data)
    for pos, _h in iter_batches(buf, check_crc=True):
        for r in decode_records(buf, pos):
            out.append((r.offset, r.value))
    return out


def read_all(plog: PartitionLog, start: int | None = None) -> list[tuple[int, bytes]]:
    """Every record from `start` (default log start) to the end, via read()."""
    offset = plog.log_start_offset if start is None else start
    out = []
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1 << 20)
        if not len(data):
            break
        vals = values(data)
        out.extend(v for v in vals if v[0] >= offset)
        last = None
        for _pos, h in iter_batches(bytes(data)):
            last = h.next_offset
        offset = last
    return out


def crash(plog: PartitionLog) -> None:
    """Drop a log the way kill -9 would: close the fds, persist nothing, write no marker."""
    for seg in plog.segments:
        seg.close()
    plog._closed = True


def last_log_file(directory: Path) -> Path:
    return sorted(Path(directory).glob("*.log"))[-1]


def small_config(**kw) -> LogConfig:
    base = dict(segment_bytes=1024, index_interval_bytes=128, fsync="never")
    base.update(kw)
    return LogConfig(**base)
