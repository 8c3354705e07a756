"""Records as JSON, read from a partition as a consumer would read them: the `records` and
`wait-records` controls and a failing test's report (broker.controls.waits) read them here.

A record: `partition`, `offset`, `timestamp`, `key` and `value` (UTF-8 text, or
`{"base64": ...}` when the bytes are not UTF-8; null stays null), `headers` (a list of
`{"key", "value"}`, values as above), `producer_id` (-1: none) and `transaction`: null (not
transactional), "committed", "aborted" or "open" (no marker yet). Control batches (transaction
markers) are left out. With the schema registry on, a value carrying a registered schema id also
has `value_schema`, the console's decoding of it.

read_committed stops at the last stable offset and leaves aborted records out, as a consumer with
isolation.level=read_committed does; read_uncommitted reads to the high watermark.

Like broker.console.state, this reads the broker on its trio loop without awaiting, so one call
sees one consistent state.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Callable

from kafkalite.protocol.batch import BatchHeader
from kafkalite.protocol.records import decode_records

if TYPE_CHECKING:
    from kafkalite.storage import AbortedTxn

    from ..partition import Partition

ISOLATIONS = ("read_committed", "read_uncommitted")
Decoder = Callable[[bytes | None], Any]


def transaction_status(h: BatchHeader, base_offset: int, aborted: list["AbortedTxn"],
                       open_first: dict[int, int]) -> str | None:
    """What became of a data batch's transaction: None (not transactional), "aborted" (the
    aborted-transaction index holds it), "open" (its producer's transaction began at or before
    it and has no marker yet) or "committed"."""
    if not h.is_transactional:
        return None
    pid = h.producer_id
    if any(a.producer_id == pid and a.first_offset <= base_offset <= a.last_offset for a in aborted):
        return "aborted"
    if pid in open_first and base_offset >= open_first[pid]:
        return "open"
    return "committed"


def open_transactions(part: "Partition") -> dict[int, int]:
    """producer id -> the first offset of its open transaction on `part`."""
    return {pid: e.current_txn_first_offset for pid, e in part.producers.entries.items()
            if e.current_txn_first_offset is not None}


def bytes_json(data: bytes | None) -> str | dict[str, str] | None:
    """UTF-8 text, {"base64": ...} for other bytes, None for null."""
    if data is None:
        return None
    raw = bytes(data)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}


def read_end(part: "Partition", isolation: str) -> int:
    """Where a consumer of this isolation level stops reading: the LSO or the high watermark."""
    return part.last_stable_offset if isolation == "read_committed" else part.high_watermark


def read(part: "Partition", start: int, limit: int, isolation: str,
         decode_value: Decoder | None = None) -> tuple[list[dict[str, Any]], int]:
    """Up to `limit` records of `part` from offset `start` (the log start at least) to the end
    `isolation` reads to; returns them and the offset to go on from (past every record and
    control batch read, so that a reader going on misses nothing and sees nothing twice)."""
    end = read_end(part, isolation)
    start = max(start, part.log_start_offset)
    if start >= end or limit <= 0:
        return [], start
    aborted = part.aborted_txns(start, end)
    open_first = open_transactions(part)
    out: list[dict[str, Any]] = []
    next_offset = start
    for base, data in part.batches_from(start):
        if base >= end:
            break
        h = BatchHeader(data, 0)
        last = base + h.last_offset_delta
        if h.is_control:
            next_offset = last + 1
            continue
        status = transaction_status(h, base, aborted, open_first)
        if status == "aborted" and isolation == "read_committed":
            next_offset = last + 1
            continue
        for rec in decode_records(data, 0):
            if rec.offset < start or rec.offset >= end:
                continue
            if len(out) >= limit:
                return out, rec.offset
            entry: dict[str, Any] = {
                "partition": part.index, "offset": rec.offset, "timestamp": rec.timestamp,
                "key": bytes_json(rec.key), "value": bytes_json(rec.value),
                "headers": [{"key": k, "value": bytes_json(v)} for k, v in rec.headers],
                "producer_id": h.producer_id, "transaction": status,
            }
            if decode_value is not None:
                decoded = decode_value(rec.value)
                if decoded is not None:
                    entry["value_schema"] = decoded
            out.append(entry)
            next_offset = rec.offset + 1
        next_offset = max(next_offset, min(last + 1, end))
    return out, max(next_offset, start)


def schema_decoder(broker: Any) -> Decoder | None:
    """The schema registry's value decoder when it is on (as the console decodes values)."""
    view = getattr(broker, "schema_registry", None)
    return None if view is None else view.decode
