"""A broker of its own for every test, in milliseconds: a warm server process that has imported
the broker's modules once and forks a new broker (a new port, a new data dir) on request.

    with ForkServer() as server:              # one per test session: ~0.4 s, once
        with server.running() as broker:      # a kafkalite.Broker, ready; a few ms
            broker.bootstrap
        broker = server.start(config={"num.partitions": 3}, controls=0)
        broker.close()

`start` takes the arguments of `kafkalite.start` that make a broker's command line (config,
listeners, controls, clock, seed, ...); the forked broker runs `kafkalite.broker.cli` exactly as
`python -m kafkalite` would, in a child of the server. Its data dir is a new temporary directory
(removed by `close()`), its log a file in it; `close()` kills it (a test's broker has nothing to
keep: no shutdown flush is waited for) unless `graceful=True`. A `data_dir` of the caller's is
the caller's: the log goes in it as `broker.log`, and `close()` stops the broker with SIGTERM,
as `kafkalite.Broker.close()` does, and leaves the directory in place.

By default the server also starts, behind each broker it hands over, the next one for the same
command line (see `_Server`), so that a session starting the same broker again and again waits for
none; `ForkServer(start_ahead=False)` starts a broker only when asked, for a caller whose brokers
differ from one start to the next.

The server is `python -P -m kafkalite.forkserver`, talking JSON lines on its stdin and stdout; it
is single-threaded (forking a process with threads is unsafe) and never starts trio itself, so
each child starts its own trio loop from a clean state. A child's stdout is a pipe the server
reads the ready line from; its stderr is its log file. The pytest plugin's `kafkalite_fresh`
fixture uses one server per session.

Only the server signals its brokers, and it names each by a number of its own, not by its pid.
A broker that ends on its own is reaped by the server's next request, and from then on its pid
is free: a `kill()` by pid from the test's process, which is not the broker's parent, could hit
whatever process took the pid next (pids wrap within minutes on a busy machine). The server
signals a broker only while it is its unreaped child (a zombie keeps its pid), and a status is
that broker's, not an older one's of the same pid. No request holds the server long but a start:
`wait` asks in short steps, so a signal from another thread goes between them.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from .launcher import Broker, _broker_env, broker_args, parse_ready_line

__all__ = ["ForkServer", "ForkedBroker"]

START_KEYS = ("data_dir", "host", "port", "config", "listeners", "advertised_listeners", "log_level", "metrics_port",
              "console", "controls", "schema_registry", "clock", "kafka_version", "nodes", "tls_self_signed", "seed",
              "http_allowed_hosts", "controls_token", "chaos", "chaos_profile", "extra_args")


# the longest a `wait` request holds the server (and the client's lock): other requests go between
WAIT_STEP = 0.05


class ForkedProcess:
    """The part of subprocess.Popen a kafkalite.Broker uses, for a broker forked by the server.
    `pid` is for the caller to read; the server is asked by `broker_id`, its number for the broker."""

    def __init__(self, server: "ForkServer", pid: int, broker_id: int):
        self.server = server
        self.pid = pid
        self.broker_id = broker_id
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server._call({"op": "poll", "id": self.broker_id})["status"]
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """Signals the broker through the server, unless it has ended (then its status is kept).
        Once the server is closed its brokers are gone: it killed them, or they died with it."""
        if self.returncode is None and not self.server.closed:
            self.returncode = self.server._call({"op": "signal", "id": self.broker_id, "signal": int(sig)})["status"]

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            step = WAIT_STEP if deadline is None else max(0.0, min(WAIT_STEP, deadline - time.monotonic()))
            self.returncode = self.server._call({"op": "wait", "id": self.broker_id, "timeout": step})["status"]
            if self.returncode is None and deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"kafkalite broker {self.pid}", timeout or 0)
        return self.returncode


class ForkServer:
    """The warm server; see the module docstring."""

    def __init__(self, timeout: float = 30.0, start_ahead: bool = True):
        self.timeout = timeout
        self.start_ahead = start_ahead
        self.closed = False
        self._lock = threading.Lock()
        # data dirs of closed brokers, removed by a thread (removing directories costs
        # milliseconds each on some file systems; a test's teardown need not wait for it)
        self._trash: queue.Queue[Path | None] = queue.Queue()
        self._cleaner = threading.Thread(target=self._clean, name="kafkalite-forkserver-cleaner", daemon=True)
        self._cleaner.start()
        self.process = subprocess.Popen([sys.executable, "-P", "-m", "kafkalite.forkserver"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=_broker_env(), text=True, bufsize=1)
        hello = self._read()
        if hello.get("ready") is not True:
            raise RuntimeError(f"the kafkalite fork server did not start: {hello}")

    def _clean(self) -> None:
        while (path := self._trash.get()) is not None:
            shutil.rmtree(path, ignore_errors=True)

    def remove_later(self, path: Path) -> None:
        self._trash.put(path)

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait()
            raise RuntimeError(f"the kafkalite fork server exited (status {code})")
        return json.loads(line)

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self.closed:
                raise RuntimeError("the kafkalite fork server is closed")
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            answer = self._read()
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def start(self, timeout: float | None = None, **kwargs: Any):
        """A new broker, ready: a kafkalite.Broker (a data dir and log of the server's own are
        removed by close())."""
        unknown = set(kwargs) - set(START_KEYS)
        if unknown:
            raise TypeError(f"ForkServer.start() got unexpected argument(s) {', '.join(sorted(unknown))}")
        kwargs.setdefault("host", "127.0.0.1")
        token = kwargs.pop("controls_token", None)
        given_dir = kwargs.pop("data_dir", None)
        # a forked broker runs no new program: its command line stays the fork server's, unseen
        args = broker_args(**kwargs) + (["--controls-token", token] if token is not None else [])
        request: dict[str, Any] = {"op": "start", "args": args, "timeout": timeout or self.timeout,
                                   "ahead": self.start_ahead and given_dir is None}
        if given_dir is not None:
            request["data_dir"] = str(Path(given_dir).resolve())
        answer = self._call(request)
        data_dir, log_path = Path(answer["data_dir"]), Path(answer["log"])
        if answer.get("ready") is None:
            log = log_path.read_text(errors="replace") if log_path.exists() else ""
            if given_dir is None:
                self.remove_later(data_dir)
            raise RuntimeError(f"kafkalite did not become ready (exit status {answer.get('status')}); "
                               f"log:\n{log[-4000:]}")
        info = parse_ready_line(answer["ready"])
        return ForkedBroker(process=ForkedProcess(self, answer["pid"], answer["id"]), bootstrap=info["bootstrap"],  # type: ignore[arg-type]
                             data_dir=data_dir, log_path=log_path, listeners=info.get("listeners", {}),
                             metrics_url=info.get("metrics"), console_url=info.get("console"),
                             controls_url=info.get("controls"), nodes=info.get("nodes", {}),
                             schema_registry_url=info.get("schema_registry"), controls_token=token,
                             ca_path=Path(info["ca"]) if "ca" in info else None, _owned_data_dir=given_dir is None)

    @contextlib.contextmanager
    def running(self, **kwargs: Any) -> Iterator[Any]:
        broker = self.start(**kwargs)
        try:
            yield broker
        finally:
            broker.close()

    def close(self) -> None:
        self._trash.put(None)
        self._cleaner.join(30)
        with self._lock:  # no request is half written when stdin closes, and none follows
            self.closed = True
            assert self.process.stdin is not None
            with contextlib.suppress(OSError):
                self.process.stdin.close()  # the server kills what it forked and exits
        if self.process.poll() is None:
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "ForkServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ForkedBroker(Broker):
    """A kafkalite.Broker forked by a ForkServer: close() kills it (a test's broker has nothing
    to keep), without waiting for the process to end, and has its data dir removed by the
    server's cleaner thread; close(graceful=True) stops it with SIGTERM and waits first. A data
    dir of the caller's is kept, and its broker always stopped with SIGTERM: what is in the
    directory then is what a stopped broker leaves."""

    def close(self, graceful: bool = False) -> None:
        process = self.process
        if not self._owned_data_dir:
            self.stop()
            return
        if graceful:
            self.stop()
        elif isinstance(process, ForkedProcess):
            process.kill()  # the server reaps it; its port is free once the signal lands
        else:
            self.kill()
        if isinstance(process, ForkedProcess):
            process.server.remove_later(self.data_dir)
        else:
            shutil.rmtree(self.data_dir, ignore_errors=True)


# --- the server process ---------------------------------------------------------------------

def _warm_up() -> None:
    """Import what every broker start imports, once, before any fork."""
    from kafkalite.broker import cli, fast_start  # noqa: F401 - the CLI's own imports, once

    fast_start.hide_hypothesis()
    fast_start.import_kio_serial_without_asyncio()
    from kafkalite.broker import seed, server, supervisor  # noqa: F401
    from kafkalite.broker.controls import load_all as load_controls
    from kafkalite.broker.handlers import load_all as load_handlers

    load_handlers()
    load_controls()
    with contextlib.suppress(ImportError):  # the controls endpoint, when its libraries are there
        from kafkalite.broker.controls import http  # noqa: F401
        import hypercorn.trio  # noqa: F401
        import starlette.applications  # noqa: F401
    # what the coordinators would import on their first request
    from kafkalite.broker.groups import coordinator  # noqa: F401
    from kafkalite.broker.transactions import coordinator as txn  # noqa: F401


def _child(args: list[str], log: str, write_fd: int) -> None:
    """In the forked child: run the broker with stdout to the server's pipe, stderr to the log."""
    try:
        os.setpgid(0, 0)  # its own process group: a signal to the test run's group is not its
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(write_fd, 1)
        err = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(err, 2)
        for fd in (null, write_fd, err):
            os.close(fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own descriptors
        sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        from kafkalite.broker import cli

        code = cli.main(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the log gets it; the server sees the status
        import traceback

        traceback.print_exc()
        code = 1
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def _read_ready(fd: int, pid: int, timeout: float) -> str | None:
    import select
    import time

    deadline = time.monotonic() + timeout
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            return None  # the child exited without a ready line
        buf += chunk
    return buf.split(b"\n", 1)[0].decode(errors="replace").strip()


def _status(raw: int) -> int:
    return os.waitstatus_to_exitcode(raw)


def _wait(pid: int, timeout: float | None) -> int | None:
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            return _status(raw)
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(0.001)


def _die_with_parent() -> None:
    """Linux: the child gets SIGKILL when the server ends, however it ends (no orphan brokers)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class _Spare:
    """A child forked ahead of the next start request, waiting for its command line: the fork
    (tens of milliseconds for a process of this size on a busy machine) is off the start's path."""

    def __init__(self, others: dict[int, int]):
        args_read, self.args_write = os.pipe()
        self.out_read, out_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            _die_with_parent()
            os.close(self.args_write)
            os.close(self.out_read)
            for fd in others.values():
                os.close(fd)
            with os.fdopen(args_read) as f:
                request = json.loads(f.read() or "null")
            if request is None:  # the server is closing
                os._exit(0)
            _child(request["args"], request["log"], out_write)
        os.close(args_read)
        os.close(out_write)
        self.pid = pid

    def run(self, args: list[str], log: str) -> None:
        os.write(self.args_write, json.dumps({"args": args, "log": log}).encode())
        os.close(self.args_write)

    def discard(self) -> None:
        os.close(self.args_write)  # it reads nothing and exits
        os.close(self.out_read)
        _wait(self.pid, 5)


# command lines a broker is kept started for, the most recent last (a session uses one or two)
WARM_KEPT = 2


class _Server:
    """The server's state: its children, the spare fork, and a broker started ahead for each of
    the last command lines asked for, so that the next request for the same one is answered with
    a broker that is ready already (and another is started behind it)."""

    def __init__(self) -> None:
        # pid -> the read end of its stdout, for every child not reaped yet (spare, started ahead,
        # handed over): while a pid is here it is this server's child, whatever else runs
        self.children: dict[int, int] = {}
        # the server's own numbers for brokers handed over: pids are reused, these are not
        self.handed: dict[int, int] = {}  # broker id -> pid, until the broker is reaped
        self.statuses: dict[int, int] = {}  # broker id -> exit status, once reaped
        self.next_id = 1
        # json of the command line -> (pid, stdout read end, data dir, log path) of a started broker
        self.warm: dict[str, tuple[int, int, str, str]] = {}
        self.spare: _Spare | None = _Spare(self.children)

    def _launch(self, args: list[str], data_dir: str | None = None) -> tuple[int, int, str, str]:
        """Hand the spare fork a command line with the caller's data dir or a new one; fork the
        next spare."""
        if data_dir is None:
            data_dir = tempfile.mkdtemp(prefix="kafkalite-")
        else:
            os.makedirs(data_dir, exist_ok=True)
        log = os.path.join(data_dir, "broker.log")
        child, self.spare = self.spare, None
        assert child is not None
        child.run([*args, "--data-dir", data_dir], log)
        self.children[child.pid] = child.out_read
        self.spare = _Spare(self.children)
        return child.pid, child.out_read, data_dir, log

    def start(self, args: list[str], timeout: float, ahead: bool = True, data_dir: str | None = None) -> dict[str, Any]:
        """A broker for `args`; `ahead`: start the next one for them now (the caller's `data_dir`
        is not a command line to start ahead: only one broker can have it)."""
        self._reap()
        key = json.dumps(args)
        launched = self.warm.pop(key, None) if data_dir is None else None
        if launched is not None and launched[0] not in self.children:  # it ended while it waited
            shutil.rmtree(launched[2], ignore_errors=True)
            launched = None
        pid, read_fd, data_dir, log = launched or self._launch(args, data_dir)
        ready = _read_ready(read_fd, pid, timeout)
        if ready is None:
            os.kill(pid, signal.SIGKILL)  # unreaped: still this server's child
            status = _wait(pid, None)
            os.close(self.children.pop(pid))
            return {"pid": pid, "ready": None, "status": status, "data_dir": data_dir, "log": log}
        broker_id, self.next_id = self.next_id, self.next_id + 1
        self.handed[broker_id] = pid
        if ahead:
            # the next one for this command line starts now, while the test uses this one
            self.warm[key] = self._launch(args)
            while len(self.warm) > WARM_KEPT:
                self._discard(self.warm.pop(next(iter(self.warm))))
        return {"pid": pid, "id": broker_id, "ready": ready, "data_dir": data_dir, "log": log}

    def _reap(self) -> None:
        """Collect the children that exited (killed by their broker's close) without waiting."""
        for pid in list(self.children):
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                self._ended(pid, _status(raw))

    def _ended(self, pid: int, status: int) -> None:
        """A child reaped: its pid is free from now on, and a broker's status is kept by its id."""
        os.close(self.children.pop(pid))
        for broker_id, handed_pid in list(self.handed.items()):
            if handed_pid == pid:
                self.statuses[broker_id] = status
                del self.handed[broker_id]

    def _discard(self, launched: tuple[int, int, str, str]) -> None:
        pid, read_fd, data_dir, _log = launched
        if pid in self.children:  # not reaped: still this server's child
            os.kill(pid, signal.SIGKILL)
            if (status := _wait(pid, 5)) is not None:
                self._ended(pid, status)
        shutil.rmtree(data_dir, ignore_errors=True)

    def _pid(self, broker_id: int) -> int | None:
        """The pid of a broker not reaped yet; None once it has ended and been reaped."""
        if broker_id in self.handed:
            return self.handed[broker_id]
        if broker_id not in self.statuses:
            raise ValueError(f"no broker {broker_id}")
        return None

    def status(self, broker_id: int, timeout: float | None) -> int | None:
        pid = self._pid(broker_id)
        if pid is not None and (status := _wait(pid, timeout)) is not None:
            self._ended(pid, status)
        return self.statuses.get(broker_id)

    def signal(self, broker_id: int, sig: int) -> int | None:
        """Sends `sig` to a broker that has not been reaped (a zombie keeps its pid, so the signal
        cannot reach another process); returns the status of one that has."""
        pid = self._pid(broker_id)
        if pid is not None:
            os.kill(pid, sig)
        return self.statuses.get(broker_id)

    def close(self) -> None:
        if self.spare is not None:
            self.spare.discard()
        for launched in list(self.warm.values()):
            self._discard(launched)
        for pid in list(self.children):
            os.kill(pid, signal.SIGKILL)  # unreaped: still this server's child
            _wait(pid, 5)


def serve() -> None:
    import gc

    _warm_up()
    # what was imported stays put: the children's garbage collections do not touch (and copy) it
    gc.freeze()
    out = sys.stdout

    def answer(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    server = _Server()
    answer({"ready": True, "pid": os.getpid()})
    try:
        for line in sys.stdin:
            try:
                request = json.loads(line)
                op = request["op"]
                if op == "start":
                    answer(server.start(request["args"], float(request.get("timeout") or 30),
                                        ahead=request.get("ahead", True), data_dir=request.get("data_dir")))
                elif op == "poll":
                    answer({"status": server.status(int(request["id"]), 0)})
                elif op == "wait":
                    answer({"status": server.status(int(request["id"]), request.get("timeout"))})
                elif op == "signal":
                    answer({"status": server.signal(int(request["id"]), int(request["signal"]))})
                else:
                    raise ValueError(f"unknown op {op!r}")
            except Exception as exc:  # noqa: BLE001 - one bad request is answered, not fatal
                answer({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        server.close()  # stdin closed: the session is over; what it forked goes with it


if __name__ == "__main__":
    serve()
