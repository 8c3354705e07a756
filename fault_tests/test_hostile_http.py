"""Hostile HTTP against the broker's endpoints (controls, console, metrics, schema registry), and
seeds that would never end: every refusal changes nothing and the broker keeps answering.

- a foreign `Origin` is 403, a foreign `Host` 421 (DNS rebinding), a non-JSON POST 415, a 64 MiB
  body 413 (announced, and chunked), and the broker's clock has not moved afterwards;
- malformed HTTP (garbage, a header line past hypercorn's limit, a lying Content-Length) is
  answered or closed, and the endpoint answers the next client;
- the `seed` control with `records: "/dev/zero"`, a FIFO, a directory or a file over
  `seed.max.bytes` is a 400 naming the file within seconds, while Metadata is answered in < 2 s;
  a large regular records file is read off the loop while Metadata is answered.

Every broker listens on loopback; every request has a timeout.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import select
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

import kafkalite
from kafkalite.broker.tests.test_wire import metadata
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]

TIMEOUT_S = 10.0
HOUR_MS = 3_600_000


def call(url: str, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None, timeout: float = TIMEOUT_S) -> tuple[int, bytes]:
    """One request with exactly these headers (http.client leaves Host alone when it is given)."""
    host, port = url.split("//", 1)[1].rstrip("/").split("/")[0].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def clock_offset(broker: Any) -> int:
    return broker.controls.call("clock")["offset_ms"]


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(controls=0, console=0, metrics_port=0, schema_registry=0) as b:
        yield b


def endpoints(broker: Any) -> dict[str, tuple[str, str]]:
    """endpoint -> (URL, a path its GET answers 200)"""
    return {"controls": (broker.controls_url, "/controls"), "console": (broker.console_url, "/api/overview"),
            "metrics": (broker.metrics_url, "/metrics"), "schema registry": (broker.schema_registry_url, "/subjects")}


def test_foreign_origin_is_refused_and_changes_nothing(broker):
    before = clock_offset(broker)
    body = json.dumps({"ms": HOUR_MS}).encode()
    for url, path in ((broker.controls_url, "/controls/advance-clock"),
                      (broker.console_url, "/api/controls/advance-clock")):
        for content_type in ("application/json", "text/plain"):
            status, text = call(url, "POST", path, body, {"Content-Type": content_type,
                                                           "Origin": "http://evil.example"})
            assert status == 403, (path, status, text)
            assert b"evil.example" in text
    for name, (url, path) in endpoints(broker).items():
        status, _ = call(url, "GET", path, headers={"Origin": "http://evil.example"})
        assert status == 403, name
        status, _ = call(url, "GET", path, headers={"Origin": "null"})  # a sandboxed frame, a file: page
        assert status == 403, name
    assert clock_offset(broker) == before
    # the endpoint's own origin (the console's page) is served
    own = broker.controls_url.rstrip("/")
    status, text = call(broker.controls_url, "POST", "/controls/advance-clock", b'{"ms": 0}',
                        {"Content-Type": "application/json", "Origin": own})
    assert status == 200, text


def test_foreign_host_is_refused(broker):
    before = clock_offset(broker)
    for name, (url, path) in endpoints(broker).items():
        port = url.split("//", 1)[1].split("/")[0].rsplit(":", 1)[1]
        for host in (f"evil.example:{port}", "evil.example", f"localhost.evil.example:{port}", ""):
            status, _ = call(url, "GET", path, headers={"Host": host})
            assert status == 421, (name, host, status)
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "LOCALHOST"):
            status, text = call(url, "GET", path, headers={"Host": host})
            assert status == 200, (name, host, status, text[:200])
    status, _ = call(broker.controls_url, "POST", "/controls/advance-clock", b'{"ms": 3600000}',
                     {"Content-Type": "application/json", "Host": "rebound.evil.example"})
    assert status == 421
    assert clock_offset(broker) == before


def test_allowed_host_names():
    env = {"KAFKALITE_HTTP_ALLOWED_HOSTS": "kafka.test, ci-runner.internal"}
    with suite_brokers.running(controls=0, env=env) as b:
        for host in ("kafka.test", "CI-RUNNER.internal:80", "localhost"):
            status, _ = call(b.controls_url, "GET", "/controls", headers={"Host": host})
            assert status == 200, host
        status, _ = call(b.controls_url, "GET", "/controls", headers={"Host": "other.test"})
        assert status == 421


def test_post_that_is_not_json_is_refused(broker):
    before = clock_offset(broker)
    body = b'{"ms": 3600000}'
    for url, prefix in ((broker.controls_url, "/controls/"), (broker.console_url, "/api/controls/")):
        for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                             None):
            headers = {"Content-Type": content_type} if content_type else {}
            status, text = call(url, "POST", prefix + "advance-clock", body, headers)
            assert status == 415, (prefix, content_type, status, text)
        status, _ = call(url, "POST", prefix + "clock", b"", {"Content-Type": "text/plain"})
        assert status == 415
    assert clock_offset(broker) == before
    # JSON, with a charset or as a +json type, runs; an empty body needs no type (curl -X POST)
    for content_type in ("application/json; charset=utf-8", "application/vnd.kafkalite+json"):
        status, _ = call(broker.controls_url, "POST", "/controls/advance-clock", b'{"ms": 0}',
                         {"Content-Type": content_type})
        assert status == 200, content_type
    status, _ = call(broker.controls_url, "POST", "/controls/clock")
    assert status == 200


def rss(broker: Any) -> int:
    return psutil.Process(broker.pid).memory_info().rss


def post_large(url: str, path: str, size: int, *, chunked: bool) -> tuple[int, int]:
    """POST a JSON body of `size` bytes, sent 1 MiB at a time until the endpoint answers;
    (status, bytes of the body sent by then)."""
    host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
    length = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}"
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"{length}\r\n\r\n").encode()
    block = b"[" + b" " * ((1 << 20) - 2) + b"]"
    sent = 0
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as s:
        s.sendall(head)
        while sent < size:
            if select.select([s], [], [], 0)[0]:
                break  # answered: nothing more is read
            data = f"{len(block):x}\r\n".encode() + block + b"\r\n" if chunked else block
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(block)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while b"\r\n" not in answer and (chunk := s.recv(4096)):
                answer += chunk
    return int(answer.split()[1]), sent


def test_64_mib_body_is_413(broker):
    before, rss_before = clock_offset(broker), rss(broker)
    size = 64 * 2**20
    for url, path in ((broker.controls_url, "/controls/advance-clock"),
                      (broker.console_url, "/api/controls/advance-clock"),
                      (broker.schema_registry_url, "/subjects/s/versions")):
        for chunked in (False, True):
            status, sent = post_large(url, path, size, chunked=chunked)
            assert status == 413, (path, chunked, status)
            # announced: refused on its Content-Length; chunked: once the cap (32 MiB) has arrived
            assert sent < size, (path, chunked, sent)
    grown = (rss(broker) - rss_before) / 2**20
    print(f"RSS growth after six 64 MiB bodies: {grown:.1f} MiB")
    assert grown < 64, f"RSS grew by {grown:.1f} MiB"
    assert clock_offset(broker) == before


def test_malformed_http_is_answered_or_closed(broker):
    host, port = broker.controls_url.split("//")[1].rstrip("/").rsplit(":", 1)
    attacks = [
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(64),  # a TLS hello
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * 200_000 + b"\r\n\r\n",  # a header past the limit
        b"POST /controls/clock HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n",
        b"POST /controls/clock HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        b"GET /\x00\xff HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"NONSENSE\r\n\r\n",
        b"POST /controls/clock HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
        b"Content-Type: application/json\r\n\r\nzz\r\n",
    ]
    for attack in attacks:
        with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as s:
            try:
                s.sendall(attack)
                s.shutdown(socket.SHUT_WR)
                answer = b""
                while chunk := s.recv(65536):
                    answer += chunk
            except (ConnectionResetError, BrokenPipeError):
                answer = b""
        assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), (attack[:40], answer[:80])
    status, _ = call(broker.controls_url, "GET", "/controls")
    assert status == 200
    log = broker.log_text()
    assert "Traceback" not in log, log[-3000:]


def timed_metadata(bootstrap: str, seconds: float, out: list[float], stop: threading.Event) -> None:
    with WireClient(bootstrap) as c:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not stop.is_set():
            started = time.monotonic()
            metadata(c, auto_create=False)
            out.append(time.monotonic() - started)


def seed_with_metadata(broker: Any, records: Any, **extra: Any) -> tuple[int, str, float, list[float]]:
    """The seed control with a topic whose records are `records`, while a client asks Metadata
    again and again; (status, text, seconds, Metadata latencies)."""
    latencies: list[float] = []
    stop = threading.Event()
    asker = threading.Thread(target=timed_metadata, args=(broker.bootstrap, 60, latencies, stop))
    asker.start()
    try:
        document = {"topics": [{"name": f"seeded-{uuid.uuid4().hex[:6]}", "records": records}], **extra}
        started = time.monotonic()
        status, text = call(broker.controls_url, "POST", "/controls/seed",
                            json.dumps({"document": document}).encode(), {"Content-Type": "application/json"},
                            timeout=90)
        took = time.monotonic() - started
        # a few Metadata round trips after the seed too
        seen = len(latencies)
        deadline = time.monotonic() + 10
        while len(latencies) < seen + 3 and time.monotonic() < deadline and asker.is_alive():
            time.sleep(0.01)
    finally:
        stop.set()
        asker.join(30)
    return status, text.decode(), took, latencies


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "directory"])
def test_seed_that_never_ends_is_400(broker, tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "records.fifo"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path
    else:
        path = Path(kind)
    rss_before = rss(broker)
    status, text, took, latencies = seed_with_metadata(broker, str(path))
    assert status == 400, text
    assert str(path) in text
    assert took < 5, took
    assert latencies and max(latencies) < 2, latencies
    assert (rss(broker) - rss_before) < 50 * 2**20
    # and by path: the seed file itself
    status, text = call(broker.controls_url, "POST", "/controls/seed",
                        json.dumps({"path": str(path)}).encode(), {"Content-Type": "application/json"})
    assert status == 400 and str(path) in text.decode(), text


def test_seed_file_over_seed_max_bytes_is_400(tmp_path):
    records = tmp_path / "big.jsonl"
    records.write_text('{"value": "v"}\n' * 10_000)
    with suite_brokers.running(controls=0, config={"seed.max.bytes": 100_000}) as b:
        status, text, took, _ = seed_with_metadata(b, str(records))
        assert status == 400 and str(records) in text and "seed.max.bytes" in text, text
        small = tmp_path / "small.jsonl"
        small.write_text('{"value": "v"}\n' * 100)
        status, text, _, _ = seed_with_metadata(b, str(small))
        assert status == 200 and json.loads(text)["result"]["records"] == 100, text


def test_large_seed_is_read_while_metadata_is_answered(broker, tmp_path):
    records = tmp_path / "many.jsonl"
    count = 50_000
    with records.open("w") as f:
        for i in range(count):
            f.write(json.dumps({"key": f"k{i}", "value": {"n": i, "text": "x" * 40}}) + "\n")
    status, text, took, latencies = seed_with_metadata(broker, str(records))
    assert status == 200, text
    assert json.loads(text)["result"]["records"] == count
    print(f"seed of {count} records ({records.stat().st_size / 2**20:.1f} MiB) took {took:.2f} s; "
          f"{len(latencies)} Metadata answers meanwhile, slowest {max(latencies) * 1000:.0f} ms")
    assert len(latencies) > 3
    assert max(latencies) < 2, max(latencies)


TOKEN = "s3cret-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def guarded_broker():
    with suite_brokers.running(controls=0, console=0, controls_token=TOKEN) as b:
        yield b


def test_controls_token_is_asked_and_every_client_sends_it(guarded_broker, tmp_path):
    b = guarded_broker
    before = clock_offset(b)  # the Python API: broker.controls sends the token it was started with
    body = b'{"ms": 3600000}'
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {TOKEN}x"},
                    {"Authorization": f"Basic {base64.b64encode(b'u:wrong').decode()}"}):
        for url, path in ((b.controls_url, "/controls/advance-clock"), (b.console_url, "/api/controls/advance-clock"),
                          (b.controls_url, "/controls")):
            status, text = call(url, "POST" if path.endswith("clock") else "GET", path,
                                body if path.endswith("clock") else None,
                                {"Content-Type": "application/json", **headers})
            assert status == 401, (path, headers, status, text)
    assert clock_offset(b) == before
    # Bearer on both; the console also takes it as a basic-auth password (a browser's own prompt)
    basic = base64.b64encode(f"anyone:{TOKEN}".encode()).decode()
    for url, path, auth in ((b.controls_url, "/controls/advance-clock", f"Bearer {TOKEN}"),
                            (b.console_url, "/api/controls/advance-clock", f"Bearer {TOKEN}"),
                            (b.console_url, "/api/controls/advance-clock", f"Basic {basic}")):
        status, text = call(url, "POST", path, b'{"ms": 1}', {"Content-Type": "application/json", "Authorization": auth})
        assert status == 200, (path, auth, text)
    assert clock_offset(b) == before + 3
    # the console's read-only views need no token
    assert call(b.console_url, "GET", "/api/overview")[0] == 200
    # Controls(url) reads $KAFKALITE_CONTROLS_TOKEN; kafkalite control takes --token or the variable
    from kafkalite.controls import ControlFailed, Controls

    with pytest.raises(ControlFailed) as err:
        Controls(b.controls_url, token="wrong").call("clock")
    assert err.value.status == 401
    assert Controls(b.controls_url, token=TOKEN).call("clock")["offset_ms"] == before + 3
    env = {k: v for k, v in os.environ.items() if k != "KAFKALITE_CONTROLS_TOKEN"}
    cli = [sys.executable, "-m", "kafkalite", "control", "--url", b.controls_url]
    refused = subprocess.run([*cli, "clock"], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "Unauthorized" in refused.stderr, refused
    for extra_args, extra_env in ((["--token", TOKEN], {}), ([], {"KAFKALITE_CONTROLS_TOKEN": TOKEN})):
        done = subprocess.run([*cli, *extra_args, "advance-clock", "ms=1"], env={**env, **extra_env},
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    assert clock_offset(b) == before + 5


def test_pytest_plugin_sends_the_token_and_allows_the_hosts(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text(f"[pytest]\nkafkalite_controls_token = {TOKEN}\n"
                                        "kafkalite_http_allowed_hosts =\n    kafka.test\n")
    (project / "test_uses_controls.py").write_text(textwrap.dedent(f'''
        import http.client

        def get(url, host, token=None):
            address = url.split("//")[1].rstrip("/")
            conn = http.client.HTTPConnection(*address.rsplit(":", 1), timeout=10)
            conn.request("GET", "/controls", headers={{"Host": host, **({{"Authorization": "Bearer " + token}} if token else {{}})}})
            return conn.getresponse().status

        def test_session_broker(kafkalite_broker, kafkalite_controls):
            assert kafkalite_controls.call("advance-clock", ms=5)["offset_ms"] >= 5
            assert get(kafkalite_broker.controls_url, "kafka.test", "{TOKEN}") == 200
            assert get(kafkalite_broker.controls_url, "kafka.test") == 401
            assert get(kafkalite_broker.controls_url, "other.test", "{TOKEN}") == 421

        def test_fresh_broker(kafkalite_fresh):
            assert kafkalite_fresh.controls.call("clock")["offset_ms"] == 0
            assert get(kafkalite_fresh.controls_url, "kafka.test") == 401
        '''))
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKALITE_CONTROLS_TOKEN", "KAFKA_BOOTSTRAP")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(kafkalite.__file__).parents[1]),
                                                    env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


SASL_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";'


def test_console_asks_for_the_brokers_users_when_listeners_require_sasl():
    config = {"listener.name.sasl_plaintext.plain.sasl.jaas.config": SASL_JAAS,
              "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN"}
    with suite_brokers.running(listeners=["PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"], config=config,
                               console=0) as b:
        for path in ("/api/overview", "/api/topics", "/"):
            status, _ = call(b.console_url, "GET", path)
            assert status == 401, path
            wrong = base64.b64encode(b"alice:nope").decode()
            assert call(b.console_url, "GET", path, headers={"Authorization": f"Basic {wrong}"})[0] == 401
            good = base64.b64encode(b"alice:alice-pw").decode()
            assert call(b.console_url, "GET", path, headers={"Authorization": f"Basic {good}"})[0] == 200, path
