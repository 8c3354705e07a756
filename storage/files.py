"""Small file helpers shared by the segments, the log and the cleaner: whole writes, atomic
replacement, appends, and unlink that tolerates a missing file."""

from __future__ import annotations

import os
from pathlib import Path

# what the helpers write: a batch's bytes, a buffer being filled, or a view of either
Buffer = bytes | bytearray | memoryview


def write_all(fd: int, data: Buffer) -> None:
    """os.write until every byte of `data` is written (os.write may write less)."""
    mv = memoryview(data)
    while mv:
        n = os.write(fd, mv)
        mv = mv[n:]


def writev_all(fd: int, parts: list[Buffer]) -> None:
    """os.writev until every byte of every part is written (in IOV_MAX slices; writev may
    write less than asked)."""
    views = [memoryview(p) for p in parts if len(p)]
    i = 0
    while i < len(views):
        n = os.writev(fd, views[i:i + _IOV_MAX])
        while n and i < len(views):
            if n >= len(views[i]):
                n -= len(views[i])
                i += 1
            else:
                views[i] = views[i][n:]
                n = 0


_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024


def _write_file(path: Path, flags: int, data: Buffer, fsync: bool, mode: int = 0o644) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, mode)
    try:
        write_all(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def append_file(path: Path, data: bytes, fsync: bool) -> None:
    """Append `data` to `path` (created if missing), fsynced when asked."""
    _write_file(path, os.O_APPEND, data, fsync)


def write_new(path: Path, data: Buffer, fsync: bool, mode: int = 0o644) -> None:
    """Create (or truncate) `path` with `data`, fsynced when asked (`mode`: a new file's permissions)."""
    _write_file(path, os.O_TRUNC, data, fsync, mode)


def write_atomic(path: Path, data: bytes, fsync: bool, mode: int = 0o644) -> None:
    """Replace `path` by rename: a reader (or a crash) sees the old content or the new. A write
    that fails (a full disk) raises OSError with `path` as it was and no temporary file left."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        write_new(tmp, data, fsync, mode)
        os.replace(tmp, path)
    except OSError:
        unlink(tmp)
        raise


def unlink(path: Path) -> None:
    """Remove `path`; a file that is already gone is fine."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def fsync_path(path: Path) -> None:
    """fsync a directory (or file) by path, so that a rename or new file in it is durable; a path
    that cannot be opened or synced is left as it is (the data was written; only its durability
    across a power loss is not certain)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
