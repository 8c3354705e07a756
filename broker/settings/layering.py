"""The defaults < --config FILE (server.properties) < KAFKALITE_* environment < command line
layering of the broker's settings: one `Settings` from the parsed command line and the environment.

Rules:
- A later source overrides an earlier one key by key; `Settings.origins` says where each broker
  key's value came from ("file", "env", "cli"), for the startup log.
- Every flag has an environment variable (`FLAG_ENV`); every broker key has KAFKALITE_<KEY>
  (broker.config.env_values). An unknown key or KAFKALITE_ variable is an `UnknownConfig`, never
  ignored; `OTHER_ENV` names the variables other programs read, which the broker leaves alone.
- `listeners` / `advertised.listeners` take part in the same precedence; --host/--port (and
  KAFKALITE_HOST/PORT) are shorthand for one PLAINTEXT listener at the level they were given.
- A new flag: one argparse line (broker.cli.parse_args), one FLAG_ENV entry, one Settings field
  and its line in `resolve`.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from typing import Callable, Mapping

from .broker_keys import UnknownConfig, check_key
from .listeners import Listener
from .sources import ENV_PREFIX, env_values, load_properties
from .values import parse_bool

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
    "http_allowed_hosts": "KAFKALITE_HTTP_ALLOWED_HOSTS",
    "controls_token": "KAFKALITE_CONTROLS_TOKEN",
}
# KAFKALITE_ variables read by other programs (the container entry point, the repo's
# scripts), which the broker leaves alone.
OTHER_ENV = {"KAFKALITE_WAIT_FOR_ENV_FILE", "KAFKALITE_DEPS_DIR", "KAFKALITE_CONTROLS_URL",
             # scripts/install-test-deps.sh, scripts/test.sh, scripts/test-lowest.sh (every name they
             # read: broker/tests/test_cli_settings.py checks it), whose brokers inherit them
             "KAFKALITE_CACHE_DIR", "KAFKALITE_VENV", "KAFKALITE_REUSE_VENV", "KAFKALITE_LOWEST_VENV",
             "KAFKALITE_FRESH_VENV", "KAFKALITE_CPU_REPORT",
             "KAFKALITE_M2_REPO", "KAFKALITE_PODMAN_DIR", "KAFKALITE_PODMAN_RUN_DIR", "KAFKALITE_PODMAN_STORAGE_DRIVER",
             "KAFKALITE_DEBIAN_MIRROR",
             # kafkalite.spark
             "KAFKALITE_MAVEN_REPOSITORY",
             # the Go, Node and JUnit 5 test helpers (go/, node/, java/): how to run the
             # broker, and the options of the Node global setups; their brokers inherit both
             "KAFKALITE_CMD", "KAFKALITE_OPTIONS"}


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
    # Host names the HTTP endpoints answer besides their address and localhost ("*": any)
    http_allowed_hosts: tuple[str, ...] = ()
    # the shared secret of the controls (Authorization: Bearer), None: none
    controls_token: str | None = None


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
                    tls_self_signed=tls_self_signed, schema_registry=schema_registry, seed=flag("seed"),
                    http_allowed_hosts=allowed_hosts(flag("http_allowed_hosts")),
                    controls_token=flag("controls_token") or None)


def allowed_hosts(text: str | None) -> tuple[str, ...]:
    """--http-allowed-hosts: names separated by commas (or spaces), compared without case."""
    return tuple(name.strip().lower().rstrip(".") for name in (text or "").replace(",", " ").split()
                 if name.strip())


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
    if args.chaos is not None:
        cli_values["chaos"] = str(args.chaos)
    if args.chaos_profile is not None:
        cli_values["chaos.profile"] = args.chaos_profile
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
