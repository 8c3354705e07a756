"""What the console shows, read from the broker's state: the one place that knows its shape.

Every read of broker internals the console makes goes through the functions of this module
(partitions and their logs, producer state, the transaction and group coordinators), so a
change inside the broker is adapted here and nowhere else. Each function returns plain
JSON-ready values and runs on the broker's trio loop (no locks are needed, and nothing here
awaits, so a view is one consistent snapshot). Nothing here writes to the broker.

Batch kinds in a partition timeline, as Kafka's log tells them apart:
- ``plain``: no producer id; ``idempotent``: a producer id without the transactional bit;
- ``committed`` / ``aborted`` / ``open``: transactional data whose producer's COMMIT marker,
  ABORT marker (the aborted-transaction index) or neither has been written yet;
- ``commit`` / ``abort``: the control batches (transaction markers) themselves.
"""

from __future__ import annotations

import binascii
import json
from collections import deque
from typing import Any, Callable

from kafkalite.protocol.batch import COMPRESSION_NAMES, BatchHeader
from kafkalite.protocol.control_records import parse_control_record
from kafkalite.protocol.records import decode_records

from .records import open_transactions, transaction_status

# The default timeline shows the newest batches of a partition, at most this many.
TIMELINE_BATCHES = 400
# ...found among the last this many offsets at most (bounds the headers read for one view).
TIMELINE_SCAN_OFFSETS = 20_000
RECORDS_PER_BATCH = 500
HISTORY_PER_ID = 20
TEXT_LIMIT = 4096


# --- the broker's parts -------------------------------------------------------------------------

def _cluster(broker):
    return broker.cluster


def _service(broker, name: str):
    # the coordinators, by name: a dict of services, or the broker's Services, whose existing()
    # does not build a coordinator nobody used yet (looking must not create internal topics)
    services = broker.services
    if isinstance(services, dict):
        return services.get(name)
    existing = getattr(services, "existing", None)
    return existing(name) if existing is not None else getattr(services, name, None)


def _txn_core(broker):
    svc = _service(broker, "transactions")
    return None if svc is None else svc.core


def transaction_core(broker):
    """The transaction coordinator's state (its `txns`), or None while no transaction was seen."""
    return _txn_core(broker)


def _group_coordinator(broker):
    return _service(broker, "groups")


def find_partition(broker, topic: str, index: int):
    return _cluster(broker).partition(topic, index)


def internal_partitions(broker, topic: str) -> list:
    """The partitions of an internal topic (empty until it exists)."""
    found = _cluster(broker).topics.get(topic)
    return list(found.partitions) if found is not None else []


def watch_partition(part, event) -> None:
    """Be woken (event.set()) by the next append or LSO change of `part`: the same wake-up a
    long-polling fetch uses, so the console adds no work to an append when nobody watches."""
    part.add_waiter(event)


def unwatch_partition(part, event) -> None:
    part.remove_waiter(event)


# --- topics and partitions --------------------------------------------------------------------

def partition_summary(part) -> dict[str, Any]:
    first_unstable = part.first_unstable_offset()
    return {
        "topic": part.topic.name,
        "partition": part.index,
        "log_start_offset": part.log_start_offset,
        "high_watermark": part.high_watermark,
        "last_stable_offset": part.last_stable_offset,
        "first_unstable_offset": first_unstable,
        "size_bytes": part.size_bytes,
        "leader_epoch": part.leader_epoch,
        "segments": [s._asdict() for s in part.segment_summaries()],
    }


def topics(broker) -> list[dict[str, Any]]:
    cluster = _cluster(broker)
    out = []
    for topic in sorted(cluster.topics.values(), key=lambda t: (t.internal, t.name)):
        effective = cluster.effective_configs(topic)
        out.append({
            "name": topic.name,
            "topic_id": str(topic.topic_id),
            "internal": topic.internal,
            "configs": {k: str(effective[k]) for k in sorted(effective)},
            "overrides": dict(sorted(topic.configs.items())),
            "partitions": [partition_summary(p) for p in topic.partitions],
        })
    return out


# --- one partition's timeline -------------------------------------------------------------------

def _transactional_ids_by_producer(broker) -> dict[int, str]:
    core = _txn_core(broker)
    if core is None:
        return {}
    out: dict[int, str] = {}
    for tid, md in core.txns.items():
        # a transaction open under the previous producer id (KIP-890 rotates it at the end of a
        # transaction) still belongs to this transactional id
        if md.prev_producer_id >= 0:
            out.setdefault(md.prev_producer_id, tid)
    for tid, md in core.txns.items():
        if md.producer_id >= 0:
            out[md.producer_id] = tid
    return out


def producers(broker, part) -> list[dict[str, Any]]:
    """DescribeProducers' view of one partition."""
    tids = _transactional_ids_by_producer(broker)
    out = []
    for e in sorted(part.producers.entries.values(), key=lambda e: e.producer_id):
        out.append({
            "producer_id": e.producer_id,
            "producer_epoch": e.epoch,
            "last_sequence": e.last_seq,
            "last_timestamp": e.last_timestamp,
            "coordinator_epoch": e.coordinator_epoch,
            "current_txn_start_offset": -1 if e.current_txn_first_offset is None else e.current_txn_first_offset,
            "transactional_id": tids.get(e.producer_id),
        })
    return out


def _batches(part, start: int | None, limit: int) -> tuple[list, bool]:
    """(base offset, header, location) of up to `limit` batches: from `start`, or the
    newest ones (looking back further only while fewer than `limit` are found)."""
    if start is not None:
        out = []
        for item in part.batch_headers_from(max(start, part.log_start_offset)):
            out.append(item)
            if len(out) >= limit:
                return out, True
        return out, False
    hw = part.high_watermark
    lookback = 1000
    while True:
        scan_from = max(part.log_start_offset, hw - lookback)
        window: deque = deque(maxlen=limit)
        seen = 0
        for item in part.batch_headers_from(scan_from):
            window.append(item)
            seen += 1
        if seen >= limit or scan_from <= part.log_start_offset or lookback >= TIMELINE_SCAN_OFFSETS:
            return list(window), seen > limit or scan_from > part.log_start_offset
        lookback = min(lookback * 4, TIMELINE_SCAN_OFFSETS)


def timeline(broker, part, start: int | None = None, limit: int = TIMELINE_BATCHES) -> dict[str, Any]:
    """The batches of a partition in offset order, each with its kind, plus the LSO, the HW
    and the open transaction that holds the LSO back."""
    batches, truncated = _batches(part, start, limit)
    tids = _transactional_ids_by_producer(broker)
    open_first = open_transactions(part)
    aborted: list = []
    if batches:
        first = batches[0][0]
        last = batches[-1][0] + batches[-1][1].last_offset_delta
        aborted = part.aborted_txns(first, last + 1)
    out = []
    for base, h, where in batches:
        pid = h.producer_id
        last = base + h.last_offset_delta
        if h.is_control:
            kind = "control"
            try:  # a marker is one tiny record: read that batch whole
                commit, _cepoch = parse_control_record(where.read(), 0)
                kind = "commit" if commit else "abort"
            except (ValueError, OSError):
                pass
        elif pid < 0:
            kind = "plain"
        else:
            kind = transaction_status(h, base, aborted, open_first) or "idempotent"
        out.append({
            "base_offset": base,
            "last_offset": last,
            "kind": kind,
            "record_count": h.record_count,
            "size_bytes": h.total_size,
            "producer_id": pid,
            "producer_epoch": h.producer_epoch,
            "base_sequence": h.base_sequence,
            "transactional_id": tids.get(pid) if pid >= 0 else None,
            "compression": COMPRESSION_NAMES.get(h.compression, str(h.compression)),
            "timestamp_type": "LogAppendTime" if h.is_log_append_time else "CreateTime",
            "base_timestamp": h.base_timestamp,
            "max_timestamp": h.max_timestamp,
        })
    summary = partition_summary(part)
    holder = None
    fuo = summary["first_unstable_offset"]
    if fuo is not None:
        for pid, first in open_first.items():
            if first == fuo:
                holder = _open_transaction(broker, pid, first, tids.get(pid))
                break
    return {**summary, "batches": out, "truncated": truncated, "lso_held_by": holder,
            "producers": producers(broker, part)}


def _open_transaction(broker, pid: int, first_offset: int, tid: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"producer_id": pid, "first_offset": first_offset, "transactional_id": tid}
    core = _txn_core(broker)
    md = core.txns.get(tid) if core is not None and tid is not None else None
    if md is not None:
        out.update(state=md.state.kafka_name, start_ms=md.start_ms, timeout_ms=md.timeout_ms)
    return out


def _bytes_view(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    shown = data[:TEXT_LIMIT]
    view: dict[str, Any] = {"size": len(data), "hex": binascii.hexlify(shown, " ").decode(), "text": None,
                            "json": None, "cut": len(data) > TEXT_LIMIT}
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return view
    view["text"] = text[:TEXT_LIMIT]
    try:
        view["json"] = json.dumps(json.loads(text), indent=2)[:TEXT_LIMIT]
    except ValueError:
        pass
    return view


def batch_records(part, offset: int, decode_value: Callable[[bytes | None], Any] | None = None) -> dict[str, Any] | None:
    """The records of the batch holding `offset`, decoded (key, value, headers, timestamps);
    with `decode_value` (the schema registry's), a value in Confluent's wire format also as the
    registered schema reads it ("value_schema")."""
    for base, data in part.batches_from(offset):
        h = BatchHeader(data, 0)
        if base > offset:
            return None
        records = []
        for rec in decode_records(data, 0)[:RECORDS_PER_BATCH]:
            records.append({
                "offset": rec.offset,
                "timestamp": rec.timestamp,
                "key": _bytes_view(rec.key),
                "value": _bytes_view(rec.value),
                "headers": [{"key": k, "value": _bytes_view(v)} for k, v in rec.headers],
                "value_schema": decode_value(rec.value) if decode_value is not None else None,
            })
        return {"base_offset": base, "last_offset": base + h.last_offset_delta, "record_count": h.record_count,
                "control": h.is_control, "records": records}
    return None


# --- transactions -------------------------------------------------------------------------------

class TransactionHistory:
    """The recent state changes of every transactional id, read from __transaction_state.

    The coordinator writes every transition there, so the history needs no hook in the
    coordinator: each read continues from where the previous one stopped (only records added
    since are decoded), and nothing is read while nobody looks."""

    def __init__(self) -> None:
        self.next_offset: dict[int, int] = {}
        self.by_id: dict[str, deque] = {}

    def catch_up(self, broker) -> None:
        from ..transactions.log import decode_key, decode_value
        from ..transactions.state import TxnState

        topic = _cluster(broker).topics.get("__transaction_state")
        if topic is None:
            return
        for part in topic.partitions:
            start = max(self.next_offset.get(part.index, 0), part.log_start_offset)
            if start >= part.high_watermark:
                continue
            for _base, data in part.batches_from(start):
                h = BatchHeader(data, 0)
                if h.is_control:
                    continue
                for rec in decode_records(data, 0):
                    if rec.offset < start or rec.key is None:
                        continue
                    try:
                        tid = decode_key(rec.key)
                        value = decode_value(rec.value)
                    except ValueError:
                        continue
                    if tid is None:
                        continue
                    hist = self.by_id.setdefault(tid, deque(maxlen=HISTORY_PER_ID * 3))
                    if value is None:
                        hist.append({"state": "Dead", "time_ms": rec.timestamp})
                        continue
                    try:
                        state = TxnState(value.state).kafka_name
                    except ValueError:
                        state = str(value.state)
                    hist.append({"state": state, "producer_id": value.producer_id,
                                 "producer_epoch": value.producer_epoch, "start_ms": value.start_ms,
                                 "last_update_ms": value.last_update_ms,
                                 "partitions": sorted(f"{t}-{p}" for t, p in value.partitions),
                                 "time_ms": rec.timestamp})
            self.next_offset[part.index] = part.high_watermark

    def transactions_of(self, tid: str) -> list[dict[str, Any]]:
        """The completed transactions of `tid`, newest first: one entry per CompleteCommit /
        CompleteAbort, with the partitions its Prepare* named."""
        out = []
        prepared_parts: list[str] = []
        for entry in self.by_id.get(tid, ()):
            st = entry["state"]
            if st in ("PrepareCommit", "PrepareAbort"):
                prepared_parts = entry.get("partitions", [])
            elif st in ("CompleteCommit", "CompleteAbort"):
                out.append({"outcome": "commit" if st == "CompleteCommit" else "abort",
                            "producer_id": entry["producer_id"], "producer_epoch": entry["producer_epoch"],
                            "start_ms": entry["start_ms"], "end_ms": entry["last_update_ms"],
                            "partitions": prepared_parts or entry.get("partitions", [])})
                prepared_parts = []
        return out[::-1][:HISTORY_PER_ID]


def transactions(broker, history: TransactionHistory) -> list[dict[str, Any]]:
    core = _txn_core(broker)
    if core is None:
        return []
    history.catch_up(broker)
    out = []
    for tid in sorted(core.txns):
        md = core.txns[tid]
        state = md.state.kafka_name
        out.append({
            "transactional_id": tid,
            "state": state,
            "pending_state": md.pending_state.kafka_name if md.pending_state is not None else None,
            "producer_id": md.producer_id,
            "producer_epoch": md.producer_epoch,
            "timeout_ms": md.timeout_ms,
            "start_ms": md.start_ms,
            "last_update_ms": md.last_update_ms,
            "open": md.has_pending_transaction(),
            "partitions": sorted(f"{t}-{p}" for t, p in md.partitions),
            "history": history.transactions_of(tid),
        })
    return out


# --- groups -------------------------------------------------------------------------------------

def _lag_rows(broker, offsets: dict, pending: dict) -> list[dict[str, Any]]:
    cluster = _cluster(broker)
    rows = []
    for (topic, index) in sorted(set(offsets) | set(pending)):
        v = offsets.get((topic, index))
        part = cluster.partition(topic, index)
        hw = part.high_watermark if part is not None else None
        lso = part.last_stable_offset if part is not None else None
        p = pending.get((topic, index))
        rows.append({
            "topic": topic, "partition": index,
            "committed_offset": v.offset if v is not None else None,
            "metadata": v.metadata if v is not None else None,
            "commit_timestamp": v.commit_timestamp if v is not None else None,
            "high_watermark": hw, "last_stable_offset": lso,
            "lag": (hw - v.offset) if v is not None and hw is not None else None,
            "pending_offset": p["offset"] if p else None,
            "pending_producer_id": p["producer_id"] if p else None,
        })
    return rows


def _decode_classic_assignment(data: bytes) -> list[str]:
    from ..groups.assignors import decode_consumer_assignment

    if not data:
        return []
    try:
        assigned = decode_consumer_assignment(data)
    except Exception:  # an assignment in a protocol we do not know: show it as bytes
        return [f"({len(data)} bytes)"]
    return [f"{t}-{p}" for t in sorted(assigned) for p in sorted(assigned[t])]


def groups(broker) -> list[dict[str, Any]]:
    from ..groups.classic import ClassicGroup
    from ..groups.streams import StreamsGroup

    coord = _group_coordinator(broker)
    if coord is None:
        return []
    names = {t.topic_id: t.name for t in _cluster(broker).topics.values()}
    pending_by_group: dict[str, dict] = {}
    for pid, by_group in coord.offsets.pending.items():
        for gid, offs in by_group.items():
            for tp, v in offs.items():
                pending_by_group.setdefault(gid, {})[tp] = {"offset": v.offset, "producer_id": pid}
    out = []
    ids = set(coord.groups) | set(coord.offsets.committed) | set(pending_by_group)
    for gid in sorted(ids):
        group = coord.groups.get(gid)
        entry: dict[str, Any] = {"group_id": gid}
        if group is None:
            entry.update(type="none", state="Empty", members=[])
        elif isinstance(group, StreamsGroup):
            entry.update(_streams_group(group))
        elif isinstance(group, ClassicGroup):
            consumer = group.protocol_type == "consumer"
            entry.update(type="classic", state=str(group.state), generation=group.generation_id,
                         protocol_type=group.protocol_type, protocol=group.protocol_name, leader=group.leader_id,
                         members=[{"member_id": m.member_id, "instance_id": m.group_instance_id,
                                   "client_id": m.client_id, "client_host": m.client_host,
                                   "assignment": _decode_classic_assignment(m.assignment) if consumer else []}
                                  for m in group.members.values()])
        else:
            entry.update(type="consumer", state=str(group.state), generation=group.group_epoch,
                         assignment_epoch=group.assignment_epoch, assignor=group.preferred_assignor(),
                         members=[{"member_id": m.member_id, "instance_id": m.instance_id,
                                   "client_id": m.client_id, "client_host": m.client_host,
                                   "member_epoch": m.member_epoch,
                                   "assignment": _topic_partitions(m.assigned, names)}
                                  for m in group.members.values()])
        entry["offsets"] = _lag_rows(broker, coord.offsets.group_offsets(gid), pending_by_group.get(gid, {}))
        out.append(entry)
    out.extend(share_groups(broker, names))
    return out


def _tasks(tasks: dict[str, set[int]]) -> list[str]:
    """Streams tasks as Kafka names them: subtopology_partition."""
    return [f"{s}_{p}" for s in sorted(tasks) for p in sorted(tasks[s])]


def _streams_group(group) -> dict[str, Any]:
    configured = group.configured
    status = None
    if configured is not None and configured.status is not None:
        code, detail = configured.status
        status = {"code": code.name, "detail": detail}
    topology = None
    if group.topology is not None:
        decided = configured.internal_partitions if configured is not None else {}
        tasks = configured.tasks if configured is not None else None
        topology = {"epoch": group.topology.epoch, "subtopologies": [{
            "subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
            "repartition_sink_topics": list(s.repartition_sink_topics),
            "repartition_source_topics": [
                {"name": t.name, "partitions": decided.get(t.name, t.partitions)} for t in s.repartition_source_topics],
            "state_changelog_topics": [
                {"name": t.name, "partitions": decided.get(t.name, t.partitions)} for t in s.state_changelog_topics],
            "tasks": tasks.get(s.subtopology_id) if tasks is not None else None,
        } for s in group.topology.subtopologies]}
    return {
        "type": "streams", "state": str(group.state), "generation": group.group_epoch,
        "assignment_epoch": group.assignment_epoch, "topology": topology,
        # ready: every subtopology's tasks are known (Kafka's NOT_READY state otherwise)
        "topology_status": status or {"code": "READY" if configured is not None and configured.tasks is not None
                                      else "NOT_READY", "detail": None},
        "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "process_id": m.process_id,
                     "client_id": m.client_id, "client_host": m.client_host, "member_epoch": m.member_epoch,
                     "topology_epoch": m.topology_epoch, "state": m.state.name,
                     "active": _tasks(m.assigned.active), "standby": _tasks(m.assigned.standby),
                     "warmup": _tasks(m.assigned.warmup)}
                    for m in group.members.values()],
    }


def _share_partition(sp, part, now: int) -> dict[str, Any]:
    by_state: dict[str, list[dict[str, Any]]] = {}
    for off in sorted(sp.in_flight):
        rec = sp.in_flight[off]
        rows = by_state.setdefault(rec.state.name, [])
        last = rows[-1] if rows else None
        # runs of offsets with the same state, delivery count, holder and lock deadline
        if last is not None and last["last_offset"] == off - 1 and last["delivery_count"] == rec.delivery_count \
                and last["member_id"] == rec.member_id and last["lock_deadline"] == rec.lock_deadline:
            last["last_offset"] = off
            continue
        acquired = rec.state.name == "ACQUIRED"
        rows.append({"first_offset": off, "last_offset": off, "delivery_count": rec.delivery_count,
                     "member_id": rec.member_id if acquired else None,
                     "lock_deadline": rec.lock_deadline if acquired else 0,
                     "lock_remaining_ms": max(0, rec.lock_deadline - now) if acquired else None})
    hw = part.high_watermark if part is not None else None
    return {"start_offset": sp.start_offset, "end_offset": sp.end_offset, "high_watermark": hw,
            "lag": max(0, hw - sp.start_offset - sp.delivery_complete_count()) if hw is not None else None,
            "in_flight": by_state,
            "counts": {name: sum(r["last_offset"] - r["first_offset"] + 1 for r in rows)
                       for name, rows in by_state.items()}}


def share_groups(broker, names: dict | None = None) -> list[dict[str, Any]]:
    """Share groups (KIP-932): members and their assignments, and each share-partition's state."""
    share = _service(broker, "share")
    if share is None:
        return []
    cluster = _cluster(broker)
    if names is None:
        names = {t.topic_id: t.name for t in cluster.topics.values()}
    now = share.clock()
    out = []
    for gid, state in share.list_groups():
        group = share.groups.get(gid)
        members = list(group.members.values()) if group is not None else []
        partitions = []
        for (tid, index), sp in sorted(share.group_partitions(gid).items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            name = names.get(tid, str(tid))
            row = _share_partition(sp, cluster.partition(name, index) if tid in names else None, now)
            partitions.append({"topic": name, "partition": index, **row})
        out.append({
            "group_id": gid, "type": "share", "state": state,
            "generation": group.epoch if group is not None else 0,
            "assignment_epoch": group.assignment_epoch if group is not None else 0,
            "members": [{"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                         "member_epoch": m.epoch, "rack_id": m.rack_id, "subscribed": list(m.subscribed),
                         "assignment": _topic_partitions(m.assignment, names)} for m in members],
            "share_partitions": partitions,
            "offsets": [],
        })
    return out


def _topic_partitions(assigned: dict, names: dict) -> list[str]:
    return [f"{names.get(tid, tid)}-{p}" for tid, ps in assigned.items() for p in sorted(ps)]


def overview(broker) -> dict[str, Any]:
    first = broker.listeners[0] if broker.listeners else None
    return {
        "bootstrap": broker.advertised[first.name].address() if first is not None else None,
        "cluster_id": _cluster(broker).cluster_id,
        "node_id": _cluster(broker).node_id,
        "started_ms": broker.started_ms,
    }
