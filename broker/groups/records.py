"""Key/value codecs of the records the group coordinator keeps in `__consumer_offsets`.

Written from Kafka's JSON definitions (group-coordinator/src/main/resources/common/message):
every key starts with an int16 "version" that is the record type, every value with an int16
schema version. kio has no schemas for these internal records, so they are encoded here.

| key version | key                                   | value                                      |
|-------------|---------------------------------------|--------------------------------------------|
| 0, 1        | OffsetCommitKey(group, topic, part)   | OffsetCommitValue v0-v4 (we write v3)      |
| 2           | GroupMetadataKey(group)               | GroupMetadataValue v0-v4 (we write v3)     |
| 3           | ConsumerGroupMetadataKey(group)       | ConsumerGroupMetadataValue v0 (flexible)   |
| 5           | ConsumerGroupMemberMetadataKey(g, m)  | ConsumerGroupMemberMetadataValue v0        |
| 8           | ConsumerGroupCurrentMemberAssignmentKey(g, m) | ...CurrentMemberAssignmentValue v0 |

A null value is a tombstone (offset deleted, group deleted, member left). Records of types we
do not know are skipped on load, as Kafka does for unknown coordinator record types.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from ..coordinator_codec import Reader, Writer

OFFSET_COMMIT_KEY_LEGACY = 0
OFFSET_COMMIT_KEY = 1
GROUP_METADATA_KEY = 2
CONSUMER_GROUP_METADATA_KEY = 3
CONSUMER_GROUP_MEMBER_METADATA_KEY = 5
CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY = 8

# --- offsets ---------------------------------------------------------------------------------

@dataclass
class OffsetValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return Writer().i16(OFFSET_COMMIT_KEY).string(group).string(topic).i32(partition).done()


def offset_commit_value(v: OffsetValue) -> bytes:
    if v.expire_timestamp >= 0:  # v1 is the only version with an explicit expiry
        return (Writer().i16(1).i64(v.offset).string(v.metadata or "").i64(v.commit_timestamp)
                .i64(v.expire_timestamp).done())
    return (Writer().i16(3).i64(v.offset).i32(v.leader_epoch).string(v.metadata or "")
            .i64(v.commit_timestamp).done())


def decode_offset_commit_value(data: bytes) -> OffsetValue:
    r = Reader(data)
    version = r.i16()
    flexible = version >= 4
    s = r.cstring if flexible else r.string
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = s() or ""
    commit_ts = r.i64()
    expire_ts = r.i64() if version == 1 else -1
    return OffsetValue(offset, leader_epoch, metadata, commit_ts, expire_ts)


# --- classic groups --------------------------------------------------------------------------

@dataclass
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberMetadata] = field(default_factory=list)


def group_metadata_key(group: str) -> bytes:
    return Writer().i16(GROUP_METADATA_KEY).string(group).done()


def group_metadata_value(v: GroupMetadataValue) -> bytes:
    w = Writer().i16(3).string(v.protocol_type).i32(v.generation).string(v.protocol).string(v.leader)
    w.i64(v.current_state_timestamp).i32(len(v.members))
    for m in v.members:
        (w.string(m.member_id).string(m.group_instance_id).string(m.client_id).string(m.client_host)
         .i32(m.rebalance_timeout).i32(m.session_timeout).bytes_(m.subscription).bytes_(m.assignment))
    return w.done()


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    r = Reader(data)
    version = r.i16()
    flexible = version >= 4
    s = r.cstring if flexible else r.string
    text = r.cstring_not_null if flexible else r.string_not_null
    b = r.cbytes if flexible else r.bytes_
    v = GroupMetadataValue(protocol_type=s() or "", generation=r.i32(), protocol=s(), leader=s())
    if version >= 2:
        v.current_state_timestamp = r.i64()
    n = r.carray_len() if flexible else r.i32()
    for _ in range(n or 0):
        member_id = text()
        instance_id = s() if version >= 3 else None
        client_id = text()
        client_host = text()
        rebalance_timeout = r.i32() if version >= 1 else -1
        session_timeout = r.i32()
        subscription = b() or b""
        assignment = b() or b""
        if flexible:
            r.tags()
        v.members.append(MemberMetadata(member_id, instance_id, client_id, client_host, rebalance_timeout,
                                        session_timeout, subscription, assignment))
        if rebalance_timeout < 0:
            v.members[-1].rebalance_timeout = session_timeout
    return v


# --- KIP-848 consumer groups -----------------------------------------------------------------

def consumer_group_metadata_key(group: str) -> bytes:
    return Writer().i16(CONSUMER_GROUP_METADATA_KEY).string(group).done()


def consumer_group_metadata_value(epoch: int) -> bytes:
    return Writer().i16(0).i32(epoch).no_tags().done()


def decode_consumer_group_metadata_value(data: bytes) -> int:
    r = Reader(data)
    r.i16()
    return r.i32()


def consumer_member_key(kind: int, group: str, member_id: str) -> bytes:
    return Writer().i16(kind).string(group).string(member_id).done()


@dataclass
class ConsumerMemberMetadata:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


def consumer_member_metadata_value(m: ConsumerMemberMetadata) -> bytes:
    w = Writer().i16(0).cstring(m.instance_id).cstring(m.rack_id).cstring(m.client_id).cstring(m.client_host)
    w.carray_len(len(m.subscribed_topic_names))
    for t in m.subscribed_topic_names:
        w.cstring(t)
    return w.cstring(m.subscribed_topic_regex).i32(m.rebalance_timeout_ms).cstring(m.server_assignor).no_tags().done()


def decode_consumer_member_metadata_value(data: bytes) -> ConsumerMemberMetadata:
    r = Reader(data)
    r.i16()
    instance_id, rack_id, client_id, client_host = r.cstring(), r.cstring(), r.cstring() or "", r.cstring() or ""
    topics = [r.cstring_not_null() for _ in range(r.carray_len() or 0)]
    regex = r.cstring()
    rebalance_timeout = r.i32()
    assignor = r.cstring()
    return ConsumerMemberMetadata(instance_id, rack_id, client_id, client_host, topics, regex, rebalance_timeout, assignor)


@dataclass
class ConsumerMemberAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: dict[uuid.UUID, list[int]]
    pending_revocation: dict[uuid.UUID, list[int]]


def _write_tps(w: Writer, tps: dict[uuid.UUID, list[int]]) -> None:
    w.carray_len(len(tps))
    for tid, parts in tps.items():
        w.uuid(tid).carray_len(len(parts))
        for p in parts:
            w.i32(p)
        w.no_tags()


def _read_tps(r: Reader) -> dict[uuid.UUID, list[int]]:
    out = {}
    for _ in range(r.carray_len() or 0):
        tid = r.uuid()
        out[tid] = [r.i32() for _ in range(r.carray_len() or 0)]
        r.tags()
    return out


def consumer_assignment_value(a: ConsumerMemberAssignment) -> bytes:
    w = Writer().i16(0).i32(a.member_epoch).i32(a.previous_member_epoch).i8(a.state)
    _write_tps(w, a.assigned)
    _write_tps(w, a.pending_revocation)
    return w.no_tags().done()


def decode_consumer_assignment_value(data: bytes) -> ConsumerMemberAssignment:
    r = Reader(data)
    r.i16()
    epoch, prev, state = r.i32(), r.i32(), r.i8()
    return ConsumerMemberAssignment(epoch, prev, state, _read_tps(r), _read_tps(r))


# --- keys ------------------------------------------------------------------------------------

def decode_key(data: bytes) -> tuple:
    """(kind, fields...) of a coordinator record key; kind -1 for a type we do not know."""
    r = Reader(data)
    kind = r.i16()
    if kind in (OFFSET_COMMIT_KEY_LEGACY, OFFSET_COMMIT_KEY):
        return (OFFSET_COMMIT_KEY, r.string(), r.string(), r.i32())
    if kind in (GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_KEY):
        return (kind, r.string())
    if kind in (CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY):
        return (kind, r.string(), r.string())
    return (-1,)
