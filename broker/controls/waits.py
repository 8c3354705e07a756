"""Controls that wait until the broker reaches a state, answered by the broker, which alone knows
it without a race (a client polling describeConsumerGroups or its own position sees it late,
or not at all on a loaded machine):

    wait-group      group, state="Stable", members=null, assigned=true, timeout_ms=30000: the
                    group (classic, consumer (KIP-848), share or streams) is in `state`, has
                    `members` members when given, and with assigned=true holds an assignment
                    (some member has partitions or tasks); returns the group as the console
                    describes it (members, assignment, generation/epoch, offsets and lag)
    wait-committed  group, topic, partition=null, offset=null, timeout_ms=30000: the group's
                    committed offset of each partition of `topic` (or of `partition`) reaches
                    `offset`, or with none given the partition's high watermark (lag 0; an
                    empty partition needs no commit); transactional offsets count once their
                    transaction commits
    wait-idle       timeout_ms=30000: no open transaction, no group rebalancing, no response
                    held by a delay fault, and the LSO equal to the high watermark on every
                    partition; returns the partitions and groups looked at

The records waits (wait-records, expect-no-records) are in broker.controls.records.

Every wait checks its condition at once and again at each change of the broker's state
(broker.changes: an append or marker, a handled request, a group timer, a clock jump): nothing
polls. When `timeout_ms` (wall time) passes first, the answer is HTTP 408 with
`{"error", "state"}`: the state it last saw, shaped to say why (the group's members and their
assignment, the offsets short of the end, what is still busy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

import trio

from ..clock import CLOCK
from ..console import state as views
from . import ControlError, ControlUnmet, control, is_int

if TYPE_CHECKING:
    from ..state import Broker

T = TypeVar("T")
DEFAULT_TIMEOUT_MS = 30_000
# group states in which a rebalance is under way, by group type
_REBALANCING = {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"}


class Unmet:
    """A condition not met yet, with the state that says why."""

    def __init__(self, error: str, state: Any):
        self.error = error
        self.state = state


async def wait_until(broker: "Broker", check: Callable[[], "T | Unmet"], timeout_ms: int,
                     deadline_ms: int | None = None) -> "T | Unmet":
    """`check()` now and after each change of the broker's state until it returns a result, which
    is returned; the last `Unmet` once `timeout_ms` of wall time have passed, or once the broker's
    clock reaches `deadline_ms` (which follows the manual clock: only its jumps wake the wait)."""
    changes = broker.cluster.changes
    give_up = trio.current_time() + timeout_ms / 1000
    unregister = CLOCK.on_jump(changes.notify)
    try:
        while True:
            result = check()
            if not isinstance(result, Unmet):
                return result
            seconds = give_up - trio.current_time()
            if deadline_ms is not None:
                left_ms = deadline_ms - CLOCK()
                if left_ms <= 0:
                    return result
                if CLOCK.mode == "system":
                    seconds = min(seconds, left_ms / 1000)
            if seconds <= 0:
                return result
            await changes.next_change(seconds)
    finally:
        unregister()


def timeout_arg(timeout_ms: Any) -> int:
    if not is_int(timeout_ms) or timeout_ms < 0:
        raise ControlError(f"timeout_ms must be a non-negative integer, not {timeout_ms!r}")
    return int(timeout_ms)


def timed_out(what: str, unmet: Unmet, timeout_ms: int) -> ControlUnmet:
    return ControlUnmet(408, f"{what} not within {timeout_ms} ms: {unmet.error}", unmet.state)


def string_arg(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ControlError(f"{name} must be a non-empty string, not {value!r}")
    return value


# --- groups -------------------------------------------------------------------------------------

def describe_group(broker: "Broker", group_id: str) -> dict[str, Any] | None:
    """The group as the console describes it, or None when the broker knows no such group."""
    for entry in views.groups(broker):
        if entry["group_id"] == group_id:
            return entry
    return None


def _holdings(member: dict[str, Any]) -> list[str]:
    """The partitions (or a streams member's tasks) a member holds."""
    return list(member.get("assignment") or ()) + list(member.get("active") or ()) + list(
        member.get("standby") or ())


def _group_unmet(described: dict[str, Any] | None, group_id: str, state: str, members: int | None,
                 assigned: bool) -> Unmet | None:
    if described is None or described.get("type") == "none":
        return Unmet(f"the broker knows no group {group_id!r}" if described is None
                     else f"group {group_id!r} has only committed offsets, no members", described)
    if described["state"] != state:
        return Unmet(f"group {group_id!r} is {described['state']}, not {state}", described)
    count = len(described["members"])
    if members is not None and count != members:
        return Unmet(f"group {group_id!r} has {count} member(s), not {members}", described)
    if assigned and not any(_holdings(m) for m in described["members"]):
        return Unmet(f"no member of group {group_id!r} holds partitions or tasks", described)
    return None


@control("wait-group")
async def wait_group(broker: "Broker", *, group, state="Stable", members=None, assigned=True,
                     timeout_ms=DEFAULT_TIMEOUT_MS):
    """Wait until the group (classic, consumer, share or streams) is in `state` (default Stable)
    with `members` members when given and, with assigned=true, a member holding partitions or
    tasks; returns the group described (members, assignment, generation, offsets and lag).
    408 {"error", "state": the group as last seen} after timeout_ms."""
    group_id = string_arg("group", group)
    wanted_state = string_arg("state", state)
    if members is not None and (not is_int(members) or members < 0):
        raise ControlError(f"members must be a non-negative integer, not {members!r}")
    if not isinstance(assigned, bool):
        raise ControlError(f"assigned must be true or false, not {assigned!r}")
    timeout = timeout_arg(timeout_ms)

    def check() -> dict[str, Any] | Unmet:
        described = describe_group(broker, group_id)
        unmet = _group_unmet(described, group_id, wanted_state, members, assigned)
        return unmet if unmet is not None else described  # type: ignore[return-value]

    result = await wait_until(broker, check, timeout)
    if isinstance(result, Unmet):
        raise timed_out(f"group {group_id!r} {wanted_state}", result, timeout)
    return result


# --- committed offsets --------------------------------------------------------------------------

def _committed_unmet(broker: "Broker", group_id: str, topic: str, partition: int | None,
                     offset: int | None) -> Unmet | None:
    found = broker.cluster.topics.get(topic)
    if found is None:
        return Unmet(f"no topic {topic!r}", None)
    parts = [p for p in found.partitions if partition is None or p.index == partition]
    if not parts:
        return Unmet(f"topic {topic!r} has no partition {partition}", None)
    described = describe_group(broker, group_id)
    rows = {(r["topic"], r["partition"]): r for r in (described or {}).get("offsets", ())}
    short = []
    for part in parts:
        target = offset if offset is not None else part.high_watermark
        row = rows.get((topic, part.index))
        committed = row["committed_offset"] if row is not None else None
        if committed is None and offset is None and part.high_watermark <= part.log_start_offset:
            continue  # nothing to read: an empty partition has no lag, and a consumer commits nothing there
        if committed is None or committed < target:
            short.append({"topic": topic, "partition": part.index, "committed_offset": committed,
                          "target": target, "high_watermark": part.high_watermark,
                          "last_stable_offset": part.last_stable_offset,
                          "pending_offset": row["pending_offset"] if row is not None else None})
    if not short:
        return None
    what = "offset " + str(offset) if offset is not None else "the end (lag 0)"
    return Unmet(f"group {group_id!r} has not committed {what} on "
                 + ", ".join(f"{s['topic']}-{s['partition']} (committed {s['committed_offset']}, "
                             f"target {s['target']})" for s in short),
                 {"short": short, "group": described})


@control("wait-committed")
async def wait_committed(broker: "Broker", *, group, topic, partition=None, offset=None,
                         timeout_ms=DEFAULT_TIMEOUT_MS):
    """Wait until the group's committed offsets of `topic` (or of its `partition`) reach `offset`,
    or with none given the high watermark (lag 0); pending transactional offsets count once
    committed. Returns the offsets; 408 with the partitions still short after timeout_ms."""
    group_id = string_arg("group", group)
    topic_name = string_arg("topic", topic)
    for name, value in (("partition", partition), ("offset", offset)):
        if value is not None and (not is_int(value) or value < 0):
            raise ControlError(f"{name} must be a non-negative integer, not {value!r}")
    timeout = timeout_arg(timeout_ms)

    def check() -> list[dict[str, Any]] | Unmet:
        unmet = _committed_unmet(broker, group_id, topic_name, partition, offset)
        if unmet is not None:
            return unmet
        described = describe_group(broker, group_id) or {}
        return [r for r in described.get("offsets", ()) if r["topic"] == topic_name
                and (partition is None or r["partition"] == partition)]

    result = await wait_until(broker, check, timeout)
    if isinstance(result, Unmet):
        raise timed_out(f"group {group_id!r} committed offsets", result, timeout)
    return {"offsets": result}


# --- idle ---------------------------------------------------------------------------------------

def busy(broker: "Broker") -> list[dict[str, Any]]:
    """What keeps the broker from being idle: open transactions, rebalancing groups, responses
    held by a delay fault, partitions whose LSO is short of the high watermark."""
    out: list[dict[str, Any]] = []
    core = views.transaction_core(broker)
    if core is not None:
        for tid, md in sorted(core.txns.items()):
            if md.has_pending_transaction():
                out.append({"what": "transaction", "transactional_id": tid, "state": md.state.kafka_name,
                            "producer_id": md.producer_id, "partitions": sorted(f"{t}-{p}" for t, p in md.partitions)})
    for group in views.groups(broker):
        if group["state"] in _REBALANCING:
            out.append({"what": "group", "group_id": group["group_id"], "type": group["type"],
                        "state": group["state"], "members": group["members"]})
    held = broker.cluster.changes.held_responses
    if held:
        out.append({"what": "held responses", "count": held})
    for part in broker.cluster.all_partitions():
        lso, hw = part.last_stable_offset, part.high_watermark
        if lso != hw:
            out.append({"what": "partition", "topic": part.topic.name, "partition": part.index,
                        "last_stable_offset": lso, "high_watermark": hw,
                        "open_transactions": [p for p in views.producers(broker, part)
                                              if p["current_txn_start_offset"] >= 0]})
    return out


@control("wait-idle")
async def wait_idle(broker: "Broker", *, timeout_ms=DEFAULT_TIMEOUT_MS):
    """Wait until no transaction is open, no group rebalances, no response is held by a delay
    fault and every partition's LSO equals its high watermark. 408 names what is still busy."""
    timeout = timeout_arg(timeout_ms)

    def check() -> dict[str, Any] | Unmet:
        found = busy(broker)
        if found:
            return Unmet("still busy: " + "; ".join(_busy_text(b) for b in found), {"busy": found})
        return {"idle": True, "partitions": sum(1 for _ in broker.cluster.all_partitions())}

    result = await wait_until(broker, check, timeout)
    if isinstance(result, Unmet):
        raise timed_out("idle", result, timeout)
    return result


def _busy_text(item: dict[str, Any]) -> str:
    what = item["what"]
    if what == "transaction":
        return f"transaction {item['transactional_id']!r} {item['state']}"
    if what == "group":
        return f"group {item['group_id']!r} {item['state']}"
    if what == "partition":
        return (f"{item['topic']}-{item['partition']} LSO {item['last_stable_offset']} < "
                f"HW {item['high_watermark']}")
    return f"{item['count']} held response(s)"
