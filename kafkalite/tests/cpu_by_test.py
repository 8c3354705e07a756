"""A pytest plugin of this repository: the CPU time each test file's tests use in the test process
itself, for scripts/cpu_report.py (`KAFKALITE_CPU_REPORT=1 bash scripts/test.sh` loads it:
`-p kafkalite.tests.cpu_by_test --cpu-by-test=DIR`).

Why: the report reads every process's CPU from /proc, but a pytest-xdist worker runs the tests of
many files, so its CPU says nothing of which file used it. Here each test's setup, call and
teardown are timed with `time.process_time()` (this process's CPU, all its threads; not the
processes a test starts, which the report counts itself), and summed by the test's file; a module
or session fixture counts for the test that set it up. At the session's end each process that ran
tests writes `DIR/<pid>.json`: `{"test file": CPU-seconds}`.
"""

from __future__ import annotations

import collections
import json
import os
import time
from pathlib import Path
from typing import Iterator

import pytest

_used: collections.Counter[str] = collections.Counter()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-by-test", metavar="DIR", default=None,
                     help="write this process's CPU time by test file to DIR/<pid>.json at the session's end")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    started = time.process_time()
    yield
    _used[item.location[0]] += time.process_time() - started


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = session.config.getoption("--cpu-by-test")
    if out is None or not _used:  # an xdist controller runs no test itself
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / f"{os.getpid()}.json").write_text(json.dumps({f: round(s, 3) for f, s in _used.items()}))
