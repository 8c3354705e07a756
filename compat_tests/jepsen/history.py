"""Histories as JSON lines: one operation per line, in the order they happened.

Fields: ``index`` (position), ``time`` (seconds since the run began), ``process``, ``type``
(invoke / ok / fail / info), ``f``, ``value``; optional ``isolation``, ``abort``,
``commit_offsets``, ``rebalance_log``, ``error``, ``client``. See checker.py for the values.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Iterable


def write_history(path: str | Path, ops: Iterable[dict[str, Any]]) -> None:
    with open(path, "w") as f:
        for op in ops:
            f.write(json.dumps(op, separators=(",", ":")) + "\n")


def read_history(path: str | Path) -> list[dict[str, Any]]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Recorder:
    """Thread-safe: appends operations with their index and time, and to a file as they come
    (so a run that dies still leaves its history)."""

    def __init__(self, path: str | Path | None = None):
        self.ops: list[dict[str, Any]] = []
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self._file = open(path, "w") if path is not None else None

    def record(self, **op: Any) -> dict[str, Any]:
        with self._lock:
            op = {"index": len(self.ops), "time": round(time.monotonic() - self.t0, 4), **op}
            self.ops.append(op)
            if self._file is not None:
                self._file.write(json.dumps(op, separators=(",", ":")) + "\n")
                self._file.flush()
            return op

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
