"""`kafkalite` / `python -m broker`: start a broker.

Prints one line `kafkalite ready bootstrap=HOST:PORT` on stdout once every listener accepts
connections; logs go to stderr. Without --data-dir the data lives in a temporary directory
that is removed on exit. SIGTERM and Ctrl-C shut down cleanly.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import trio

from .config import BROKER_KEYS, BrokerConfig, Listener, UnknownConfig

log = logging.getLogger("kafkalite")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="kafkalite", description="A Kafka-compatible broker for tests and CI.")
    p.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port to listen on (default 9092; 0 picks a free one)")
    p.add_argument("--listener", action="append", default=[], metavar="NAME://HOST:PORT",
                   help="a listener; repeat for several (overrides --host/--port)")
    p.add_argument("--advertised-listener", action="append", default=[], metavar="[NAME://]HOST:PORT",
                   help="the address clients are told to use for a listener")
    p.add_argument("--data-dir", default=None, help="keep data here across restarts (default: a temporary dir)")
    p.add_argument("--fsync", choices=["always", "interval", "never"], default=None,
                   help="fsync every acknowledged write, periodically, or never")
    p.add_argument("-c", "--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker setting by its Kafka name, e.g. -c num.partitions=3")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    p.add_argument("--list-configs", action="store_true", help="print the settings that -c accepts and exit")
    return p.parse_args(argv)


def build_config(args: argparse.Namespace, data_dir: Path) -> BrokerConfig:
    values: dict[str, str] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise UnknownConfig(f"-c expects KEY=VALUE, got {item!r}")
        values[key.strip()] = value.strip()
    if args.fsync:
        values["fsync"] = args.fsync
    if args.listener:
        listeners = [Listener.parse(x) for x in args.listener]
    else:
        listeners = [Listener("PLAINTEXT", args.host or "127.0.0.1", 9092 if args.port is None else args.port)]
    advertised = [Listener.parse(x, default_name=listeners[0].name) for x in args.advertised_listener]
    return BrokerConfig(data_dir=data_dir, listeners=listeners, advertised_listeners=advertised, values=values)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.list_configs:
        for key, (_parser, default, what) in sorted(BROKER_KEYS.items()):
            print(f"{key}={default}    # {what}")
        return 0
    ephemeral = args.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="kafkalite-")) if ephemeral else Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        config = build_config(args, data_dir)
    except (UnknownConfig, ValueError) as exc:
        print(f"kafkalite: {exc}", file=sys.stderr)
        return 2
    try:
        trio.run(_run, config)
    except KeyboardInterrupt:
        pass
    finally:
        if ephemeral:
            shutil.rmtree(data_dir, ignore_errors=True)
    return 0


async def _run(config: BrokerConfig) -> None:
    from .server import serve

    def ready(broker) -> None:
        first = broker.listeners[0]
        adv = broker.advertised[first.name]
        log.info("listening on %s; data in %s", ", ".join(f"{l.name}://{l.address()}" for l in broker.listeners),
                 config.data_dir)
        print(f"kafkalite ready bootstrap={adv.address()}", flush=True)

    async with trio.open_nursery() as nursery:
        async def stop_on_signal():
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for sig in signals:
                    log.info("received %s, shutting down", signal.Signals(sig).name)
                    nursery.cancel_scope.cancel()
                    return

        nursery.start_soon(stop_on_signal)
        await serve(config, on_ready=ready)
