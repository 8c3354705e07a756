"""The offline checker of a queue history, after the analyses of Jepsen's Kafka workload
(``jepsen.tests.kafka``): our own Python, the same definitions.

A history is a list of operations (dicts, one JSON line each, see history.py). A process runs one
operation at a time: an ``invoke`` then its completion, ``ok``, ``fail`` (it certainly did not
take effect) or ``info`` (indeterminate). ``f`` is ``txn`` / ``poll`` / ``send`` (a list of
micro-operations), ``assign`` / ``subscribe`` (a list of keys) or ``fault`` (the fault schedule).
Micro-operations are invoked as ``["send", k, v]`` and ``["poll"]`` and complete as
``["send", k, [offset, v]]`` (offset None when unknown) and ``["poll", {k: [[offset, v], ...]}]``.
A key is one topic-partition, a value is unique in the whole history. A transaction with
``"abort": true`` completes ``ok`` once it was aborted on purpose: its writes are as aborted as
those of a failed one. ``isolation`` says how the operation's consumer reads
(``read_committed`` / ``read_uncommitted``); ``rebalance_log`` lists the keys whose assignment
changed while the operation ran. An ``assign`` keeps the positions of the keys it keeps (as
KafkaConsumer.assign does) unless it says ``"seek_to_beginning": true``.

Version orders: each key's values in offset order, gaps (transaction markers) ignored; the
*index* of a value is its rank. The full order holds every value seen anywhere (polls and sends,
aborted values included); the committed order holds the values read by read_committed polls and
those of acknowledged commits. A read_committed poll is checked against the committed order, a
read_uncommitted one against the full order.

Anomalies (each a list of cases naming the operations, ``index`` of the history):

- ``G1a`` aborted read: a read_committed poll returned a value whose transaction failed or
  was aborted.
- ``precommitted-read``: a read_committed poll returned a value its own transaction wrote.
- ``phantom-read``: a poll returned a value that no operation sent.
- ``inconsistent-offsets``: one offset of a key holds two values.
- ``duplicate``: one value at two offsets of a key.
- ``lost-write``: an acknowledged (or provably committed) write that nobody read although a
  value after it in the committed order of its key was read.
- ``unseen``: an acknowledged write that no poll ever returned, the final reads included (and
  not already a lost write).
- ``poll-skip`` / ``nonmonotonic-poll``: two successive polls of one process (no assign,
  subscribe or rebalance of that key in between, nor during either of them) that jumped over
  values of the key, or went back (or repeated a value).
- ``int-poll-skip`` / ``int-nonmonotonic-poll``: the same within one poll operation.
- ``nonmonotonic-send``: a process' later send to a key sits before its earlier one.
- ``int-nonmonotonic-send``: the same within one transaction.

Allowed, reported but not failures, because Kafka allows them:

- ``int-send-skip``: other producers' records between two sends of one transaction.
- ``G1b`` intermediate read: a read_committed poll's last read of a key is a value its writer
  followed with another write to that key (the poll saw part of a transaction's writes there).
  Kafka's last stable offset is one boundary per partition: when a committed transaction's
  records are interleaved with those of one still open, the records before the open one's first
  offset are readable and the rest are not until it ends. Seen on kafkalite and on Kafka.
- G0 (write cycles), which is not computed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

Op = dict[str, Any]

ALLOWED = frozenset({"int-send-skip", "G1b"})
KINDS = ("G1a", "G1b", "precommitted-read", "phantom-read", "inconsistent-offsets", "duplicate", "lost-write",
         "unseen", "poll-skip", "nonmonotonic-poll", "int-poll-skip", "int-nonmonotonic-poll",
         "nonmonotonic-send", "int-nonmonotonic-send", "int-send-skip")


def normalize(op: Op) -> Op:
    """Keys of poll results come back from JSON as strings; make them ints again."""
    value = op.get("value")
    if op.get("f") in ("txn", "poll", "send") and isinstance(value, list):
        mops = []
        for mop in value:
            if mop and mop[0] == "poll" and len(mop) > 1 and isinstance(mop[1], dict):
                mop = ["poll", {int(k): [list(p) for p in pairs] for k, pairs in mop[1].items()}]
            elif mop and mop[0] == "send":
                mop = ["send", int(mop[1]), list(mop[2]) if isinstance(mop[2], list) else mop[2]]
            mops.append(mop)
        op = {**op, "value": mops}
    elif op.get("f") in ("assign", "subscribe") and isinstance(value, list):
        op = {**op, "value": [int(k) for k in value]}
    return op


def op_reads(op: Op) -> dict[int, list[tuple[int | None, Any]]]:
    """Key -> the (offset, value) pairs a completed operation polled, in order."""
    out: dict[int, list[tuple[int | None, Any]]] = defaultdict(list)
    if op.get("type") == "invoke":
        return out
    for mop in op.get("value") or ():
        if mop[0] == "poll" and len(mop) > 1 and isinstance(mop[1], dict):
            for k, pairs in mop[1].items():
                out[k].extend((o, v) for o, v in pairs)
    return out


def op_writes(op: Op) -> dict[int, list[tuple[int | None, Any]]]:
    """Key -> the (offset, value) pairs an operation sent, in order (offset None if unknown)."""
    out: dict[int, list[tuple[int | None, Any]]] = defaultdict(list)
    for mop in op.get("value") or ():
        if mop[0] == "send":
            k, ov = mop[1], mop[2]
            if isinstance(ov, list):
                out[k].append((ov[0], ov[1]))
            else:
                out[k].append((None, ov))
    return out


def committed_reader(op: Op) -> bool:
    return op.get("isolation", "read_committed") == "read_committed"


@dataclass
class VersionOrder:
    """One key's values in offset order (gaps ignored)."""

    by_index: list[Any] = field(default_factory=list)
    by_value: dict[Any, int] = field(default_factory=dict)

    @classmethod
    def of(cls, offsets: dict[int, set]) -> "VersionOrder":
        vo = cls()
        for offset in sorted(offsets):
            for v in sorted(offsets[offset], key=repr):
                vo.by_value.setdefault(v, len(vo.by_index))
            vo.by_index.append(min(offsets[offset], key=repr))
        return vo


@dataclass
class Result:
    anomalies: dict[str, list[dict[str, Any]]]
    allowed: dict[str, list[dict[str, Any]]]
    stats: dict[str, int]

    @property
    def valid(self) -> bool:
        return not self.anomalies


def each(ops: Iterable[Op], pairs_of: Callable[[Op], dict[int, list[tuple[int | None, Any]]]]) \
        -> Iterator[tuple[Op, int, int | None, Any]]:
    """(operation, key, offset, value) for every pair the operations read or sent (``pairs_of``:
    op_reads or op_writes), in order."""
    for op in ops:
        for k, pairs in pairs_of(op).items():
            for o, v in pairs:
                yield op, k, o, v


def completions(history: Iterable[Op]) -> list[Op]:
    return [op for op in history if op.get("type") in ("ok", "fail", "info")]


def check(history: list[Op]) -> Result:
    history = [normalize(op) for op in history]
    done = [op for op in completions(history) if op.get("f") in ("txn", "poll", "send")]
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)

    # Writers and their fate.
    writer_of: dict[tuple[int, Any], Op] = {}
    for op, k, _, v in each(done, op_writes):
        writer_of[(k, v)] = op

    def aborted(w: Op) -> bool:
        return w["type"] == "fail" or (w["type"] == "ok" and bool(w.get("abort")))

    def acknowledged(w: Op) -> bool:
        return w["type"] == "ok" and not w.get("abort")

    reads = [op for op in done if op["type"] == "ok" and op_reads(op)]
    committed_reads = [op for op in reads if committed_reader(op)]
    # An indeterminate writer of which a read_committed poll saw one value committed.
    seen_committed: set[int] = set()
    for _, k, _, v in each(committed_reads, op_reads):
        w = writer_of.get((k, v))
        if w is not None:
            seen_committed.add(id(w))

    def must_have_committed(w: Op) -> bool:
        return acknowledged(w) or (w["type"] == "info" and id(w) in seen_committed)

    # Offsets -> values, per key, from every source; and the committed subset.
    full: dict[int, dict[int, set]] = defaultdict(lambda: defaultdict(set))
    committed: dict[int, dict[int, set]] = defaultdict(lambda: defaultdict(set))
    where: dict[tuple[int, int], list[int]] = defaultdict(list)  # (k, offset) -> op indexes
    sent = [(op, k, o, v, must_have_committed(op)) for op, k, o, v in each(done, op_writes)
            if op["type"] in ("ok", "info")]
    read = [(op, k, o, v, committed_reader(op)) for op, k, o, v in each(reads, op_reads)]
    for op, k, o, v, is_committed in sent + read:
        if o is None:
            continue
        full[k][o].add(v)
        where[(k, o)].append(op["index"])
        if is_committed:
            committed[k][o].add(v)

    for k, offsets in full.items():
        by_value: dict[Any, list[int]] = defaultdict(list)
        for o, vs in sorted(offsets.items()):
            if len(vs) > 1:
                found["inconsistent-offsets"].append({"key": k, "offset": o, "values": sorted(vs, key=repr),
                                                      "ops": sorted(set(where[(k, o)]))})
            for v in vs:
                by_value[v].append(o)
        for v, os_ in by_value.items():
            if len(os_) > 1:
                found["duplicate"].append({"key": k, "value": v, "offsets": os_,
                                           "ops": sorted({i for o in os_ for i in where[(k, o)]})})

    full_vo = {k: VersionOrder.of(offs) for k, offs in full.items()}
    committed_vo = {k: VersionOrder.of(offs) for k, offs in committed.items()}

    def order(op: Op, k: int) -> VersionOrder:
        return (committed_vo if committed_reader(op) else full_vo).get(k) or VersionOrder()

    # Reads of values that should not be visible.
    for op in reads:
        for k, pairs in op_reads(op).items():
            for o, v in pairs:
                w = writer_of.get((k, v))
                if w is None:
                    found["phantom-read"].append({"key": k, "value": v, "offset": o, "ops": [op["index"]]})
                    continue
                if not committed_reader(op):
                    continue
                if w is op:
                    found["precommitted-read"].append({"key": k, "value": v, "offset": o, "ops": [op["index"]]})
                elif aborted(w):
                    found["G1a"].append({"key": k, "value": v, "offset": o, "writer": w["index"],
                                         "ops": [w["index"], op["index"]]})
            if committed_reader(op) and pairs:
                last = pairs[-1][1]
                w = writer_of.get((k, last))
                if w is not None and w is not op and not aborted(w):
                    sent = [v for _, v in op_writes(w).get(k, [])]
                    if last in sent and sent.index(last) < len(sent) - 1:
                        found["G1b"].append({"key": k, "value": last, "writer": w["index"],
                                             "unread": sent[sent.index(last) + 1:], "ops": [w["index"], op["index"]]})

    # Lost and unseen writes.
    read_values: dict[int, set] = defaultdict(set)
    reader_of: dict[tuple[int, Any], int] = {}
    for op, k, _, v in each(reads, op_reads):
        read_values[k].add(v)
        reader_of.setdefault((k, v), op["index"])
    lost: set[tuple[int, Any]] = set()
    for k, vo in committed_vo.items():
        read_idx = [vo.by_value[v] for v in read_values[k] if v in vo.by_value]
        if not read_idx:
            continue
        bound = max(read_idx)
        for i in range(bound + 1):
            v = vo.by_index[i]
            w = writer_of.get((k, v))
            if v not in read_values[k] and w is not None and must_have_committed(w):
                lost.add((k, v))
                found["lost-write"].append({"key": k, "value": v, "index": i, "max_read_index": bound,
                                            "max_read": vo.by_index[bound], "writer": w["index"],
                                            "ops": [w["index"], reader_of.get((k, vo.by_index[bound]), -1)]})
    for (k, v), w in sorted(writer_of.items(), key=lambda kv: kv[1]["index"]):
        if acknowledged(w) and v not in read_values[k] and (k, v) not in lost:
            found["unseen"].append({"key": k, "value": v, "writer": w["index"], "ops": [w["index"]]})

    def step(k: int, vo: VersionOrder, v1: Any, v2: Any, ops: list[int], skip: str | None, back: str) -> None:
        """Two successive values of key k: a jump over values of its order is ``skip`` (None: allowed
        and not listed), a step back or a repeat is ``back``; a value outside the order is neither."""
        i1, i2 = vo.by_value.get(v1), vo.by_value.get(v2)
        if i1 is None or i2 is None:
            return
        delta = i2 - i1
        if delta > 1 and skip is not None:
            found[skip].append({"key": k, "values": [v1, v2], "delta": delta, "skipped": vo.by_index[i1 + 1:i2],
                                "ops": ops})
        elif delta < 1:
            found[back].append({"key": k, "values": [v1, v2], "delta": delta, "ops": ops})

    # Within one operation.
    for op in done:
        if op["type"] != "ok":
            continue
        rebalanced = {k for ev in op.get("rebalance_log") or () for k in ev.get("keys", ())}
        for k, pairs in op_reads(op).items():
            if k in rebalanced:
                continue
            vo = order(op, k)
            for (_, v1), (_, v2) in zip(pairs, pairs[1:]):
                step(k, vo, v1, v2, [op["index"]], "int-poll-skip", "int-nonmonotonic-poll")
    for op in done:
        if op["type"] not in ("ok", "info"):
            continue
        for k, pairs in op_writes(op).items():
            vo = full_vo.get(k) or VersionOrder()
            for (_, v1), (_, v2) in zip(pairs, pairs[1:]):
                step(k, vo, v1, v2, [op["index"]], "int-send-skip", "int-nonmonotonic-send")

    # Across the operations of one process.
    by_process: dict[Any, list[Op]] = defaultdict(list)
    for op in completions(history):
        by_process[op.get("process")].append(op)
    for ops in by_process.values():
        last_read: dict[int, Op] = {}
        last_send: dict[int, Op] = {}
        for op in ops:
            f = op.get("f")
            rebalanced = {k for ev in op.get("rebalance_log") or () for k in ev.get("keys", ())}
            for k in rebalanced:
                last_read.pop(k, None)
            if f in ("assign", "subscribe"):
                if op["type"] in ("ok", "info"):
                    keep = set() if op.get("seek_to_beginning") else set(op.get("value") or ())
                    last_read = {k: o for k, o in last_read.items() if k in keep}
                    last_send = {k: o for k, o in last_send.items() if k in keep}
                continue
            if f not in ("txn", "poll", "send"):
                continue
            if op["type"] == "ok":
                for k, pairs in op_reads(op).items():
                    prev = last_read.get(k)
                    if prev is not None and pairs:
                        step(k, order(op, k), op_reads(prev)[k][-1][1], pairs[0][1], [prev["index"], op["index"]],
                             "poll-skip", "nonmonotonic-poll")
                    if pairs and k not in rebalanced:  # where in the operation the rebalance fell is unknown
                        last_read[k] = op
            if op["type"] in ("ok", "info"):
                for k, pairs in op_writes(op).items():
                    prev = last_send.get(k)
                    if prev is not None and pairs:
                        step(k, full_vo.get(k) or VersionOrder(), op_writes(prev)[k][-1][1], pairs[0][1],
                             [prev["index"], op["index"]], None, "nonmonotonic-send")
                    if pairs:
                        last_send[k] = op

    stats = {
        "ops": len(done),
        "ok": sum(op["type"] == "ok" for op in done),
        "fail": sum(op["type"] == "fail" for op in done),
        "info": sum(op["type"] == "info" for op in done),
        "acknowledged_writes": sum(1 for w in writer_of.values() if acknowledged(w)),
        "reads": sum(len(p) for op in reads for p in op_reads(op).values()),
        "keys": len(full),
    }
    anomalies = {k: v for k, v in found.items() if v and k not in ALLOWED}
    allowed = {k: v for k, v in found.items() if v and k in ALLOWED}
    return Result(anomalies, allowed, stats)


def excerpt(history: list[Op], case: dict[str, Any], around: int = 0, limit: int = 12) -> list[Op]:
    """The operations a case names (invocations and completions), plus ``around`` neighbours."""
    wanted = set(case.get("ops", ()))
    by_index = {op.get("index"): op for op in history}
    # Each completion's invocation: the process' previous invoke.
    last_invoke: dict[Any, Op] = {}
    invoke_of: dict[int, Op] = {}
    for op in history:
        if op.get("type") == "invoke":
            last_invoke[op.get("process")] = op
        elif op.get("index") in wanted and op.get("process") in last_invoke:
            invoke_of[op["index"]] = last_invoke[op.get("process")]
    picked: set[int] = set()
    for i in wanted:
        for j in range(i - around, i + around + 1):
            if j in by_index:
                picked.add(j)
        if i in invoke_of:
            picked.add(invoke_of[i]["index"])
    return [by_index[i] for i in sorted(picked)][:limit]


def report(history: list[Op], result: Result, seed: Any = None, per_kind: int = 3) -> str:
    """A readable account of the anomalies: the seed, then each kind with its first cases and the
    history lines that show them."""
    import json

    lines = []
    head = f"seed {seed}: " if seed is not None else ""
    if result.valid:
        return f"{head}no anomalies ({result.stats})"
    lines.append(f"{head}anomalies: " + ", ".join(f"{k} x{len(v)}" for k, v in result.anomalies.items()))
    for kind, cases in result.anomalies.items():
        for case in cases[:per_kind]:
            lines.append(f"  {kind}: " + json.dumps({k: v for k, v in case.items() if k != 'ops'}, default=str))
            for op in excerpt(history, case):
                lines.append("      " + json.dumps(op, default=str, separators=(",", ":"))[:400])
    return "\n".join(lines)


# --- the consume-transform-produce workload (ctp.py) -------------------------------------------


def check_ctp(history: list[Op]) -> Result:
    """The history of a consume-transform-produce run: workers in one group read the input topic
    and write each record ``[in_partition, in_offset, value]`` to the same partition of the output
    topic in transactions that also commit the group's offsets. Operations: each transaction of a
    worker process, ``f`` ``ctp``, ``value`` its records ``[[partition, offset, value, output
    offset], ...]``, completing ``ok`` (committed), ``fail`` (certainly not: aborted, or killed
    before it asked to commit) or ``info`` (the commit's outcome unknown); and the final reads of
    the process "final": ``input`` (``{partition: [[offset, value], ...]}``), ``output`` (read
    committed, ``{partition: [[offset, in_partition, in_offset, value], ...]}``) and ``offsets``
    (the group's committed offsets, ``{partition: offset}``).

    Exactly once, record by record:

    - ``phantom-output``: an output record that names no input record (or another value).
    - ``duplicate-output``: an input record in the committed output twice.
    - ``lost-input``: an input record below its partition's committed offset, not in the output.
    - ``output-beyond-offsets``: an input record at or past the committed offset in the output
      (the output and the offsets did not commit together).
    - ``aborted-output``: a record of a transaction that did not commit, read committed.
    - ``lost-commit``: a record of a committed transaction not in the committed output there.
    - ``partial-commit``: a transaction of unknown outcome of which some records are in the
      committed output and some are not.
    - ``nonmonotonic-output``: in an output partition, an input record after a later one of the
      same input partition.
    """
    history = list(history)
    finals = {op["f"]: op["value"] for op in history if op.get("process") == "final" and op.get("type") == "ok"}
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    inputs: dict[tuple[int, int], Any] = {(int(p), o): v for p, pairs in finals.get("input", {}).items()
                                          for o, v in pairs}
    outputs: dict[tuple[int, int], tuple[int, int, Any]] = {}
    seen: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for p, rows in finals.get("output", {}).items():
        last: dict[int, int] = {}
        for o, in_p, in_o, v in rows:
            outputs[(int(p), o)] = (in_p, in_o, v)
            seen[(in_p, in_o)].append((int(p), o))
            if inputs.get((in_p, in_o), object()) != v:
                found["phantom-output"].append({"output": [int(p), o], "input": [in_p, in_o], "value": v})
            if in_p in last and in_o <= last[in_p]:
                found["nonmonotonic-output"].append({"output": [int(p), o], "input": [in_p, in_o],
                                                     "after_input_offset": last[in_p]})
            last[in_p] = max(in_o, last.get(in_p, in_o))
    for (in_p, in_o), where in seen.items():
        if len(where) > 1:
            found["duplicate-output"].append({"input": [in_p, in_o], "outputs": [list(w) for w in where]})
    committed = {int(p): o for p, o in finals.get("offsets", {}).items()}
    for (p, o), v in sorted(inputs.items()):
        below = o < committed.get(p, 0)
        if below and (p, o) not in seen:
            found["lost-input"].append({"input": [p, o], "value": v, "committed_offset": committed.get(p, 0)})
        elif not below and (p, o) in seen:
            found["output-beyond-offsets"].append({"input": [p, o], "value": v, "committed_offset": committed.get(p),
                                                   "outputs": [list(w) for w in seen[(p, o)]]})
    txns = [op for op in history if op.get("f") == "ctp" and op.get("type") in ("ok", "fail", "info")]
    for op in txns:
        present = [outputs.get((p, out)) == (p, o, v) for p, o, v, out in op["value"]]
        if op["type"] == "fail" and any(present):
            found["aborted-output"].append({"txn": op["index"], "records": [r for r, x in zip(op["value"], present) if x],
                                            "ops": [op["index"]]})
        elif op["type"] == "ok" and not all(present):
            found["lost-commit"].append({"txn": op["index"], "records": [r for r, x in zip(op["value"], present) if not x],
                                         "ops": [op["index"]]})
        elif op["type"] == "info" and any(present) and not all(present):
            found["partial-commit"].append({"txn": op["index"], "ops": [op["index"]]})
    stats = {
        "ops": len(txns),
        "ok": sum(op["type"] == "ok" for op in txns),
        "fail": sum(op["type"] == "fail" for op in txns),
        "info": sum(op["type"] == "info" for op in txns),
        "acknowledged_writes": sum(len(op["value"]) for op in txns if op["type"] == "ok"),
        "reads": len(outputs),
        "inputs": len(inputs),
    }
    return Result({k: v for k, v in found.items() if v}, {}, stats)
