"""The Go client families (franz-go, IBM sarama): one program, ``compat_tests/go/`` (godriver).

``godriver CLIENT`` reads one JSON request on stdin and answers one JSON line, like the kafkajs
driver (GoClient for produce/consume, GoAdmin for the admin tests, compat_tests/txn/go_txn.py); ``godriver CLIENT member CONFIG`` is a long-lived consumer-group member speaking
compat_tests/groups/members.py's line protocol. Modules are pinned by compat_tests/go/go.mod
and go.sum and come from the Go module proxy into ``.cache/go/mod`` (a second build is offline);
the binary is built once per source hash into ``.deps/bin/godriver-<hash>`` (by
scripts/install-test-deps.sh, or here on first use). A missing Go toolchain is an error.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .admin import Admin, BrokerError, ConfigValue
from .base import Client, Msg, ProduceResult, Unsupported, driver_consume_start, refuse_unusable_produce_options

REPO = Path(__file__).resolve().parents[2]
GO_DIR = REPO / "compat_tests" / "go"
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
_build_lock = threading.Lock()


class GoDriverMissing(RuntimeError):
    """The Go toolchain or the driver's modules are not there: an error, never a skip."""


class GoClientError(RuntimeError):
    """The client reported an error; ``code`` is Kafka's error name when it surfaced one."""

    def __init__(self, client: str, op: str, error: dict[str, Any]):
        self.error = error
        self.code: str | None = error.get("code")
        super().__init__(f"{client} {op}: {error.get('name')}: {error.get('message')}"
                         + (f" (code={self.code})" if self.code else ""))


def deps_dir() -> Path:
    return Path(os.environ.get("KAFKALITE_DEPS_DIR") or REPO / ".deps")


def go_env() -> dict[str, str]:
    cache = REPO / ".cache" / "go"
    env = dict(os.environ)
    env.update(GOMODCACHE=str(cache / "mod"), GOCACHE=str(cache / "build"), GOPATH=str(cache),
               GOFLAGS="-modcacherw -mod=readonly", CGO_ENABLED="0")
    return env


def source_hash() -> str:
    h = hashlib.sha256()
    for p in sorted([*GO_DIR.glob("*.go"), GO_DIR / "go.mod", GO_DIR / "go.sum"]):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def build() -> Path:
    """The driver binary for the current sources, built if it is not there yet."""
    binary = deps_dir() / "bin" / f"godriver-{source_hash()}"
    if binary.is_file():
        return binary
    with _build_lock:
        if binary.is_file():
            return binary
        if shutil.which("go") is None:
            raise GoDriverMissing("go is not installed (the Go clients need it to build compat_tests/go)")
        binary.parent.mkdir(parents=True, exist_ok=True)
        tmp = binary.with_suffix(f".tmp{os.getpid()}")
        proc = subprocess.run(["go", "build", "-o", str(tmp), "."], cwd=GO_DIR, env=go_env(),
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise GoDriverMissing(f"go build of compat_tests/go failed:\n{proc.stderr[-4000:]}")
        tmp.replace(binary)
    return binary


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode("ascii")


def _unb64(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


def run_driver(client: str, request: dict[str, Any], timeout_s: float) -> Any:
    """One driver command; returns its result, raises Unsupported or GoClientError."""
    binary = build()
    request = {"timeoutMs": int(timeout_s * 1000), **request}
    try:
        proc = subprocess.run([str(binary), client], input=json.dumps(request).encode(), capture_output=True,
                              timeout=timeout_s + 30, cwd=GO_DIR)
    except subprocess.TimeoutExpired as e:
        raise GoClientError(client, request.get("cmd", "?"), {"name": "Timeout", "message": f"godriver hung: {e}"}) \
            from None
    lines = [line for line in proc.stdout.decode(errors="replace").splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"godriver {client} exited {proc.returncode} without a reply; stderr:\n"
                           f"{proc.stderr.decode(errors='replace')[-4000:]}")
    reply = json.loads(lines[-1])
    if reply.get("ok"):
        return reply["result"]
    error = reply.get("error") or {}
    if error.get("unsupported"):
        raise Unsupported(error.get("message", client))
    raise GoClientError(client, request.get("cmd", "?"), error)


@dataclass
class GoClient(Client):
    """Adapter over godriver; subclasses name the client family."""

    name: str = field(default="go", init=False)
    request_timeout_s: float = 30.0
    # {"ca": PEM path, "mechanism": "SCRAM-SHA-256", "user": ..., "password": ...} (franz-go only)
    security: dict[str, Any] | None = None

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        run_driver(self.name, {"cmd": "create_topic", "bootstrap": self.bootstrap, "topic": topic,
                               "num_partitions": partitions, "configs": configs or {}, "security": self.security},
                   self.request_timeout_s)

    def produce(self, topic: str, msgs: list[Msg], *, partition: int | None = None, compression: str = "none",
                idempotent: bool = False, acks: str = "all") -> list[ProduceResult]:
        refuse_unusable_produce_options(self.name, compression, idempotent, acks, compressions=COMPRESSIONS)
        request = {
            "cmd": "produce", "bootstrap": self.bootstrap, "security": self.security, "topic": topic,
            "partition": partition,
            "compression": compression, "idempotent": idempotent, "acks": str(acks),
            "messages": [{"key": _b64(m.key), "value": _b64(m.value), "headers": [[k, _b64(v)] for k, v in m.headers],
                          "timestamp": m.timestamp_ms, "partition": m.partition} for m in msgs],
        }
        result = run_driver(self.name, request, self.request_timeout_s)
        return [ProduceResult(partition=r["partition"], offset=r["offset"]) for r in result]

    def consume(self, topic: str, partitions: list[int], count: int, *, start: str | int = "earliest",
                isolation: str = "read_uncommitted", timeout_s: float = 30.0) -> list[Msg]:
        start_arg = driver_consume_start(start, isolation)
        request = {"cmd": "consume", "bootstrap": self.bootstrap, "security": self.security, "topic": topic,
                   "partitions": list(partitions),
                   "count": count, "start": start_arg, "isolation": isolation}
        result = run_driver(self.name, request, timeout_s)
        return [Msg(value=_unb64(r["value"]), key=_unb64(r["key"]),
                    headers=tuple((k, _unb64(v)) for k, v in r["headers"]), timestamp_ms=r["timestamp"],
                    partition=r["partition"], offset=r["offset"]) for r in result]


def member_command(client: str, config: dict[str, Any]) -> list[str]:
    """The command line of a consumer-group member of `client` (franz or sarama)."""
    return [str(build()), client, "member", json.dumps(config)]


class GoAdmin(Admin):
    """compat_tests.clients.admin.Admin through godriver's admin command; subclasses name the
    client (franz, sarama). Broker errors come back as BrokerError with Kafka's name."""

    name = "go"

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def _op(self, op: str, **args: Any) -> Any:
        try:
            return run_driver(self.name, {"cmd": "admin", "bootstrap": self.bootstrap, "op": op, "args": args}, 30.0)
        except GoClientError as e:
            if e.code:
                raise BrokerError(e.code, str(e)) from None
            raise

    def create_topic(self, name, partitions=1, configs=None, validate_only=False, replication_factor=None):
        return self._op("create_topic", name=name, partitions=partitions, configs=configs or {},
                        validate_only=validate_only, replication_factor=replication_factor)

    def delete_topics(self, names):
        self._op("delete_topics", names=list(names))

    def delete_topics_by_id(self, topic_ids):
        self._op("delete_topics_by_id", ids=list(topic_ids))

    def list_topics(self):
        return set(self._op("list_topics"))

    def describe_topics(self, names):
        return self._op("describe_topics", names=list(names))

    def describe_topics_by_id(self, topic_ids):
        return self._op("describe_topics_by_id", ids=list(topic_ids))

    def describe_cluster(self):
        return self._op("describe_cluster")

    def describe_configs(self, kind, name):
        return {k: ConfigValue(v["value"], v["source"], v["is_default"], v["read_only"])
                for k, v in self._op("describe_configs", kind=kind, name=name).items()}

    def alter_configs(self, kind, name, configs):
        self._op("alter_configs", kind=kind, name=name, configs=dict(configs))

    def incremental_alter_configs(self, kind, name, ops, validate_only=False):
        self._op("incremental_alter_configs", kind=kind, name=name, ops=[[op.upper(), n, v] for op, n, v in ops],
                 validate_only=validate_only)

    def create_partitions(self, topic, total, validate_only=False):
        self._op("create_partitions", name=topic, total=total, validate_only=validate_only)

    def list_offsets(self, topic, partitions, spec, isolation="read_uncommitted"):
        res = self._op("list_offsets", name=topic, parts=list(partitions), spec=spec, isolation=isolation)
        return {int(p): (o, ts) for p, (o, ts) in res.items()}

    def delete_records(self, topic, before):
        res = self._op("delete_records", name=topic, before={str(p): o for p, o in before.items()})
        return {int(p): low for p, low in res.items()}
