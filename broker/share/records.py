"""Key/value codecs of the records kept in `__share_group_state`, after Kafka's share coordinator
(share-coordinator/src/main/resources/common/message): the key starts with an int16 that is
the record type, the value with an int16 schema version.

| key version | key                                          | value                          |
|-------------|----------------------------------------------|--------------------------------|
| 0           | ShareSnapshotKey(group, topic id, partition) | ShareSnapshotValue v0 (flexible) |
| 1           | ShareUpdateKey(group, topic id, partition)   | ShareUpdateValue v0 (read only)  |

We write a snapshot after every change of a share-partition (the topic is compacted, so the
last snapshot of a key is what stays); Kafka writes updates between snapshots. On load both
are read: an update applies its state batches on top of the snapshot before it. A null value
deletes the share-partition's state (DeleteShareGroupOffsets, DeleteGroups).
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from ..groups.records import Reader, Writer
from .partition import StateBatch

SHARE_SNAPSHOT_KEY = 0
SHARE_UPDATE_KEY = 1


class ShareKey(NamedTuple):
    kind: int
    group_id: str
    topic_id: uuid.UUID
    partition: int


class ShareState(NamedTuple):
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    batches: tuple[StateBatch, ...]


def snapshot_key(group_id: str, topic_id: uuid.UUID, partition: int) -> bytes:
    return Writer().i16(SHARE_SNAPSHOT_KEY).string(group_id).uuid(topic_id).i32(partition).done()


def decode_key(data: bytes) -> ShareKey:
    r = Reader(data)
    kind = r.i16()
    if kind not in (SHARE_SNAPSHOT_KEY, SHARE_UPDATE_KEY):
        raise ValueError(f"unknown share state record type {kind}")
    group = r.string() or ""
    return ShareKey(kind, group, r.uuid(), r.i32())


def snapshot_value(s: ShareState) -> bytes:
    w = (Writer().i16(0).i16(s.snapshot_epoch - 0x10000 if s.snapshot_epoch >= 0x8000 else s.snapshot_epoch)
         .i32(s.state_epoch).i32(s.leader_epoch).i64(s.start_offset).i64(s.create_timestamp)
         .i64(s.write_timestamp).carray_len(len(s.batches)))
    for b in s.batches:
        w.i64(b.first_offset).i64(b.last_offset).i8(b.state).i16(b.delivery_count).no_tags()
    return w.no_tags().done()


def decode_snapshot_value(data: bytes) -> ShareState:
    r = Reader(data)
    r.i16()  # schema version
    snapshot_epoch = r.i16() & 0xFFFF
    state_epoch, leader_epoch, start = r.i32(), r.i32(), r.i64()
    create_ts, write_ts = r.i64(), r.i64()
    batches = tuple(_batch(r) for _ in range(r.carray_len() or 0))
    return ShareState(snapshot_epoch, state_epoch, leader_epoch, start, create_ts, write_ts, batches)


def decode_update_value(data: bytes) -> tuple[int, int, tuple[StateBatch, ...]]:
    """ShareUpdateValue v0: (snapshot epoch, start offset (-1: unchanged), state batches)."""
    r = Reader(data)
    r.i16()
    snapshot_epoch = r.i16() & 0xFFFF
    r.i32()  # leader epoch
    start = r.i64()
    return snapshot_epoch, start, tuple(_batch(r) for _ in range(r.carray_len() or 0))


def _batch(r: Reader) -> StateBatch:
    b = StateBatch(r.i64(), r.i64(), r.i8(), r.i16())
    r.tags()
    return b
