"""A test's report of what the broker saw (the `test-report` control's answer) as text for a
terminal: the pytest plugin attaches it to a failing test (``--kafkalite-report``).

    requests (the test's, newest last): client id, API and version, topics, the error answered
    topics: per partition its offsets and its last records (key, value, transaction)
    groups: type, state, generation, members with their assignment, committed offsets and lag
    transactions: those the test used and any still open

Standard library only, like kafkalite.controls.
"""

from __future__ import annotations

import json
from typing import Any

VALUE_WIDTH = 60


def _bytes(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):  # {"base64": ...}
        text = "base64:" + value.get("base64", "")
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= VALUE_WIDTH else text[:VALUE_WIDTH - 3] + "..."


def _requests(report: dict[str, Any]) -> list[str]:
    entries = report["requests"]
    seen = report["requests_seen"]
    head = f"requests: {seen}" + (f" (the newest {len(entries)} below)" if len(entries) < seen else "")
    lines = [head]
    for e in entries:
        topics = ",".join(f"{t}{sorted(set(ps)) if ps else ''}" for t, ps in (e.get("topics") or {}).items())
        ids = " ".join(f"{k}={e[k]}" for k in ("group_id", "transactional_id") if e.get(k))
        error = e.get("error")
        ms = e.get("response_ms")
        lines.append(f"  #{e['seq']:<6} {e.get('client_id') or '-':<24} {e['api']} v{e['version']}"
                     + (f" {topics}" if topics else "") + (f" {ids}" if ids else "")
                     + (f" -> {error}" if error not in (None, "NONE") else "")
                     + (f" ({ms:.1f} ms)" if isinstance(ms, (int, float)) and ms >= 100 else ""))
    return lines


def _topics(report: dict[str, Any]) -> list[str]:
    lines = []
    for topic in report["topics"]:
        if not topic["exists"]:
            lines.append(f"  {topic['topic']}: does not exist")
            continue
        for p in topic["partitions"]:
            lines.append(f"  {topic['topic']}-{p['partition']}: log start {p['log_start_offset']}, "
                         f"LSO {p['last_stable_offset']}, HW {p['high_watermark']}")
            for r in p["last_records"]:
                txn = f" [{r['transaction']}]" if r["transaction"] else ""
                headers = "".join(f" {h['key']}={_bytes(h['value'])}" for h in r["headers"])
                lines.append(f"      @{r['offset']} key={_bytes(r['key'])} value={_bytes(r['value'])}"
                             f"{headers}{txn}")
    return ["topics:", *lines] if lines else ["topics: none named by the test's requests"]


def _groups(report: dict[str, Any]) -> list[str]:
    lines = []
    for g in report["groups"]:
        lines.append(f"  {g['group_id']}: {g['type']} {g['state']}, generation {g.get('generation')}, "
                     f"{len(g['members'])} member(s)")
        for m in g["members"]:
            held = m.get("assignment") or m.get("active") or []
            lines.append(f"      {m.get('client_id')} {m['member_id']}: {', '.join(held) or 'nothing assigned'}")
        for o in g.get("offsets") or []:
            pending = f", pending {o['pending_offset']}" if o.get("pending_offset") is not None else ""
            lines.append(f"      {o['topic']}-{o['partition']}: committed {o['committed_offset']}, "
                         f"HW {o['high_watermark']}, lag {o['lag']}{pending}")
    return ["groups:", *lines] if lines else ["groups: none named by the test's requests"]


def _transactions(report: dict[str, Any]) -> list[str]:
    lines = [f"  {t['transactional_id']}: {t['state']}{' (OPEN)' if t['open'] else ''}, producer "
             f"{t['producer_id']}/{t['producer_epoch']}, partitions {', '.join(t['partitions']) or '-'}"
             for t in report["transactions"]]
    return ["transactions:", *lines] if lines else ["transactions: none open, none used"]


def render(report: dict[str, Any]) -> str:
    """The `test-report` control's answer as lines of text."""
    return "\n".join([*_requests(report), *_topics(report), *_groups(report), *_transactions(report)]) + "\n"
