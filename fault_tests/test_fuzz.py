"""Each fuzz target for a few seconds (the short mode), replaying the kept crashing inputs of
fault_tests/corpus/ first. The long mode is the same command without the time limit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECONDS = int(os.environ.get("KAFKALITE_FUZZ_SECONDS", "8"))

pytestmark = [pytest.mark.faults, pytest.mark.fuzz, pytest.mark.timeout(SECONDS + 120)]


@pytest.mark.parametrize("target", ["frames", "records", "recovery"])
def test_fuzz_target_finds_nothing(target, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "fault_tests.fuzz", target, "--seconds", str(SECONDS),
         "--corpus", str(tmp_path / "corpus"), "--artifacts", str(tmp_path / "artifacts")],
        cwd=ROOT, capture_output=True, text=True, timeout=SECONDS + 100,
        # the targets' scratch directories (broker data, logs) land under tmp_path
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)})
    out = proc.stderr + proc.stdout
    crashes = list((tmp_path / "artifacts").glob("*")) if (tmp_path / "artifacts").exists() else []
    assert proc.returncode == 0 and not crashes, (
        f"fuzz target {target} failed (exit {proc.returncode}); inputs kept in {crashes}:\n{out[-6000:]}")
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", out)
    assert runs and int(runs.group(1)) > 20, f"the fuzzer hardly ran:\n{out[-3000:]}"
    # the kept crashing inputs were replayed
    kept = len(list((ROOT / "fault_tests" / "corpus" / target).glob("*")))
    assert f"{kept} files found in {ROOT / 'fault_tests' / 'corpus' / target}" in out or kept == 0
