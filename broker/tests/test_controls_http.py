"""The controls transport: the HTTP/JSON endpoint a broker serves with --controls, the Python
client (kafkalite.Controls, broker.controls) and `kafkalite control`. Bad requests get a 4xx
with a JSON text, a failing control a 500 with its text and a log line, never a traceback on
the wire; the broker keeps serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

import kafkalite
from kafkalite import ControlFailed, Controls
from kafkalite.admin import AdminConnection
from kafkalite.tests import suite_brokers

from .test_console import start_without

PROGRAM = "kafkalite.broker.tests.controls_program"


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(module=PROGRAM, controls=0) as b:
        yield b


def http(url: str, method: str = "GET", body: bytes | None = None) -> tuple[int, dict]:
    # urllib calls a body a form unless told (the endpoints take JSON only: 415)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_ready_line_names_the_endpoint_and_it_lists_controls_with_parameters(broker):
    assert broker.controls_url.startswith("http://127.0.0.1:") and broker.controls_url.endswith("/")
    status, body = http(broker.controls_url + "controls")
    assert status == 200
    echo = next(c for c in body["controls"] if c["name"] == "test-echo")
    # each argument's JSON type, from the annotations (text: str, times: int, extra: list | None)
    assert echo["parameters"] == {"text": {"required": True, "type": "string"},
                                  "times": {"required": False, "default": 1, "type": "integer"},
                                  "extra": {"required": False, "default": None, "type": "array"}}
    assert echo["doc"].startswith("Answers with its arguments")
    names = [c["name"] for c in body["controls"]]
    assert names == sorted(names)
    assert http(broker.controls_url)[1] == body


def test_post_runs_the_control_on_the_broker(broker):
    status, body = http(broker.controls_url + "controls/test-echo", "POST",
                        json.dumps({"text": "ab", "times": 2, "extra": [1, "x"]}).encode())
    assert (status, body) == (200, {"result": {"text": "abab", "extra": [1, "x"], "listener": "PLAINTEXT"}})


@pytest.mark.parametrize("path, body, status, text", [
    ("controls/no-such-control", b"{}", 400, "no control named 'no-such-control'"),
    ("controls/test-echo", b"{}", 400, "needs text"),
    ("controls/test-echo", b'{"text": "a", "colour": 1}', 400, "takes no argument(s) colour"),
    ("controls/test-echo", b"{not json", 400, "not JSON"),
    ("controls/test-echo", b"[1, 2]", 400, "must be a JSON object"),
    ("controls/test-echo", b"\xff\xfe", 400, "not JSON"),
    ("controls/test-refuse", b'{"why": "because"}', 400, "refused: because"),
    ("controls/test-crash", b"", 500, "RuntimeError: the control broke"),
    ("controls/test-not-json", b"", 500, "returned no JSON"),
    ("nowhere", b"{}", 404, "GET /controls lists the controls"),
])
def test_bad_requests_get_a_status_and_a_text(broker, path, body, status, text):
    got_status, got = http(broker.controls_url + path, "POST", body)
    assert got_status == status
    assert text in got["error"]
    assert "Traceback" not in got["error"]


def test_wrong_method_and_the_broker_keeps_serving(broker):
    status, body = http(broker.controls_url + "controls/test-echo")
    assert status == 405 and "GET is not allowed" in body["error"]
    # the failures above left the broker serving Kafka and the endpoint
    with AdminConnection(broker.bootstrap) as admin:
        admin.create_topic("controls-after-errors", 1, {})
        admin.wait_for_topic("controls-after-errors", 1)
    assert http(broker.controls_url + "controls/test-echo", "POST", b'{"text": "ok"}')[0] == 200
    log = broker.log_text()
    assert "control test-crash{} failed" in log and "RuntimeError: the control broke" in log


def test_python_client_call_attribute_sugar_and_errors(broker):
    c = broker.controls
    assert c.call("test-echo", text="x")["text"] == "x"
    assert c.test_echo(text="y", times=3)["text"] == "yyy"
    assert "test-refuse" in c.names()
    with pytest.raises(ControlFailed) as info:
        c.test_refuse(why="told to")
    assert info.value.status == 400 and info.value.text == "refused: told to"
    with pytest.raises(ControlFailed, match="no control named 'no-such'"):
        Controls(broker.controls_url.rstrip("/")).no_such()


def run_cli(*args: str, url: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("KAFKALITE_CONTROLS_URL", None)
    if url:
        env["KAFKALITE_CONTROLS_URL"] = url
    return subprocess.run([sys.executable, "-m", "kafkalite", "control", *args], capture_output=True,
                          text=True, timeout=30, env=env)


def test_command_line(broker):
    out = run_cli("--url", broker.controls_url, "test-echo", "text=ab", "times=2", "extra=[1,true]")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"text": "abab", "extra": [1, True], "listener": "PLAINTEXT"}
    # the URL from the environment; a value that is not JSON is a string
    out = run_cli("test-echo", "text=not json", url=broker.controls_url)
    assert out.returncode == 0 and json.loads(out.stdout)["text"] == "not json"
    out = run_cli("test-refuse", url=broker.controls_url)
    assert out.returncode == 1 and "refused: no reason" in out.stderr and "Traceback" not in out.stderr
    listing = run_cli(url=broker.controls_url)
    assert listing.returncode == 0 and "test-echo text [times=1] [extra=null]" in listing.stdout
    assert run_cli("test-echo").returncode == 2
    out = run_cli("--url", "http://127.0.0.1:1/", "test-echo", "text=a")
    assert out.returncode == 1 and "cannot reach" in out.stderr


def test_a_broker_without_controls_has_no_endpoint_and_says_so():
    with suite_brokers.running() as b:
        assert b.controls_url is None
        with pytest.raises(RuntimeError, match="without controls"):
            b.controls.names()
    code = ("import sys, kafkalite.broker.cli, kafkalite.broker.server; print(sorted(m for m in "
            "('starlette', 'hypercorn', 'kafkalite.broker.controls.http', 'kafkalite.launcher', 'kafkalite.controls') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=kafkalite._PACKAGE_ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_bad_address_and_missing_libraries_are_usage_errors(tmp_path):
    out = subprocess.run(kafkalite.broker_command(["--port", "0", "--controls", "nope"]), capture_output=True,
                         text=True, timeout=60, env=kafkalite._broker_env())
    assert out.returncode == 2 and "--controls must be a port number" in out.stderr
    out = start_without("hypercorn", ["--controls", "0"], tmp_path)
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.splitlines()
    assert line.startswith("kafkalite: --controls needs the console extra, and hypercorn is not installed: "), line
    assert "kafkalite ready" not in out.stdout
