"""The JUnit 5 extension's fallback to kafkalite's image, and its KafkaliteContainer, through
testcontainers-java (1.21.4) against podman's Docker API: the extension's sources, its own test's
helpers (KafkaliteExtensionTest) and container_tests/java/junit5/KafkaliteImageTest.java compiled
with javac, run by JUnit's console launcher where no kafkalite command is found (no kafkalite.cmd,
KAFKALITE_CMD, kafkalite.pyz or kafkalite on PATH), the image given as KAFKALITE_IMAGE; and the
extension's own tests (KafkaliteExtensionTest) run the same way, on the image."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEPS = Path(os.environ.get("KAFKALITE_DEPS_DIR") or REPO / ".deps") / "maven"
MODULE = REPO / "java" / "kafkalite-junit5" / "src"
EXTENSION_SOURCES = MODULE / "main" / "java" / "dev" / "kafkalite" / "junit5"
SOURCES = [*sorted(EXTENSION_SOURCES.glob("*.java")),
           MODULE / "test" / "java" / "dev" / "kafkalite" / "junit5" / "KafkaliteExtensionTest.java",
           REPO / "container_tests" / "java" / "junit5" / "KafkaliteImageTest.java"]
SHORT_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"]


def _without_kafkalite(path: str) -> str:
    """PATH without the folders that hold a kafkalite command (the venv's, here)."""
    return os.pathsep.join(d for d in path.split(os.pathsep) if d and not os.access(Path(d, "kafkalite"), os.X_OK))


def test_junit5_extension_runs_the_image_when_no_command_is_found(kafkalite_image, docker_env, tmp_path):
    assert shutil.which("javac"), "javac is not installed (a JDK 17+)"
    # testcontainers-java with its docker-java, kafka-clients 4.4.0 and JUnit's console launcher
    jars = [*sorted((DEPS / "testcontainers-java").glob("*.jar")), *sorted((DEPS / "java-example").glob("*.jar"))]
    assert any(j.name.startswith("testcontainers-") for j in jars), f"no testcontainers under {DEPS}"
    classes = tmp_path / "classes"
    classpath = os.pathsep.join(map(str, jars))
    compiled = subprocess.run(["javac", *(f"-J{flag}" for flag in SHORT_JVM), "-nowarn", "-encoding", "UTF-8",
                               "-d", str(classes), "-cp", classpath, *map(str, SOURCES)],
                              capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout[-4000:] + compiled.stderr[-4000:]
    env = {k: v for k, v in os.environ.items() if k != "KAFKALITE_CMD"}
    env.update(docker_env)
    env.update({"PATH": _without_kafkalite(env.get("PATH", "")), "KAFKALITE_IMAGE": kafkalite_image,
                # testcontainers-java's start-up checks run an image from Docker Hub
                "TESTCONTAINERS_CHECKS_DISABLE": "true"})
    assert not any((d / "kafkalite.pyz").exists() for d in (tmp_path, *tmp_path.parents)), "a kafkalite.pyz is found"
    ran = subprocess.run(["java", *SHORT_JVM, "-cp", os.pathsep.join([classpath, str(classes)]),
                          "org.junit.platform.console.ConsoleLauncher", "execute", "--disable-banner",
                          "--disable-ansi-colors", "--details=tree",
                          "--select-class", "dev.kafkalite.junit5.KafkaliteImageTest",
                          # the extension's own tests, on the image: reset, snapshots, a fault, the
                          # generated controls, a broker per test with --clock manual
                          "--select-class", "dev.kafkalite.junit5.KafkaliteExtensionTest"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
    assert ran.returncode == 0, ran.stdout[-8000:] + ran.stderr[-4000:]
    assert "9 tests successful" in ran.stdout and "0 tests failed" in ran.stdout, ran.stdout[-3000:]
