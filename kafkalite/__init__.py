"""Start a kafkalite broker from Python: ``with kafkalite.running() as broker: broker.bootstrap``.

The broker always runs as its own process (``python -P -m broker``) so that a caller's own
package called ``storage`` or ``protocol`` can never shadow ours (``-P`` keeps the working
directory off ``sys.path``).
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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

__all__ = ["Broker", "running", "READY_PATTERN"]

# The one line the broker prints on stdout once every listener accepts connections.
READY_PATTERN = re.compile(r"^kafkalite ready bootstrap=(?P<bootstrap>\S+)")

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Broker:
    """A running broker process."""

    process: subprocess.Popen
    bootstrap: str
    data_dir: Path
    log_path: Path
    _owned_data_dir: bool = field(default=False, repr=False)

    @property
    def host(self) -> str:
        return self.bootstrap.rsplit(":", 1)[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

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
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def broker_command(args: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-P", "-m", "broker", *args]


def _broker_env() -> dict[str, str]:
    env = dict(os.environ)
    # Point the child at the copy of our packages this module was imported from
    # (a source checkout or site-packages), ahead of anything else.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p
    )
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def start(
    *,
    data_dir: str | os.PathLike | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    extra_args: Sequence[str] = (),
    log_path: str | os.PathLike | None = None,
    timeout: float = 20.0,
) -> Broker:
    """Start a broker process and wait for its ready line."""
    owned = data_dir is None
    data_path = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="kafkalite-"))
    data_path.mkdir(parents=True, exist_ok=True)
    if log_path is None:
        log_path = data_path / "broker.log" if not owned else Path(tempfile.mkstemp(prefix="kafkalite-", suffix=".log")[1])
    log_path = Path(log_path)
    log_file = open(log_path, "ab")
    args = ["--host", host, "--port", str(port), "--data-dir", str(data_path), *extra_args]
    proc = subprocess.Popen(
        broker_command(args),
        stdout=subprocess.PIPE,
        stderr=log_file,
        stdin=subprocess.DEVNULL,
        env=_broker_env(),
    )
    log_file.close()
    bootstrap = _wait_ready(proc, timeout, log_path)
    return Broker(process=proc, bootstrap=bootstrap, data_dir=data_path, log_path=log_path, _owned_data_dir=owned)


def _wait_ready(proc: subprocess.Popen, timeout: float, log_path: Path) -> str:
    found: list[str] = []

    def reader() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode(errors="replace").strip()
            m = READY_PATTERN.match(line)
            if m and not found:
                found.append(m.group("bootstrap"))
        # keep draining so the child never blocks on a full pipe

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found:
            return found[0]
        if proc.poll() is not None:
            break
        time.sleep(0.005)
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
) -> Iterator[Broker]:
    """Run a broker for the duration of the block; an ephemeral data dir is removed afterwards."""
    broker = start(data_dir=data_dir, host=host, port=port, extra_args=extra_args)
    try:
        yield broker
    finally:
        broker.stop()
        if broker._owned_data_dir:
            shutil.rmtree(broker.data_dir, ignore_errors=True)
