"""Key/value codecs of the records kept in `__share_group_state`, after Kafka's share coordinator
(share-coordinator/src/main/resources/common/message): the key starts with an int16 that is
the record type, the value with an int16 schema version.

| key version | key                                          | value                          |
|-------------|----------------------------------------------|--------------------------------|
| 0           | ShareSnapshotKey(group, topic id, partition) | ShareSnapshotValue v0 (flexible) |
| 1           | ShareUpdateKey(group, topic id, partition)   | ShareUpdateValue v0 (read only)  |

The layouts were checked against the bytes Apache Kafka 4.4 writes (read back from its
`__share_group_state`): epochs are int32, state batches carry their own tagged-field byte, and
the values end with tagged field 0, DeliveryCompleteCount (int32), which Kafka's lag uses.

We write a snapshot after every change of a share-partition (the topic is compacted, so the
last snapshot of a key is what stays); Kafka writes updates between snapshots. On load both
are read: an update applies its state batches on top of the snapshot before it. A null value
deletes the share-partition's state (DeleteShareGroupOffsets, DeleteGroups).
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from ..coordinator_codec import Reader, Writer
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
    delivery_complete_count: int = -1  # acknowledged or archived records from the start offset on


# ShareSnapshotValue / ShareUpdateValue tagged field 0: DeliveryCompleteCount (int32)
DELIVERY_COMPLETE_COUNT_TAG = 0


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
    """ShareSnapshotValue v0: snapshot epoch, state epoch, leader epoch (int32 each), start offset,
    create and write timestamps (int64 each), state batches, tagged DeliveryCompleteCount."""
    w = (Writer().i16(0).i32(s.snapshot_epoch).i32(s.state_epoch).i32(s.leader_epoch).i64(s.start_offset)
         .i64(s.create_timestamp).i64(s.write_timestamp).carray_len(len(s.batches)))
    for b in s.batches:
        w.i64(b.first_offset).i64(b.last_offset).i8(b.state).i16(b.delivery_count).no_tags()
    if s.delivery_complete_count >= 0:
        w.uvarint(1).uvarint(DELIVERY_COMPLETE_COUNT_TAG).uvarint(4).i32(s.delivery_complete_count)
        return w.done()
    return w.no_tags().done()


def _complete_count(tags: dict[int, bytes]) -> int:
    raw = tags.get(DELIVERY_COMPLETE_COUNT_TAG)
    return int.from_bytes(raw, "big", signed=True) if raw is not None and len(raw) == 4 else -1


def decode_snapshot_value(data: bytes) -> ShareState:
    r = Reader(data)
    r.i16()  # schema version
    snapshot_epoch, state_epoch, leader_epoch = r.i32(), r.i32(), r.i32()
    start, create_ts, write_ts = r.i64(), r.i64(), r.i64()
    batches = tuple(_batch(r) for _ in range(r.carray_len() or 0))
    count = _complete_count(r.tags())
    return ShareState(snapshot_epoch, state_epoch, leader_epoch, start, create_ts, write_ts, batches, count)


def decode_update_value(data: bytes) -> tuple[int, int, tuple[StateBatch, ...]]:
    """ShareUpdateValue v0: (snapshot epoch, start offset (-1: unchanged), state batches); after them
    the leader epoch's int32 and a tagged DeliveryCompleteCount, not needed here."""
    r = Reader(data)
    r.i16()
    snapshot_epoch = r.i32()
    r.i32()  # leader epoch
    start = r.i64()
    return snapshot_epoch, start, tuple(_batch(r) for _ in range(r.carray_len() or 0))


def _batch(r: Reader) -> StateBatch:
    b = StateBatch(r.i64(), r.i64(), r.i8(), r.i16())
    r.tags()
    return b
