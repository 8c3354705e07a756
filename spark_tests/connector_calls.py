"""Runs spark_tests/java/SparkConnectorCalls.java: the Kafka client calls of Spark's Kafka
connector, made with kafka-clients 4.4.0 the way the connector makes them.

The program is compiled by the compatibility suite's Java helper
(``compat_tests.clients.java.build``: javac at test time, a cache keyed by the sources, the jars
and the JDK, a class-data-sharing archive), over the suite's sources plus this folder's, so it
shares their JSON protocol helpers (Json, KafkaDriver.emit/props/describe). One JVM serves every
call of a test session (``--serve``); each call builds and closes its own clients.
"""

from __future__ import annotations

import atexit
import base64
import json
import queue
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from compat_tests.clients import java as java_client
from compat_tests.clients.java import JVM_FLAGS, JavaError

SPARK_SOURCES = Path(__file__).resolve().parent / "java"
MAIN_CLASS = "SparkConnectorCalls"


def build():
    """The compat suite's Java build (classpath, CDS archive) with SparkConnectorCalls in the driver jar."""
    return java_client.build(SPARK_SOURCES)


class _Server:
    """One ``SparkConnectorCalls --serve`` JVM answering requests in turn (a JVM start and the
    loading of kafka-clients cost about a second; a request about a tenth of that)."""

    def __init__(self):
        b = build()
        cmd = ["java", *JVM_FLAGS]
        if b.archive is not None:
            cmd.append(f"-XX:SharedArchiveFile={b.archive}")
        cmd += ["-cp", b.classpath, MAIN_CLASS, "--serve"]
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def stderr_tail(self) -> str:
        self.stderr.seek(0)
        text = self.stderr.read().decode(errors="replace")
        self.stderr.seek(0, 2)
        return "\n".join(line for line in text.splitlines() if "SLF4J" not in line)[-4000:]

    def request(self, request: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        out: list[dict[str, Any]] = []
        while True:
            try:
                raw = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.close()
                raise TimeoutError(f"{MAIN_CLASS} {request['cmd']} did not answer in {timeout}s; got {out[-5:]!r}; "
                                   f"stderr: {self.stderr_tail()}") from None
            if raw is None:
                self.close()
                raise JavaError("ExitStatus", f"{MAIN_CLASS} exited with {self.proc.returncode} during "
                                f"{request['cmd']}", stderr=self.stderr_tail())
            if not raw.startswith(b"{"):
                continue
            line = json.loads(raw)
            if line == {"end": True}:
                return out
            out.append(line)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


_server: _Server | None = None
_lock = threading.Lock()


def _close_server() -> None:
    if _server is not None:
        _server.close()


atexit.register(_close_server)


def call(bootstrap: str, cmd: str, config: dict[str, Any] | None = None, timeout: float = 90.0,
         **args: Any) -> list[dict[str, Any]]:
    """Runs one command of SparkConnectorCalls; returns its JSON lines, raises JavaError on failure.

    ``config`` holds the connector's ``kafka.*`` options without the prefix (``isolation.level``...).
    """
    global _server
    with _lock:
        if _server is None or not _server.alive():
            _server = _Server()
        lines = _server.request({"cmd": cmd, "bootstrap": bootstrap, "config": config or {}, **args}, timeout)
    for line in lines:
        if "error" in line and len(line) == 1:
            raise JavaError.from_json(line["error"], _server.stderr_tail() if _server else "")
    return lines


# ---- the commands, with Python values ----

def b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


def unb64(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


def write(bootstrap: str, rows: list[dict[str, Any]], topic: str | None = None,
          config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """KafkaWriteTask over rows {"topic", "key", "value", "headers": [(name, bytes|None)] | None,
    "partition", "timestamp"} (bytes values); returns [{"topic", "partition", "offset", "timestamp"}]."""
    wire = []
    for r in rows:
        w = {"topic": r.get("topic"), "key": b64(r.get("key")), "value": b64(r.get("value")),
             "partition": r.get("partition"), "timestamp": r.get("timestamp"),
             "headers": None if r.get("headers") is None else [[k, b64(v)] for k, v in r["headers"]]}
        wire.append(w)
    lines = call(bootstrap, "write", config, topic=topic, rows=wire)
    assert lines[-1] == {"done": True}, lines[-1:]
    return lines[:-1]


def offsets(bootstrap: str, strategy: dict[str, Any], queries: list[Any],
            isolation: str = "read_uncommitted") -> tuple[list[str], list[dict[str, int]]]:
    """KafkaOffsetReaderAdmin: (["topic:partition", ...], [{"topic:partition": offset} per query]).

    A query is "earliest", "latest", {"timestamp": ms} or {"timestamps": {"topic:partition": ms}}.
    """
    lines = call(bootstrap, "offsets", {"isolation.level": isolation}, strategy=strategy, queries=queries)
    partitions = lines[0]["partitions"]
    results = [{tp: v["offset"] for tp, v in line["offsets"].items()} for line in lines[1:]]
    return partitions, results


def offsets_with_timestamps(bootstrap: str, strategy: dict[str, Any], queries: list[Any],
                            isolation: str = "read_uncommitted") -> list[dict[str, tuple[int, int]]]:
    """As offsets(), each answer as (offset, timestamp)."""
    lines = call(bootstrap, "offsets", {"isolation.level": isolation}, strategy=strategy, queries=queries)
    return [{tp: (v["offset"], v["timestamp"]) for tp, v in line["offsets"].items()} for line in lines[1:]]


def read(bootstrap: str, ranges: list[tuple[str, int, int, int]], isolation: str = "read_uncommitted",
         poll_timeout_ms: int = 10000) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """KafkaDataConsumer.get over (topic, partition, from, until) ranges: (records, polls per range).

    Records are dicts {"topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value",
    "headers": [(name, bytes|None)]} with bytes decoded.
    """
    lines = call(bootstrap, "read", {"isolation.level": isolation}, poll_timeout_ms=poll_timeout_ms,
                 ranges=[{"topic": t, "partition": p, "from": f, "until": u} for t, p, f, u in ranges])
    records, polls = [], []
    for line in lines:
        if "range" in line:
            polls.append(line["polls"])
        else:
            line["key"] = unb64(line["key"])
            line["value"] = unb64(line["value"])
            line["headers"] = [(k, unb64(v)) for k, v in line["headers"]]
            records.append(line)
    return records, polls


def producers(bootstrap: str, partitions: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Admin.describeProducers: {"topic:partition": [{"producer_id", "producer_epoch", "last_sequence", ...}]}."""
    return call(bootstrap, "producers", partitions=partitions)[0]["producers"]
