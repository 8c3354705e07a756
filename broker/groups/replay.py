"""Reading `__consumer_offsets` back on startup: what its records say, the last record of each
key winning and a null value deleting. Transactional offset commits stay pending until their
partition's COMMIT/ABORT marker is read (a marker decides the offsets of its own partition
only); without a marker they stay pending, as the transaction is still open. The coordinator
builds its groups from the result (GroupCoordinator.load)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterable

from kafkalite.protocol.batch import BatchHeader
from kafkalite.protocol.control_records import parse_control_record
from kafkalite.protocol.records import decode_records

from ..internal_topics import OFFSETS_TOPIC
from . import records as rec
from . import streams_records
from .consumer import ConsumerMember
from .offsets import OffsetStore

log = logging.getLogger("kafkalite.groups")


@dataclass
class Replayed:
    offsets: OffsetStore = field(default_factory=OffsetStore)
    classic_values: dict[str, rec.GroupMetadataValue | None] = field(default_factory=dict)
    consumer_epochs: dict[str, int | None] = field(default_factory=dict)
    members: dict[tuple[str, str], ConsumerMember | None] = field(default_factory=dict)
    assignments: dict[tuple[str, str], rec.ConsumerMemberAssignment] = field(default_factory=dict)
    streams: dict[str, streams_records.ReplayedStreamsGroup] = field(default_factory=dict)


def replay_offsets_topic(partitions: Iterable) -> Replayed:
    out = Replayed()
    for part in partitions:
        pending = OffsetStore()  # this partition's undecided transactional offsets
        for _base, batch in part.log.batches_from(part.log.log_start_offset):
            h = BatchHeader(batch, 0)
            if h.is_control:
                try:
                    is_commit, _epoch = parse_control_record(batch)
                except ValueError:
                    continue
                for gid, offsets in pending.pending.pop(h.producer_id, {}).items():
                    if is_commit:
                        out.offsets.commit(gid, offsets)
                continue
            try:
                recs = decode_records(batch)
            except Exception:
                log.exception("skipping an undecodable batch in %s-%d", OFFSETS_TOPIC, part.index)
                continue
            for r in recs:
                if r.key is None:
                    continue
                try:
                    key = rec.decode_key(r.key)
                    if key[0] == -1:  # not an offset, classic or consumer group record
                        streams_key = streams_records.decode_key(r.key)
                        if streams_key is not None:
                            streams_records.replay(out.streams, streams_key, r.value)
                        continue
                    _apply(out, pending, key, r.value, h)
                except Exception:
                    log.warning("skipping an undecodable record at offset %d of %s-%d", r.offset,
                                OFFSETS_TOPIC, part.index)
        for pid, groups in pending.pending.items():
            for gid, offsets in groups.items():
                out.offsets.stage(pid, gid, offsets)
    return out


def _apply(out: Replayed, pending: OffsetStore, key, value: bytes | None, h: BatchHeader) -> None:
    kind = key[0]
    if kind == rec.OFFSET_COMMIT_KEY:
        _k, gid, topic, partition = key
        if h.is_transactional:
            if value is not None:
                pending.stage(h.producer_id, gid, {(topic, partition): rec.decode_offset_commit_value(value)})
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
