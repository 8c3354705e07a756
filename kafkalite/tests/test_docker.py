"""The image's entry point and health check, run directly (there is no Docker engine here),
and static checks of the Dockerfile."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import kafkalite
from compat_tests.waiting import wait_until
from kafkalite.admin import AdminConnection

ROOT = Path(kafkalite.__file__).resolve().parent.parent
ENTRYPOINT = ROOT / "docker" / "entrypoint.py"
HEALTHCHECK = ROOT / "docker" / "healthcheck.py"
DOCKERFILE = ROOT / "Dockerfile"

pytestmark = pytest.mark.skipif(not ENTRYPOINT.exists(), reason="not a source checkout (no docker/)")


def image_env(**overrides: str) -> dict[str, str]:
    """The environment the image sets (Dockerfile ENV), plus overrides; our packages on the
    path as they are in the image's site-packages."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    env.update(dockerfile_env())
    env.pop("KAFKALITE_READY_FILE")  # a fixed path in /tmp: tests that want one give their own
    env["PYTHONPATH"] = str(ROOT)
    env.update(overrides)
    return env


def dockerfile_env() -> dict[str, str]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    env = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            for k, v in re.findall(r"(\w+)=(\S+)", line[4:]):
                env[k] = v
    return env


class Entrypoint:
    """The entry point as a process, its stdout lines collected."""

    def __init__(self, env: dict[str, str], *args: str):
        self.proc = subprocess.Popen([sys.executable, str(ENTRYPOINT), *args], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        self.lines: list[str] = []
        self.err: list[str] = []
        self._drains = [threading.Thread(target=self._drain, args=(self.proc.stdout, self.lines), daemon=True),
                        threading.Thread(target=self._drain, args=(self.proc.stderr, self.err), daemon=True)]
        for drain in self._drains:
            drain.start()

    def wait(self, timeout: float) -> int:
        """The exit status, once the process has exited and all its output is collected."""
        status = self.proc.wait(timeout)
        for drain in self._drains:
            drain.join(timeout)
        return status

    @staticmethod
    def _drain(stream, into):
        for line in stream:
            into.append(line.rstrip("\n"))

    def ready(self, timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines:
                if kafkalite.READY_PATTERN.match(line):
                    return kafkalite.parse_ready_line(line)
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        raise AssertionError(f"not ready: exit {self.proc.poll()}\n" + "\n".join(self.err))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(10)


@pytest.fixture
def run_entrypoint():
    started: list[Entrypoint] = []

    def run(env, *args):
        e = Entrypoint(env, *args)
        started.append(e)
        return e

    yield run
    for e in started:
        if e.proc.poll() is None:
            e.proc.kill()
            e.proc.wait()


def test_entrypoint_with_the_images_environment(run_entrypoint, tmp_path):
    ready_file = tmp_path / "ready"
    e = run_entrypoint(image_env(KAFKALITE_PORT="0", KAFKALITE_DATA_DIR=str(tmp_path),
                                 KAFKALITE_NUM_PARTITIONS="3", KAFKALITE_AUTO_CREATE_TOPICS_ENABLE="true",
                                 KAFKALITE_READY_FILE=str(ready_file)))
    info = e.ready()
    assert re.fullmatch(r"kafkalite ready bootstrap=localhost:\d+ .* bound=PLAINTEXT://0\.0\.0\.0:\d+\n",
                        ready_file.read_text())
    # the image listens on 0.0.0.0 and advertises localhost: right for `docker run -p 9092:9092`
    assert info["bootstrap"].startswith("localhost:")
    port = info["bootstrap"].rsplit(":", 1)[1]
    with AdminConnection(f"127.0.0.1:{port}") as c:
        c.metadata(["from-env"], allow_auto_create=True)
        c.wait_for_topic("from-env", 3)
    assert e.stop() == 0
    # the topic kept in the data volume (its partitions' directories come with their first write)
    assert '"from-env"' in (tmp_path / "__cluster_metadata" / "topics.json").read_text()
    assert not ready_file.exists()
    assert any("num.partitions=3 (from env)" in line for line in e.err)


def test_entrypoint_passes_flags_to_the_broker(run_entrypoint, tmp_path):
    e = run_entrypoint(image_env(KAFKALITE_PORT="0", KAFKALITE_DATA_DIR=str(tmp_path)),
                       "--log-level", "DEBUG", "-c", "num.partitions=2")
    info = e.ready()
    port = info["bootstrap"].rsplit(":", 1)[1]
    AdminConnection(f"127.0.0.1:{port}").close()
    assert e.stop() == 0
    assert any("DEBUG" in line and "connection opened" in line for line in e.err)


def test_entrypoint_listeners_and_advertised_listeners_from_env(run_entrypoint, tmp_path):
    e = run_entrypoint(image_env(KAFKALITE_DATA_DIR=str(tmp_path),
                                 KAFKALITE_LISTENERS="INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
                                 KAFKALITE_ADVERTISED_LISTENERS="INTERNAL://kafka:0,EXTERNAL://localhost:0"))
    info = e.ready()
    assert info["listeners"]["INTERNAL"].startswith("kafka:")
    assert info["listeners"]["EXTERNAL"].startswith("localhost:")
    assert e.stop() == 0


def test_entrypoint_reports_a_bad_variable(run_entrypoint, tmp_path):
    e = run_entrypoint(image_env(KAFKALITE_PORT="0", KAFKALITE_DATA_DIR=str(tmp_path), KAFKALITE_NUM_PARTITON="3"))
    assert e.wait(20) == 2
    assert any("KAFKALITE_NUM_PARTITON" in line for line in e.err)


def test_entrypoint_runs_another_command():
    r = subprocess.run([sys.executable, str(ENTRYPOINT), "echo", "hello"], capture_output=True, text=True,
                       env=image_env(), timeout=20)
    assert r.stdout.strip() == "hello"


def test_entrypoint_waits_for_the_env_file(run_entrypoint, tmp_path):
    env_file = tmp_path / "late.env"
    e = run_entrypoint(image_env(KAFKALITE_PORT="0", KAFKALITE_DATA_DIR=str(tmp_path),
                                 KAFKALITE_WAIT_FOR_ENV_FILE=str(env_file)))
    # once it says it waits, nothing may start until the file is there
    wait_until(lambda: any(f"waiting for {env_file}" in line for line in e.err), timeout=20,
               what="the entry point to say it waits for the file")
    assert e.proc.poll() is None and not e.lines
    env_file.write_text("# written once the port is mapped\nKAFKALITE_ADVERTISED_LISTENERS=PLAINTEXT://docker-host:32777\n")
    assert e.ready()["bootstrap"] == "docker-host:32777"
    assert e.stop() == 0


# --- health check ------------------------------------------------------------------------------

def healthcheck(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HEALTHCHECK), *args], capture_output=True, text=True, timeout=30,
                          env=image_env(**env))


def test_healthcheck_against_a_running_broker():
    with kafkalite.running(host="0.0.0.0") as b:
        r = healthcheck(KAFKALITE_PORT=str(b.port))  # KAFKALITE_HOST=0.0.0.0 from the image: checks loopback
        assert r.returncode == 0, r.stderr
        assert "healthy" in r.stdout
        r = healthcheck(KAFKALITE_LISTENERS=f"EXTERNAL://0.0.0.0:{b.port},INTERNAL://0.0.0.0:1")
        assert r.returncode == 0, r.stderr
        r = healthcheck(f"127.0.0.1:{b.port}")
        assert r.returncode == 0, r.stderr


def test_healthcheck_of_a_tls_listener():
    """An SSL or SASL_SSL first listener (KAFKALITE_TLS_SELF_SIGNED=true in a container) is healthy too."""
    with kafkalite.running(listeners=["SASL_SSL://127.0.0.1:0"], tls_self_signed=True) as b:
        r = healthcheck(b.bootstrap)
        assert r.returncode == 0, r.stderr
        assert "healthy" in r.stdout


def test_healthcheck_follows_the_ready_file(tmp_path):
    ready_file = tmp_path / "ready"
    r = healthcheck(KAFKALITE_READY_FILE=str(ready_file))
    assert r.returncode == 1 and "no ready file" in r.stderr  # not started: not healthy
    # listeners set by flags, which the image's environment does not know
    with kafkalite.running(listeners=["A://127.0.0.1:0", "B://0.0.0.0:0"],
                           extra_args=["--ready-file", str(ready_file)]) as b:
        assert ready_file.exists()
        r = healthcheck(KAFKALITE_READY_FILE=str(ready_file), KAFKALITE_PORT="1")
        assert r.returncode == 0, r.stderr
        assert b.listeners["A"] in r.stdout
    assert not ready_file.exists()


def test_healthcheck_fails_when_nothing_answers():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = healthcheck(KAFKALITE_PORT=str(port))
    assert r.returncode == 1
    assert "unhealthy" in r.stderr


def test_healthcheck_fails_on_a_server_that_is_not_kafka():
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]

    def answer_garbage():
        conn, _ = srv.accept()
        conn.recv(1024)
        conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
        conn.close()

    threading.Thread(target=answer_garbage, daemon=True).start()
    try:
        r = healthcheck(f"127.0.0.1:{port}")
    finally:
        srv.close()
    assert r.returncode == 1


# --- the Dockerfile ----------------------------------------------------------------------------

def instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


def test_dockerfile_shape():
    ins = instructions()
    final = ins[max(i for i, (op, _) in enumerate(ins) if op == "FROM"):]
    ops = dict((op, rest) for op, rest in final)
    # the base is a build argument whose default is the official slim Python image
    args = dict(rest.split("=", 1) for op, rest in ins if op == "ARG" and "=" in rest)
    assert ops["FROM"] == "${BASE_IMAGE}"
    assert re.match(r"python:3\.\d+-slim\b", args["BASE_IMAGE"])
    # the broker's port, and the schema registry's, served when KAFKALITE_SCHEMA_REGISTRY asks for it
    assert ops["EXPOSE"] == "9092 8081"
    assert "/var/lib/kafkalite" in ops["VOLUME"]
    assert ops["USER"] not in ("root", "0")
    assert "kafkalite-healthcheck" in ops["HEALTHCHECK"]
    assert "kafkalite-entrypoint" in ops["ENTRYPOINT"]
    env = dockerfile_env()
    assert env["KAFKALITE_DATA_DIR"] == "/var/lib/kafkalite"
    assert env["KAFKALITE_HOST"] == "0.0.0.0" and env["KAFKALITE_PORT"] == "9092"
    # USER comes after the step that gives the data dir to that user
    run_steps = [rest for op, rest in final if op == "RUN"]
    assert any(f"chown {ops['USER']}" in r for r in run_steps)


def test_dockerfile_copies_only_what_exists_and_is_not_ignored():
    ignore = [l.strip() for l in (ROOT / ".dockerignore").read_text().splitlines()
              if l.strip() and not l.startswith("#")]
    allowed = {l[1:].rstrip("/") for l in ignore if l.startswith("!")}
    assert ignore[0] == "*"  # everything else stays out of the build context
    for op, rest in instructions():
        if op != "COPY" or rest.startswith("--from"):
            continue
        *sources, _dest = rest.split()
        for src in sources:
            assert (ROOT / src).exists(), src
            assert src.split("/")[0] in allowed, f"{src} is excluded by .dockerignore"
