"""`kafkalite` / `python -m kafkalite`: start a broker.

Prints one line on stdout once every listener accepts connections:

    kafkalite ready bootstrap=HOST:PORT listeners=NAME://HOST:PORT,... [nodes=ID@HOST:PORT,...] [metrics=http://HOST:PORT/metrics] [console=http://HOST:PORT/] [controls=http://HOST:PORT/] [ca=PATH] [schema_registry=http://HOST:PORT/]

(`bootstrap` is the advertised address of the first listener; `listeners` names every
listener's advertised address, with the real port when 0 was asked for; with --nodes N > 1,
`nodes` names every node's address on the first listener; `ca` is the CA certificate of
--tls-self-signed, which clients of TLS listeners trust.) Logs go to stderr.
Without a data dir the data lives in a temporary directory that is removed on exit. SIGTERM
and Ctrl-C shut down cleanly.

Where settings come from, a later source overriding an earlier one key by key:

    defaults < --config FILE (server.properties) < KAFKALITE_* environment < command line

Every flag has an environment variable: KAFKALITE_HOST, KAFKALITE_PORT, KAFKALITE_LISTENERS,
KAFKALITE_ADVERTISED_LISTENERS, KAFKALITE_DATA_DIR, KAFKALITE_CONFIG, KAFKALITE_LOG_LEVEL,
KAFKALITE_METRICS_PORT, KAFKALITE_CONSOLE, KAFKALITE_CONTROLS, KAFKALITE_CLOCK, KAFKALITE_KAFKA_VERSION,
KAFKALITE_READY_FILE, KAFKALITE_FSYNC, KAFKALITE_NODES, KAFKALITE_TLS_SELF_SIGNED, KAFKALITE_SEED; and every broker key has KAFKALITE_<KEY>
(`num.partitions` -> KAFKALITE_NUM_PARTITIONS). Unknown keys and variables are errors.

`kafkalite control [--url URL] NAME key=value ...` runs one control of a running broker (see
kafkalite.controls) instead of starting one.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import shutil
import signal
import sys
import tempfile
import types
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import trio

from .settings.broker_config import BrokerConfig
from .settings.broker_keys import BROKER_KEYS, UnknownConfig, check_key
from .settings.listeners import Listener
from .settings.sources import ENV_PREFIX, env_name, env_values, load_properties
from .settings.values import parse_bool

if TYPE_CHECKING:  # the services import kio, which must wait for _hide_hypothesis
    from .seed import Seed
    from .services import Wiring

log = logging.getLogger("kafkalite")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9092
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

# Environment variables that mirror flags (not broker keys).
FLAG_ENV = {
    "host": "KAFKALITE_HOST",
    "port": "KAFKALITE_PORT",
    "data_dir": "KAFKALITE_DATA_DIR",
    "config": "KAFKALITE_CONFIG",
    "log_level": "KAFKALITE_LOG_LEVEL",
    "metrics_port": "KAFKALITE_METRICS_PORT",
    "console": "KAFKALITE_CONSOLE",
    "controls": "KAFKALITE_CONTROLS",
    "schema_registry": "KAFKALITE_SCHEMA_REGISTRY",
    "clock": "KAFKALITE_CLOCK",
    "kafka_version": "KAFKALITE_KAFKA_VERSION",
    "ready_file": "KAFKALITE_READY_FILE",
    "tls_self_signed": "KAFKALITE_TLS_SELF_SIGNED",
    "seed": "KAFKALITE_SEED",
}
# KAFKALITE_ variables read by other programs (the container entry point, the repo's
# scripts), which the broker leaves alone.
OTHER_ENV = {"KAFKALITE_WAIT_FOR_ENV_FILE", "KAFKALITE_DEPS_DIR", "KAFKALITE_CONTROLS_URL"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="kafkalite",
        description="A Kafka-compatible broker for tests and CI.",
        epilog="Precedence: command line > KAFKALITE_* environment > --config file > defaults. "
               "Every flag has an environment variable (KAFKALITE_PORT, KAFKALITE_LISTENERS, ...) and "
               "every broker key one named KAFKALITE_<KEY> (num.partitions -> KAFKALITE_NUM_PARTITIONS).",
    )
    p.add_argument("--host", default=None, help=f"address to listen on (default {DEFAULT_HOST}) [KAFKALITE_HOST]")
    p.add_argument("--port", type=int, default=None,
                   help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one) [KAFKALITE_PORT]")
    p.add_argument("--listener", action="append", default=[], metavar="NAME://HOST:PORT",
                   help="a listener; repeat (or separate with commas) for several; overrides --host/--port "
                        "[KAFKALITE_LISTENERS, key listeners]")
    p.add_argument("--advertised-listener", action="append", default=[], metavar="[NAME://]HOST:PORT",
                   help="the address clients of a listener are told to use; port 0 means the bound port "
                        "[KAFKALITE_ADVERTISED_LISTENERS, key advertised.listeners]")
    p.add_argument("--data-dir", default=None,
                   help="keep data here across restarts (default: a temporary dir) [KAFKALITE_DATA_DIR]")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="a server.properties file of broker keys [KAFKALITE_CONFIG]")
    p.add_argument("--fsync", choices=["always", "interval", "never"], default=None,
                   help="fsync every acknowledged write, periodically, or never [KAFKALITE_FSYNC]")
    p.add_argument("--nodes", type=int, default=None, metavar="N",
                   help="serve N node ids (node.id, node.id+1, ...) over one copy of the data, each on its own "
                        "ports [KAFKALITE_NODES, key nodes]")
    p.add_argument("-c", "--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker setting by its Kafka name, e.g. -c num.partitions=3")
    p.add_argument("--log-level", default=None, help="DEBUG, INFO, WARNING or ERROR (default INFO) [KAFKALITE_LOG_LEVEL]")
    p.add_argument("--metrics-port", default=None, metavar="[HOST:]PORT",
                   help="serve Prometheus metrics on http://HOST:PORT/metrics (host defaults to the first "
                        "listener's; 0 picks a free port) [KAFKALITE_METRICS_PORT]")
    p.add_argument("--console", default=None, metavar="[HOST:]PORT",
                   help="serve the read-only web console (partitions, transactions, groups) on "
                        "http://HOST:PORT/ (host defaults to the first listener's; 0 picks a free port; "
                        "needs the console extra: pip install 'kafkalite[console]') [KAFKALITE_CONSOLE]")
    p.add_argument("--controls", default=None, metavar="[HOST:]PORT",
                   help="serve the test controls (faults, the clock, ...) over HTTP/JSON on http://HOST:PORT/ "
                        "(host defaults to the first listener's; 0 picks a free port; needs the console extra) "
                        "[KAFKALITE_CONTROLS]")
    p.add_argument("--schema-registry", default=None, metavar="[HOST:]PORT",
                   help="serve Confluent Schema Registry's REST API on http://HOST:PORT/, kept in the topic "
                        "_schemas (host defaults to the first listener's; 0 picks a free port; needs the "
                        "schema-registry extra) [KAFKALITE_SCHEMA_REGISTRY]")
    p.add_argument("--clock", default=None, metavar="MODE",
                   help="system (default): wall-clock time, moved on by the advance-clock control; manual: "
                        "time stands still and moves only when advanced [KAFKALITE_CLOCK]")
    p.add_argument("--kafka-version", default=None, metavar="X.Y",
                   help="imitate that Apache Kafka release (2.8 ... 4.2): advertise its API versions and features, "
                        "refuse newer versions, run its transaction and group protocols [KAFKALITE_KAFKA_VERSION]")
    p.add_argument("--ready-file", default=None, metavar="FILE",
                   help="once ready, write the ready line and the bound addresses (bound=NAME://HOST:PORT,...) "
                        "to FILE; removed on exit [KAFKALITE_READY_FILE]")
    p.add_argument("--tls-self-signed", action="store_true", default=None,
                   help="make a throwaway CA and a certificate for the listener hosts (in the data dir) for TLS "
                        "listeners without a keystore; the ready line names the CA (ca=PATH) "
                        "[KAFKALITE_TLS_SELF_SIGNED=true]")
    p.add_argument("--seed", default=None, metavar="FILE",
                   help="a seed file (JSON: topics with records, group offsets, ACLs, SCRAM users; see "
                        "broker.seed) put in place before the ready line [KAFKALITE_SEED]")
    p.add_argument("--list-configs", action="store_true", help="print the settings that -c accepts and exit")
    return p.parse_args(argv)


@dataclass
class Settings:
    """Everything the command line, the environment and the config file decided."""

    data_dir: str | None
    log_level: str
    metrics: tuple[str, int] | None
    listeners: list[Listener]
    advertised: list[Listener]
    values: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    ready_file: str | None = None
    console: tuple[str, int] | None = None
    controls: tuple[str, int] | None = None
    schema_registry: tuple[str, int] | None = None
    clock: str = "system"
    kafka_version: str | None = None
    tls_self_signed: bool = False
    seed: str | None = None


def _pairs(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UnknownConfig(f"-c expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _port(text: str, what: str) -> int:
    try:
        port = int(str(text).strip())
    except ValueError:
        raise UnknownConfig(f"{what} must be a port number, not {text!r}") from None
    if not 0 <= port <= 65535:
        raise UnknownConfig(f"{what} must be a port number, not {text!r}")
    return port


def resolve(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Settings:
    """Merge defaults, the config file, the environment and the command line."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if k.startswith(ENV_PREFIX)}

    def flag(name: str) -> str | None:
        value = getattr(args, name)
        if value is not None:
            return str(value)
        value = env.get(FLAG_ENV[name])
        return value if value not in (None, "") else None

    values, origins = _layered_values(args, env, flag("config"))
    listeners, advertised = _listeners(args, env, flag, values, origins)
    level = _log_level(flag("log_level"))
    metrics = _http_address(flag("metrics_port"), listeners, "--metrics-port")
    console = _http_address(flag("console"), listeners, "--console")
    controls = _http_address(flag("controls"), listeners, "--controls")
    schema_registry = _http_address(flag("schema_registry"), listeners, "--schema-registry")
    clock = (flag("clock") or "system").strip().lower()
    if clock not in ("system", "manual"):
        raise UnknownConfig(f"--clock must be system or manual, not {flag('clock')!r}")
    self_signed = flag("tls_self_signed")
    try:
        tls_self_signed = self_signed is not None and parse_bool(self_signed)
    except ValueError:
        raise UnknownConfig(f"KAFKALITE_TLS_SELF_SIGNED must be true or false, not {self_signed!r}") from None
    return Settings(data_dir=flag("data_dir"), log_level=level, metrics=metrics, listeners=listeners,
                    advertised=advertised, values=values, origins=origins, ready_file=flag("ready_file"),
                    console=console, controls=controls, clock=clock, kafka_version=flag("kafka_version"),
                    tls_self_signed=tls_self_signed, schema_registry=schema_registry,
                    seed=flag("seed"))


def _layered_values(args: argparse.Namespace, env: Mapping[str, str],
                    config_path: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """The broker keys from the three sources, lowest first (file < env < -c), and the
    source each value came from."""
    file_values = load_properties(config_path) if config_path else {}
    for key in file_values:
        check_key(key, f" in {config_path}")
    env_vals = env_values({k: v for k, v in env.items() if v != ""}, reserved=set(FLAG_ENV.values()) | OTHER_ENV)
    cli_values = _pairs(args.set)
    for key in cli_values:
        check_key(key, " given with -c")
    if args.fsync:
        cli_values["fsync"] = args.fsync
    if args.nodes is not None:
        cli_values["nodes"] = str(args.nodes)
    if args.listener:
        cli_values["listeners"] = ",".join(args.listener)
    if args.advertised_listener:
        cli_values["advertised.listeners"] = ",".join(args.advertised_listener)

    values: dict[str, str] = {}
    origins: dict[str, str] = {}
    for origin, source in (("file", file_values), ("env", env_vals), ("cli", cli_values)):
        for key, value in source.items():
            values[key] = value
            origins[key] = origin
    return values, origins


def _listeners(args: argparse.Namespace, env: Mapping[str, str], flag: Callable[[str], str | None],
               values: dict[str, str], origins: dict[str, str]) -> tuple[list[Listener], list[Listener]]:
    """The listeners and advertised listeners (taken out of `values`): the highest source that
    names them wins. --host/--port (and KAFKALITE_HOST/PORT) are shorthand for one PLAINTEXT
    listener, at the level they were given; an explicit listener list at the same level beats them."""
    host = flag("host")
    port = flag("port")
    listeners_text = values.pop("listeners", None)
    listeners_origin = origins.pop("listeners", None)
    shorthand_level = None
    if args.host is not None or args.port is not None:
        shorthand_level = "cli"
    elif env.get(FLAG_ENV["host"]) or env.get(FLAG_ENV["port"]):
        shorthand_level = "env"
    rank = {None: -1, "file": 0, "env": 1, "cli": 2}
    if listeners_text is not None and rank[listeners_origin] >= rank[shorthand_level]:
        try:
            listeners = Listener.parse_list(listeners_text)
        except ValueError as exc:
            raise UnknownConfig(f"listeners: {exc}") from None
        if not listeners:
            raise UnknownConfig("listeners: the list is empty")
    else:
        listeners = [Listener("PLAINTEXT", host if host is not None else DEFAULT_HOST,
                              _port(port, "--port") if port is not None else DEFAULT_PORT)]
    # Kafka's "PLAINTEXT://:9092": an empty host means every interface
    listeners = [Listener(l.name, l.host or "0.0.0.0", l.port) for l in listeners]
    names = [l.name for l in listeners]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UnknownConfig(f"listener name {dupes[0]} is used twice; every listener needs its own name")

    advertised: list[Listener] = []
    adv_text = values.pop("advertised.listeners", None)
    origins.pop("advertised.listeners", None)
    if adv_text:
        try:
            advertised = Listener.parse_list(adv_text, default_name=listeners[0].name)
        except ValueError as exc:
            raise UnknownConfig(f"advertised listeners: {exc}") from None
    for adv in advertised:
        if adv.name not in names:
            raise UnknownConfig(f"advertised listener {adv.name}://{adv.address()} names no listener "
                                f"(listeners: {', '.join(names)})")
        if not adv.host or adv.host in ("0.0.0.0", "::"):
            raise UnknownConfig(f"advertised listener {adv.name} needs a host clients can connect to, "
                                f"not {adv.host or 'an empty one'!r}")
    adv_names = [a.name for a in advertised]
    dupes = sorted({n for n in adv_names if adv_names.count(n) > 1})
    if dupes:
        raise UnknownConfig(f"listener {dupes[0]} is advertised twice")
    return listeners, advertised


def _log_level(text: str | None) -> str:
    level = (text or "INFO").upper()
    if level == "WARN":
        level = "WARNING"
    if level not in LOG_LEVELS:
        raise UnknownConfig(f"--log-level must be one of {', '.join(LOG_LEVELS)}, not {text!r}")
    return level


def _http_address(text: str | None, listeners: list[Listener], what: str) -> tuple[str, int] | None:
    """--metrics-port / --console: PORT or HOST:PORT; a bare port listens on the first listener's host."""
    if text is None:
        return None
    host, sep, port = text.rpartition(":")
    if not sep:
        host = listeners[0].host
    return (host.strip("[]") or "0.0.0.0", _port(port, what))


def build_config(args: argparse.Namespace, data_dir: Path, environ: Mapping[str, str] | None = None) -> BrokerConfig:
    s = resolve(args, environ)
    return BrokerConfig(data_dir=data_dir, listeners=s.listeners, advertised_listeners=s.advertised,
                        values=s.values, origins=s.origins, kafka_version=s.kafka_version)


def list_configs() -> str:
    lines = []
    for key, info in sorted(BROKER_KEYS.items()):
        default, what = info.default, info.doc
        if isinstance(default, bool):
            default = str(default).lower()
        lines.append(f"{key}={default}    # {what} [{env_name(key)}]")
    lines.append("listeners=PLAINTEXT://127.0.0.1:9092    # NAME://HOST:PORT,... [KAFKALITE_LISTENERS]")
    lines.append("advertised.listeners=    # NAME://HOST:PORT,...; default: each listener's own address "
                 "[KAFKALITE_ADVERTISED_LISTENERS]")
    return "\n".join(lines)


def main(argv: list[str] | None = None, *, wiring: Wiring | None = None) -> int:
    """Run the broker; returns the exit status. Run as the program (no `argv`), it ends the
    process itself once everything is closed: tearing down the interpreter's modules would add
    0.1-0.3 s to every stop for nothing. `wiring` replaces parts of the services (see
    broker.services) for a program that embeds the broker."""
    code = _main(argv, wiring)
    if argv is None:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    return code


def _main(argv: list[str] | None, wiring: Wiring | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["control"]:
        from kafkalite.controls import main as control_main

        return control_main(given[1:])
    args = parse_args(argv)
    if args.list_configs:
        print(list_configs())
        return 0
    try:
        settings = resolve(args)
        ephemeral = settings.data_dir is None
        data_dir = (Path(tempfile.mkdtemp(prefix="kafkalite-")) if settings.data_dir is None
                    else Path(settings.data_dir))
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UnknownConfig(f"cannot create data dir {data_dir}: {exc.strerror or exc}") from None
        try:
            config = BrokerConfig(data_dir=data_dir, listeners=settings.listeners,
                                  advertised_listeners=settings.advertised, values=settings.values,
                                  origins=settings.origins, kafka_version=settings.kafka_version)
            _check_security(config, settings.tls_self_signed)
        except BaseException:
            if ephemeral:
                shutil.rmtree(data_dir, ignore_errors=True)
            raise
    except (UnknownConfig, ValueError) as exc:  # SecurityConfigError is a ValueError
        print(f"kafkalite: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=getattr(logging, settings.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for key in sorted(config.origins):
        log.info("config %s=%s (from %s)", key, _shown_value(config, key), config.origins[key])
    code = 0
    from .clock import CLOCK

    CLOCK.reset(settings.clock)
    if config.kafka_version is not None:
        log.info("imitating Apache Kafka %s (transaction.version=%d)", config.kafka_version,
                 config["transaction.version"])
    if settings.clock != "system":
        log.info("clock: %s (time moves only when advanced)", settings.clock)
    hidden = _hide_hypothesis()
    _import_kio_serial_without_asyncio()
    try:
        seed = _load_seed(settings.seed, config)
        trio.run(_run, config, settings.metrics, settings.ready_file, wiring, settings.console, settings.controls,
                 settings.schema_registry, seed)
    except KeyboardInterrupt:
        pass
    except BaseException as exc:  # noqa: BLE001 - report bind errors without a traceback
        oserr = _find_oserror(exc)
        if oserr is None:
            raise
        print(f"kafkalite: cannot listen: {oserr}", file=sys.stderr)
        code = 1
    finally:
        if hidden:
            sys.modules.pop("hypothesis", None)
        if settings.ready_file:
            with contextlib.suppress(OSError):
                os.unlink(settings.ready_file)
        if ephemeral:
            shutil.rmtree(data_dir, ignore_errors=True)
    return code


def _shown_value(config: BrokerConfig, key: str) -> Any:
    """A setting's value for the startup log; a secret's is hidden."""
    if _secret(key):
        return "[hidden]"
    from .settings.listeners import split_listener_key

    prefixed = split_listener_key(key)
    if prefixed is None:
        return config.values.get(key)
    listener, sub = prefixed
    return config.listener_values.get(listener, {}).get(sub)


def _secret(key: str) -> bool:
    """Passwords, private keys, JAAS configs (with users' passwords) and SCRAM users never reach a log line."""
    from .settings.listeners import SENSITIVE

    info = BROKER_KEYS.get(key)
    if info is not None:
        return info.type.name == "PASSWORD"
    return any(key.endswith(s) for s in SENSITIVE)


def _check_security(config: BrokerConfig, self_signed: bool) -> None:
    """Make the throwaway certificate if asked, and build every listener's security once, so that
    a bad key file or setting is reported before anything listens."""
    from .credentials import parse_scram_users
    from .security import build, make_self_signed

    if self_signed:
        hosts = [l.host for l in config.listeners] + [a.host for a in config.advertised_listeners]
        config.self_signed = make_self_signed(config.data_dir / "tls", hosts)
    for lis in config.listeners:
        build(config, lis.name)
    parse_scram_users(config["scram.users"])


def _hide_hypothesis() -> bool:
    """kio registers hypothesis strategies for its types whenever hypothesis is importable; that
    import costs 0.2 s of every broker start (more under pytest) for nothing the broker uses. Make
    it look absent while the broker imports kio (only if nothing imported it already)."""
    if "hypothesis" in sys.modules or "kio" in sys.modules:
        return False
    sys.modules["hypothesis"] = None  # type: ignore[assignment]
    return True


def _import_kio_serial_without_asyncio() -> None:
    """kio 0.6.5's kio/serial/writers.py imports asyncio only to name `asyncio.StreamWriter` in a
    type alias (`Writable`): about 30 modules and 10-40 ms of CPU at every broker start, for a
    broker that runs on trio. While this process is still single-threaded, kio.serial is imported
    with a stand-in `asyncio` module holding that one name, removed right after, so whatever
    imports asyncio later gets the real one (kio's writers keep the stand-in, which they never
    use at run time)."""
    import threading

    if "asyncio" in sys.modules or "kio.serial" in sys.modules or threading.active_count() > 1:
        return  # imported already, or another thread could see the stand-in
    stand_in = types.ModuleType("asyncio", "stand-in while kio.serial is imported (broker.cli)")
    stand_in.StreamWriter = type("StreamWriter", (), {})  # type: ignore[attr-defined]
    sys.modules["asyncio"] = stand_in
    try:
        import kio.serial  # noqa: F401
    finally:
        if sys.modules.get("asyncio") is stand_in:
            del sys.modules["asyncio"]


def _imports_done() -> None:
    """`python -m kafkalite` starts with the cyclic garbage collector off (kafkalite/__main__.py); once
    the modules that answer requests are imported, their objects go to the collector's permanent
    generation (they live as long as the process) and it is turned on again, before any data is
    loaded. A broker started any other way (the `kafkalite` script, an embedding program) keeps
    its collector as it was."""
    if gc.isenabled():
        return
    from .handlers import load_all

    load_all()
    gc.freeze()
    gc.enable()


def _find_oserror(exc: BaseException) -> OSError | None:
    if isinstance(exc, OSError):
        return exc
    for sub in getattr(exc, "exceptions", ()) or ():
        found = _find_oserror(sub)
        if found is not None:
            return found
    return None


def ready_line(broker, metrics_url: str | None = None, console_url: str | None = None,
               controls_url: str | None = None) -> str:
    first = broker.listeners[0]
    parts = [f"kafkalite ready bootstrap={broker.advertised[first.name].address()}",
             "listeners=" + ",".join(f"{l.name}://{broker.advertised[l.name].address()}" for l in broker.listeners)]
    nodes = broker.cluster.node_ids
    if len(nodes) > 1:
        parts.append("nodes=" + ",".join(f"{n}@{broker.address_of(n, first.name).address()}" for n in nodes))
    if metrics_url:
        parts.append(f"metrics={metrics_url}")
    if console_url:
        parts.append(f"console={console_url}")
    if controls_url:
        parts.append(f"controls={controls_url}")
    if broker.config.self_signed is not None:
        parts.append(f"ca={broker.config.self_signed.ca_path}")
    return " ".join(parts)


def _shown(host: str) -> str:
    """A host to put in a URL: a wildcard address becomes loopback, IPv6 gets brackets."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"[{shown}]" if ":" in shown else shown


def write_ready_file(path: str, line: str, broker) -> None:
    """The ready line plus the bound addresses, written atomically (health checks read it)."""
    bound = ",".join(f"{l.name}://{l.address()}" for l in broker.listeners)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{line} bound={bound}\n")
    os.replace(tmp, path)


def _load_seed(path: str | None, config: BrokerConfig) -> Seed | None:
    """--seed: read and checked before the broker starts (after kio is imported the quick way); a
    mistake is one line and exit status 2."""
    if path is None:
        return None
    from .seed import SeedError, load_seed

    try:
        return load_seed(path, config.values)
    except SeedError as exc:
        print(f"kafkalite: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def _apply_seed(broker, seed: Seed) -> None:
    from .seed import SeedError, apply_seed

    try:
        apply_seed(broker, seed, at_start=True)
    except SeedError as exc:
        print(f"kafkalite: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def _check_http_libraries(what: str) -> None:
    """The console and the controls endpoint are served with Starlette and hypercorn: without
    them the start fails with a reason and without a ready line. Found, not imported: they are
    imported when the first HTTP connection arrives (broker.console.serve_app)."""
    from importlib.util import find_spec

    missing = [name for name in ("hypercorn", "starlette") if find_spec(name) is None]
    if missing:
        log.error("%s needs Starlette and hypercorn (pip install 'kafkalite[console]'): no module named %s",
                  what, " or ".join(repr(m) for m in missing))
        raise SystemExit(2)


async def _run(config: BrokerConfig, metrics_addr: tuple[str, int] | None = None,
               ready_file: str | None = None, wiring: Wiring | None = None,
               console_addr: tuple[str, int] | None = None,
               controls_addr: tuple[str, int] | None = None,
               schema_registry_addr: tuple[str, int] | None = None,
               seed: Seed | None = None) -> None:
    from .server import serve

    _imports_done()
    async with trio.open_nursery() as nursery:
        async def stop_on_signal(task_status=trio.TASK_STATUS_IGNORED):
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                task_status.started()
                async for sig in signals:
                    log.info("received %s, shutting down", signal.Signals(sig).name)
                    nursery.cancel_scope.cancel()
                    return

        await nursery.start(stop_on_signal)
        broker = await nursery.start(partial(serve, config, wiring=wiring))
        if seed is not None:  # --seed: in place before the ready line
            _apply_seed(broker, seed)
        metrics_url = None
        if metrics_addr is not None:
            from .metrics import serve_metrics

            mhost, mport = await nursery.start(serve_metrics, broker, metrics_addr[0], metrics_addr[1])
            metrics_url = f"http://{_shown(mhost)}:{mport}/metrics"
            log.info("metrics on %s", metrics_url)
        console_url = None
        if console_addr is not None:
            _check_http_libraries("the console")
            from .console import serve_console

            chost, cport = await nursery.start(serve_console, broker, console_addr[0], console_addr[1])
            console_url = f"http://{_shown(chost)}:{cport}/"
            log.info("console on %s", console_url)
        controls_url = None
        if controls_addr is not None:
            _check_http_libraries("the controls endpoint")
            from .controls.http import serve_controls

            khost, kport = await nursery.start(serve_controls, broker, controls_addr[0], controls_addr[1])
            controls_url = f"http://{_shown(khost)}:{kport}/"
            broker.controls_url = controls_url
            log.info("controls on %s", controls_url)
        schema_registry_url = None
        if schema_registry_addr is not None:
            _check_http_libraries("the schema registry")
            from .schema_registry import serve_schema_registry

            rhost, rport = await nursery.start(serve_schema_registry, broker, *schema_registry_addr)
            schema_registry_url = f"http://{_shown(rhost)}:{rport}/"
            log.info("schema registry on %s", schema_registry_url)
        log.info("listening on %s; data in %s",
                 ", ".join(f"{l.name}://{l.address()} (advertised {broker.advertised[l.name].address()})"
                           for l in broker.listeners),
                 config.data_dir)
        line = ready_line(broker, metrics_url, console_url, controls_url)
        if schema_registry_url:
            line += f" schema_registry={schema_registry_url}"
        if ready_file:
            try:
                write_ready_file(ready_file, line, broker)
            except OSError as exc:
                log.warning("cannot write the ready file %s: %s", ready_file, exc)
        print(line, flush=True)
