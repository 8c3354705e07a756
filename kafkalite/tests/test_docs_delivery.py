"""docs/delivery.md's samples work as printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kafkalite
from kafkalite.tests.test_language_helpers import _doc_block

REPO = Path(__file__).resolve().parent.parent.parent
DOC = REPO / "docs" / "delivery.md"


@pytest.mark.timeout(300)
def test_the_transactional_copier_is_exactly_once_under_chaos_as_printed(tmp_path: Path):
    """The doc's Python sample, run as `python billing.py` prints it: a transactional copier under
    chaos=42 whose delivery audit says exactly once, beside faults the chaos log lists."""
    (tmp_path / "billing.py").write_text(_doc_block(DOC, "### A pipeline under chaos, audited", "python"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "billing.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.startswith("exactly once: 100 orders consumed, 100 invoices, 0 lost, 0 duplicated; "
                                  "chaos faults {"), done.stdout
    assert "{}" not in done.stdout, "chaos injected no fault"


def test_the_documented_python_settings_start_chaos():
    """`kafkalite.running(chaos=42, chaos_profile="harsh")`, as the doc writes it."""
    with kafkalite.running(controls=0, chaos=42, chaos_profile="harsh") as broker:
        state = broker.controls.call("chaos")
        assert (state["enabled"], state["seed"], state["profile"]) == (True, 42, "harsh"), state
