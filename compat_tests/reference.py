"""The reference Apache Kafka broker: one KRaft node (broker and controller) on loopback.

Every compatibility test must also pass on real Kafka; this starts it from the jars that
``maven_jars kafka-broker`` (scripts/install-test-deps.sh) resolves into .deps/maven/kafka-broker,
so no download happens here and a second start is as quick as the JVM.

    with ReferenceBroker() as kafka:
        bootstrap = kafka.start()        # "127.0.0.1:PORT", once Metadata is answered
        ...
        kafka.kill(); kafka.restart()    # SIGKILL, then the same data dir on the same port

Settings are those of a single-node test cluster: replication factor 1 and min ISR 1 for the
internal topics, no initial rebalance delay, topics auto-created; ``config`` overrides or adds
any broker setting (Kafka names). From a shell:

    python -m compat_tests.reference [--data-dir D] [-c key=value ...]

prints ``kafka-reference ready bootstrap=HOST:PORT`` and runs until SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Mapping

from kafkalite.launcher import terminate

KAFKA_VERSION = "4.4.0"  # scripts/maven/kafka-broker/pom.xml

REPO_ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
JAR_SET = "kafka-broker"
# Kafka's own JVM settings (kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS) with a smaller heap
# (a broker of a test run holds little; Kafka's default is 1 GiB): what a benchmark runs Kafka with.
KAFKA_JVM_OPTS = ("-Xms64m", "-Xmx512m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                  "-Djava.awt.headless=true")
# What a test runs Kafka with: the tests start brokers by the dozen and send them little, so the JIT
# stops at C1 and the collector is the serial one, and Kafka's classes come from a class-data-sharing
# archive (class_archive()). A start then costs a third of the CPU and half the time to the first
# answered Metadata (python -m bench.reference_start).
TEST_JVM_OPTS = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                 "-Djava.awt.headless=true")

# Single-node settings; the listener, controller and log-dir keys are added by start().
DEFAULT_CONFIG: dict[str, str] = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
}

_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def jar_dir() -> Path:
    deps = Path(os.environ.get("KAFKALITE_DEPS_DIR") or REPO_ROOT / ".deps")
    return deps / "maven" / JAR_SET


def _classpath() -> str:
    jars = jar_dir()
    if not (jars / f"kafka_2.13-{KAFKA_VERSION}.jar").is_file():
        raise RuntimeError(f"Apache Kafka {KAFKA_VERSION} jars missing from {jars}: "
                           "run `bash scripts/install-test-deps.sh` (maven_jars kafka-broker)")
    return str(jars / "*")


def class_archive() -> Path:
    """The class-data-sharing archive of Kafka's classes, beside its jars: one per Java binary and
    set of jars (their names, sizes and times), since an archive serves only the JVM and the
    class path that wrote it. The first test broker that stops cleanly writes it
    (-XX:ArchiveClassesAtExit); a JVM that cannot use it starts without it."""
    key = hashlib.sha1(os.path.realpath(_java()).encode())
    for jar in sorted(jar_dir().glob("*.jar")):
        st = jar.stat()
        key.update(f"{jar.name} {st.st_size} {st.st_mtime_ns}".encode())
    return jar_dir() / f"kafka-{key.hexdigest()[:12]}.jsa"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise RuntimeError("no `java` on PATH (Apache Kafka needs Java 17 or newer)")
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _metadata_answered(host: str, port: int) -> bool:
    """One connect + ApiVersions + Metadata; True when the broker answered."""
    import struct

    from bench.wire import WireError, first_metadata

    try:
        first_metadata(host, port)
        return True
    except (OSError, WireError, struct.error):
        return False


class ReferenceBroker:
    """One Apache Kafka node (KRaft, broker and controller), started and stopped from Python."""

    def __init__(self, data_dir: str | os.PathLike | None = None, config: Mapping[str, Any] | None = None,
                 features: Mapping[str, Any] | None = None, listeners: Mapping[str, str] | None = None,
                 scram: list[str] | None = None, advertised: Mapping[str, str] | None = None,
                 jvm_opts: tuple[str, ...] | None = None):
        """``config``: broker settings by Kafka's names, over DEFAULT_CONFIG. ``features``: feature
        levels finalized when the log dir is formatted (``{"transaction.version": 1}``).
        ``listeners``: more client listeners beside PLAINTEXT, name -> security protocol
        (``{"SASL_SSL": "SASL_SSL"}``), each on a free port (``listener_address(name)``); their
        security settings come in ``config`` (``listener.name.sasl_ssl.plain.sasl.jaas.config``,
        ``ssl.keystore.location``, ...). ``scram``: SCRAM users made at format time, each in
        kafka-storage's ``--add-scram`` syntax (``SCRAM-SHA-256=[name=alice,password=secret]``).
        ``advertised``: the ``host:port`` clients are told for some of those listeners (a proxy
        in front of it), name -> address; the others advertise their own. ``jvm_opts``: the JVM's
        settings; by default TEST_JVM_OPTS with Kafka's class archive (KAFKA_JVM_OPTS for a
        benchmark)."""
        self.listeners = {k.upper(): v.upper() for k, v in (listeners or {}).items()}
        self.advertised = {k.upper(): v for k, v in (advertised or {}).items()}
        self.listener_ports: dict[str, int] = {}
        self.scram = list(scram or [])
        self._owned = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="kafka-ref-"))
        self.config = {k: _value(v) for k, v in (config or {}).items()}
        self.features = {k: _value(v) for k, v in (features or {}).items()}
        self.port: int | None = None
        self.controller_port: int | None = None
        self.process: subprocess.Popen | None = None
        self.start_seconds: float | None = None  # Popen to first answered Metadata, last start
        self.jvm_opts = jvm_opts
        self._archive_being_written: Path | None = None

    # --- paths ---
    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def log_path(self) -> Path:
        """The broker's own log (log4j) and the JVM's stdout/stderr."""
        return self.data_dir / "server.log"

    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise RuntimeError("the reference broker has not been started")
        return f"{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def listener_address(self, name: str) -> str:
        """``host:port`` of a listener given in ``listeners`` (or PLAINTEXT)."""
        name = name.upper()
        return self.bootstrap if name == "PLAINTEXT" else f"{HOST}:{self.listener_ports[name]}"

    def log_text(self, tail: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    # --- lifecycle ---
    def _properties(self) -> dict[str, str]:
        props = dict(DEFAULT_CONFIG)
        extra = "".join(f",{name}://{HOST}:{self.listener_ports[name]}" for name in self.listeners)
        advertised = "".join(f",{name}://{self.advertised.get(name, f'{HOST}:{self.listener_ports[name]}')}"
                             for name in self.listeners)
        props.update({
            "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}{extra}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}{advertised}",
            "listener.security.protocol.map": props["listener.security.protocol.map"]
            + "".join(f",{name}:{proto}" for name, proto in self.listeners.items()),
            "controller.quorum.voters": f"{props['node.id']}@{HOST}:{self.controller_port}",
            "log.dirs": str(self.log_dir),
        })
        props.update(self.config)
        return props

    def _write_config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path = self.data_dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self._properties().items()))
        (self.data_dir / "log4j2.properties").write_text(_LOG4J2.format(path=self.log_path))
        return path

    def _command(self, main: str, *args: str) -> list[str]:
        return [_java(), *self._jvm_opts(main), f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
                "-cp", _classpath(), main, *args]

    def _jvm_opts(self, main: str) -> tuple[str, ...]:
        if self.jvm_opts is not None:
            return self.jvm_opts
        archive = class_archive()
        if archive.exists():
            return (*TEST_JVM_OPTS, f"-XX:SharedArchiveFile={archive}")
        if main != "kafka.Kafka":
            return TEST_JVM_OPTS
        # written at the JVM's exit under a name of this broker's own (brokers start side by side
        # in other test processes), then renamed into place by stop()
        self._archive_being_written = archive.with_name(f"{archive.name}.{os.getpid()}.{id(self)}")
        return (*TEST_JVM_OPTS, f"-XX:ArchiveClassesAtExit={self._archive_being_written}")

    def _keep_class_archive(self) -> None:
        """After stop(): the archive the JVM wrote at its exit goes into place; one cut short by
        SIGKILL (a shutdown past its time) is dropped."""
        written, self._archive_being_written = self._archive_being_written, None
        if written is None or not written.exists():
            return
        if self.process is not None and self.process.returncode == -signal.SIGKILL:
            written.unlink(missing_ok=True)
        else:
            os.replace(written, class_archive())

    def _format(self, props: Path) -> None:
        """Format the KRaft log dir once (a restart finds meta.properties and keeps the data).

        kafka-storage is a JVM start (about 1.5 CPU-seconds) before each of the suite's thirty-odd
        Kafka starts, and what it writes depends only on the jars, the features, the SCRAM users
        and the node id, but for meta.properties' random cluster.id and directory.id. So its
        output for those is kept beside the jars (_format_template) and copied, with ids of this
        broker's own. A log dir placed by ``config`` is formatted by kafka-storage itself."""
        if (self.log_dir / "meta.properties").exists():
            return
        if "log.dirs" in self.config or "metadata.log.dir" in self.config:
            self._run_storage_format(props)
            return
        shutil.copytree(self._format_template(), self.log_dir, dirs_exist_ok=True)
        meta = self.log_dir / "meta.properties"
        kept = [line for line in meta.read_text().splitlines() if not line.startswith(("cluster.id=", "directory.id="))]
        meta.write_text("\n".join([*kept, f"cluster.id={_random_id()}", f"directory.id={_random_id()}"]) + "\n")

    def _format_template(self) -> Path:
        """kafka-storage's output for this broker's jars, features, SCRAM users and node id,
        made once (in a folder of its own, renamed into place: other test processes may make
        the same one at the same time)."""
        node_id = self._properties()["node.id"]
        key = hashlib.sha1(f"{class_archive().name} {sorted(self.features.items())} {self.scram} {node_id}".encode())
        template = jar_dir() / "format-templates" / key.hexdigest()[:16]
        if (template / "meta.properties").exists():
            return template
        work = Path(tempfile.mkdtemp(prefix="format-", dir=template.parent.parent))
        try:
            props = dict(self._properties(), **{"log.dirs": str(work / "logs")})
            props_path = work / "server.properties"
            props_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            self._run_storage_format(props_path)
            template.parent.mkdir(exist_ok=True)
            try:
                os.rename(work / "logs", template)
            except OSError:  # another process put the same template in place first
                if not (template / "meta.properties").exists():
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return template

    def _run_storage_format(self, props: Path) -> None:
        cluster_id = _random_id()
        feature_args = [a for k, v in self.features.items() for a in ("--feature", f"{k}={v}")]
        feature_args += [a for entry in self.scram for a in ("--add-scram", entry)]
        # "--cluster-id=ID" in one word: a random id may start with "-", which argparse would
        # take for an option
        out = subprocess.run(self._command("kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                                           "-c", str(props), "--ignore-formatted", *feature_args),
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            last = (out.stderr.strip() or out.stdout.strip() or "no output").splitlines()[-1]
            raise RuntimeError(f"kafka-storage format failed ({out.returncode}): {last}\n{out.stdout}\n{out.stderr}")

    def prepare(self, port: int | None = None) -> list[str]:
        """Choose the ports (``port`` for the client listener, else a free one; kept across
        restarts), write the configuration, format the log dir once; return the command that
        runs the node. Used by start(), and by benchmarks that time the process themselves."""
        if self.port is None:
            self.port = port or free_port()
        if self.controller_port is None:
            self.controller_port = free_port()
        for name in self.listeners:
            if name not in self.listener_ports:
                self.listener_ports[name] = free_port()
        props = self._write_config()
        self._format(props)
        return self._command("kafka.Kafka", str(props))

    def start(self, timeout: float = 90.0) -> str:
        """Start the node and wait until it answers Metadata; return its bootstrap address."""
        if self.process is not None and self.process.poll() is None:
            return self.bootstrap
        command = self.prepare()
        t0 = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=log,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = t0 + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Apache Kafka exited with {self.process.returncode}; log:\n{self.log_text()}")
            if _metadata_answered(HOST, self.port):
                self.start_seconds = time.monotonic() - t0
                return self.bootstrap
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"Apache Kafka did not answer Metadata within {timeout}s; log:\n{self.log_text()}")

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM (Kafka's controlled shutdown) and wait; SIGKILL if it takes longer than timeout."""
        if self.process is not None:
            terminate(self.process, timeout)
            self._keep_class_archive()

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        proc = self.process
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
            self._keep_class_archive()  # drops what the killed JVM had begun

    def restart(self, timeout: float = 90.0) -> str:
        """Stop if running, then start again on the same data dir and the same ports."""
        self.stop()
        return self.start(timeout)

    def close(self) -> None:
        """Stop, and remove the data dir when it was a temporary one."""
        self.stop()
        if self._owned:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "ReferenceBroker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _random_id() -> str:
    """A random Kafka Uuid in its text form (base64url, no padding), as a cluster or directory id."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compat_tests.reference",
                                 description=f"Run Apache Kafka {KAFKA_VERSION} (one KRaft node) on loopback.")
    ap.add_argument("--data-dir", help="keep the data here (default: a temporary dir, removed on exit)")
    ap.add_argument("-c", "--config", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting (Kafka's name), repeatable")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args(argv)
    config = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            ap.error(f"-c wants KEY=VALUE, got {item!r}")
        config[key.strip()] = value.strip()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with ReferenceBroker(args.data_dir, config) as broker:
        try:
            bootstrap = broker.start(args.timeout)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 1
        print(f"kafka-reference ready bootstrap={bootstrap} start_ms={broker.start_seconds * 1000:.0f} "
              f"log={broker.log_path}", flush=True)
        while not stop.is_set() and broker.process.poll() is None:
            stop.wait(0.5)
        if broker.process.poll() is not None:
            print(f"Apache Kafka exited with {broker.process.returncode}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main())
