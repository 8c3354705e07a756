"""Sample a running broker with py-spy and summarise where its time goes.

``record(pid, path)`` is a context manager: py-spy samples the process while the block runs
(``py-spy record --format raw --function --nonblocking``, collapsed stacks), and
``summarize(path)`` turns the samples into two top lists: functions by *self* samples (the
frame on top of the stack) and by *inclusive* samples (anywhere on the stack), as
percentages of all active samples. Idle threads (waiting in epoll/select) are not sampled.

    pip install py-spy
    python -m bench.profile SAMPLES.txt            # summarise an earlier recording
    python -m bench.throughput --profile DIR      # record kafkalite during produce / consume
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


def py_spy() -> str | None:
    exe = shutil.which("py-spy")
    if exe:
        return exe
    cand = Path(sys.executable).parent / "py-spy"
    return str(cand) if cand.exists() else None


@contextlib.contextmanager
def record(pid: int, path: str | os.PathLike, rate: int = 250, native: bool = False) -> Iterator[Path]:
    """Record ``pid`` with py-spy for the duration of the block into ``path`` (raw format)."""
    exe = py_spy()
    if exe is None:
        raise RuntimeError("py-spy is not installed (pip install py-spy)")
    path = Path(path)
    cmd = [exe, "record", "--pid", str(pid), "--format", "raw", "--function", "--nonblocking",
           "--rate", str(rate), "-o", str(path)]
    if native:
        cmd.append("--native")
    log = path.with_suffix(".py-spy.log")
    with open(log, "wb") as logf:
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    time.sleep(0.3)  # let py-spy attach before the work starts
    try:
        yield path
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# this checkout's root: our own files are shown relative to it
_REPO = str(Path(__file__).resolve().parent.parent) + "/"
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*)\)$")


def _short(frame: str) -> str:
    """``func (path/to/file.py)`` -> ``func (file.py)`` with package-relative path when ours."""
    m = _FRAME.match(frame)
    if not m:
        return frame
    f = m.group("file")
    for marker in ("/site-packages/", "/lib/python3", _REPO):
        if marker in f:
            f = f.split(marker, 1)[1]
            if marker == "/lib/python3":
                f = "stdlib/" + f.split("/", 1)[-1]
            break
    return f"{m.group('func')} ({f})"


@dataclass
class Summary:
    total: int
    self_counts: collections.Counter
    incl_counts: collections.Counter

    def render(self, top: int = 25, title: str = "") -> str:
        if self.total == 0:
            return f"{title}: no samples"
        lines = [f"{title} ({self.total} active samples)" if title else f"{self.total} active samples"]
        lines.append("  self%   function (top of stack)")
        for fn, c in self.self_counts.most_common(top):
            lines.append(f"  {100.0 * c / self.total:5.1f}   {fn}")
        lines.append("  incl%   function (anywhere on stack)")
        for fn, c in self.incl_counts.most_common(top):
            lines.append(f"  {100.0 * c / self.total:5.1f}   {fn}")
        return "\n".join(lines)

    def to_json(self, top: int = 40) -> dict:
        return {
            "active_samples": self.total,
            "self_pct": {fn: round(100.0 * c / self.total, 2) for fn, c in self.self_counts.most_common(top)},
            "inclusive_pct": {fn: round(100.0 * c / self.total, 2) for fn, c in self.incl_counts.most_common(top)},
        }


def summarize(path: str | os.PathLike) -> Summary:
    self_counts: collections.Counter = collections.Counter()
    incl_counts: collections.Counter = collections.Counter()
    total = 0
    for line in Path(path).read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [_short(f) for f in stack.split(";")]
        # py-spy puts the thread name first ("process 123:..." / "thread (0x...)") when asked;
        # drop frames that are not "func (file)".
        frames = [f for f in frames if _FRAME.match(f)]
        if not frames:
            continue
        total += n
        self_counts[frames[-1]] += n
        for f in set(frames):
            incl_counts[f] += n
    return Summary(total, self_counts, incl_counts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="summarise a py-spy raw recording")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    for f in args.files:
        print(summarize(f).render(args.top, title=f))


if __name__ == "__main__":
    main()
