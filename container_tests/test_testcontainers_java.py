"""kafkalite's image through testcontainers-java (GenericContainer, 1.21.4 from Maven Central) and
the Java client, against podman's Docker API: host bootstrap, transactions, and a client
container on the same network through the internal listener's alias (container_tests/java/), with
the JUnit 5 extension's KafkaliteContainer (java/kafkalite-junit5)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from compat_tests.clients import java as java_client
from container_tests.test_testcontainers_python import CLIENT_SCRIPT

JAVA_SOURCES = Path(__file__).resolve().parent / "java"
REPO = Path(__file__).resolve().parents[1]
EXTENSION_SOURCES = REPO / "java" / "kafkalite-junit5" / "src" / "main" / "java" / "dev" / "kafkalite" / "junit5"


def test_testcontainers_java(kafkalite_image, client_image, docker_env, tmp_path):
    # the Java client's jars and testcontainers-java's (scripts/maven/testcontainers-java); the
    # extension's sources (KafkaliteContainer) with JUnit's API from the console launcher's jar
    junit = [j for j in java_client.jar_set("java-example") if j.name.startswith("junit-platform-console-standalone")]
    build = java_client.build(JAVA_SOURCES, EXTENSION_SOURCES,
                              jars=[*java_client._jars(), *java_client.jar_set("testcontainers-java"), *junit])
    script = tmp_path / "client.py"
    script.write_text(CLIENT_SCRIPT)
    env = {**os.environ, **docker_env,
           # testcontainers-java's start-up checks run an image from Docker Hub
           "TESTCONTAINERS_CHECKS_DISABLE": "true"}
    res = subprocess.run(["java", *java_client.JVM_FLAGS, "-cp", build.classpath, "ContainerCheck",
                          kafkalite_image, client_image, str(script)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-6000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    host, port = out["bootstrap"].rsplit(":", 1)
    assert host == "127.0.0.1" and port != "9092"
    assert out["nodes"] == [out["bootstrap"]]  # advertised: the host's address and mapped port
    assert out["roundtrip"] == [f"j{i}" for i in range(5)]
    assert out["partitions"] == 2  # withConfig("num.partitions", "2")
    assert out["transactions"]["read_committed"] == [f"committed-{i}" for i in range(3)]
    assert out["transactions"]["read_uncommitted"] == ([f"aborted-{i}" for i in range(3)]
                                                       + [f"committed-{i}" for i in range(3)])
    assert out["internal"] == "kafka:19092"
    assert out["client"]["brokers"] == ["kafka:19092"]
    assert out["client"]["consumed"] == [f"from-container-{i}" for i in range(3)]
    assert out["fromNetwork"] == out["client"]["consumed"]
    # the controls: published on the host's loopback, guarded by the container's token
    assert out["controlsUrl"].startswith("http://127.0.0.1:")
    status, body = out["controls"]["withToken"]
    assert status == 200 and body["result"]["offset_ms"] == 1000, out["controls"]
    assert out["controls"]["without"] == 401
