"""Copies of a partition's directory, for the broker's snapshot control: which of the log's files
are linked, which copied, which left out, and what a copy needs to open as after a clean shutdown.
The file names stay this package's (segments, indexes, producer snapshots, the clean-shutdown
marker); the broker asks through `save_partition` and `restore_partition`.

A save first rolls the log (PartitionStorage.copy_files), so every record is in a segment file
that is never written again: those files and their indexes are hard links in the copy and again in
each restored copy, as are the checkpoint, producer snapshot and marker files (the log replaces or
removes them by name, never writes into them); only the empty active segment's files (appended in
place) are copied. A clean-shutdown marker and a producer snapshot at the log end offset go with
each saved partition, so a restored log opens from its indexes without a recovery scan and replays
no producer state.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

from .interface import PartitionStorage
from .log import CLEAN_SHUTDOWN_FILE
from .snapshots import SNAPSHOT_SUFFIX, producer_snapshot_bytes, producer_snapshot_name

# the live log's own files that a save leaves out: its producer snapshots and the clean-shutdown
# marker (the copy gets its own, taken at the save), and files being written (.tmp, .cleaned)
_LEFT_OUT_SUFFIXES = (SNAPSHOT_SUFFIX, ".tmp", ".cleaned")
_SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


def copy_small_file(src: str | Path, dest: str | Path) -> int:
    """Copy a small file with a few system calls; returns its size."""
    fd = os.open(src, os.O_RDONLY)
    try:
        data = b""
        chunk = os.read(fd, 1 << 20)
        while chunk:
            data += chunk
            chunk = os.read(fd, 1 << 20)
    finally:
        os.close(fd)
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view):]
    finally:
        os.close(out)
    return len(data)


def _active_segment(directory: Path) -> str | None:
    """The file name stem of the partition's active segment (the highest base offset)."""
    logs = sorted(name for name in os.listdir(directory) if name.endswith(".log"))
    return logs[-1][:-len(".log")] if logs else None


def _link_or_copy(src: Path, dest: Path, active: str | None, *, live: bool = False) -> int:
    """The files of a partition directory into `dest`: the active segment's (`active`: its file
    name stem) copied, since the log appends to them in place; every other file linked. Returns the
    bytes copied. From a `live` log, its own clean-shutdown marker and producer snapshots are left
    out."""
    os.mkdir(dest)
    copied = 0
    with os.scandir(src) as entries:
        for entry in entries:
            name = entry.name
            if live and (name == CLEAN_SHUTDOWN_FILE or name.endswith(_LEFT_OUT_SUFFIXES)):
                continue
            if not entry.is_file(follow_symlinks=False):
                continue
            target = os.path.join(dest, name)
            if active is not None and name.startswith(active) and name.endswith(_SEGMENT_SUFFIXES):
                if entry.stat().st_size:
                    copied += copy_small_file(entry.path, target)
                else:  # the empty active segment a save's roll leaves
                    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
            else:
                os.link(entry.path, target)
    return copied


def save_partition(log: PartitionStorage, dest: Path, now_ms: int, *, end_offset: int, producer_state: bytes) -> int:
    """A copy of the live partition `log` in the new directory `dest`, with a producer snapshot of
    `producer_state` at `end_offset` (the log end) and a clean-shutdown marker; returns the bytes
    copied (the rest is linked)."""
    copied = log.copy_files(dest, partial(_link_or_copy, live=True), now_ms)
    (dest / producer_snapshot_name(end_offset)).write_bytes(producer_snapshot_bytes(producer_state))
    (dest / CLEAN_SHUTDOWN_FILE).write_bytes(b"")
    return copied


def restore_partition(src: Path, dest: Path) -> int:
    """The saved partition directory `src` put in place as the new directory `dest`; returns the
    bytes copied (the rest is linked)."""
    return _link_or_copy(src, dest, _active_segment(src))
