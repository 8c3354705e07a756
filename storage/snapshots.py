"""Producer state snapshots: `<offset>.snapshot` files in a partition's directory.

Rules:
- A snapshot is an opaque blob (the broker's producer state) behind a header: magic `KLPS`,
  a version and the blob's CRC-32C. One that does not read back whole is ignored with a warning.
- Written atomically (temporary file, fsync unless the log never fsyncs, rename); the newest two
  are kept. Snapshots past the log's end (the log was cut shorter) are removed on open.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

from kafkalite.protocol import batch as _batch

from .files import unlink, write_atomic
from .segment import segment_name

log = logging.getLogger("kafkalite.storage")

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_MAGIC = b"KLPS"
_SNAPSHOT_HEADER = struct.Struct(">4shI")      # magic, version, crc32c of the blob
SNAPSHOTS_KEPT = 2


def producer_snapshot_name(offset: int) -> str:
    """The file name of the producer snapshot taken at `offset`."""
    return f"{segment_name(offset)}{SNAPSHOT_SUFFIX}"


def producer_snapshot_bytes(blob: bytes) -> bytes:
    """The content of a producer snapshot file holding `blob` (ProducerStates.to_snapshot)."""
    return _SNAPSHOT_HEADER.pack(SNAPSHOT_MAGIC, 0, _batch.crc32c(blob)) + bytes(blob)


def _snapshot_path(directory: Path, offset: int) -> Path:
    return directory / producer_snapshot_name(offset)


def snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the snapshots in `directory`, ascending."""
    out = []
    for p in directory.glob(f"*{SNAPSHOT_SUFFIX}"):
        if p.stem.isdigit() and len(p.stem) == 20:
            out.append(int(p.stem))
    return sorted(out)


def write_snapshot(directory: Path, offset: int, blob: bytes, *, fsync: bool) -> None:
    """Write `<offset>.snapshot` atomically; keep the newest two."""
    write_atomic(_snapshot_path(directory, offset), producer_snapshot_bytes(blob), fsync=fsync)
    offs = snapshot_offsets(directory)
    for off in offs[:-SNAPSHOTS_KEPT]:
        unlink(_snapshot_path(directory, off))


def latest_snapshot(directory: Path, log_end_offset: int) -> tuple[int, bytes] | None:
    """(offset, blob) of the newest intact snapshot at or below log_end_offset."""
    for off in reversed(snapshot_offsets(directory)):
        if off > log_end_offset:
            continue
        path = _snapshot_path(directory, off)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        if len(data) < _SNAPSHOT_HEADER.size:
            continue
        magic, _version, crc = _SNAPSHOT_HEADER.unpack_from(data)
        blob = data[_SNAPSHOT_HEADER.size:]
        if magic != SNAPSHOT_MAGIC or _batch.crc32c(blob) != crc:
            log.warning("%s: ignoring a damaged producer snapshot", path)
            continue
        return off, blob
    return None


def remove_snapshots_after(directory: Path, log_end_offset: int) -> None:
    """Remove snapshots past the log's end (taken before the log was cut shorter)."""
    for off in snapshot_offsets(directory):
        if off > log_end_offset:
            unlink(_snapshot_path(directory, off))
