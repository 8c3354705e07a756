"""Transactions through kafka-clients 4.4.0 (compat_tests/java/TxnDriver.java), compiled and
launched with the Java driver's build (compat_tests.clients.java.build)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from compat_tests.clients.java import JVM_FLAGS, JavaError, build

# What this client surfaces on Apache Kafka 4.4 (and kafkalite) for the fenced producer's next
# write, and for a commit after the broker aborted the transaction for its timeout.
FENCED_ERRORS = {"InvalidProducerEpochException"}
TIMEOUT_ERRORS = {"InvalidTxnStateException"}


def command(bootstrap: str, cmd: str, config: dict | None = None) -> list[str]:
    b = build()
    out = ["java", *JVM_FLAGS]
    if b.archive is not None:
        out.append(f"-XX:SharedArchiveFile={b.archive}")
    return out + ["-cp", b.classpath, "TxnDriver"]


def request(bootstrap: str, cmd: str, config: dict | None = None, **args: Any) -> bytes:
    return json.dumps({"cmd": cmd, "bootstrap": bootstrap, "config": config or {}, **args}).encode()


def run(bootstrap: str, cmd: str, timeout: float = 120.0, config: dict | None = None, **args: Any) -> list[dict]:
    proc = subprocess.run(command(bootstrap, cmd), input=request(bootstrap, cmd, config, **args),
                          capture_output=True, timeout=timeout)
    lines = [json.loads(l) for l in proc.stdout.decode().splitlines() if l.strip().startswith("{")]
    stderr = "\n".join(l for l in proc.stderr.decode(errors="replace").splitlines() if "SLF4J" not in l)[-3000:]
    for line in lines:
        if "error" in line and len(line) == 1:
            raise JavaError.from_json(line["error"], stderr)
    if proc.returncode != 0:
        raise JavaError("ExitStatus", f"java exited with {proc.returncode}", stderr=stderr)
    return lines


def run_plan(bootstrap: str, transactional_id: str, txns: list[dict]) -> None:
    run(bootstrap, "plan", transactional_id=transactional_id, txns=txns)


def fence(bootstrap: str, transactional_id: str, topic: str) -> str:
    return run(bootstrap, "fence", transactional_id=transactional_id, topic=topic)[-1]["error_name"]


def time_out(bootstrap: str, transactional_id: str, topic: str, timeout_ms: int, until: str) -> str:
    return run(bootstrap, "time_out", transactional_id=transactional_id, topic=topic, timeout_ms=timeout_ms,
               until=until)[-1]["error_name"]


def copy(bootstrap: str, transactional_id: str, group: str, source: str, sink: str, count: int,
         timeout_s: float = 60.0) -> int:
    lines = run(bootstrap, "copy", timeout=timeout_s + 60, transactional_id=transactional_id, group=group,
                source=source, sink=sink, count=count, timeout_ms=int(timeout_s * 1000))
    return lines[-1]["copied"]


def admin(bootstrap: str, transactional_ids: list[str], topic: str, partitions: list[int]) -> dict:
    out: dict = {}
    for line in run(bootstrap, "admin", transactional_ids=transactional_ids, topic=topic, partitions=partitions):
        out.update(line)
    return out
