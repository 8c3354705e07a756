"""What the broker checks before it starts, so that a mistake in how it was started is one line
naming what is wrong (broker.cli prints `kafkalite: <reason>` and exits 2), never a traceback or a
broker that says `ready` and then fails every request.

Rules:
- Each check raises `StartupError` with the thing that is wrong (the address, the directory, the
  missing package) and what to do about it where there is one thing to do.
- Checks cost little: the start is measured (bench/startup.py); the data dir check writes one
  probe file per directory the broker writes to (the data dir, the cluster metadata, each
  partition), nothing when the data dir is new.
- Only the standard library at the top; the security check imports what it builds.
"""

from __future__ import annotations

import contextlib
import os
import socket
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .settings.broker_config import BrokerConfig

# The console and the controls endpoint are served with Starlette (on anyio) and hypercorn.
HTTP_PACKAGES = ("starlette", "hypercorn", "anyio")
PROBE = ".kafkalite-write-probe"


class StartupError(Exception):
    """A broker that cannot start as asked; the message is the one line the user sees."""


def check_http_extra(flag: str) -> None:
    """--console / --controls need the console extra: found, not imported (they are imported when
    the first HTTP connection arrives, broker.console.serve_app)."""
    missing = [name for name in HTTP_PACKAGES if find_spec(name) is None]
    if missing:
        raise StartupError(f"{flag} needs the console extra, and {' and '.join(missing)} "
                           f"{'is' if len(missing) == 1 else 'are'} not installed: {console_install_command()}")


def console_install_command() -> str:
    """The command that installs the console extra into this Python: its requirements as
    kafkalite's own metadata declares them (no package index serves kafkalite itself)."""
    import sys
    from importlib.metadata import PackageNotFoundError, requires

    try:
        reqs = [r.split(";", 1)[0].strip() for r in requires("kafkalite") or ()
                if "extra ==" in r and ("'console'" in r or '"console"' in r)]
    except PackageNotFoundError:
        reqs = []
    if not reqs:  # a source checkout that was never installed
        return f"{sys.executable} -m pip install '.[console]' (in the kafkalite checkout)"
    return f"{sys.executable} -m pip install " + " ".join(f"'{r}'" for r in reqs)


def _probe(directory: Path, what: str) -> None:
    """Write and remove one file in `directory`; StartupError naming it and why when that fails."""
    probe = directory / PROBE
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        with contextlib.suppress(OSError):
            probe.unlink()
        raise StartupError(f"cannot write to {what} {directory}: {exc.strerror or exc}") from None


def check_data_dir(data_dir: Path) -> None:
    """The data dir exists (made if need be) and the broker can write everything it holds: the
    dir itself, the cluster metadata and every partition's directory already in it."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StartupError(f"cannot create the data dir {data_dir}: {exc.strerror or exc}") from None
    if not data_dir.is_dir():
        raise StartupError(f"the data dir {data_dir} is not a directory")
    _probe(data_dir, "the data dir")
    try:
        children = sorted(p for p in data_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as exc:
        raise StartupError(f"cannot read the data dir {data_dir}: {exc.strerror or exc}") from None
    for child in children:
        if child.name == "tls":
            continue
        if child.name.startswith("__cluster_metadata"):
            _probe(child, "the cluster metadata in")
        elif not os.access(child, os.W_OK | os.X_OK):
            # access(2) answers for permissions and a read-only mount alike, without the write and
            # unlink of a probe in each of thousands of partition dirs (1.5 s at 10 000); the
            # probe then names why
            _probe(child, "the partition dir")


def check_security(config: BrokerConfig, self_signed: bool) -> None:
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


def address_in_use(config: BrokerConfig) -> str:
    """Which configured listener address is taken (asked after binding failed with EADDRINUSE):
    each fixed port of each node is tried as trio binds it; the list of them when none fails now."""
    nodes = int(config["nodes"])
    wanted = [(l.name, l.host, l.port + i) for i in range(nodes) for l in config.listeners if l.port]
    for name, host, port in wanted:
        try:
            infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except OSError:
            continue
        for family, type_, proto, _, addr in infos:
            with socket.socket(family, type_, proto) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind(addr)
                except OSError:
                    return f"{name}://{_hostport(host, port)}"
    return ", ".join(f"{name}://{_hostport(host, port)}" for name, host, port in wanted) or "a listener address"


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

