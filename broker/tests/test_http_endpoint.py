"""broker.http_endpoint.guarded, called as an ASGI app (no server): what reaches the endpoint's
app and what is answered before it; and the one warning line of controls listening beyond
loopback without a token (broker.supervisor)."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest
import trio

from kafkalite.broker.http_endpoint import Guard, HttpAccess, guarded, host_name
from kafkalite.broker.supervisor import is_loopback, warn_open_controls

LOG = logging.getLogger("kafkalite.test.http")


def request(guard: Guard, method: str = "GET", path: str = "/controls", headers: dict[str, str] | None = None,
            chunks: tuple[bytes, ...] = (b"",)) -> tuple[int, Any, list[bytes]]:
    """(status, answer body or the app's, the body the app read; empty when it never ran)."""
    seen: list[bytes] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        message = await receive()
        seen.append(message["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b'"ran"'})

    pending = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    all_headers = {"host": "127.0.0.1:8081", **{k.lower(): v for k, v in (headers or {}).items()}}
    scope = {"type": "http", "method": method, "path": path, "scheme": "http", "client": ("127.0.0.1", 5000),
             "headers": [(k.encode(), v.encode()) for k, v in all_headers.items()]}
    trio.run(guarded(app, guard, LOG), scope, receive, send)
    return sent[0]["status"], json.loads(sent[1]["body"]), seen


GUARD = Guard(HttpAccess(max_body_bytes=100), "127.0.0.1", token_prefix=None)


def test_host_names():
    assert host_name("LocalHost:8081") == "localhost"
    assert host_name("[::1]:8081") == "::1"
    assert host_name("kafka.test.") == "kafka.test"
    access = HttpAccess(allowed_hosts=frozenset({"kafka.test"}))
    for host in ("127.0.0.1:1", "localhost", "[::1]:80", "10.1.2.3", "kafka.test:9", "0.0.0.0"):
        assert access.host_allowed(host, "0.0.0.0"), host
    for host in ("", "evil.example", "localhost.evil.example", "127.0.0.1.nip.io", "kafka.test.evil"):
        assert not access.host_allowed(host, "0.0.0.0"), host
    assert HttpAccess(allowed_hosts=frozenset({"*"})).host_allowed("anything.example", "127.0.0.1")
    assert HttpAccess().host_allowed("myhost:1", "myhost")  # bound to a name


@pytest.mark.parametrize("headers,status", [
    ({"Host": "evil.example"}, 421),
    ({"Origin": "http://evil.example"}, 403),
    ({"Origin": "null"}, 403),
    ({"Origin": "https://127.0.0.1:8081"}, 403),
    ({"Origin": "http://127.0.0.1:8081"}, 200),
    ({}, 200),
])
def test_host_and_origin(headers, status):
    assert request(GUARD, headers=headers)[0] == status


def test_bodies_must_be_json_and_small():
    post = {"Content-Length": "2"}
    assert request(GUARD, "POST", headers={**post, "Content-Type": "text/plain"}, chunks=(b"{}",))[0] == 415
    assert request(GUARD, "POST", headers=post, chunks=(b"{}",))[0] == 415  # untyped
    assert request(GUARD, "POST", headers={"Content-Type": "application/x-www-form-urlencoded"})[0] == 415
    status, _, seen = request(GUARD, "POST", headers={**post, "Content-Type": "application/json"}, chunks=(b"{}",))
    assert (status, seen) == (200, [b"{}"])
    assert request(GUARD, "POST")[0] == 200  # no body, no type: curl -X POST
    # over the cap: announced, refused before reading; chunked, refused once the cap is passed
    assert request(GUARD, "POST", headers={"Content-Length": "101", "Content-Type": "application/json"})[0] == 413
    status, _, seen = request(GUARD, "POST", headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"},
                              chunks=(b"x" * 60, b"x" * 60, b"never read"))
    assert (status, seen) == (413, [])
    status, _, seen = request(GUARD, "POST", headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"},
                              chunks=(b"[" * 50, b"]" * 50))
    assert (status, seen) == (200, [b"[" * 50 + b"]" * 50])
    assert request(GUARD, "POST", headers={"Content-Length": "x2"})[0] == 400
    # an endpoint that checks its own media types (the schema registry)
    own = Guard(HttpAccess(), "127.0.0.1", json_bodies=False)
    assert request(own, "POST", headers={**post, "Content-Type": "text/plain"}, chunks=(b"{}",))[0] == 200


def test_token_and_basic_auth():
    guard = Guard(HttpAccess(controls_token="t0k"), "127.0.0.1", token_prefix="/api/controls/",
                  basic_auth=lambda header: header is not None)
    basic = "Basic " + base64.b64encode(b"me:t0k").decode()
    assert request(guard, path="/api/overview")[0] == 401  # basic auth first
    assert request(guard, path="/api/overview", headers={"Authorization": "Bearer x"})[0] == 200
    assert request(guard, path="/api/controls/clock", headers={"Authorization": "Bearer x"})[0] == 401
    assert request(guard, path="/api/controls/clock", headers={"Authorization": "Bearer t0k"})[0] == 200
    assert request(guard, path="/api/controls/clock", headers={"Authorization": basic})[0] == 200
    assert HttpAccess().token_matches(None)  # no token set: none asked


def test_one_warning_for_controls_beyond_loopback(caplog):
    class Broker:
        http_access = HttpAccess()

    assert is_loopback("127.0.0.2") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    with caplog.at_level(logging.WARNING, logger="kafkalite"):
        warn_open_controls(Broker(), ("127.0.0.1", 1), ("127.0.0.1", 2))
        assert not caplog.records
        warn_open_controls(Broker(), ("0.0.0.0", 1), ("0.0.0.0", 2))
        assert len(caplog.records) == 1
        assert "the controls on 0.0.0.0:2 and the console on 0.0.0.0:1" in caplog.records[0].getMessage()
        caplog.clear()
        Broker.http_access = HttpAccess(controls_token="x")
        warn_open_controls(Broker(), ("0.0.0.0", 1), ("0.0.0.0", 2))
        assert not caplog.records
