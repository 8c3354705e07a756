"""The test helpers of other languages, run by their own test runners against this checkout's
broker, and their controls clients checked against the control table.

- go/kafkalitetest: `go test` (its tests use franz-go and sarama), modules from the Go module
  proxy into .cache/go/mod as compat_tests/go's are (compat_tests.clients.golang.go_env).
- The generated clients (kafkalite.controls_codegen) equal what the control table makes now.

The helpers find the broker through KAFKALITE_CMD, here this checkout's `python -P -m kafkalite`.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalite import controls_codegen

REPO = Path(__file__).resolve().parents[2]
GO_DIR = REPO / "go" / "kafkalitetest"


def _broker_env() -> dict[str, str]:
    env = dict(os.environ)
    env["KAFKALITE_CMD"] = f"{sys.executable} -P -m kafkalite"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_generated_clients_match_the_control_table():
    assert controls_codegen.differing() == [], "run python -m kafkalite.controls_codegen"


def test_a_changed_table_makes_every_client_differ():
    table = copy.deepcopy(controls_codegen.table())
    reset = next(c for c in table if c["name"] == "reset")
    reset["parameters"]["keep_topics"] = {"required": False, "default": False, "type": "boolean"}
    assert sorted(controls_codegen.differing(tbl=table)) == sorted(controls_codegen.sources(table))
    assert "KeepTopics *bool" in controls_codegen.go_source(table)
    assert "keep_topics?: boolean | null;" in controls_codegen.dts_source(table)


@pytest.mark.franz
@pytest.mark.sarama
@pytest.mark.timeout(900)
def test_go_helper_with_franz_go_and_sarama():
    from compat_tests.clients.golang import go_env

    if shutil.which("go") is None:
        pytest.fail("go is not installed (scripts/install-test-deps.sh installs it)")
    env = {**go_env(), **{k: v for k, v in _broker_env().items() if k in ("KAFKALITE_CMD", "PYTHONPATH")}}
    vet = _run(["go", "vet", "./..."], GO_DIR, env, 600)
    assert vet.returncode == 0, vet.stderr
    unformatted = _run(["gofmt", "-l", "."], GO_DIR, env, 60)
    assert unformatted.stdout == "", f"gofmt would change: {unformatted.stdout}"
    result = _run(["go", "test", "-count=1", "-p", "1", "-v", "./..."], GO_DIR, env, 800)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    passed = [line for line in result.stdout.splitlines() if line.startswith("--- PASS: Test")]
    assert len(passed) >= 5, result.stdout
