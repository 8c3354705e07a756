"""Snapshots: the broker's whole state saved under a name and put back, so that a suite sets up a
rich fixture once and returns to it before each test.

    snapshot        name: save every topic (internal ones included: groups, offsets, transactions
                    and share-group state live there) with its records and configs, the ACLs,
                    the SCRAM users and the group configs; a snapshot of the same name is replaced
    restore         name: the reset control's reset, then that state put back; the coordinators
                    start again from it, as after a restart
    snapshots       the names saved, with their sizes
    drop-snapshot   name: delete one

A snapshot lives in `<data dir>/.kafkalite-snapshots/NAME/`: per partition a directory like the
partition's own, saved (Partition.save_copy) and put back by storage.copies (which of the log's files are linked and
which copied is storage's knowledge): saving and restoring a large state costs a link per file, and
a restored log opens without a recovery scan. The metadata files of the broker are copied.

A restore deletes the current topics (their directories are renamed into a trash directory that
a thread empties), links and copies the snapshot's files into place and opens the logs.

Both run on the trio loop with no await until the state is whole (no request sees half of it)
and fsync nothing; a snapshot is a test fixture, not a backup.

What is not saved: the producer id blocks (ids are handed out from where the broker is, never
again from where the snapshot was), fetch sessions (clients start new ones), armed faults, the
clock, the request log and the cluster administration state (client quotas, dynamic broker
configs, features, reassignments, delegation tokens, client telemetry): those are as the reset
control leaves them.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalite.storage.copies import copy_small_file, restore_partition

from ..clock import now_ms
from ..cluster import partition_dir_name
from ..credentials import ScramStore
from . import ControlError, control
from .reset import GROUP_CONFIGS_FILE, reset_state

if TYPE_CHECKING:
    from ..state import Broker

log = logging.getLogger("kafkalite.snapshot")

SNAPSHOTS_DIR = ".kafkalite-snapshots"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$")
# the metadata files a snapshot holds, relative to the data dir
_TOPICS_FILE = "__cluster_metadata/topics.json"
_META_FILES = (_TOPICS_FILE, "__cluster_metadata/acls.json",
               f"__cluster_metadata/{GROUP_CONFIGS_FILE}", ScramStore.FILE)
_PARTITIONS = "partitions"


def _root(broker: "Broker") -> Path:
    return Path(broker.config.data_dir) / SNAPSHOTS_DIR


def _checked_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ControlError(f"a snapshot name is 1-100 letters, digits, '.', '_' or '-' (not starting with "
                           f"'.' or '-'), not {name!r}")
    return name


def save_snapshot(broker: "Broker", name: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    root = _root(broker)
    target, tmp = root / name, root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / _PARTITIONS).mkdir(parents=True)
    data_dir = Path(broker.config.data_dir)
    copied = records = 0
    parts = list(broker.cluster.all_partitions())
    for part in parts:
        # the records so far go into a sealed segment, which neither the broker nor a restored
        # copy ever writes again: linked, not copied, here and at every restore
        copied += part.save_copy(tmp / _PARTITIONS / partition_dir_name(part.topic.name, part.index), now_ms())
        records += part.high_watermark - part.log_start_offset
    for rel in _META_FILES:
        src = data_dir / rel
        if src.exists():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            copy_small_file(src, tmp / rel)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(tmp, target)
    took_ms = (time.perf_counter() - t0) * 1000
    log.info("snapshot %s: %d partition(s), %d offset(s), %d byte(s) copied in %.2f ms", name, len(parts),
             records, copied, took_ms)
    return {"name": name, "topics": sorted(t.name for t in broker.cluster.topics.values() if not t.internal),
            "partitions": len(parts), "bytes_copied": copied, "took_ms": round(took_ms, 3)}


async def restore_snapshot(broker: "Broker", name: str) -> dict[str, Any]:
    source = _root(broker) / name
    if not source.is_dir():
        raise ControlError(f"no snapshot named {name!r}")
    t0 = time.perf_counter()
    reset_state(broker, fsync=False, reseed=False)
    data_dir = Path(broker.config.data_dir)
    copied = 0
    for src in (source / _PARTITIONS).iterdir():
        dest = data_dir / src.name
        if dest.exists():  # left behind by a topic deleted while a file of it was in use
            shutil.rmtree(dest)
        copied += restore_partition(src, dest)
    for rel in _META_FILES:
        src = source / rel
        if src.exists():
            copy_small_file(src, data_dir / rel)
        elif rel == _TOPICS_FILE:  # a snapshot of a broker without topics
            (data_dir / rel).unlink(missing_ok=True)
    cluster = broker.cluster
    cluster.load()
    if broker.authorizer is not None:
        broker.authorizer.load()
    # in place: open connections' SASL sessions hold this store
    broker.scram.users = ScramStore(data_dir).users
    await broker.services.restart()
    took_ms = (time.perf_counter() - t0) * 1000
    log.info("restored snapshot %s: %d topic(s), %d byte(s) copied in %.2f ms", name, len(cluster.topics),
             copied, took_ms)
    return {"name": name, "topics": sorted(t.name for t in cluster.topics.values() if not t.internal),
            "bytes_copied": copied, "took_ms": round(took_ms, 3)}


@control("snapshot")
async def snapshot(broker, *, name: str):
    """Save the broker's whole state (topics with their records and configs, groups and offsets,
    transactions, ACLs, SCRAM users) as `name`, replacing a snapshot of that name."""
    return save_snapshot(broker, _checked_name(name))


@control("restore")
async def restore(broker, *, name: str):
    """Reset the broker and put back the state saved as `name` (clients stay connected, as after a
    reset)."""
    return await restore_snapshot(broker, _checked_name(name))


@control("snapshots")
async def snapshots(broker):
    """The snapshots saved, by name, with their size on disk."""
    root = _root(broker)
    if not root.is_dir():
        return []
    out = []
    for d in sorted(root.iterdir()):
        if d.is_dir() and not d.name.startswith("."):
            size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
            out.append({"name": d.name, "bytes": size})
    return out


@control("drop-snapshot")
async def drop_snapshot(broker, *, name: str):
    """Delete the snapshot `name`."""
    target = _root(broker) / _checked_name(name)
    if not target.is_dir():
        raise ControlError(f"no snapshot named {name!r}")
    shutil.rmtree(target)
    return {"name": name}
