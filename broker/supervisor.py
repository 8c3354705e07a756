"""The broker's process once its settings are checked: the broker, and beside it the metrics,
console and controls endpoints, in one trio nursery; the ready line once everything listens.

Prints one line on stdout once every listener accepts connections (broker.cli's docstring shows
it; kafkalite.launcher and the container's health check read it, the ready file holds it too).

Rules:
- Nothing is printed on stdout before every listener and endpoint is bound; an address that
  cannot be bound ends the start with a `StartupError` naming it (broker.cli prints it as one
  line and exits 2).
- SIGTERM and SIGINT cancel the nursery: a clean shutdown, the same as the end of the block.
- The endpoints are imported only when asked for (the start stays fast).
"""

from __future__ import annotations

import errno
import logging
import os
import signal
from functools import partial
from typing import TYPE_CHECKING, Any, Awaitable, Callable

import trio

from .settings.broker_config import BrokerConfig
from .fast_start import imports_done
from .startup_checks import StartupError, address_in_use

if TYPE_CHECKING:
    from .http_endpoint import HttpAccess
    from .seed import Seed
    from .services import Wiring

log = logging.getLogger("kafkalite")


def ready_line(broker: Any, metrics_url: str | None = None, console_url: str | None = None,
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


def write_ready_file(path: str, line: str, broker: Any) -> None:
    """The ready line plus the bound addresses, written atomically (health checks read it)."""
    bound = ",".join(f"{l.name}://{l.address()}" for l in broker.listeners)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{line} bound={bound}\n")
    os.replace(tmp, path)


def find_error(exc: BaseException, kind: type[BaseException]) -> Any:
    """The first `kind` in an exception or the groups trio wraps around it, or None."""
    if isinstance(exc, kind):
        return exc
    for sub in getattr(exc, "exceptions", ()) or ():
        found = find_error(sub, kind)
        if found is not None:
            return found
    return None


async def _bound(what: str, host: str, port: int, start: Callable[[], Awaitable[Any]]) -> Any:
    """`start()`, with a bind error turned into a StartupError naming `what` and its address."""
    try:
        return await start()
    except BaseException as exc:
        oserr = find_error(exc, OSError)
        if oserr is None:
            raise
        raise StartupError(f"cannot listen for {what} on {_shown(host)}:{port}: {oserr.strerror or oserr}") from None


# The endpoints beside the broker, imported only when asked for.
def _serve_metrics() -> Callable[..., Awaitable[Any]]:
    from .metrics import serve_metrics

    return serve_metrics


def _serve_console() -> Callable[..., Awaitable[Any]]:
    from .console import serve_console

    return serve_console


def _serve_controls() -> Callable[..., Awaitable[Any]]:
    from .controls.http import serve_controls

    return serve_controls


def _serve_schema_registry() -> Callable[..., Awaitable[Any]]:
    from .schema_registry import serve_schema_registry

    return serve_schema_registry


def warn_open_controls(broker: Any, console_addr: tuple[str, int] | None,
                       controls_addr: tuple[str, int] | None) -> None:
    """One warning line when the controls (and the console, which forwards them) listen beyond
    this machine with no token: anyone who reaches the port can reset or stop the broker."""
    if broker.http_access.controls_token is not None or controls_addr is None:
        return
    exposed = [f"{what} on {address[0] or '0.0.0.0'}:{address[1]}"
               for what, address in (("the controls", controls_addr), ("the console", console_addr))
               if address is not None and not is_loopback(address[0])]
    if exposed:
        log.warning("%s listen beyond this machine without a token: anyone who reaches them can change the "
                    "broker; set KAFKALITE_CONTROLS_TOKEN (docs/reachable.md)", " and ".join(exposed))


def is_loopback(host: str) -> bool:
    """Whether an address to bind is this machine's own (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def _endpoint(nursery: trio.Nursery, broker: Any, what: str, address: tuple[str, int] | None,
                    serve: Callable[[], Callable[..., Awaitable[Any]]], path: str = "") -> str | None:
    """Starts one HTTP endpoint beside the broker when asked for; its URL."""
    if address is None:
        return None
    host, port = await _bound(what, *address, partial(nursery.start, serve(), broker, address[0], address[1]))
    url = f"http://{_shown(host)}:{port}/{path}"
    log.info("%s on %s", what, url)
    return url


async def run(config: BrokerConfig, metrics_addr: tuple[str, int] | None = None,
              ready_file: str | None = None, wiring: Wiring | None = None,
              console_addr: tuple[str, int] | None = None,
              controls_addr: tuple[str, int] | None = None,
              schema_registry_addr: tuple[str, int] | None = None, seed: Seed | None = None,
              http_access: HttpAccess | None = None) -> None:
    from .server import serve

    imports_done()
    async with trio.open_nursery() as nursery:
        async def stop_on_signal(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                task_status.started()
                async for sig in signals:
                    log.info("received %s, shutting down", signal.Signals(sig).name)
                    nursery.cancel_scope.cancel()
                    return

        await nursery.start(stop_on_signal)
        try:
            broker = await nursery.start(partial(serve, config, wiring=wiring))
        except BaseException as exc:
            oserr = find_error(exc, OSError)
            if oserr is None:
                raise
            if oserr.errno == errno.EADDRINUSE:
                raise StartupError(f"cannot listen on {address_in_use(config)}: address already in use") from None
            if oserr.errno == errno.EADDRNOTAVAIL:
                raise StartupError(f"cannot listen on {', '.join(l.address() for l in config.listeners)}: "
                                   f"{oserr.strerror}") from None
            raise StartupError(f"cannot start: {oserr}") from None
        if http_access is not None:
            broker.http_access = http_access
        warn_open_controls(broker, console_addr, controls_addr)
        if seed is not None:  # --seed: in place before the ready line
            from .seed import SeedError, apply_seed

            try:
                apply_seed(broker, seed, at_start=True)
            except SeedError as exc:
                raise StartupError(str(exc)) from None
        if config["chaos"] is not None:  # --chaos SEED: from the first request on
            from .chaos import start as start_chaos

            start_chaos(broker, config["chaos"], config["chaos.profile"])
        metrics_url = await _endpoint(nursery, broker, "metrics", metrics_addr, _serve_metrics, "metrics")
        console_url = await _endpoint(nursery, broker, "the console", console_addr, _serve_console)
        controls_url = await _endpoint(nursery, broker, "the controls", controls_addr, _serve_controls)
        broker.controls_url = controls_url
        schema_registry_url = await _endpoint(nursery, broker, "the schema registry", schema_registry_addr,
                                              _serve_schema_registry)
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
