"""Start a kafkalite broker from Python: ``with kafkalite.running() as broker: broker.bootstrap``.

The broker always runs as its own process (``python -P -m kafkalite``): ``-P`` keeps the working
directory off ``sys.path``, and ``PYTHONPATH`` puts the copy of kafkalite this module was imported
from (a source checkout or site-packages) first, so the child runs the same code as its parent.

    with kafkalite.running(config={"num.partitions": 3}, log_level="DEBUG") as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap})

    # several listeners: one for the host, one advertised under another name
    with kafkalite.running(listeners=["HOST://127.0.0.1:0", "DOCKER://0.0.0.0:0"],
                           advertised_listeners=["DOCKER://host.docker.internal:0"]) as broker:
        broker.listeners["DOCKER"]   # "host.docker.internal:PORT"

    # the web console on a free port (needs the console extra)
    with kafkalite.running(console=0) as broker:
        print(broker.console_url)   # "http://127.0.0.1:PORT/"

    # the test controls (faults, the clock, reset, snapshots, ...; see kafkalite.controls)
    with kafkalite.running(controls=0) as broker:
        broker.controls.advance_clock(ms=60_000)

    # topics, records, group offsets, ACLs and users from a seed file, in place when ready
    with kafkalite.running(seed="fixtures/seed.json") as broker:
        ...

    # SASL_SSL with PLAIN users and a throwaway CA (needs the tls extra: trustme)
    with kafkalite.running(listeners=["SASL_SSL://127.0.0.1:0"], tls_self_signed=True, config={
            "listener.name.sasl_ssl.plain.sasl.jaas.config":
                'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'}) as broker:
        broker.ca_path   # the CA certificate clients trust (ssl.truststore.location, ssl.ca.location)
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence, TypedDict, Unpack

from .controls import ControlFailed, Controls, WaitFailed

__all__ = ["Broker", "BrokerSettings", "running", "start", "broker_command", "READY_PATTERN", "Controls", "ControlFailed",
           "WaitFailed"]

# The one line the broker prints on stdout once every listener accepts connections.
READY_PATTERN = re.compile(r"^kafkalite ready bootstrap=(?P<bootstrap>\S+)")

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent

# Variables of the broker's own CLI that start() decides through its arguments; a value left in
# the caller's environment (say, for a container) must not move a broker started from Python.
_CONTROLLED_ENV = ("KAFKALITE_HOST", "KAFKALITE_PORT", "KAFKALITE_LISTENERS", "KAFKALITE_ADVERTISED_LISTENERS",
                   "KAFKALITE_DATA_DIR", "KAFKALITE_LOG_LEVEL", "KAFKALITE_METRICS_PORT", "KAFKALITE_READY_FILE",
                   "KAFKALITE_CONSOLE", "KAFKALITE_CONTROLS", "KAFKALITE_CLOCK",
                   "KAFKALITE_KAFKA_VERSION", "KAFKALITE_TLS_SELF_SIGNED", "KAFKALITE_SEED")


@dataclass
class Broker:
    """A running broker process."""

    process: subprocess.Popen
    bootstrap: str
    data_dir: Path
    log_path: Path
    # listener name -> advertised "host:port" (from the ready line)
    listeners: dict[str, str] = field(default_factory=dict)
    # node id -> "host:port" of every node on the first listener, when started with nodes > 1
    nodes: dict[int, str] = field(default_factory=dict)
    metrics_url: str | None = None
    console_url: str | None = None
    # the controls endpoint (running(controls=...)), "http://HOST:PORT/"
    controls_url: str | None = None
    # the schema registry (running(schema_registry=...)), "http://HOST:PORT/"
    schema_registry_url: str | None = None
    # the controls' shared secret (running(controls_token=...)); None: $KAFKALITE_CONTROLS_TOKEN or none
    controls_token: str | None = field(default=None, repr=False)
    # the CA certificate of tls_self_signed=True (clients of TLS listeners trust it)
    ca_path: Path | None = None
    _owned_data_dir: bool = field(default=False, repr=False)
    _owned_log: bool = field(default=False, repr=False)

    @property
    def host(self) -> str:
        return self.bootstrap.rsplit(":", 1)[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    @property
    def controls(self) -> Controls:
        """The broker's test controls: ``broker.controls.call("advance-clock", ms=1000)``."""
        if self.controls_url is None:
            raise RuntimeError("this broker was started without controls; start it with controls=0")
        return Controls(self.controls_url, token=self.controls_token)

    # what the broker saw and waits on it: Controls' methods of the same names, which raise
    # WaitFailed (an AssertionError saying what the broker last saw) when the condition is unmet
    def records(self, topic: str, **options: Any) -> list[dict]:
        return self.controls.records(topic, **options)

    def wait_for_records(self, topic: str, count: int = 1, **options: Any) -> list[dict]:
        return self.controls.wait_for_records(topic, count, **options)

    def expect_no_records(self, topic: str, for_ms: int, **options: Any) -> None:
        self.controls.expect_no_records(topic, for_ms, **options)

    def wait_for_group(self, group: str, **options: Any) -> dict:
        return self.controls.wait_for_group(group, **options)

    def wait_for_committed(self, group: str, topic: str, **options: Any) -> list[dict]:
        return self.controls.wait_for_committed(group, topic, **options)

    def wait_idle(self, **options: Any) -> dict:
        return self.controls.wait_idle(**options)

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL, as a crash would: no flush, no clean shutdown."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def stop(self, timeout: float = 10.0) -> None:
        terminate(self.process, timeout)

    def close(self) -> None:
        """Stop the broker and remove the data dir and log file that start() created."""
        self.stop()
        if self._owned_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if self._owned_log:
            with contextlib.suppress(OSError):
                self.log_path.unlink()

    def __enter__(self) -> "Broker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def terminate(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGTERM a process that is still running and wait for it; SIGKILL it after `timeout` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def broker_command(args: Sequence[str] = (), module: str = "kafkalite") -> list[str]:
    """The broker's command line: `module` is `kafkalite`, or a program of the caller's that
    runs the broker through `kafkalite.broker.cli.main(wiring=...)` with some services wired differently."""
    return [sys.executable, "-P", "-m", module, *args]


def _broker_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The broker's environment: ours, plus `extra`, less the variables start() decides."""
    env = dict(os.environ)
    env.update(extra or {})
    for name in _CONTROLLED_ENV:
        env.pop(name, None)
    # Point the child at the copy of our packages this module was imported from
    # (a source checkout or site-packages), ahead of anything else.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p
    )
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _config_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class BrokerSettings(TypedDict, total=False):
    """The broker's settings that :func:`broker_args` turns into command-line arguments, and that
    :func:`start` and :func:`running` take as keywords; a key left out is the broker's default."""

    data_dir: str | os.PathLike | None
    host: str                      # "127.0.0.1"
    port: int                      # 0: a free port
    config: Mapping[str, Any] | None
    listeners: Sequence[str]
    advertised_listeners: Sequence[str]
    log_level: str | None
    metrics_port: int | str | None
    console: int | str | None
    controls: int | str | None
    schema_registry: int | str | None
    clock: str | None
    kafka_version: str | None
    nodes: int | None
    chaos: int | None              # the chaos seed (broker.chaos); None: no chaos
    chaos_profile: str | None      # how often chaos faults hit: gentle, default, harsh
    tls_self_signed: bool
    seed: str | os.PathLike | None
    http_allowed_hosts: Sequence[str]  # Host names the HTTP endpoints answer besides their address
    controls_token: str | None       # the controls' shared secret (given to the broker in its environment)
    extra_args: Sequence[str]


# flag -> the setting given as that flag and its value, when set
_VALUE_FLAGS = {"--data-dir": "data_dir", "--log-level": "log_level", "--metrics-port": "metrics_port",
                "--console": "console", "--controls": "controls", "--schema-registry": "schema_registry",
                "--clock": "clock", "--kafka-version": "kafka_version", "--nodes": "nodes", "--seed": "seed",
                "--chaos": "chaos", "--chaos-profile": "chaos_profile"}


def broker_args(**settings: Unpack[BrokerSettings]) -> list[str]:
    """The command-line arguments for a broker with these settings."""
    args: list[str] = []
    listeners = settings.get("listeners", ())
    if listeners:
        for lis in listeners:
            args += ["--listener", lis]
    else:
        args += ["--host", settings.get("host", "127.0.0.1"), "--port", str(settings.get("port", 0))]
    for adv in settings.get("advertised_listeners", ()):
        args += ["--advertised-listener", adv]
    for key, value in (settings.get("config") or {}).items():
        args += ["-c", f"{key}={_config_value(value)}"]
    for flag, name in _VALUE_FLAGS.items():
        value = settings.get(name)
        if value is not None:
            args += [flag, str(value)]
    if settings.get("tls_self_signed"):
        args.append("--tls-self-signed")
    if settings.get("http_allowed_hosts"):
        args += ["--http-allowed-hosts", ",".join(settings.get("http_allowed_hosts", ()))]
    return args + list(settings.get("extra_args", ()))


def start(
    *,
    log_path: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 20.0,
    module: str = "kafkalite",
    **settings: Unpack[BrokerSettings],
) -> Broker:
    """Start a broker process and wait for its ready line.

    ``config`` maps Kafka broker keys to values (``{"num.partitions": 3}`` becomes
    ``-c num.partitions=3``). ``listeners`` (``["NAME://host:port", ...]``) replaces ``host``/``port``.
    ``env`` adds variables to the broker's environment (which is otherwise this process's).
    The broker's log (stderr) goes to ``log_path``, by default a temporary file. ``console``
    (``[host:]port``, 0 for a free port) serves the web console; its address is ``console_url``.
    ``controls`` (likewise) serves the test controls, reached through ``broker.controls``;
    ``schema_registry`` (likewise) serves Confluent Schema Registry's API at ``schema_registry_url``;
    ``clock="manual"`` starts the broker on a clock that moves only when advanced;
    ``kafka_version="3.9"`` makes it imitate that Kafka release (broker.kafka_versions).
    ``nodes`` serves that many node ids over one copy of the data, each on its own port; ``bootstrap``
    stays one address and ``Broker.nodes`` maps every node id to its address.
    ``module`` is the program run with ``python -P -m`` (see :func:`broker_command`).
    ``tls_self_signed`` makes a throwaway CA and server certificate for TLS listeners; the CA
    certificate's path is ``ca_path``.
    ``seed`` is a seed file (JSON: topics with records, group offsets, ACLs, SCRAM users; see
    ``kafkalite.broker.seed``), in place when the broker is ready.
    ``controls_token`` is a shared secret the controls then ask for (given to the broker in its
    environment; ``broker.controls`` sends it); ``http_allowed_hosts`` are Host names its HTTP
    endpoints answer besides their address and localhost (docs/reachable.md).
    """
    data_dir = settings.get("data_dir")
    owned = data_dir is None
    data_path = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="kafkalite-"))
    data_path.mkdir(parents=True, exist_ok=True)
    owned_log = False
    if log_path is None:
        if owned:
            fd, name = tempfile.mkstemp(prefix="kafkalite-", suffix=".log")
            os.close(fd)
            log_path, owned_log = Path(name), True
        else:
            log_path = data_path / "broker.log"
    log_path = Path(log_path)
    settings["data_dir"] = data_path
    # the token goes in the environment: a command line is readable by every user of the machine
    token = settings.pop("controls_token", None)
    if token is not None:
        env = {**(env or {}), "KAFKALITE_CONTROLS_TOKEN": token}
    args = broker_args(**settings)
    try:
        with open(log_path, "ab") as log_file:
            proc = subprocess.Popen(
                broker_command(args, module),
                stdout=subprocess.PIPE,
                stderr=log_file,
                stdin=subprocess.DEVNULL,
                env=_broker_env(env),
            )
        line = _wait_ready(proc, timeout, log_path)
    except BaseException:
        # what start() made goes with the failure (the error carries the log's end)
        if owned:
            shutil.rmtree(data_path, ignore_errors=True)
        if owned_log:
            with contextlib.suppress(OSError):
                log_path.unlink()
        raise
    info = parse_ready_line(line)
    return Broker(process=proc, bootstrap=info["bootstrap"], data_dir=data_path, log_path=log_path,
                  listeners=info.get("listeners", {}), metrics_url=info.get("metrics"),
                  console_url=info.get("console"), controls_url=info.get("controls"), nodes=info.get("nodes", {}),
                  schema_registry_url=info.get("schema_registry"), controls_token=token,
                  ca_path=Path(info["ca"]) if "ca" in info else None,
                  _owned_data_dir=owned, _owned_log=owned_log)


def parse_ready_line(line: str) -> dict[str, Any]:
    """``kafkalite ready bootstrap=H:P listeners=A://H:P,B://H:P metrics=URL console=URL controls=URL``
    -> a dict."""
    m = READY_PATTERN.match(line)
    if not m:
        raise ValueError(f"not a ready line: {line!r}")
    info: dict[str, Any] = {"bootstrap": m.group("bootstrap")}
    for token in line.split()[2:]:
        key, _, value = token.partition("=")
        if key == "listeners":
            info["listeners"] = dict(item.split("://", 1) for item in value.split(",") if "://" in item)
        elif key == "nodes":
            info["nodes"] = {int(node): addr for node, _, addr in (item.partition("@") for item in value.split(","))}
        elif key in ("metrics", "console", "controls", "ca", "schema_registry"):
            info[key] = value
    return info


def _wait_ready(proc: subprocess.Popen, timeout: float, log_path: Path) -> str:
    found: list[str] = []
    ready = threading.Event()

    def reader() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode(errors="replace").strip()
            if not found and READY_PATTERN.match(line):
                found.append(line)
                ready.set()
        # keeps draining so the child never blocks on a full pipe
        ready.set()

    thread = threading.Thread(target=reader, daemon=True, name=f"kafkalite-{proc.pid}-stdout")
    thread.start()
    ready.wait(timeout)
    if found:
        return found[0]
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    raise RuntimeError(f"kafkalite did not become ready (exit code {proc.returncode}); log:\n{log[-4000:]}")


@contextlib.contextmanager
def running(
    data_dir: str | os.PathLike | None = None,
    port: int = 0,
    host: str = "127.0.0.1",
    extra_args: Sequence[str] = (),
    **kwargs: Any,
) -> Iterator[Broker]:
    """Run a broker for the duration of the block; an ephemeral data dir is removed afterwards.
    Keyword arguments are those of :func:`start` (``config``, ``listeners``, ``log_level``, ...)."""
    broker = start(data_dir=data_dir, host=host, port=port, extra_args=extra_args, **kwargs)
    try:
        yield broker
    finally:
        broker.close()
