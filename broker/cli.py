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
KAFKALITE_METRICS_PORT, KAFKALITE_CONSOLE, KAFKALITE_CONTROLS, KAFKALITE_SCHEMA_REGISTRY, KAFKALITE_CLOCK, KAFKALITE_KAFKA_VERSION,
KAFKALITE_READY_FILE, KAFKALITE_FSYNC, KAFKALITE_NODES, KAFKALITE_TLS_SELF_SIGNED, KAFKALITE_SEED,
KAFKALITE_HTTP_ALLOWED_HOSTS, KAFKALITE_CONTROLS_TOKEN, KAFKALITE_CHAOS, KAFKALITE_CHAOS_PROFILE; and every broker key has KAFKALITE_<KEY>
(`num.partitions` -> KAFKALITE_NUM_PARTITIONS). Unknown keys and variables are errors.

`kafkalite control [--url URL] [--token TOKEN] NAME key=value ...` runs one control of a running broker (see
kafkalite.controls) instead of starting one; `kafkalite bundle OUT` writes the broker into one
file that runs with nothing installed (kafkalite.bundle).

A mistake in how the broker was started (an unknown key, a busy address, a data dir it cannot
write, the console extra missing) is one line on stderr, `kafkalite: <what is wrong>`, and exit
status 2, before anything is printed on stdout.

The rooms: the command line here; the defaults < file < env < CLI layering in
broker.settings.layering; the checks before the start in broker.startup_checks; the running
process (broker, metrics, console, controls, the ready line) in broker.supervisor; what keeps the
start fast in broker.fast_start.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from .settings.broker_config import BrokerConfig
from .settings.broker_keys import BROKER_KEYS, UnknownConfig
from .settings.sources import env_name
from .fast_start import hide_hypothesis, import_kio_serial_without_asyncio
from .settings.layering import DEFAULT_HOST, DEFAULT_PORT, Settings, resolve
from .startup_checks import StartupError, check_data_dir, check_http_extra, check_security

if TYPE_CHECKING:  # the services import kio, which must wait for hide_hypothesis
    from .http_endpoint import HttpAccess
    from .seed import Seed
    from .services import Wiring

log = logging.getLogger("kafkalite")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="kafkalite",
        description="A Kafka-compatible broker for tests and CI.",
        usage="kafkalite [options]\n       kafkalite control [--url URL] [--token TOKEN] NAME [key=value ...]\n"
              "       kafkalite bundle OUT",
        epilog="commands:\n"
               "  control NAME [key=value ...]\n"
               "                        run one test control (faults, the clock, ...) of a running broker\n"
               "                        started with --controls; `kafkalite control --help` lists them\n"
               "  bundle OUT            write the broker and its installed libraries into one file that\n"
               "                        `python3 -I -S OUT [options]` runs with nothing installed\n\n"
               "Precedence: command line > KAFKALITE_* environment > --config file > defaults.\n"
               "Every flag has an environment variable (KAFKALITE_PORT, KAFKALITE_LISTENERS, ...) and every\n"
               "broker key one named KAFKALITE_<KEY> (num.partitions -> KAFKALITE_NUM_PARTITIONS).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    # the HTTP endpoints beside the broker: flag, what it serves on http://HOST:PORT/..., what it needs
    for flag, serves, needs in (
            ("--metrics-port", "Prometheus metrics on http://HOST:PORT/metrics", ""),
            ("--console", "the read-only web console (partitions, transactions, groups) on http://HOST:PORT/",
             "; needs the console extra: pip install '.[console]' in a kafkalite checkout"),
            ("--controls", "the test controls (faults, the clock, ...) over HTTP/JSON on http://HOST:PORT/",
             "; needs the console extra"),
            ("--schema-registry", "Confluent Schema Registry's REST API on http://HOST:PORT/, kept in the topic "
             "_schemas", "; needs the schema-registry extra")):
        env = "KAFKALITE_" + flag[2:].upper().replace("-", "_")
        p.add_argument(flag, default=None, metavar="[HOST:]PORT",
                       help=f"serve {serves} (host defaults to the first listener's; 0 picks a free port{needs}) [{env}]")
    p.add_argument("--http-allowed-hosts", default=None, metavar="NAME,...",
                   help="Host names the HTTP endpoints answer besides their own address, localhost and IP "
                        "addresses (a DNS name of this machine; * for any); other names get 421 "
                        "[KAFKALITE_HTTP_ALLOWED_HOSTS]")
    p.add_argument("--controls-token", default=None, metavar="SECRET",
                   help="a shared secret the controls (and the console's control forms) ask for as "
                        "'Authorization: Bearer SECRET'; prefer the environment variable, which other users "
                        "cannot read in the process list [KAFKALITE_CONTROLS_TOKEN]")
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
    p.add_argument("--chaos", default=None, metavar="SEED",
                   help="inject faults a correct client survives, on a schedule drawn from SEED (see "
                        "broker.chaos) [KAFKALITE_CHAOS, key chaos]")
    p.add_argument("--chaos-profile", default=None, choices=["gentle", "default", "harsh"],
                   help="how often chaos faults hit [KAFKALITE_CHAOS_PROFILE, key chaos.profile]")
    p.add_argument("--list-configs", action="store_true", help="print the settings that -c accepts and exit")
    return p.parse_args(argv)


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
    if given[:1] == ["bundle"]:
        from kafkalite.bundle import main as bundle_main

        return bundle_main(given[1:])
    args = parse_args(argv)
    if args.list_configs:
        print(list_configs())
        return 0
    try:
        settings = resolve(args)
        if settings.console is not None:
            check_http_extra("--console")
        if settings.controls is not None:
            check_http_extra("--controls")
        if settings.schema_registry is not None:
            check_http_extra("--schema-registry")
        ephemeral = settings.data_dir is None
        data_dir = (Path(tempfile.mkdtemp(prefix="kafkalite-")) if settings.data_dir is None
                    else Path(settings.data_dir))
        try:
            check_data_dir(data_dir)
            config = BrokerConfig(data_dir=data_dir, listeners=settings.listeners,
                                  advertised_listeners=settings.advertised, values=settings.values,
                                  origins=settings.origins, kafka_version=settings.kafka_version)
            check_security(config, settings.tls_self_signed)
        except BaseException:
            if ephemeral:
                shutil.rmtree(data_dir, ignore_errors=True)
            raise
    except (UnknownConfig, StartupError, ValueError) as exc:  # SecurityConfigError is a ValueError
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
    hidden = hide_hypothesis()
    import_kio_serial_without_asyncio()
    from .supervisor import find_error, run

    try:
        seed = _load_seed(settings.seed, config)
        trio.run(run, config, settings.metrics, settings.ready_file, wiring, settings.console, settings.controls,
                 settings.schema_registry, seed, http_access(settings, config))
    except KeyboardInterrupt:
        pass
    except BaseException as exc:  # noqa: BLE001 - a startup error is one line, without a traceback
        error = find_error(exc, StartupError)
        if error is None:
            raise
        print(f"kafkalite: {error}", file=sys.stderr)
        code = 2
    finally:
        if hidden:
            sys.modules.pop("hypothesis", None)
        if settings.ready_file:
            with contextlib.suppress(OSError):
                os.unlink(settings.ready_file)
        if ephemeral:
            shutil.rmtree(data_dir, ignore_errors=True)
    return code


def http_access(settings: Settings, config: BrokerConfig) -> HttpAccess:
    """Who may talk to the HTTP endpoints, from --http-allowed-hosts, --controls-token and
    http.request.max.bytes."""
    from .http_endpoint import HttpAccess

    return HttpAccess(allowed_hosts=frozenset(settings.http_allowed_hosts), controls_token=settings.controls_token,
                      max_body_bytes=config["http.request.max.bytes"])


def _load_seed(path: str | None, config: BrokerConfig) -> Seed | None:
    """--seed: read and checked before the broker starts (after kio is imported the quick way); a
    mistake is a StartupError, one line naming the file, the entry and what is wrong."""
    if path is None:
        return None
    from .seed import SeedError, load_seed

    try:
        return load_seed(path, config.values)
    except SeedError as exc:
        raise StartupError(str(exc)) from None


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


