"""scripts/quick_tests.py: what scripts/quick.sh runs for a change."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

from kafkalite.tests.layout import REPO_ROOT


def quick_tests() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quick_tests", REPO_ROOT / "scripts" / "quick_tests.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_broker_change_runs_the_in_process_broker_tests_and_a_real_client_smoke() -> None:
    q = quick_tests()
    chosen = q.selection(["broker/cluster.py"])
    assert "broker/tests/handlers/test_produce_fetch.py" in chosen  # the typed fake context
    assert "broker/tests/test_topic_store.py" in chosen
    assert "broker/tests/test_wire.py" not in chosen  # starts a broker process (the wire fixture)
    assert "broker/tests/test_startup_errors.py" not in chosen  # runs the CLI
    assert not any(t.startswith(("protocol/", "storage/")) for t in chosen)
    assert [t for t in chosen if t.startswith("compat_tests/")] == [
        "compat_tests/test_produce_fetch.py::test_keys_and_values[librdkafka]"]


def test_areas_pick_their_smoke_and_changed_tests_run_themselves() -> None:
    q = quick_tests()
    chosen = q.selection(["kafkalite/broker/groups/classic.py", "storage/tests/test_log.py", "README.md"])
    assert "compat_tests/test_groups.py::test_consume_commit_and_resume[confluent-consumer]" in chosen
    assert "storage/tests/test_log.py" in chosen
    assert q.selection(["README.md", "docs/DESIGN.md"]) == []


def test_every_smoke_names_tests_that_exist() -> None:
    smokes = sorted({test for _, test in quick_tests().SMOKES})
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *smokes],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
