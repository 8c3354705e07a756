"""A topic's records without a client, and waits on them (broker.console.records is the reading
and the record's JSON shape):

    records            topic, partition=null, from_offset=0, max=1000, isolation=read_uncommitted:
                       the records, control batches left out, in partition and offset order
    wait-records       topic, count=1, key=null, value_contains=null, header=null,
                       isolation=read_committed, timeout_ms=30000: waits until `count` records
                       matching every filter given are readable; returns {"records": [...]}
                       (the first `count` that match). 408 {"error", "state"} with the matches so
                       far, the topic's newest records and the transactions holding the LSO back
    expect-no-records  topic, for_ms, key=null, value_contains=null, header=null,
                       isolation=read_uncommitted, timeout_ms=null: 200 when no matching record
                       arrives within `for_ms` of the broker's clock (with the manual clock, time
                       passes only as advance-clock moves it); 409 {"error", "state"} with the
                       records that did, at once. timeout_ms (wall time, default for_ms + 30 s)
                       bounds the wait when the manual clock is not advanced: 408

Filters: `key` is the key's text (exact), `value_contains` a piece of the value's text, `header`
"NAME" (the record has that header) or "NAME=VALUE". A record whose bytes are not UTF-8 matches
`key`/`value_contains` only through its {"base64": ...} form, never as text.

The waits read each partition once, going on from where the previous check stopped, so a check
after a change decodes only the records that change added.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..clock import CLOCK
from ..console.records import ISOLATIONS, read, read_end, schema_decoder
from ..console.state import producers
from . import ControlError, ControlUnmet, control, is_int
from .waits import DEFAULT_TIMEOUT_MS, Unmet, string_arg, timed_out, timeout_arg, wait_until

if TYPE_CHECKING:
    from ..partition import Topic
    from ..state import Broker

MAX_RECORDS = 1000
# records a wait decodes from one partition at one check (it goes on at the next)
_CHUNK = 10_000
# newest records of the topic an unmet wait shows
_NEWEST = 10


def _isolation(value: Any) -> str:
    if value not in ISOLATIONS:
        raise ControlError(f"isolation must be one of {', '.join(ISOLATIONS)}, not {value!r}")
    return str(value)


def _topic(broker: "Broker", name: str) -> "Topic":
    found = broker.cluster.topics.get(name)
    if found is None:
        raise ControlError(f"no topic {name!r}")
    return found


@control("records")
async def records(broker: "Broker", *, topic, partition=None, from_offset=0, max=MAX_RECORDS,
                  isolation="read_uncommitted"):
    """The records of `topic` (or of its `partition`) from `from_offset`, at most `max`, control
    batches left out: partition, offset, timestamp, key, value (UTF-8 text or {"base64"}),
    headers, producer_id and transaction (null, committed, aborted or open).
    isolation=read_committed stops at the LSO and leaves aborted records out."""
    found = _topic(broker, string_arg("topic", topic))
    level = _isolation(isolation)
    for name, value in (("partition", partition), ("from_offset", from_offset), ("max", max)):
        if value is not None and (not is_int(value) or value < 0):
            raise ControlError(f"{name} must be a non-negative integer, not {value!r}")
    parts = [p for p in found.partitions if partition is None or p.index == partition]
    if not parts:
        raise ControlError(f"topic {found.name!r} has no partition {partition}")
    decode = schema_decoder(broker)
    out: list[dict[str, Any]] = []
    for part in parts:
        got, _next = read(part, from_offset, max - len(out), level, decode)
        out.extend(got)
    return out


class RecordFilter:
    """The filters of wait-records and expect-no-records."""

    def __init__(self, key: Any, value_contains: Any, header: Any):
        for name, value in (("key", key), ("value_contains", value_contains), ("header", header)):
            if value is not None and not isinstance(value, str):
                raise ControlError(f"{name} must be a string, not {value!r}")
        self.key = key
        self.value_contains = value_contains
        self.header_name: str | None = None
        self.header_value: str | None = None
        if header is not None:
            name, sep, value = header.partition("=")
            self.header_name = name
            self.header_value = value if sep else None

    def matches(self, record: dict[str, Any]) -> bool:
        if self.key is not None and record["key"] != self.key:
            return False
        if self.value_contains is not None:
            value = record["value"]
            if not isinstance(value, str) or self.value_contains not in value:
                return False
        if self.header_name is not None:
            return any(h["key"] == self.header_name and (self.header_value is None or h["value"] == self.header_value)
                       for h in record["headers"])
        return True

    def describe(self) -> dict[str, Any]:
        header = None if self.header_name is None else (
            self.header_name if self.header_value is None else f"{self.header_name}={self.header_value}")
        return {"key": self.key, "value_contains": self.value_contains, "header": header}


class RecordScan:
    """The matching records of a topic, read on from where the last check stopped."""

    def __init__(self, broker: "Broker", topic: str, wanted: RecordFilter, isolation: str, *, from_end: bool):
        self.broker = broker
        self.topic = topic
        self.wanted = wanted
        self.isolation = isolation
        self.from_end = from_end
        self.decode = schema_decoder(broker)
        # partition -> next offset to read; partitions seen first later start at their log start
        self.positions: dict[int, int] = {}
        self.matched: list[dict[str, Any]] = []
        self._topic_id = None
        topic_now = broker.cluster.topics.get(topic)
        if topic_now is not None:
            self._topic_id = topic_now.topic_id
            if from_end:
                self.positions = {p.index: read_end(p, isolation) for p in topic_now.partitions}

    def scan(self, limit: int) -> bool:
        """Read what arrived since the last scan; whether the topic exists."""
        found = self.broker.cluster.topics.get(self.topic)
        if found is None:
            return False
        if found.topic_id != self._topic_id:  # created (or deleted and created again) meanwhile
            self._topic_id = found.topic_id
            self.positions = {}
        for part in found.partitions:
            start = self.positions.get(part.index, 0)
            got, self.positions[part.index] = read(part, start, _CHUNK, self.isolation, self.decode)
            self.matched.extend(r for r in got if self.wanted.matches(r))
            if len(self.matched) >= limit:
                break
        return True

    def state(self) -> dict[str, Any]:
        """What an unmet wait answers: the matches so far, the topic's partitions with their
        newest records, and the transactions that hold an LSO back."""
        found = self.broker.cluster.topics.get(self.topic)
        partitions = []
        for part in found.partitions if found is not None else ():
            start = max(part.log_start_offset, part.high_watermark - _NEWEST)
            newest, _next = read(part, start, _NEWEST, "read_uncommitted", self.decode)
            partitions.append({
                "partition": part.index, "log_start_offset": part.log_start_offset,
                "high_watermark": part.high_watermark, "last_stable_offset": part.last_stable_offset,
                "newest_records": newest,
                "open_transactions": [p for p in producers(self.broker, part) if p["current_txn_start_offset"] >= 0],
            })
        return {"topic": self.topic, "exists": found is not None, "isolation": self.isolation,
                "filter": self.wanted.describe(), "matched": self.matched[:MAX_RECORDS], "partitions": partitions}


@control("wait-records")
async def wait_records(broker: "Broker", *, topic, count=1, key=None, value_contains=None, header=None,
                       isolation="read_committed", timeout_ms=DEFAULT_TIMEOUT_MS):
    """Wait until `count` records of `topic` matching the filters given (key: the exact key
    text; value_contains: a piece of the value's text; header: NAME or NAME=VALUE) can be read
    at `isolation` (read_committed by default); returns {"records": the first `count`}. 408
    {"error", "state"} after timeout_ms with the matches so far and the topic's newest records."""
    name = string_arg("topic", topic)
    if not is_int(count) or not 1 <= count <= MAX_RECORDS:
        raise ControlError(f"count must be an integer from 1 to {MAX_RECORDS}, not {count!r}")
    scan = RecordScan(broker, name, RecordFilter(key, value_contains, header), _isolation(isolation),
                      from_end=False)
    timeout = timeout_arg(timeout_ms)

    def check() -> list[dict[str, Any]] | Unmet:
        if not scan.scan(count):
            return Unmet(f"no topic {name!r}", scan.state())
        if len(scan.matched) >= count:
            return scan.matched[:count]
        return Unmet(f"{len(scan.matched)} of {count} matching record(s) in {name!r}", None)

    result = await wait_until(broker, check, timeout)
    if isinstance(result, Unmet):
        result.state = scan.state()
        raise timed_out(f"{count} record(s) in {name!r}", result, timeout)
    return {"records": result}


@control("expect-no-records")
async def expect_no_records(broker: "Broker", *, topic, for_ms, key=None, value_contains=None, header=None,
                            isolation="read_uncommitted", timeout_ms=None):
    """200 when no record of `topic` matching the filters arrives within `for_ms` of the broker's
    clock (the manual clock counts only what advance-clock moves it); 409 {"error", "state"} at
    once with the records that did. timeout_ms bounds the wall time (default for_ms + 30 s): 408."""
    name = string_arg("topic", topic)
    if not is_int(for_ms) or for_ms < 0:
        raise ControlError(f"for_ms must be a non-negative integer, not {for_ms!r}")
    timeout = timeout_arg(for_ms + DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms)
    scan = RecordScan(broker, name, RecordFilter(key, value_contains, header), _isolation(isolation),
                      from_end=True)
    started = CLOCK()
    deadline = started + for_ms

    def check() -> list[dict[str, Any]] | Unmet:
        scan.scan(1)
        if scan.matched:
            return scan.matched
        return Unmet("nothing yet", None)

    result = await wait_until(broker, check, timeout, deadline_ms=deadline)
    if not isinstance(result, Unmet):
        raise ControlUnmet(409, f"{len(result)} matching record(s) arrived in {name!r} within {for_ms} ms",
                           scan.state())
    waited = CLOCK() - started
    if waited < for_ms:
        raise ControlUnmet(408, f"the broker's clock moved {waited} of {for_ms} ms within {timeout} ms of wall "
                                f"time (a manual clock moves only with advance-clock)", scan.state())
    return {"records": [], "for_ms": for_ms, "clock_ms": waited}
