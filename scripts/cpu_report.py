"""Where a full run's CPU went: every process's CPU time, by what the process is and by the test
file that started it.

The full command's budget is CPU, not waiting: its parts run side by side and keep both cores of
this project's machines about 95 % busy, so a part's wall time says little about what it costs.
`KAFKALITE_CPU_REPORT=1 bash scripts/test.sh` runs this beside the whole command:

    python scripts/cpu_report.py --out REPORT   # until SIGTERM or SIGINT, then writes REPORT

It prints "sampling" once its first sample is taken.

Every 0.5 s it reads each process's CPU ticks (/proc/PID/stat: user + system) and keeps the last
seen, so a process's whole CPU time counts once it has been seen, however it ends. Each process is
named by its program: a JVM by its main class (`java:Kafka`, `java:ToolHarness`), a Python one by
its module or script (`py:-m kafkalite`), anything else by its executable; a shell that execs a
program is named again by what it became. The test file is the one in PYTEST_CURRENT_TEST of the
process's environment: pytest sets it in the test process, and the processes a test starts
inherit it (a session fixture's process counts for the test that first asked for it).
Processes living less than the sampling interval are missed: the report says how much of the
machine's busy time (/proc/stat) it saw. Only the standard library: it runs in any Python.

A pytest process runs the tests of many files itself. With `--in-process DIR`, the report also
lists the CPU those tests used in it, by test file, from the JSON files that
kafkalite/tests/cpu_by_test.py writes into DIR at each pytest session's end.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
INTERVAL_S = 0.5
# a process named by one of these may yet exec its real program: read its command line again
SHELLS = frozenset({"bash", "sh", "dash", "env", "?"})
# JVM options followed by a value in the next argument
JAVA_OPTIONS_WITH_VALUE = frozenset({"-cp", "-classpath", "--class-path", "--add-opens", "--add-exports",
                                     "--add-modules", "--module-path", "-p"})


def program(argv: list[str]) -> str:
    """What a process is, from its command line: `java:MainClass`, `py:-m module`, `py:script`,
    `node:script.js`, else the executable's name."""
    if not argv:
        return "?"
    exe = os.path.basename(argv[0])
    args = argv[1:]
    if exe.startswith("java"):
        skip = False
        for i, arg in enumerate(args):
            if skip:
                skip = False
            elif arg in JAVA_OPTIONS_WITH_VALUE:
                skip = True
            elif arg == "-jar":
                return "java:" + (os.path.basename(args[i + 1]) if i + 1 < len(args) else "?")
            elif not arg.startswith("-"):
                return "java:" + arg.rsplit(".", 1)[-1]
        return "java:?"
    if exe.startswith("python"):
        while args and args[0].startswith("-") and args[0] not in ("-m", "-c"):
            args = args[1:]
        if not args:
            return "py"
        if args[0] == "-m":
            return f"py:-m {args[1] if len(args) > 1 else ''}"
        if args[0] == "-c":
            return "py:-c"
        return "py:" + "/".join(Path(args[0]).parts[-2:])
    if exe in ("node", "nodejs"):
        return "node:" + (os.path.basename(args[0]) if args else "")
    return exe


@dataclass
class Seen:
    """One process as last sampled."""

    program: str
    test_file: str
    ticks: int  # user + system CPU ticks at the last sample
    ticks_before: int  # its ticks when the report started, for a process already running then


def _read_argv_and_test_file(pid: str) -> tuple[list[str], str]:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    test_file = ""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if entry.startswith(b"PYTEST_CURRENT_TEST="):
                    test_file = entry[len(b"PYTEST_CURRENT_TEST="):].decode(errors="replace").split("::")[0]
    except OSError:  # another user's process
        pass
    return argv, test_file


class Sampler:
    """Every process's CPU ticks, sampled; keyed by pid and start time (a pid can be reused)."""

    def __init__(self) -> None:
        self.processes: dict[tuple[str, str], Seen] = {}
        self.own_pid = str(os.getpid())

    def sample(self, first: bool = False) -> None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid == self.own_pid:
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
                # the fields after the command name, which may itself hold spaces and parentheses
                fields = stat[stat.rindex(")") + 2:].split()
                ticks, started = int(fields[11]) + int(fields[12]), fields[19]
                seen = self.processes.get((pid, started))
                if seen is None:
                    argv, test_file = _read_argv_and_test_file(pid)
                    self.processes[(pid, started)] = Seen(program(argv), test_file, ticks, ticks if first else 0)
                    continue
                if seen.program in SHELLS:
                    argv, test_file = _read_argv_and_test_file(pid)
                    seen.program, seen.test_file = program(argv), test_file or seen.test_file
                seen.ticks = ticks
            except (OSError, ValueError, IndexError):  # the process ended meanwhile
                continue

    def report(self, wall_s: float, machine_busy_s: float, top: int) -> str:
        by_program: collections.Counter[str] = collections.Counter()
        count: collections.Counter[str] = collections.Counter()
        by_file: collections.Counter[str] = collections.Counter()
        by_file_program: collections.Counter[tuple[str, str]] = collections.Counter()
        for seen in self.processes.values():
            used = seen.ticks - seen.ticks_before
            by_program[seen.program] += used
            count[seen.program] += 1
            by_file[seen.test_file or "(no test: the install, the pytest workers, lint)"] += used
            if seen.test_file:
                by_file_program[(seen.test_file, seen.program)] += used
        total = sum(by_program.values()) / TICKS_PER_SECOND
        lines = [f"{wall_s:.0f} s of wall time; the machine busy for {machine_busy_s:.0f} CPU-seconds, "
                 f"{total:.0f} of them in the processes sampled",
                 "", f"CPU-seconds by program (processes), the top {top}:"]
        lines += [f"{ticks / TICKS_PER_SECOND:8.1f}  {count[name]:5d}  {name}" for name, ticks in by_program.most_common(top)]
        lines += ["", f"CPU-seconds by the test file that started the process, the top {top}:"]
        lines += [f"{ticks / TICKS_PER_SECOND:8.1f}  {name}" for name, ticks in by_file.most_common(top)]
        lines += ["", f"CPU-seconds by test file and program, the top {top}:"]
        lines += [f"{ticks / TICKS_PER_SECOND:8.1f}  {name}  {prog}"
                  for (name, prog), ticks in by_file_program.most_common(top)]
        return "\n".join(lines) + "\n"


def in_process_report(folder: Path, top: int) -> str:
    """The CPU of the tests in the pytest processes themselves, by test file (cpu_by_test.py's files)."""
    by_file: collections.Counter[str] = collections.Counter()
    for path in sorted(folder.glob("*.json")):
        for test_file, seconds in json.loads(path.read_text()).items():
            by_file[test_file] += seconds
    lines = ["", f"CPU-seconds of the tests in the pytest processes themselves, by test file "
             f"({sum(by_file.values()):.0f} in all), the top {top}:"]
    lines += [f"{seconds:8.1f}  {name}" for name, seconds in by_file.most_common(top)]
    return "\n".join(lines) + "\n"


def machine_busy_ticks() -> int:
    """Busy clock ticks of all cores so far (/proc/stat: user nice system irq softirq steal)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    return user + nice + system + irq + softirq + steal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the report, written when stopped")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--in-process", type=Path, metavar="DIR",
                        help="also the tests' CPU in the pytest processes, from kafkalite/tests/cpu_by_test.py's files")
    args = parser.parse_args(argv)
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sampler = Sampler()
    started, busy_before = time.monotonic(), machine_busy_ticks()
    sampler.sample(first=True)
    # what starts from here counts in full: a caller may wait for this line
    print("sampling", flush=True)
    while not stopping:
        time.sleep(INTERVAL_S)
        sampler.sample()
    sampler.sample()  # once more after the signal: what is still running counts to its end
    busy = (machine_busy_ticks() - busy_before) / TICKS_PER_SECOND
    report = sampler.report(time.monotonic() - started, busy, args.top)
    if args.in_process is not None:
        report += in_process_report(args.in_process, args.top)
    args.out.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
