"""docs/java.md as printed: its pom (scripts/maven/java-example/pom.xml, resolved from Maven Central
by scripts/install-test-deps.sh into .deps/maven/java-example) and its JUnit 5 test
(examples/java/KafkaliteRoundTripTest.java), compiled with javac and run with JUnit's console
launcher against a kafkalite broker, with the commands the page shows."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import kafkalite
from kafkalite.tests import suite_brokers

pytestmark = [pytest.mark.java, pytest.mark.timeout(300)]

ROOT = Path(kafkalite.__file__).resolve().parent.parent
DOC = ROOT / "docs" / "java.md"
POM = ROOT / "scripts" / "maven" / "java-example" / "pom.xml"
TEST = ROOT / "examples" / "java" / "KafkaliteRoundTripTest.java"
JARS = Path(os.environ.get("KAFKALITE_DEPS_DIR") or ROOT / ".deps") / "maven" / "java-example"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_page_shows_the_files_the_suite_runs():
    assert POM.read_text().split("<project", 1)[1] in _blocks("xml")[0]
    assert _blocks("java")[0] == TEST.read_text()


def test_the_junit_test_passes_against_kafkalite(tmp_path):
    jars = sorted(JARS.glob("*.jar"))
    if not any(j.name.startswith("junit-platform-console-standalone") for j in jars):
        pytest.fail(f"no JUnit console launcher in {JARS}: run scripts/install-test-deps.sh (java-example)")
    # the page's commands, from a folder laid out as it says: lib/ (the jars) and the test
    shutil.copytree(JARS, tmp_path / "lib")
    shutil.copy2(TEST, tmp_path / TEST.name)
    [shell] = [b for b in _blocks("sh") if "javac" in b]
    commands = [line for line in shell.splitlines() if line.startswith(("javac", "java "))]
    assert len(commands) == 2, shell
    with suite_brokers.running() as broker:
        env = dict(os.environ, KAFKA_BOOTSTRAP=broker.bootstrap)
        for command in commands:
            done = subprocess.run(["sh", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=240)
            assert done.returncode == 0, f"{command}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert "1 tests successful" in done.stdout and "0 tests failed" in done.stdout, done.stdout
