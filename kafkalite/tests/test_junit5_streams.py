"""A Kafka Streams exactly-once application tested with the JUnit 5 extension
(examples/streams/java/CountEosTest.java): the extension's sources and the test compiled with javac
against kafka-streams' jar set (.deps/maven/kafka-streams) and JUnit's console launcher, and run by
the launcher against this checkout's broker, which the extension starts (KAFKALITE_CMD).

The test resets the broker between its two tests, injects a fault through the controls client in
each (a refused TxnOffsetCommit that aborts a transaction, retried Produce errors) and reads the
output read_committed: each input counted once."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kafkalite.tests.test_language_helpers import REPO, SHORT_JVM, _broker_env, _run

pytestmark = [pytest.mark.java, pytest.mark.streams, pytest.mark.exactly_once, pytest.mark.timeout(300)]

DEPS = Path(os.environ.get("KAFKALITE_DEPS_DIR") or REPO / ".deps") / "maven"
EXTENSION_SOURCES = REPO / "java" / "kafkalite-junit5" / "src" / "main" / "java" / "dev" / "kafkalite" / "junit5"
TEST = REPO / "examples" / "streams" / "java" / "CountEosTest.java"


def test_kafka_streams_eos_application_with_the_junit5_extension(tmp_path):
    if shutil.which("javac") is None:
        pytest.fail("javac is not installed (a JDK 17+; scripts/install-test-deps.sh)")
    launcher = sorted((DEPS / "java-example").glob("junit-platform-console-standalone-*.jar"))
    streams = sorted((DEPS / "kafka-streams").glob("*.jar"))
    assert launcher and streams, f"no JUnit launcher or Kafka Streams jars under {DEPS}: run scripts/install-test-deps.sh"
    # kafka-streams' own kafka-clients (4.3.0) only: the java-example set's 4.4.0 would be a second one
    classpath = os.pathsep.join(map(str, [*streams, launcher[-1]]))
    classes = tmp_path / "classes"
    # testcontainers to compile the extension's KafkaliteContainer; the run goes without it, as a
    # project without testcontainers does
    testcontainers = sorted((DEPS / "testcontainers-java").glob("*.jar"))
    compiled = _run(["javac", *(f"-J{flag}" for flag in SHORT_JVM), "-nowarn", "-encoding", "UTF-8",
                     "-d", str(classes), "-cp", os.pathsep.join([classpath, *map(str, testcontainers)]),
                     *map(str, sorted(EXTENSION_SOURCES.glob("*.java"))),
                     str(TEST)], tmp_path, _broker_env(), 240)
    assert compiled.returncode == 0, compiled.stdout[-4000:] + compiled.stderr[-4000:]
    ran = _run(["java", *SHORT_JVM, "-cp", os.pathsep.join([classpath, str(classes)]),
                "org.junit.platform.console.ConsoleLauncher", "execute", "--disable-banner", "--disable-ansi-colors",
                "--details=tree", "--select-class", "CountEosTest"], tmp_path, _broker_env(), 240)
    assert ran.returncode == 0, ran.stdout[-8000:] + ran.stderr[-4000:]
    assert "2 tests successful" in ran.stdout and "0 tests failed" in ran.stdout, ran.stdout[-3000:]
