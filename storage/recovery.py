"""Opening a partition's directory: its segments, its log start, what a crash left behind.

Rules:
- One listing of the directory answers every question: a partition costs a few system calls to
  open, not a walk of its directory per kind of file.
- What interrupted writes leave goes: `.tmp` files (storage.files' atomic writes), `.cleaned`
  files (the cleaner's replacements not yet renamed) and index files whose log is gone.
- Without the clean-shutdown marker, the last segment is recovered batch by batch (length,
  magic, CRC; storage.segment); every other segment loads its indexes. A crash can only have torn
  the segment that was being appended to.
- `log-start-offset.checkpoint` holds the log start offset that DeleteRecords or retention set.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .config import LogConfig
from .files import unlink, write_atomic
from .segment import Segment, segment_name

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOG_START_CHECKPOINT = "log-start-offset.checkpoint"
_INDEX_SUFFIXES = ("index", "timeindex", "txnindex")


@dataclass
class Found:
    """What a partition's directory held."""

    names: list[str]            # its files, listed once
    clean: bool                 # the clean-shutdown marker was there
    checkpoint: int | None      # the checkpointed log start offset
    segments: list[Segment]     # loaded (the last one recovered unless clean); maybe none


def scan(where: str | os.PathLike[str], config: LogConfig, now_ms: int) -> Found | None:
    """Load the segments of the directory `where` after removing what interrupted writes left;
    None when it is missing or empty (a new partition: nothing to recover, and no Path made)."""
    try:
        names = os.listdir(where)
    except FileNotFoundError:
        return None
    if not names:
        return None
    directory = Path(where)
    clean = CLEAN_SHUTDOWN_FILE in names
    for name in names:
        if name.endswith((".tmp", ".cleaned")):
            unlink(directory / name)
    bases = sorted(int(name[:-4]) for name in names
                   if name.endswith(".log") and len(name) == 24 and name[:20].isdigit())
    known = {segment_name(b) for b in bases}
    for name in names:   # indexes whose log is gone
        stem, dot, suffix = name.rpartition(".")
        if dot and suffix in _INDEX_SUFFIXES and stem not in known:
            unlink(directory / name)
    checkpoint = read_log_start_checkpoint(directory) if LOG_START_CHECKPOINT in names else None
    interval = config.index_interval_bytes
    segments = [Segment.load(directory, base, now_ms, recover=i == len(bases) - 1 and not clean,
                             index_interval=interval)
                for i, base in enumerate(bases)]
    return Found(names, clean, checkpoint, segments)


def read_log_start_checkpoint(directory: Path) -> int | None:
    try:
        text = (directory / LOG_START_CHECKPOINT).read_text()
        return int(text.split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None


def write_log_start_checkpoint(directory: Path, log_start_offset: int, *, fsync: bool) -> None:
    write_atomic(directory / LOG_START_CHECKPOINT, f"{log_start_offset}\n".encode(), fsync=fsync)
