"""Server-side assignors of KIP-848 consumer groups, and the consumer protocol's subscription
format (read to describe classic groups and to know which topics a classic group consumes).

- `uniform` (Kafka's default): every partition of the subscribed topics goes to one member
  subscribed to its topic; counts differ by at most one between members that could take each
  other's partitions; a partition stays with its previous owner whenever balance allows.
- `range`: per topic, the members subscribed to it (ordered by member id) get contiguous
  ranges of partitions, the first ones one partition more when the count does not divide.

An assignment is `{member_id: {topic_id: set(partitions)}}`.
"""

from __future__ import annotations

import struct
import uuid
from typing import Mapping

Assignment = dict[str, dict[uuid.UUID, set[int]]]


def decode_consumer_subscription(data: bytes) -> list[str]:
    """Topics of a ConsumerProtocolSubscription (v0-v3: int16 version, [string] topics, ...)."""
    if not data or len(data) < 6:
        return []
    pos = 2
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    topics = []
    for _ in range(max(n, 0)):
        (ln,) = struct.unpack_from(">h", data, pos)
        pos += 2
        topics.append(bytes(data[pos:pos + ln]).decode())
        pos += ln
    return topics


def decode_consumer_assignment(data: bytes) -> dict[str, list[int]]:
    """Partitions of a ConsumerProtocolAssignment (int16 version, [topic, [int32]], user data)."""
    out: dict[str, list[int]] = {}
    if not data or len(data) < 6:
        return out
    pos = 2
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    for _ in range(max(n, 0)):
        (ln,) = struct.unpack_from(">h", data, pos)
        pos += 2
        topic = bytes(data[pos:pos + ln]).decode()
        pos += ln
        (np_,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out[topic] = list(struct.unpack_from(f">{max(np_, 0)}i", data, pos))
        pos += 4 * max(np_, 0)
    return out


def uniform(members: Mapping[str, set[str]], topics: Mapping[str, tuple[uuid.UUID, int]],
            previous: Mapping[str, Mapping[uuid.UUID, set[int]]]) -> Assignment:
    """members: member id -> subscribed topic names; topics: name -> (topic id, partitions)."""
    by_id = {tid: name for name, (tid, _n) in topics.items()}
    owner: dict[tuple[uuid.UUID, int], str] = {}
    eligible: dict[str, set[str]] = {}  # topic name -> member ids
    for mid, subs in members.items():
        for t in subs:
            if t in topics:
                eligible.setdefault(t, set()).add(mid)
    # keep what each member had, where it is still valid
    for mid in sorted(previous):
        if mid not in members:
            continue
        for tid, parts in previous[mid].items():
            name = by_id.get(tid)
            if name is None or mid not in eligible.get(name, ()):
                continue
            for p in parts:
                if p < topics[name][1] and (tid, p) not in owner:
                    owner[(tid, p)] = mid
    sticky = set(owner)
    counts = {mid: 0 for mid in members}
    for mid in owner.values():
        counts[mid] += 1
    order = sorted(members)
    rank = {m: i for i, m in enumerate(order)}
    for name in sorted(eligible):
        tid, n = topics[name]
        cands = sorted(eligible[name], key=rank.__getitem__)
        for p in range(n):
            if (tid, p) not in owner:
                mid = min(cands, key=lambda m: (counts[m], rank[m]))
                owner[(tid, p)] = mid
                counts[mid] += 1
    # balance: move partitions from the fullest members to eligible emptier ones
    moved = True
    while moved:
        moved = False
        # move partitions that just got an owner before those a member already had
        for tp in sorted(owner, key=lambda k: (k in sticky, str(k[0]), -k[1])):
            cur = owner[tp]
            name = by_id[tp[0]]
            best = min(eligible[name], key=lambda m: (counts[m], rank[m]))
            if counts[best] < counts[cur] - 1:
                owner[tp] = best
                counts[cur] -= 1
                counts[best] += 1
                moved = True
    out: Assignment = {mid: {} for mid in members}
    for (tid, p), mid in owner.items():
        out[mid].setdefault(tid, set()).add(p)
    return out


def range_(members: Mapping[str, set[str]], topics: Mapping[str, tuple[uuid.UUID, int]],
           previous: Mapping[str, Mapping[uuid.UUID, set[int]]] | None = None) -> Assignment:
    out: Assignment = {mid: {} for mid in members}
    for name in sorted(topics):
        tid, n = topics[name]
        subs = sorted(mid for mid, s in members.items() if name in s)
        if not subs:
            continue
        per, extra = divmod(n, len(subs))
        start = 0
        for i, mid in enumerate(subs):
            count = per + (1 if i < extra else 0)
            if count:
                out[mid].setdefault(tid, set()).update(range(start, start + count))
            start += count
    return out


ASSIGNORS = {"uniform": uniform, "range": range_}
DEFAULT_ASSIGNOR = "uniform"
