"""kafkajs (Node) adapter: each call runs ``compat_tests/node/driver.js`` once, JSON over stdin/stdout.

kafkajs and its codec packages are pinned in ``compat_tests/node/package.json`` and installed
by ``scripts/install-test-deps.sh`` (``npm ci``). What kafkajs cannot do raises Unsupported:
a header with a null value (its record encoder throws), header orders that a JS object cannot
hold (interleaved duplicate keys, integer-like keys). kafkajs's consumer needs a group, so
``consume`` drives kafkajs's own Cluster/Fetch/ListOffsets code on assigned partitions
(see driver.js).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import Client, Msg, ProduceResult, Unsupported, driver_consume_start, refuse_unusable_produce_options

NODE_DIR = Path(__file__).resolve().parent.parent / "node"
DRIVER = NODE_DIR / "driver.js"
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")


class KafkajsError(RuntimeError):
    """kafkajs reported an error; ``error`` is its JSON form (name, message, type, code, ...)."""

    def __init__(self, op: str, error: dict[str, Any]):
        self.error = error
        super().__init__(f"kafkajs {op}: {error.get('name')}: {error.get('message')}"
                         + (f" (type={error['type']})" if error.get("type") else ""))

    @property
    def type(self) -> str | None:
        return self.error.get("type")


def node_modules_dir() -> Path | None:
    """Where kafkajs is installed: compat_tests/node/node_modules or $KAFKALITE_DEPS_DIR/node/node_modules."""
    candidates = [NODE_DIR / "node_modules"]
    deps = os.environ.get("KAFKALITE_DEPS_DIR")
    if deps:
        candidates.append(Path(deps) / "node" / "node_modules")
    candidates.append(NODE_DIR.parent.parent / ".deps" / "node" / "node_modules")
    for c in candidates:
        if (c / "kafkajs" / "package.json").is_file():
            return c
    return None


def available() -> str | None:
    """None when node and kafkajs are there, else the reason they are not."""
    if shutil.which("node") is None:
        return "node is not installed"
    if node_modules_dir() is None:
        return "kafkajs is not installed (run scripts/install-test-deps.sh)"
    return None


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode("ascii")


def _unb64(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


class KafkajsMissing(RuntimeError):
    """node or the npm packages are not installed: an error, never a skip."""


def run_driver(request: dict[str, Any], timeout_s: float) -> Any:
    """Run one driver command; returns its result, raises Unsupported or KafkajsError."""
    reason = available()
    if reason:
        raise KafkajsMissing(f"kafkajs: {reason}")
    env = dict(os.environ)
    modules = node_modules_dir()
    if modules is not None and modules != NODE_DIR / "node_modules":
        env["NODE_PATH"] = os.pathsep.join(p for p in (str(modules), env.get("NODE_PATH", "")) if p)
    request = {"timeoutMs": int(timeout_s * 1000), **request}
    try:
        proc = subprocess.run(
            ["node", str(DRIVER)],
            input=json.dumps(request).encode(),
            capture_output=True,
            timeout=timeout_s + 10,
            cwd=NODE_DIR,
            env=env,
        )
    except subprocess.TimeoutExpired as e:
        raise KafkajsError(request.get("cmd", "?"), {"name": "Timeout", "message": f"node driver hung: {e}"}) from None
    lines = proc.stdout.decode(errors="replace").strip().splitlines()
    try:
        reply = json.loads(lines[-1])
    except (IndexError, ValueError):
        raise RuntimeError(
            f"kafkajs driver exited {proc.returncode} without a reply; stderr:\n{proc.stderr.decode(errors='replace')[-4000:]}"
        ) from None
    if reply.get("ok"):
        return reply["result"]
    error = reply.get("error") or {}
    if error.get("unsupported"):
        raise Unsupported(error.get("message", "kafkajs"))
    raise KafkajsError(request.get("op") or request.get("cmd", "?"), error)


@dataclass
class KafkajsClient(Client):
    name: str = field(default="kafkajs", init=False)
    request_timeout_s: float = 15.0
    # kafkajs's ssl and sasl options: {"ssl": {"ca": PATH, "cert": PATH, "key": PATH}, "sasl": {...}}
    security: dict[str, Any] = field(default_factory=dict)

    def admin(self, op: str, *args: Any, timeout_s: float | None = None) -> Any:
        """Call ``kafka.admin()[op](*args)`` in kafkajs; args and result as JSON."""
        return run_driver(
            {"cmd": "admin", "bootstrap": self.bootstrap, "op": op, "args": list(args), "security": self.security},
            timeout_s or self.request_timeout_s,
        )

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        spec: dict[str, Any] = {"topic": topic, "numPartitions": partitions, "replicationFactor": 1}
        if configs:
            spec["configEntries"] = [{"name": k, "value": str(v)} for k, v in configs.items()]
        created = self.admin("createTopics", {"topics": [spec], "waitForLeaders": True})
        if created is False:
            raise KafkajsError("createTopics", {"name": "TopicExists", "message": f"topic {topic} was not created (exists?)"})

    def produce(
        self,
        topic: str,
        msgs: list[Msg],
        *,
        partition: int | None = None,
        compression: str = "none",
        idempotent: bool = False,
        acks: str = "all",
    ) -> list[ProduceResult]:
        refuse_unusable_produce_options("kafkajs", compression, idempotent, acks, compressions=COMPRESSIONS)
        request = {
            "cmd": "produce",
            "bootstrap": self.bootstrap,
            "security": self.security,
            "topic": topic,
            "partition": partition,
            "compression": compression,
            "idempotent": idempotent,
            "acks": str(acks),
            "messages": [
                {
                    "key": _b64(m.key),
                    "value": _b64(m.value),
                    "headers": [[k, _b64(v)] for k, v in m.headers],
                    "timestamp": m.timestamp_ms,
                    "partition": m.partition,
                }
                for m in msgs
            ],
        }
        result = run_driver(request, self.request_timeout_s)
        return [ProduceResult(partition=r["partition"], offset=r["offset"]) for r in result]

    def consume(
        self,
        topic: str,
        partitions: list[int],
        count: int,
        *,
        start: str | int = "earliest",
        isolation: str = "read_uncommitted",
        timeout_s: float = 30.0,
    ) -> list[Msg]:
        start_arg = driver_consume_start(start, isolation)
        request = {
            "cmd": "consume",
            "bootstrap": self.bootstrap,
            "security": self.security,
            "topic": topic,
            "partitions": list(partitions),
            "count": count,
            "start": start_arg,
            "isolation": isolation,
            "timeoutMs": int(timeout_s * 1000),
        }
        result = run_driver(request, timeout_s)
        return [
            Msg(
                value=_unb64(r["value"]),
                key=_unb64(r["key"]),
                headers=tuple((k, _unb64(v)) for k, v in r["headers"]),
                timestamp_ms=r["timestamp"],
                partition=r["partition"],
                offset=r["offset"],
            )
            for r in result
        ]


Adapter = KafkajsClient
