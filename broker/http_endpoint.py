"""HTTP endpoints served beside the broker: the metrics, the console and the controls.

Rules:
- Every endpoint is an ASGI app served by `serve_app` with hypercorn's trio worker on the
  broker's own trio loop, so a view or a control runs among the broker's tasks with no locking.
- The listening socket is bound at once, so the address is known at start and connections wait
  in its backlog; hypercorn and the app are imported when the first connection arrives. The
  pytest plugin starts every broker with the controls endpoint on, and most tests never call
  it: they would pay those imports (~0.13 s of CPU, ~9 MB) at every start.
- Every endpoint answers through `guarded` (one owner for who may talk to an endpoint): its
  Host, Origin, credentials, media type and body size are checked before the app sees the
  request, so a route or control added to any endpoint has the same checks. Browsers are the
  threat: any page the developer opens may send requests to 127.0.0.1 (a CORS "simple request"
  needs no permission), and a name the attacker owns may resolve to 127.0.0.1 (DNS rebinding).
- This module imports no part of the broker; the endpoints (broker.metrics, broker.console,
  broker.controls.http, broker.schema_registry) import it.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import json
import logging
import socket
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import trio

# an ASGI application: app(scope, receive, send)
AsgiApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]],
                    Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[None]]


async def serve_app(make_app: Callable[[], Any], host: str, port: int, errorlog: str,
                    guard: "Guard", task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the ASGI app `make_app()` behind `guard` until cancelled; reports (host, bound port)
    through task_status. `errorlog` names the logger hypercorn writes its errors to."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(100)  # hypercorn's backlog
        task_status.started((host, sock.getsockname()[1]))
        await trio.lowlevel.wait_readable(sock)
        from hypercorn.config import Config
        from hypercorn.trio import serve

        app: Any = guarded(make_app(), guard, logging.getLogger(errorlog))
        config = Config()
        config.accesslog = None
        config.errorlog = logging.getLogger(errorlog)
        # server-sent event streams stay open; a stop must not wait for them
        config.graceful_timeout = 0.5
        # hypercorn takes the socket over (its fd:// bind neither binds nor closes it first)
        config.bind = [f"fd://{sock.detach()}"]
    finally:
        if sock.fileno() != -1:
            sock.close()
    await serve(app, config)


async def send_text(send: Callable[[dict[str, Any]], Awaitable[None]], status: int, body: str,
                    content_type: str = "text/plain", *, head: bool = False) -> None:
    """Answer an ASGI http request with a text body (none for HEAD; its length is still told)."""
    data = body.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": b"" if head else data})


async def lifespan(receive: Callable[[], Awaitable[dict[str, Any]]],
                   send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
    """The ASGI lifespan protocol of an app with nothing to start or stop."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


# --- who may talk to an endpoint ----------------------------------------------------------------

# a POST that expects JSON takes these media types (and `application/NAME+json`)
JSON_TYPES = frozenset({"application/json"})
# what a refusal logs at most, per endpoint and reason, before it stays quiet for a minute
_LOG_EVERY_S = 60.0


@dataclass(frozen=True)
class HttpAccess:
    """Who may talk to the broker's HTTP endpoints: one value for the process, from
    --http-allowed-hosts, --controls-token and http.request.max.bytes (broker.supervisor)."""

    # Host names besides the bound address, `localhost` and IP literals; "*" allows any
    allowed_hosts: frozenset[str] = frozenset()
    # the shared secret of the controls (`Authorization: Bearer TOKEN`); None: none asked
    controls_token: str | None = None
    # the largest request body read; a larger one is answered 413 once this many bytes arrived
    max_body_bytes: int = 32 * 1024 * 1024

    def host_allowed(self, host: str, bound_host: str) -> bool:
        """Whether a request's Host names this endpoint: DNS rebinding points a name the
        attacker owns at 127.0.0.1, so a name must be `localhost` or one the user allowed; an
        IP literal names no one's domain, so it is accepted (a wildcard bind has many)."""
        name = host_name(host)
        if not name:
            return False
        if name in ("localhost", bound_host.lower()) or "*" in self.allowed_hosts or name in self.allowed_hosts:
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True

    def token_matches(self, authorization: str | None) -> bool:
        """`Authorization: Bearer TOKEN`, or HTTP basic auth whose password is the token (what
        a browser's own login prompt sends, for the console's control forms)."""
        if self.controls_token is None:
            return True
        given = bearer_or_basic_password(authorization)
        return given is not None and hmac.compare_digest(given.encode(), self.controls_token.encode())


@dataclass(frozen=True)
class Guard:
    """What one endpoint asks of every request, checked by `guarded` before its app sees it."""

    access: HttpAccess
    # the address the endpoint is bound to (a Host naming it is its own)
    bound_host: str
    # paths under this prefix need the controls token (None: no path does)
    token_prefix: str | None = None
    # POSTs, PUTs and PATCHes with a body must be JSON (the registry checks its own media types)
    json_bodies: bool = True
    # HTTP basic auth asked of every request: a check of the Authorization header (None: none)
    basic_auth: Callable[[str | None], bool] | None = None


def host_name(host: str) -> str:
    """The name of a Host header, without its port and brackets, lowercase."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else ""
    name, _, _port = host.partition(":")
    return name.rstrip(".")


def bearer_or_basic_password(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        try:
            return base64.b64decode(value.strip(), validate=True).decode().partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return None
    return None


def is_json_type(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return media in JSON_TYPES or (media.startswith("application/") and media.endswith("+json"))


def guarded(app: AsgiApp, guard: Guard, logger: logging.Logger) -> AsgiApp:
    """`app` behind the checks every HTTP endpoint makes, in this order:

    - 421 when `Host` names neither the endpoint nor a name the user allowed (DNS rebinding);
    - 403 when `Origin` is not the endpoint's own: a page of another site (browsers send it on
      every cross-origin request and every POST; curl and our clients send none);
    - 401 without the HTTP basic auth the endpoint asks (`Guard.basic_auth`), then without the
      controls token on the paths that need it;
    - 415 when a body that should be JSON is not (`text/plain`, a form: what a page may send
      without asking the browser first);
    - 413 when the body is larger than `HttpAccess.max_body_bytes` (nothing larger is read).
    A refusal changes nothing: the app never sees the request. The body is read here and handed
    to the app whole."""
    access = guard.access
    quiet_until: dict[tuple[int, str], float] = {}

    def note(status: int, scope: dict[str, Any], why: str) -> None:
        now = time.monotonic()
        key = (status, why.split(":")[0])
        if quiet_until.get(key, 0.0) > now:
            return
        quiet_until[key] = now + _LOG_EVERY_S
        client = scope.get("client") or ("?", 0)
        logger.warning("refused %s %s from %s: %s", scope.get("method"), scope.get("path"), client[0], why)

    async def app_guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":  # no endpoint serves one
                await send({"type": "websocket.close", "code": 1008})
                return
            await app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers") or ():
            headers.setdefault(raw_name.decode("latin-1").lower(), raw_value.decode("latin-1"))

        async def refuse(status: int, why: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
            note(status, scope, why)
            body = json.dumps({"error": why}).encode()
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()), *(extra or [])]})
            await send({"type": "http.response.body", "body": body})

        host = headers.get("host", "")
        if not access.host_allowed(host, guard.bound_host):
            await refuse(421, f"Host {host!r} is not this endpoint's address; allow a name with "
                              "--http-allowed-hosts")
            return
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"{scope.get('scheme', 'http')}://{host}".lower():
            await refuse(403, f"Origin {origin!r} is another site's; this endpoint answers its own pages "
                              "and clients that send no Origin")
            return
        authorization = headers.get("authorization")
        if guard.basic_auth is not None and not guard.basic_auth(authorization):
            await refuse(401, "Unauthorized: log in with a user of the broker's SASL listeners",
                         [(b"www-authenticate", b'Basic realm="kafkalite"')])
            return
        path = scope.get("path", "")
        if (guard.token_prefix is not None and path.startswith(guard.token_prefix)
                and not access.token_matches(authorization)):
            await refuse(401, "Unauthorized: the controls need their token (Authorization: Bearer TOKEN)",
                         [(b"www-authenticate", b'Bearer realm="kafkalite controls"')])
            return
        length_text = headers.get("content-length")
        try:
            length = int(length_text) if length_text is not None else None
        except ValueError:
            await refuse(400, f"Content-Length {length_text!r} is not a number")
            return
        if length is not None and length > access.max_body_bytes:
            await refuse(413, f"the body ({length} bytes) is larger than {access.max_body_bytes} bytes "
                              "(http.request.max.bytes)")
            return
        body_follows = (length or 0) > 0 or "chunked" in headers.get("transfer-encoding", "").lower()
        content_type = headers.get("content-type")
        if (guard.json_bodies and scope.get("method") in ("POST", "PUT", "PATCH")
                and (content_type is not None or body_follows) and not is_json_type(content_type or "")):
            await refuse(415, f"the body must be JSON (Content-Type: application/json), not "
                              f"{content_type or 'untyped'}")
            return
        # the body, read here as it arrives (never more than the cap), then given to the app
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > access.max_body_bytes:
                await refuse(413, f"the body is larger than {access.max_body_bytes} bytes (http.request.max.bytes)")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def receive_once() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await app(scope, receive_once, send)

    return app_guarded
