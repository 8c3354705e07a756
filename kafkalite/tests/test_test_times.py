"""scripts/test_times.py: a full run's test time summed per test file, from the passes' JUnit XML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafkalite.tests.layout import REPO_ROOT

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="compat_tests.test_groups" name="test_a[x]" time="3.5" />
<testcase classname="compat_tests.test_groups" name="test_b" time="1.25" />
<testcase classname="kafkalite.storage.tests.test_log_stateful.LogMachine" name="runTest" time="9.0" />
</testsuite></testsuites>"""


def test_files_are_ranked_by_summed_time_with_their_slowest_test(tmp_path: Path) -> None:
    (tmp_path / "kafkalite.xml").write_text(JUNIT)
    out = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "test_times.py"), "--top", "2",
                          str(tmp_path / "kafkalite.xml"), str(tmp_path / "lowest.xml")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "kafkalite: 3 tests, 14 s of test time"
    # a test class's name is not part of the file; the file with the most time comes first
    assert lines[2].split() == ["kafkalite", "9.0", "s", "1", "kafkalite/storage/tests/test_log_stateful.py",
                                "(runTest", "9.0", "s)"]
    assert lines[3].split() == ["kafkalite", "4.8", "s", "2", "compat_tests/test_groups.py",
                                "(test_a[x]", "3.5", "s)"]
    assert "lowest.xml: no such file" in out.stderr  # a pass that did not finish is named, not fatal
