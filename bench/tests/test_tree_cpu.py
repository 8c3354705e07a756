"""bench.tree_cpu: /proc read as it is, a descendant's CPU counted, the command's status passed on."""

from __future__ import annotations

import os
import sys

from bench.tree_cpu import processes, run

BURN = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n"


def test_processes_names_this_process_and_its_parent() -> None:
    parent, ticks = processes()[os.getpid()]
    assert parent == os.getppid() and ticks > 0


def test_a_grandchilds_cpu_is_counted_and_the_status_passed_on() -> None:
    child = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {BURN!r}])\nsys.exit(3)\n"
    status, waited, escaped, count, wall = run([sys.executable, "-c", child])
    assert status == 3
    assert waited >= 0.4 and escaped == 0 and count == 0
    assert wall >= 0.4
