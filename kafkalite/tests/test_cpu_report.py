"""scripts/cpu_report.py: every process's CPU time by program and by the test file that started it;
kafkalite/tests/cpu_by_test.py: the CPU of the tests in the pytest process itself, by test file."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from kafkalite.tests.layout import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "cpu_report.py"


def _module():
    spec = importlib.util.spec_from_file_location("cpu_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_a_process_is_named_by_its_program() -> None:
    program = _module().program
    assert program(["/usr/lib/jvm/bin/java", "-Xmx512m", "-cp", "a.jar:b.jar", "--add-opens", "java.base/java.lang=ALL",
                    "kafka.Kafka", "server.properties"]) == "java:Kafka"
    assert program(["java", "-Dx=1", "-jar", "/tmp/surefire/booter.jar", "x"]) == "java:booter.jar"
    assert program(["/venv/bin/python", "-P", "-m", "kafkalite", "--port", "0"]) == "py:-m kafkalite"
    assert program(["python3", "-u", "compat_tests/groups/py_member.py", "g"]) == "py:groups/py_member.py"
    assert program(["python3", "-c", "import x"]) == "py:-c"
    assert program(["node", "/repo/compat_tests/node/driver.js"]) == "node:driver.js"
    assert program(["/usr/bin/kcat", "-L"]) == "kcat"
    assert program([]) == "?"


def test_a_process_counts_for_the_test_file_that_started_it(tmp_path: Path) -> None:
    out = tmp_path / "report.txt"
    reporter = subprocess.Popen([sys.executable, str(SCRIPT), "--out", str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert reporter.stdout is not None
        # its first sample taken: what runs already then would count only from there
        assert reporter.stdout.readline() == "sampling\n"
        # a busy process of a "test", 1.5 s of its own CPU time; it stays alive until the reporter
        # has stopped, whose last sample, taken after the signal, sees all of it
        env = {**os.environ, "PYTEST_CURRENT_TEST": "fake_tests/test_burn.py::test_burn (call)"}
        burn = ("import sys, time\nend = time.process_time() + 1.5\nwhile time.process_time() < end: pass\n"
                "print('burnt', flush=True)\nsys.stdin.read()")
        busy = subprocess.Popen([sys.executable, "-c", burn], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
        assert busy.stdout is not None and busy.stdin is not None
        assert busy.stdout.readline() == "burnt\n"
    finally:
        reporter.send_signal(signal.SIGTERM)
        assert reporter.wait(30) == 0
    busy.stdin.close()
    assert busy.wait(30) == 0
    report = out.read_text()
    [line] = [line for line in report.splitlines() if line.endswith("  fake_tests/test_burn.py  py:-c")]
    assert 1.3 <= float(line.split()[0]) <= 3.0, report
    assert "the machine busy for" in report.splitlines()[0]


def test_the_tests_own_cpu_is_summed_by_file_and_reported(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_burn.py").write_text(
        "import time\n\ndef test_burn():\n    end = time.process_time() + 1.0\n"
        "    while time.process_time() < end:\n        pass\n\ndef test_again():\n"
        "    end = time.process_time() + 0.5\n    while time.process_time() < end:\n        pass\n")
    (project / "test_idle.py").write_text("import time\n\ndef test_idle():\n    time.sleep(1.0)\n")
    out = tmp_path / "cpu-by-test"
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "kafkalite.tests.cpu_by_test",
                          f"--cpu-by-test={out}", "test_burn.py", "test_idle.py"], cwd=project, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [written] = out.glob("*.json")
    used = json.loads(written.read_text())
    assert 1.5 <= used["test_burn.py"] <= 2.5 and used["test_idle.py"] < 0.5, used
    (out / "1.json").write_text(json.dumps({"test_burn.py": 1.0, "other/test_x.py": 0.25}))
    section = _module().in_process_report(out, top=5).splitlines()
    assert section[1].startswith("CPU-seconds of the tests in the pytest processes themselves"), section
    # every process's file summed, the costliest first
    assert [line.split()[1] for line in section[2:]] == ["test_burn.py", "other/test_x.py", "test_idle.py"]
    assert float(section[2].split()[0]) == round(used["test_burn.py"] + 1.0, 1)
