"""Streams groups in `__consumer_offsets`, in Kafka 4.4's record formats.

Written from the schemas Kafka 4.4 ships (kafka-group-coordinator, common/message/StreamsGroup*.json);
keys are non-flexible (an int16 record type, then the fields), values flexible version 0:

| key type | key                                          | value                                          |
|----------|----------------------------------------------|------------------------------------------------|
| 17       | StreamsGroupMetadataKey(group)               | Epoch, MetadataHash (tagged fields left out)   |
| 19       | StreamsGroupMemberMetadataKey(group, member) | instance, rack, client, host, rebalance timeout, topology epoch, process id, endpoint, tags |
| 22       | StreamsGroupCurrentMemberAssignmentKey(g, m) | epochs, state, active/standby/warmup tasks and those pending revocation |
| 23       | StreamsGroupTopologyKey(group)               | the topology (subtopologies, topic infos, copartition groups) |

The target assignment (types 20, 21) is not written: after a restart it is computed again from
what members own, as for consumer groups. `records_of(group)` is every record the group's state
amounts to; the coordinator appends the ones that changed since the last append (and tombstones
for keys that are gone), so one comparison replaces dirty flags in the state machine.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..coordinator_codec import Reader, Writer
from .streams import StreamsGroup, StreamsMember, StreamsMemberState, Subtopology, TopicInfo, Topology
from .streams_assignor import Tasks

STREAMS_GROUP_METADATA_KEY = 17
STREAMS_GROUP_MEMBER_METADATA_KEY = 19
STREAMS_GROUP_CURRENT_ASSIGNMENT_KEY = 22
STREAMS_GROUP_TOPOLOGY_KEY = 23
KINDS = (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_CURRENT_ASSIGNMENT_KEY,
         STREAMS_GROUP_TOPOLOGY_KEY)


# --- keys ------------------------------------------------------------------------------------

def group_key(kind: int, group: str) -> bytes:
    return Writer().i16(kind).string(group).done()


def member_key(kind: int, group: str, member_id: str) -> bytes:
    return Writer().i16(kind).string(group).string(member_id).done()


def decode_key(data: bytes) -> tuple | None:
    """(kind, group[, member]) of a streams group record key, None for another record type."""
    r = Reader(data)
    kind = r.i16()
    if kind in (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_TOPOLOGY_KEY):
        return (kind, r.string())
    if kind in (STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_CURRENT_ASSIGNMENT_KEY):
        return (kind, r.string(), r.string())
    return None


# --- values ----------------------------------------------------------------------------------

def metadata_value(epoch: int) -> bytes:
    return Writer().i16(0).i32(epoch).i64(0).no_tags().done()


def decode_metadata_value(data: bytes) -> int:
    r = Reader(data)
    r.i16()
    return r.i32()


def _strings(w: Writer, items) -> None:
    w.carray_len(len(items))
    for s in items:
        w.cstring(s)


def _read_strings(r: Reader) -> tuple[str, ...]:
    return tuple(r.cstring() or "" for _ in range(r.carray_len() or 0))


def _key_values(w: Writer, pairs) -> None:
    w.carray_len(len(pairs))
    for k, v in pairs:
        w.cstring(k).cstring(v).no_tags()


def _read_key_values(r: Reader) -> tuple[tuple[str, str], ...]:
    out = []
    for _ in range(r.carray_len() or 0):
        out.append((r.cstring() or "", r.cstring() or ""))
        r.tags()
    return tuple(out)


def _topic_infos(w: Writer, infos: tuple[TopicInfo, ...]) -> None:
    w.carray_len(len(infos))
    for t in infos:
        w.cstring(t.name).i32(t.partitions).i16(t.replication_factor)
        _key_values(w, t.configs)
        w.no_tags()


def _read_topic_infos(r: Reader) -> tuple[TopicInfo, ...]:
    out = []
    for _ in range(r.carray_len() or 0):
        name, partitions, rf = r.cstring() or "", r.i32(), r.i16()
        configs = _read_key_values(r)
        r.tags()
        out.append(TopicInfo(name, partitions, rf, configs))
    return tuple(out)


def _int16s(w: Writer, items) -> None:
    w.carray_len(len(items))
    for i in items:
        w.i16(i)


def topology_value(t: Topology) -> bytes:
    w = Writer().i16(0).i32(t.epoch).carray_len(len(t.subtopologies))
    for s in t.subtopologies:
        w.cstring(s.subtopology_id)
        _strings(w, s.source_topics)
        _strings(w, s.source_topic_regex)
        _topic_infos(w, s.state_changelog_topics)
        _strings(w, s.repartition_sink_topics)
        _topic_infos(w, s.repartition_source_topics)
        w.carray_len(len(s.copartition_groups))
        for sources, regex, repartition in s.copartition_groups:
            _int16s(w, sources)
            _int16s(w, regex)
            _int16s(w, repartition)
            w.no_tags()
        w.no_tags()
    return w.no_tags().done()


def decode_topology_value(data: bytes) -> Topology:
    r = Reader(data)
    r.i16()
    epoch = r.i32()
    subs = []
    for _ in range(r.carray_len() or 0):
        sid = r.cstring() or ""
        sources = _read_strings(r)
        regex = _read_strings(r)
        changelogs = _read_topic_infos(r)
        sinks = _read_strings(r)
        repartition = _read_topic_infos(r)
        groups = []
        for _g in range(r.carray_len() or 0):
            group = tuple(tuple(r.i16() for _ in range(r.carray_len() or 0)) for _k in range(3))
            r.tags()
            groups.append(group)
        r.tags()
        subs.append(Subtopology(sid, sources, regex, sinks, repartition, changelogs, tuple(groups)))  # type: ignore[arg-type]
    return Topology(epoch, tuple(subs))


def member_metadata_value(m: StreamsMember) -> bytes:
    w = Writer().i16(0).cstring(m.instance_id).cstring(m.rack_id).cstring(m.client_id).cstring(m.client_host)
    w.i32(m.rebalance_timeout_ms).i32(m.topology_epoch).cstring(m.process_id)
    if m.user_endpoint is None:
        w.i8(-1)  # a null struct
    else:
        w.i8(1).cstring(m.user_endpoint[0])
        w.buf += struct.pack(">H", m.user_endpoint[1])
        w.no_tags()
    _key_values(w, sorted(m.client_tags.items()))
    return w.no_tags().done()


def decode_member_metadata_value(member_id: str, data: bytes) -> StreamsMember:
    r = Reader(data)
    r.i16()
    m = StreamsMember(member_id, instance_id=r.cstring(), rack_id=r.cstring(), client_id=r.cstring() or "",
                      client_host=r.cstring() or "")
    m.rebalance_timeout_ms, m.topology_epoch, m.process_id = r.i32(), r.i32(), r.cstring() or ""
    if r.i8() >= 0:
        host = r.cstring() or ""
        (port,) = struct.unpack(">H", r._take(2))
        r.tags()
        m.user_endpoint = (host, port)
    m.client_tags = dict(_read_key_values(r))
    return m


def _tasks(w: Writer, tasks: dict[str, set[int]]) -> None:
    items = sorted((s, ps) for s, ps in tasks.items() if ps)
    w.carray_len(len(items))
    for sid, ps in items:
        w.cstring(sid).carray_len(len(ps))
        for p in sorted(ps):
            w.i32(p)
        w.no_tags()


def _read_tasks(r: Reader) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for _ in range(r.carray_len() or 0):
        sid = r.cstring() or ""
        out[sid] = {r.i32() for _ in range(r.carray_len() or 0)}
        r.tags()  # AssignmentEpochs (tag 0) is not kept
    return out


def assignment_value(m: StreamsMember) -> bytes:
    w = Writer().i16(0).i32(m.member_epoch).i32(m.previous_member_epoch).i8(int(m.state))
    for tasks in (m.assigned.active, m.assigned.standby, m.assigned.warmup, m.pending_revocation.active,
                  m.pending_revocation.standby, m.pending_revocation.warmup):
        _tasks(w, tasks)
    return w.no_tags().done()


def apply_assignment_value(m: StreamsMember, data: bytes) -> None:
    r = Reader(data)
    r.i16()
    m.member_epoch, m.previous_member_epoch = r.i32(), r.i32()
    state = r.i8()
    m.state = StreamsMemberState(state) if state in StreamsMemberState._value2member_map_ else StreamsMemberState.UNKNOWN
    parts = [_read_tasks(r) for _ in range(6)]
    m.assigned = Tasks(parts[0], parts[1], parts[2])
    m.pending_revocation = Tasks(parts[3], parts[4], parts[5])


# --- the group as records, and back -------------------------------------------------------------

def records_of(group: StreamsGroup) -> dict[bytes, bytes]:
    gid = group.group_id
    out = {group_key(STREAMS_GROUP_METADATA_KEY, gid): metadata_value(group.group_epoch)}
    if group.topology is not None:
        out[group_key(STREAMS_GROUP_TOPOLOGY_KEY, gid)] = topology_value(group.topology)
    for mid, m in group.members.items():
        out[member_key(STREAMS_GROUP_MEMBER_METADATA_KEY, gid, mid)] = member_metadata_value(m)
        out[member_key(STREAMS_GROUP_CURRENT_ASSIGNMENT_KEY, gid, mid)] = assignment_value(m)
    return out


def changes(group: StreamsGroup, persisted: dict[bytes, bytes]) -> tuple[list[tuple[bytes, bytes | None]],
                                                                          dict[bytes, bytes]]:
    """The records to append (changed values, then tombstones of members that are gone, member
    records before the group's) and the new persisted map."""
    now = records_of(group)
    out: list[tuple[bytes, bytes | None]] = [(k, None) for k in persisted if k not in now]
    out += [(k, v) for k, v in now.items() if persisted.get(k) != v]
    return out, now


@dataclass
class ReplayedStreamsGroup:
    epoch: int = 0
    topology: Topology | None = None
    members: dict[str, StreamsMember] = field(default_factory=dict)
    assignments: dict[str, bytes] = field(default_factory=dict)


def replay(groups: dict[str, ReplayedStreamsGroup], key: tuple, value: bytes | None) -> None:
    """Apply one streams group record read back from __consumer_offsets."""
    kind, gid = key[0], key[1]
    if kind == STREAMS_GROUP_METADATA_KEY:
        if value is None:
            groups.pop(gid, None)
        else:
            groups.setdefault(gid, ReplayedStreamsGroup()).epoch = decode_metadata_value(value)
        return
    g = groups.setdefault(gid, ReplayedStreamsGroup())
    if kind == STREAMS_GROUP_TOPOLOGY_KEY:
        g.topology = None if value is None else decode_topology_value(value)
    elif kind == STREAMS_GROUP_MEMBER_METADATA_KEY:
        if value is None:
            g.members.pop(key[2], None)
            g.assignments.pop(key[2], None)
        else:
            g.members[key[2]] = decode_member_metadata_value(key[2], value)
    elif kind == STREAMS_GROUP_CURRENT_ASSIGNMENT_KEY:
        if value is None:
            g.assignments.pop(key[2], None)
        else:
            g.assignments[key[2]] = value


def restore(group: StreamsGroup, replayed: ReplayedStreamsGroup, now: int) -> None:
    """Rebuild a group from what replay read; its target is computed again on the next heartbeat,
    sticking to what the members own."""
    group.group_epoch = replayed.epoch
    group.topology = replayed.topology
    for mid, m in replayed.members.items():
        if mid in replayed.assignments:
            apply_assignment_value(m, replayed.assignments[mid])
        m.session_deadline = now + group.session_timeout_ms
        group.members[mid] = m
        if m.instance_id is not None:
            group.static_members[m.instance_id] = mid
    group.target = {mid: m.assigned.copy() for mid, m in group.members.items()}
    group.assignment_epoch = group.group_epoch - 1 if group.members else group.group_epoch
