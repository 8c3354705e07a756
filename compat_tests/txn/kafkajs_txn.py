"""Transactions through kafkajs (compat_tests/node/txn.js; TxnOffsetCommit with the group id,
as kafkajs sends it)."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from compat_tests.clients.kafkajs import KafkajsError, NODE_DIR, available, node_modules_dir

SCRIPT = NODE_DIR / "txn.js"
# What this client surfaces on Apache Kafka 4.4 (and kafkalite) for the fenced producer's next
# write, and for a commit after the broker aborted the transaction for its timeout.
FENCED_ERRORS = {"INVALID_PRODUCER_EPOCH"}
TIMEOUT_ERRORS = {"INVALID_PRODUCER_EPOCH"}


def run(bootstrap: str, cmd: str, timeout: float = 120.0, **args: Any):
    reason = available()
    if reason:
        raise RuntimeError(reason)
    env = dict(os.environ)
    env["NODE_PATH"] = str(node_modules_dir())
    proc = subprocess.run(["node", str(SCRIPT)], input=json.dumps({"cmd": cmd, "bootstrap": bootstrap, **args}).encode(),
                          capture_output=True, timeout=timeout, env=env, cwd=str(NODE_DIR))
    lines = [l for l in proc.stdout.decode().splitlines() if l.startswith("{")]
    if not lines:
        raise RuntimeError(f"txn.js {cmd} printed nothing (exit {proc.returncode}): {proc.stderr.decode()[-3000:]}")
    reply = json.loads(lines[-1])
    if not reply["ok"]:
        raise KafkajsError(cmd, reply["error"])
    return reply["result"]


def run_plan(bootstrap: str, transactional_id: str, txns: list[dict]) -> None:
    run(bootstrap, "plan", transactional_id=transactional_id, txns=txns)


def fence(bootstrap: str, transactional_id: str, topic: str) -> str:
    return run(bootstrap, "fence", transactional_id=transactional_id, topic=topic)


def time_out(bootstrap: str, transactional_id: str, topic: str, timeout_ms: int, until: str) -> str:
    return run(bootstrap, "time_out", transactional_id=transactional_id, topic=topic, timeout_ms=timeout_ms,
               until=until)


def copy(bootstrap: str, transactional_id: str, group: str, source: str, sink: str, count: int,
         timeout_s: float = 60.0) -> int:
    return run(bootstrap, "copy", timeout=timeout_s + 60, transactional_id=transactional_id, group=group,
               source=source, sink=sink, count=count, timeout_ms=int(timeout_s * 1000))
