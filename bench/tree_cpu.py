"""The CPU a command costs, its whole process tree included: how scripts/test.sh's parts (a pytest
selection, an install step) are compared before and after a change, since on a machine shared
with other work the wall time says little and the CPU time of the command's own process less
(a JVM a test starts is a grandchild, and some are never waited for by anything in the tree).

The figure is the command's children's rusage (every descendant that the command, or a descendant
of it, waited for) plus, for each descendant that left the tree (re-parented to init when its parent
exited first, so never waited for inside it), the CPU it had used when last seen. The tree is
sampled from /proc every 0.3 s, so such an escaped process's last 0.3 s may be missed; a process
that is re-parented away before it is first seen is missed whole. Linux only.

    python -m bench.tree_cpu COMMAND [ARG...]
    python -m bench.tree_cpu python -m pytest -n 3 --dist loadfile spark_tests

prints `tree cpu: waited W + escaped E (N processes) = T core-s, wall S s` on stderr and exits
with the command's status.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.3


def processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, CPU ticks used by it and its waited-for children) of every process."""
    found: dict[int, tuple[int, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after the command name, which may hold spaces
        utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
        found[int(entry.name)] = (int(fields[1]), utime + stime + cutime + cstime)
    return found


def run(command: list[str]) -> tuple[int, float, float, int, float]:
    """(exit status, waited-for CPU s, escaped CPU s, escaped processes, wall s) of `command`."""
    started = time.monotonic()
    proc = subprocess.Popen(command)
    tree = {proc.pid}
    last_ticks: dict[int, int] = {}
    escaped: set[int] = set()
    while proc.poll() is None:
        seen = processes()
        grew = True
        while grew:  # a child seen before its parent joins on the next pass
            grew = False
            for pid, (parent, _) in seen.items():
                if pid not in tree and parent in tree:
                    tree.add(pid)
                    grew = True
        for pid in tree & seen.keys():
            parent, ticks = seen[pid]
            last_ticks[pid] = ticks
            if pid != proc.pid and parent not in tree:
                escaped.add(pid)
        time.sleep(SAMPLE_S)
    wall = time.monotonic() - started
    seen = processes()
    for pid in escaped & seen.keys():
        last_ticks[pid] = seen[pid][1]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    escaped_s = sum(last_ticks[pid] for pid in escaped) / CLOCK_TICKS
    return proc.returncode, usage.ru_utime + usage.ru_stime, escaped_s, len(escaped), wall


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    status, waited, escaped, count, wall = run(argv)
    print(f"tree cpu: waited {waited:.1f} + escaped {escaped:.1f} ({count} processes) = {waited + escaped:.1f} core-s,"
          f" wall {wall:.1f} s", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
