"""The kafkalite brokers of this repository's tests: `start` and `running` take the arguments of
`kafkalite.start` and `kafkalite.running`, and fork the broker from one warm fork server per test
process (kafkalite.forkserver) where a new process would add nothing.

Why: the suites start several hundred brokers. A new `python -m kafkalite` spends about 0.33
CPU-seconds before its first answered Metadata and as much again settling in; a broker forked from
the warm server 0.04 (`python -m bench.startup --brokers kafkalite,kafkalite-forked`). On a
machine whose cores are busy for the whole test command, that CPU is the command's time.

Rules:
- A broker is forked only when nothing of the call needs a process of its own: no `module` (a
  program wiring the broker differently), no `env`, no `log_path`. Anything else starts a process
  through `kafkalite.start`, as before.
- The server starts no broker ahead (`start_ahead=False`): the suites' brokers differ from one
  start to the next, and one started for nothing costs what forking saves.
- A forked broker with a data dir of its own is killed at close (its directory goes with it); one
  with the caller's data dir is stopped with SIGTERM, as `kafkalite.Broker.close` does.
- The tests of `kafkalite.start` itself, of the command line, of signals, of process limits and
  of what a clean stop leaves (the ready file removed), and the documentation's examples, call
  `kafkalite.start` directly.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from typing import Any, Iterator, Mapping

import kafkalite
from kafkalite.forkserver import START_KEYS, ForkServer
from kafkalite.launcher import Broker

__all__ = ["start", "running"]

_server: ForkServer | None = None
_server_pid: int | None = None
_lock = threading.Lock()


def _fork_server() -> ForkServer:
    """This process's server, started on first use and closed at exit (a pytest-xdist worker, or a
    forked test process, gets its own)."""
    global _server, _server_pid
    with _lock:
        if _server is None or _server_pid != os.getpid():
            _server, _server_pid = ForkServer(start_ahead=False), os.getpid()
            atexit.register(_server.close)
        return _server


def start(*, log_path: str | os.PathLike | None = None, env: Mapping[str, str] | None = None,
          timeout: float = 20.0, module: str = "kafkalite", **settings: Any) -> Broker:
    """A ready broker, as `kafkalite.start` gives one: forked where it can be (see the rules above)."""
    if module != "kafkalite" or env is not None or log_path is not None or not set(settings) <= set(START_KEYS):
        return kafkalite.start(log_path=log_path, env=env, timeout=timeout, module=module, **settings)
    return _fork_server().start(timeout=timeout, **settings)


@contextlib.contextmanager
def running(data_dir: str | os.PathLike | None = None, port: int = 0, host: str = "127.0.0.1",
            **kwargs: Any) -> Iterator[Broker]:
    """`kafkalite.running` through `start`."""
    broker = start(data_dir=data_dir, host=host, port=port, **kwargs)
    try:
        yield broker
    finally:
        broker.close()
