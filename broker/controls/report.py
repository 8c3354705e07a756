"""What the broker saw during one test, for the report of a failing test (the pytest plugin's
`--kafkalite-report`, kafkalite.report renders it for a terminal):

    test-report  after_seq=null, records=5, requests=200: without after_seq, only the request
                 log's current `seq` (the plugin takes it as a test starts); with it, what
                 happened since that request: `requests` (the newest `requests` entries after it),
                 `topics` the requests named (internal ones left out) with each partition's
                 offsets and its last `records` records, `groups` the requests named (state,
                 members, assignment, committed offsets and lag), and `transactions`: those the
                 requests named, and every other one still open

It reads what the broker holds now (records, groups, transactions) and what its request log
kept (bounded by request.log.size: with the log off the report has no requests and names only
the open transactions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..console import state as views
from ..console.records import read, schema_decoder
from ..internal_topics import INTERNAL_TOPICS
from . import ControlError, control, is_int

if TYPE_CHECKING:
    from ..state import Broker


def _topics(broker: "Broker", names: set[str], records: int) -> list[dict[str, Any]]:
    decode = schema_decoder(broker)
    out = []
    for name in sorted(names):
        topic = broker.cluster.topics.get(name)
        if topic is None:
            out.append({"topic": name, "exists": False, "partitions": []})
            continue
        partitions = []
        for part in topic.partitions:
            start = max(part.log_start_offset, part.high_watermark - records)
            last, _next = read(part, start, records, "read_uncommitted", decode)
            partitions.append({"partition": part.index, "log_start_offset": part.log_start_offset,
                               "high_watermark": part.high_watermark,
                               "last_stable_offset": part.last_stable_offset, "last_records": last})
        out.append({"topic": name, "exists": True, "partitions": partitions})
    return out


def _transactions(broker: "Broker", named: set[str]) -> list[dict[str, Any]]:
    core = views.transaction_core(broker)
    if core is None:
        return []
    out = []
    for tid in sorted(core.txns):
        md = core.txns[tid]
        if tid in named or md.has_pending_transaction():
            out.append({"transactional_id": tid, "state": md.state.kafka_name, "open": md.has_pending_transaction(),
                        "producer_id": md.producer_id, "producer_epoch": md.producer_epoch,
                        "partitions": sorted(f"{t}-{p}" for t, p in md.partitions)})
    return out


@control("test-report")
async def test_report(broker: "Broker", *, after_seq=None, records=5, requests=200):
    """What the broker saw since request `after_seq` of its request log: the requests, the topics
    they named with their last records, the groups they named with state and lag, and the
    transactions they named or still open. Without after_seq: only the log's current seq."""
    log = broker.request_log
    seq = log.seq if log is not None else 0
    if after_seq is None:
        return {"seq": seq}
    for name, value in (("after_seq", after_seq), ("records", records), ("requests", requests)):
        if not is_int(value) or value < 0:
            raise ControlError(f"{name} must be a non-negative integer, not {value!r}")
    entries = [e for e in log.entries if e["seq"] > after_seq] if log is not None else []
    topics = {t for e in entries for t in e.get("topics", ()) if t not in INTERNAL_TOPICS}
    group_ids = {e["group_id"] for e in entries if e.get("group_id")}
    transactional_ids = {e["transactional_id"] for e in entries if e.get("transactional_id")}
    return {
        "seq": seq,
        "requests_seen": len(entries),
        "requests": entries[-requests:] if requests else [],
        "topics": _topics(broker, topics, records),
        "groups": [g for g in views.groups(broker) if g["group_id"] in group_ids],
        "transactions": _transactions(broker, transactional_ids),
    }
