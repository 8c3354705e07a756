"""The loadfile scheduler of kafkalite/tests/shared_sessions.py: the files of a shared-session group
are one unit of work, run by one xdist worker; every other file is its own unit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from kafkalite.tests.layout import REPO_ROOT
from kafkalite.tests.shared_sessions import SHARED_SESSIONS, SharedSessionScheduling


def test_every_grouped_file_exists() -> None:
    """A renamed file would silently leave its group (and start its session on a worker of its own)."""
    missing = [path for paths in SHARED_SESSIONS.values() for path in paths if not (REPO_ROOT / path).is_file()]
    assert not missing


def test_a_group_is_one_scope_and_other_files_keep_their_own() -> None:
    split = SharedSessionScheduling._split_scope
    scheduler = object.__new__(SharedSessionScheduling)  # _split_scope reads no state
    for paths in SHARED_SESSIONS.values():
        scopes = {split(scheduler, f"{path}::test_x[a-b]") for path in paths}
        assert len(scopes) == 1 and scopes.pop() not in paths
    other = "kafkalite/tests/test_layout.py"
    assert split(scheduler, f"{other}::test_y") == other
    assert len({split(scheduler, f"{paths[0]}::t") for paths in SHARED_SESSIONS.values()}) == len(SHARED_SESSIONS)


def test_a_group_runs_on_one_worker_beside_other_files(tmp_path: Path) -> None:
    """pytest -n 3 --dist loadfile with the plugin: the Spark group's two files on one worker, the
    other files spread over the others. Only xdist and the plugin are loaded (the other installed
    plugins would cost each worker a second of start-up).

    Where the files go is decided before any test runs, so no worker's speed moves them: xdist
    hands each worker one unit of work, the largest first (a worker with at most two tests
    pending would get a second; none has here). The group, one unit of six tests, goes to one
    worker and the first two other files to the other two. Were the group's files two units,
    they would go to two workers."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    grouped = SHARED_SESSIONS["spark session"]
    others = [f"other/test_other_{i}.py" for i in range(5)]
    for path in (*grouped, *others):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("".join(f"def test_{i}():\n    pass\n" for i in range(3)))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "xdist",
                           "-p", "kafkalite.tests.shared_sessions", "-n", "3", "--dist", "loadfile", "-v", *grouped, "other"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    worker_of: dict[str, set[str]] = {}
    for worker, path in re.findall(r"\[(gw\d+)\][^\n]*PASSED (\S+?)::", proc.stdout):
        worker_of.setdefault(path, set()).add(worker)
    assert set(worker_of) == {*grouped, *others}, proc.stdout
    assert len(set.union(*(worker_of[p] for p in grouped))) == 1, worker_of
    assert len(set.union(*(worker_of[p] for p in others))) > 1, worker_of


def test_a_run_without_xdist_is_not_refused(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "kafkalite.tests.shared_sessions", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr
