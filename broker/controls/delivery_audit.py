"""The delivery audit: which delivery semantics a consume-transform-produce application showed.

    delivery-audit  input_topic, output_topic, [group, match="key", examples=5]

Compares what the application consumed of `input_topic` with what it produced to `output_topic`,
both over committed records (read_committed: aborted and open transactions left out). With
`group`, what it consumed is the input below the group's committed offsets (what it told Kafka it
had processed; a partition without a committed offset was not consumed); without, all the input.
Records are matched by their id: `match` is "key" (the key's text), "header:NAME" (that header's
value) or a JSON path into the value ("$.order.id", "$.items[0]"); a record without one is counted
as unmatched and left out.

Answers the counts (consumed, produced, lost: consumed ids never produced, duplicated: ids produced
more than once, with the extra copies), up to `examples` of each, and the verdict as observed:
"exactly once" (none lost, none duplicated), "at least once" (duplicates only), "at most once"
(losses only) or "none" (both).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..console.records import read
from ..console.state import groups
from . import ControlError, control, is_int
from .records import _topic
from .waits import string_arg

if TYPE_CHECKING:
    from ..partition import Partition

_CHUNK = 10_000
_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")

IdOf = Callable[[dict[str, Any]], "str | None"]


def _json_path(path: str) -> IdOf:
    """The id a JSON path ($.a.b, $.a[0]) picks out of a record's JSON value, as text."""
    steps_text = path[1:]
    steps: list[str | int] = []
    pos = 0
    while pos < len(steps_text):
        m = _PATH_STEP.match(steps_text, pos)
        if m is None:
            raise ControlError(f"match {path!r}: a JSON path is $ then .name or [index] steps")
        steps.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()

    def pick(record: dict[str, Any]) -> str | None:
        value = record["value"]
        if not isinstance(value, str):
            return None
        try:
            node: Any = json.loads(value)
        except ValueError:
            return None
        for step in steps:
            if isinstance(step, int) and isinstance(node, list) and step < len(node):
                node = node[step]
            elif isinstance(step, str) and isinstance(node, dict) and step in node:
                node = node[step]
            else:
                return None
        return node if isinstance(node, str) else json.dumps(node, sort_keys=True)

    return pick


def id_of(match: str) -> IdOf:
    """How a record's id is read: by key, by a header or by a JSON path into its value."""
    if match == "key":
        return lambda record: record["key"] if isinstance(record["key"], str) else None
    if match.startswith("header:") and len(match) > len("header:"):
        name = match[len("header:"):]

        def header(record: dict[str, Any]) -> str | None:
            values = [h["value"] for h in record["headers"] if h["key"] == name]
            return values[0] if values and isinstance(values[0], str) else None

        return header
    if match.startswith("$"):
        return _json_path(match)
    raise ControlError(f"match must be key, header:NAME or a JSON path ($.field), not {match!r}")


def _committed(part: "Partition", end: int | None) -> Iterator[dict[str, Any]]:
    """The committed records of a partition below `end` (None: all)."""
    offset = 0
    while True:
        got, offset_next = read(part, offset, _CHUNK, "read_committed")
        for record in got:
            if end is not None and record["offset"] >= end:
                return
            yield record
        if offset_next <= offset:  # a chunk of aborted batches alone reads no record, yet moves on
            return
        offset = offset_next


def _consumed_ends(broker: Any, group_id: str, topic: str) -> dict[int, int]:
    found = [g for g in groups(broker) if g["group_id"] == group_id]
    if not found:
        raise ControlError(f"the broker knows no group {group_id!r}")
    return {row["partition"]: row["committed_offset"] for row in found[0]["offsets"]
            if row["topic"] == topic and row["committed_offset"] is not None}


def _example(record: dict[str, Any], record_id: str) -> dict[str, Any]:
    return {"id": record_id, "partition": record["partition"], "offset": record["offset"]}


@control("delivery-audit")
async def delivery_audit(broker, *, input_topic, output_topic, group=None, match: str = "key",
                         examples: int = 5):
    """What an application consumed of input_topic against what it produced to output_topic (committed
    records; with `group`, the input below its committed offsets), matched by `match` (key,
    header:NAME or a JSON path into the value): counts and examples of lost and duplicated records,
    and the verdict as observed (exactly once, at least once, at most once or none)."""
    source = _topic(broker, string_arg("input_topic", input_topic))
    sink = _topic(broker, string_arg("output_topic", output_topic))
    if not isinstance(match, str):
        raise ControlError(f"match must be a string, not {match!r}")
    if not is_int(examples) or examples < 0:
        raise ControlError(f"examples must be a non-negative integer, not {examples!r}")
    pick = id_of(match)
    ends = None if group is None else _consumed_ends(broker, string_arg("group", group), source.name)
    consumed: dict[str, dict[str, Any]] = {}
    unmatched = 0
    for part in source.partitions:
        end = None if ends is None else ends.get(part.index, 0)
        for record in _committed(part, end):
            record_id = pick(record)
            if record_id is None:
                unmatched += 1
            else:
                consumed.setdefault(record_id, record)
    produced: Counter[str] = Counter()
    first: dict[str, dict[str, Any]] = {}
    for part in sink.partitions:
        for record in _committed(part, None):
            record_id = pick(record)
            if record_id is None:
                unmatched += 1
                continue
            produced[record_id] += 1
            first.setdefault(record_id, record)
    lost = [i for i in consumed if i not in produced]
    duplicated = [i for i, n in produced.items() if n > 1]
    verdict = {(False, False): "exactly once", (False, True): "at least once",
               (True, False): "at most once", (True, True): "none"}[(bool(lost), bool(duplicated))]
    return {
        "verdict": verdict,
        "consumed": len(consumed), "produced": sum(produced.values()), "unmatched": unmatched,
        "lost": len(lost), "duplicated": len(duplicated),
        "extra_copies": sum(produced[i] - 1 for i in duplicated),
        # produced for input beyond the group's committed offsets (consumed, not yet committed)
        "ahead": sum(1 for i in produced if i not in consumed) if ends is not None else 0,
        "lost_examples": [_example(consumed[i], i) for i in lost[:examples]],
        "duplicated_examples": [{**_example(first[i], i), "copies": produced[i]} for i in duplicated[:examples]],
    }
