"""The Java client (kafka-clients 4.3.0) through one real Java program, compat_tests/java/.

The sources are compiled with javac the first time a test needs them, into a cache directory keyed
by a hash of the sources, the jars and the JDK (``.cache/java/<hash>/``), together with a
class-data-sharing archive that halves JVM start-up. Calls go, as JSON lines, to one driver JVM
per test process that serves them concurrently (see KafkaDriver.java); KAFKALITE_JAVA_ONESHOT=1
starts one JVM per call instead.

The jars come from Maven Central through scripts/install-test-deps.sh (``.deps/maven/java-clients``,
or ``$KAFKALITE_DEPS_DIR/maven/java-clients``; the pom is scripts/maven/java-clients/pom.xml).
"""

from __future__ import annotations

import atexit
import base64
import collections
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import queue
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import start_offset
from .admin import Admin, BrokerError, ConfigValue
from .base import Client, Msg, ProduceResult, Unsupported

REPO = Path(__file__).resolve().parents[2]
SOURCES = REPO / "compat_tests" / "java"
REQUIRED_JARS = ("kafka-clients-4.4.0.jar", "commons-pool2-*.jar", "slf4j-api-*.jar", "lz4-java-*.jar",
                 "snappy-java-*.jar", "zstd-jni-*.jar",
                 # SASL/OAUTHBEARER's unsecured tokens are JSON that kafka-clients parses with Jackson
                 "jackson-databind-*.jar", "jackson-core-*.jar", "jackson-annotations-*.jar")
JVM_FLAGS = ["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss1m", "-Xms32m", "-Xmx768m",
             "-Djava.net.preferIPv4Stack=true"]
# javac's and jar's own JVM, short-lived likewise: C2 compiling javac cost half its CPU (the driver's
# sources: 8.8 CPU-s with Java's defaults, 4.1 with these)
TOOL_JVM_FLAGS = ["-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-J-Xshare:auto"]


class JavaError(Exception):
    """The Java program reported an exception (type is the Java class name)."""

    def __init__(self, type: str, message: str | None, causes: list | None = None, stderr: str = "",
                 code: str | None = None):
        self.type = type
        self.code = code  # Kafka's error name (Errors.forException), UNKNOWN_SERVER_ERROR if none
        self.message = message
        self.causes = causes or []
        self.stderr = stderr
        super().__init__(f"{type}: {message}" + (f"\n{stderr}" if stderr else ""))

    @property
    def simple_type(self) -> str:
        return self.type.rsplit(".", 1)[-1]

    @classmethod
    def from_json(cls, err: dict, stderr: str = "") -> "JavaError":
        return cls(err.get("type", "?"), err.get("message"), err.get("causes"), stderr, err.get("code"))


def deps_dir(jar_set: str = "java-clients") -> Path:
    return Path(os.environ.get("KAFKALITE_DEPS_DIR") or REPO / ".deps") / "maven" / jar_set


def _jars() -> list[Path]:
    d = deps_dir()
    jars = []
    for pattern in REQUIRED_JARS:
        found = sorted(d.glob(pattern))
        if not found:
            raise RuntimeError(f"Java client jar {pattern} not found in {d}; run scripts/install-test-deps.sh")
        jars.append(found[-1])
    return jars


def jar_set(name: str) -> list[Path]:
    """Every jar of the Maven jar set NAME (scripts/maven/NAME/pom.xml), resolved into .deps/maven/NAME."""
    jars = sorted(deps_dir(name).glob("*.jar"))
    if not jars:
        raise RuntimeError(f"no jars in {deps_dir(name)} (the Maven jar set {name}); run scripts/install-test-deps.sh")
    return jars


def _java_version() -> str:
    out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    return out.stderr.strip()


@dataclass
class _Build:
    classpath: str
    archive: Path | None


_builds: dict[tuple[Path, ...], _Build] = {}


def build(*extra_source_dirs: Path, jars: list[Path] | None = None, with_driver: bool = True) -> _Build:
    """Compiles the driver (the .java files of this suite's java/ folder and of any extra
    folders) once per source hash (and per process), with its CDS archive.

    `jars` replaces the Java client's jars (e.g. ``jar_set("kafka-streams")``); with_driver=False
    compiles only the extra folders (a program of their own: no KafkaDriver, so no CDS archive)."""
    key = (*extra_source_dirs, tuple(jars or ()), with_driver)
    if key in _builds:
        return _builds[key]
    if not shutil.which("javac") or not shutil.which("java"):
        raise RuntimeError("java/javac not found on PATH (a JDK 17+ is needed for the Java client tests)")
    jars = _jars() if jars is None else list(jars)
    source_dirs = (Path(SOURCES), *extra_source_dirs) if with_driver else extra_source_dirs
    sources = sorted(p for d in source_dirs for p in d.glob("*.java"))
    h = hashlib.sha256()
    for src in sources:
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    for jar in jars:
        h.update(str(jar).encode() + str(jar.stat().st_size).encode())
    h.update(_java_version().encode())
    cache_root = Path(os.environ.get("KAFKALITE_CACHE_DIR") or REPO / ".cache") / "java"
    cache_root.mkdir(parents=True, exist_ok=True)
    out = cache_root / h.hexdigest()[:16]
    driver_jar = out / "driver.jar"
    archive = out / "driver.jsa"
    classpath = os.pathsep.join([str(driver_jar), *map(str, jars)])
    with open(cache_root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not driver_jar.exists():
            tmp = Path(tempfile.mkdtemp(prefix="build-", dir=cache_root))
            try:
                classes = tmp / "classes"
                res = subprocess.run(
                    ["javac", *TOOL_JVM_FLAGS, "-nowarn", "-encoding", "UTF-8", "-d", str(classes),
                     "-cp", os.pathsep.join(map(str, jars)), *map(str, sources)],
                    capture_output=True, text=True, timeout=300)
                if res.returncode != 0:
                    raise RuntimeError(f"javac failed:\n{res.stdout}\n{res.stderr}")
                subprocess.run(["jar", *TOOL_JVM_FLAGS, "cf", str(tmp / "driver.jar"), "-C", str(classes), "."],
                               check=True, capture_output=True, timeout=120)
                out.mkdir(exist_ok=True)
                os.replace(tmp / "driver.jar", driver_jar)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        if with_driver and not archive.exists():
            # Record the classes a warm-up run loads; later JVMs map them instead of loading them.
            tmp_archive = out / f"driver.jsa.{os.getpid()}"
            subprocess.run(
                ["java", *JVM_FLAGS, f"-XX:ArchiveClassesAtExit={tmp_archive}", "-cp", classpath, "KafkaDriver"],
                input=b'{"cmd": "warmup"}', capture_output=True, timeout=120)
            if tmp_archive.exists():
                os.replace(tmp_archive, archive)
    _builds[key] = _Build(classpath, archive if archive.exists() else None)
    return _builds[key]


def _java_cmd(*args: str) -> list[str]:
    b = build()
    cmd = ["java", *JVM_FLAGS]
    if b.archive is not None:
        cmd.append(f"-XX:SharedArchiveFile={b.archive}")
    return [*cmd, "-cp", b.classpath, "KafkaDriver", *args]


class JvmProcess:
    """A long-lived JVM spoken to over its stdin and stdout; the last lines of its stderr are kept
    for the errors that name it."""

    def __init__(self, cmd: list[str], stderr_lines: int) -> None:
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.stderr: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode(errors="replace").rstrip())

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class _Server(JvmProcess):
    """One long-lived driver JVM ("serve" mode) that runs requests concurrently, so a test pays
    neither JVM start-up nor class loading again. A request that times out takes the JVM down
    (it cannot be cancelled alone); the next request starts a new one."""

    def __init__(self) -> None:
        super().__init__(_java_cmd("serve"), stderr_lines=200)
        self.lock = threading.Lock()
        self.queues: dict[int, queue.Queue] = {}
        self.next_id = 0
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            q = self.queues.get(line.pop("id", None))
            if q is not None:
                q.put(line)
        for q in list(self.queues.values()):
            q.put(None)  # the JVM is gone

    def call(self, request: dict[str, Any], timeout: float) -> tuple[list[dict[str, Any]], int, str]:
        q: queue.Queue = queue.Queue()
        with self.lock:
            self.next_id += 1
            rid = self.next_id
            self.queues[rid] = q
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({**request, "id": rid}).encode() + b"\n")
            self.proc.stdin.flush()
        lines: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    line = q.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    self.kill()
                    raise TimeoutError(f"Java driver {request.get('cmd')} did not finish in {timeout}s; "
                                       f"output so far: {str(lines)[-2000:]}; stderr: {self.stderr_text()}") from None
                if line is None:
                    return lines, -1, self.stderr_text()
                if line.get("end"):
                    return lines, line.get("status", 0), ""
                lines.append(line)
        finally:
            self.queues.pop(rid, None)

    def stderr_text(self) -> str:
        return "\n".join(l for l in self.stderr if not l.startswith("SLF4J"))[-4000:]


_server: _Server | None = None
_server_lock = threading.Lock()


def _get_server() -> _Server:
    global _server
    with _server_lock:
        if _server is None or not _server.alive():
            _server = _Server()
        return _server


@atexit.register
def _stop_server() -> None:
    if _server is not None:
        _server.kill()


def run(request: dict[str, Any], timeout: float = 60.0) -> list[dict[str, Any]]:
    """Runs one driver command; returns its JSON lines. Raises JavaError for a failed command.

    Requests go to the shared driver JVM; KAFKALITE_JAVA_ONESHOT=1 runs one JVM per request.
    """
    if os.environ.get("KAFKALITE_JAVA_ONESHOT"):
        lines, status, stderr = _run_once(request, timeout)
    else:
        lines, status, stderr = _get_server().call(request, timeout)
    for line in lines:
        if "error" in line and len(line) == 1:
            raise JavaError.from_json(line["error"], stderr)
    if status != 0:
        raise JavaError("ExitStatus", f"the Java driver failed (status {status})", stderr=stderr)
    return lines


def _run_once(request: dict[str, Any], timeout: float) -> tuple[list[dict[str, Any]], int, str]:
    try:
        proc = subprocess.run(_java_cmd(), input=json.dumps(request).encode(), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise TimeoutError(
            f"Java driver {request.get('cmd')} did not finish in {timeout}s; "
            f"stdout: {(e.stdout or b'')[-2000:]!r}; stderr: {_stderr(e.stderr)}") from None
    lines = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    return lines, proc.returncode, _stderr(proc.stderr)


def _stderr(raw: bytes | None) -> str:
    text = (raw or b"").decode(errors="replace")
    return "\n".join(line for line in text.splitlines() if not line.startswith("SLF4J"))[-4000:]


def _java_start(start):
    return {str(p): o for p, o in start.items()} if isinstance(start, dict) else start


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


def _unb64(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


@dataclass
class JavaClient(Client):
    """kafka-clients 4.3.0. `config` adds client properties to every call."""

    config: dict[str, Any] = field(default_factory=dict)
    name: str = field(default="java", init=False)

    def _request(self, cmd: str, config: dict[str, Any] | None = None, **args: Any) -> dict[str, Any]:
        return {"cmd": cmd, "bootstrap": self.bootstrap, "config": {**self.config, **(config or {})}, **args}

    # ---- admin ----

    def admin(self, *ops: dict[str, Any], timeout: float = 60.0, raise_errors: bool = True) -> list[Any]:
        """Runs Admin operations in one JVM, in order (see AdminCommand.java for the ops).

        Returns each op's result; with raise_errors=False a failed op's entry is a JavaError.
        """
        lines = run(self._request("admin", {"default.api.timeout.ms": 20000, "request.timeout.ms": 15000},
                                  ops=list(ops)), timeout)
        results: list[Any] = []
        for line in lines:
            if "op" not in line:
                continue
            if "error" in line:
                err = JavaError.from_json(line["error"])
                if raise_errors:
                    raise err
                results.append(err)
            else:
                results.append(line["result"])
        if len(results) != len(ops):
            raise JavaError("Protocol", f"expected {len(ops)} admin results, got {lines!r}")
        return results

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        self.admin({"op": "createTopics", "topics": [{"name": topic, "partitions": partitions, "configs": configs or {}}]})

    # ---- produce / consume ----

    def produce(self, topic, msgs, *, partition=None, compression="none", idempotent=False, acks="all",
                config: dict[str, Any] | None = None, timeout: float = 40.0) -> list[ProduceResult]:
        conf: dict[str, Any] = {
            "acks": acks,
            "compression.type": compression,
            "enable.idempotence": str(bool(idempotent)).lower(),
            "linger.ms": 20,
            "delivery.timeout.ms": int(timeout * 1000),
            "request.timeout.ms": min(15000, int(timeout * 1000) - 100),
        }
        conf.update(config or {})
        records = []
        for m in msgs:
            r: dict[str, Any] = {"key": _b64(m.key), "value": _b64(m.value),
                                 "headers": [[k, _b64(v)] for k, v in m.headers]}
            p = m.partition if m.partition is not None else partition
            if p is not None:
                r["partition"] = p
            if m.timestamp_ms is not None:
                r["timestamp"] = m.timestamp_ms
            records.append(r)
        lines = run(self._request("produce", conf, topic=topic, records=records), timeout + 30)
        results = []
        for line in lines:
            if "done" in line:
                continue
            if "error" in line:
                raise JavaError.from_json(line["error"])
            results.append(ProduceResult(line["partition"], line["offset"]))
        if len(results) != len(msgs):
            raise JavaError("Protocol", f"expected {len(msgs)} produce results, got {len(results)}")
        return results

    def consume(self, topic, partitions, count, *, start="earliest", isolation="read_uncommitted",
                timeout_s=30.0, config: dict[str, Any] | None = None) -> list[Msg]:
        conf = {"isolation.level": isolation, "fetch.max.wait.ms": 200, "request.timeout.ms": 15000,
                "default.api.timeout.ms": 15000}
        conf.update(config or {})
        lines = run(self._request("consume", conf, topic=topic, partitions=list(partitions), count=count,
                                  start=_java_start(start_offset(start)), timeout_ms=int(timeout_s * 1000)),
                    timeout_s + 30)
        msgs = [
            Msg(value=_unb64(l["value"]), key=_unb64(l["key"]),
                headers=tuple((k, _unb64(v)) for k, v in l["headers"]),
                timestamp_ms=l["timestamp"], partition=l["partition"], offset=l["offset"])
            for l in lines if "offset" in l
        ]
        done = next(l for l in lines if "done" in l)
        if not done["done"]:
            raise TimeoutError(f"java consumer got {len(msgs)} of {count} records from {topic} {partitions} "
                               f"in {timeout_s}s (positions {done['positions']}): {msgs[:5]!r}")
        return msgs


class JavaAdmin(Admin):
    """compat_tests.clients.admin.Admin through the Java Admin client (one Admin per call)."""

    name = "java"

    def __init__(self, bootstrap: str, config: dict[str, Any] | None = None):
        self.client = JavaClient(bootstrap, config=dict(config or {}))

    def _one(self, op: str, **args: Any) -> Any:
        (res,) = self.client.admin({"op": op, **args}, raise_errors=False)
        if isinstance(res, JavaError):
            if res.code and res.code not in ("UNKNOWN_SERVER_ERROR", "NONE"):
                raise BrokerError(res.code, f"{res.type}: {res.message}")
            raise res
        return res

    def create_topic(self, name, partitions=1, configs=None, validate_only=False, replication_factor=None):
        res = self._one("createTopics", validate_only=validate_only,
                        topics=[{"name": name, "partitions": partitions, "replication_factor": replication_factor,
                                 "configs": configs or {}}])
        return res[name]

    def delete_topics(self, names):
        self._one("deleteTopics", names=list(names))

    def delete_topics_by_id(self, topic_ids):
        self._one("deleteTopics", topic_ids=list(topic_ids))

    def list_topics(self):
        return set(self._one("listTopics"))

    @staticmethod
    def _topics(res):
        return {name: {"topic_id": d["topic_id"], "partitions": [p["partition"] for p in d["partitions"]],
                       "leaders": [p["leader"] for p in d["partitions"]]} for name, d in res.items()}

    def describe_topics(self, names):
        return self._topics(self._one("describeTopics", names=list(names)))

    def describe_topics_by_id(self, topic_ids):
        return self._topics(self._one("describeTopics", topic_ids=list(topic_ids)))

    def describe_cluster(self):
        res = self._one("describeCluster")
        return {"cluster_id": res["cluster_id"], "controller": res["controller"],
                "nodes": [{"id": n["id"], "host": n["host"], "port": n["port"]} for n in res["nodes"]]}

    def describe_configs(self, kind, name):
        res = self._one("describeConfigs", resources=[{"type": kind, "name": name}])
        return {k: ConfigValue(v["value"], v["source"], v["default"], v["read_only"])
                for k, v in res[f"{kind}:{name}"].items()}

    def alter_configs(self, kind, name, configs):
        raise Unsupported("java: Admin.alterConfigs was removed in kafka-clients 4.0")

    def incremental_alter_configs(self, kind, name, ops, validate_only=False):
        self._one("incrementalAlterConfigs", validate_only=validate_only,
                  resources=[{"type": kind, "name": name,
                              "ops": [{"op": op, "name": n, "value": v} for op, n, v in ops]}])

    def create_partitions(self, topic, total, validate_only=False):
        self._one("createPartitions", topics={topic: total}, validate_only=validate_only)

    def list_offsets(self, topic, partitions, spec, isolation="read_uncommitted"):
        res = self._one("listOffsets", topic=topic, partitions=list(partitions), spec=spec, isolation=isolation)
        return {int(p): (v["offset"], v["timestamp"]) for p, v in res.items()}

    def delete_records(self, topic, before):
        res = self._one("deleteRecords", topic=topic, offsets={str(p): o for p, o in before.items()})
        return {int(p): low for p, low in res.items()}

    def create_acls(self, acls):
        self._one("createAcls", acls=[list(a) for a in acls])

    def describe_acls(self, flt):
        return {tuple(a) for a in self._one("describeAcls", filter=list(flt))}

    def delete_acls(self, filters):
        return {tuple(a) for a in self._one("deleteAcls", filters=[list(f) for f in filters])}
