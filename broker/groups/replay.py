"""Reading `__consumer_offsets` back on startup: what its records say, the last record of each
key winning and a null value deleting. Transactional offset commits stay pending until their
partition's COMMIT/ABORT marker is read (a marker decides the offsets of its own partition
only); without a marker they stay pending, as the transaction is still open. The coordinator
builds its groups from the result (GroupCoordinator.load at start, and load_partition for one
partition whose leader it becomes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..internal_store import InternalTopicStore, StoredMarker, StoredRecord
from . import records as rec
from . import streams_records
from .consumer import ConsumerMember
from .offsets import OffsetStore


@dataclass
class Replayed:
    offsets: OffsetStore = field(default_factory=OffsetStore)
    classic_values: dict[str, rec.GroupMetadataValue | None] = field(default_factory=dict)
    consumer_epochs: dict[str, int | None] = field(default_factory=dict)
    members: dict[tuple[str, str], ConsumerMember | None] = field(default_factory=dict)
    assignments: dict[tuple[str, str], rec.ConsumerMemberAssignment] = field(default_factory=dict)
    streams: dict[str, streams_records.ReplayedStreamsGroup] = field(default_factory=dict)


def replay_offsets_topic(store: InternalTopicStore, only: int | None = None) -> Replayed:
    """What the records of `__consumer_offsets` (of its partition `only`, when given) say, folded
    in offset order."""
    out = Replayed()
    # per partition, its undecided transactional offsets: a marker decides its own partition's only
    pending: dict[int, OffsetStore] = {}

    def on_marker(marker: StoredMarker) -> None:
        staged = pending.setdefault(marker.partition, OffsetStore())
        for gid, offsets in staged.pending.pop(marker.producer_id, {}).items():
            if marker.commit:
                out.offsets.commit(gid, offsets)

    def on_record(record: StoredRecord) -> None:
        key = rec.decode_key(record.key)
        if key[0] == -1:  # not an offset, classic or consumer group record
            streams_key = streams_records.decode_key(record.key)
            if streams_key is not None:
                streams_records.replay(out.streams, streams_key, record.value)
            return
        _apply(out, pending.setdefault(record.partition, OffsetStore()), key, record)

    store.replay(on_record, on_marker, only=only)
    for staged in pending.values():
        for pid, groups in staged.pending.items():
            for gid, offsets in groups.items():
                out.offsets.stage(pid, gid, offsets)
    return out


def _apply(out: Replayed, pending: OffsetStore, key: tuple[Any, ...], record: StoredRecord) -> None:
    kind, value = key[0], record.value
    if kind == rec.OFFSET_COMMIT_KEY:
        _k, gid, topic, partition = key
        if record.transactional:
            if value is not None:
                pending.stage(record.producer_id, gid, {(topic, partition): rec.decode_offset_commit_value(value)})
        elif value is None:
            out.offsets.delete(gid, [(topic, partition)])
        else:
            out.offsets.commit(gid, {(topic, partition): rec.decode_offset_commit_value(value)})
    elif kind == rec.GROUP_METADATA_KEY:
        gid = key[1]
        out.classic_values[gid] = None if value is None else rec.decode_group_metadata_value(value)
        if value is None:
            out.consumer_epochs.pop(gid, None)
    elif kind == rec.CONSUMER_GROUP_METADATA_KEY:
        gid = key[1]
        out.consumer_epochs[gid] = None if value is None else rec.decode_consumer_group_metadata_value(value)
        if value is None:
            for k in [k for k in out.members if k[0] == gid]:
                del out.members[k]
        else:
            out.classic_values.pop(gid, None)
    elif kind == rec.CONSUMER_GROUP_MEMBER_METADATA_KEY:
        _k, gid, mid = key
        if value is None:
            out.members[(gid, mid)] = None
            out.assignments.pop((gid, mid), None)
        else:
            md = rec.decode_consumer_member_metadata_value(value)
            out.members[(gid, mid)] = ConsumerMember(
                mid, instance_id=md.instance_id, rack_id=md.rack_id, client_id=md.client_id,
                client_host=md.client_host, subscribed_topic_names=md.subscribed_topic_names,
                subscribed_topic_regex=md.subscribed_topic_regex, rebalance_timeout_ms=md.rebalance_timeout_ms,
                server_assignor=md.server_assignor)
    elif kind == rec.CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY:
        _k, gid, mid = key
        if value is not None:
            out.assignments[(gid, mid)] = rec.decode_consumer_assignment_value(value)
