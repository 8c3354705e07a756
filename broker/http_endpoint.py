"""HTTP endpoints served beside the broker: the metrics, the console and the controls.

Rules:
- Every endpoint is an ASGI app served by `serve_app` with hypercorn's trio worker on the
  broker's own trio loop, so a view or a control runs among the broker's tasks with no locking.
- The listening socket is bound at once, so the address is known at start and connections wait
  in its backlog; hypercorn and the app are imported when the first connection arrives. The
  pytest plugin starts every broker with the controls endpoint on, and most tests never call
  it: they would pay those imports (~0.13 s of CPU, ~9 MB) at every start.
- This module imports no part of the broker; the endpoints (broker.metrics, broker.console,
  broker.controls.http) import it.
"""

from __future__ import annotations

import logging
import socket
from typing import Any, Awaitable, Callable

import trio

# an ASGI application: app(scope, receive, send)
AsgiApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]],
                    Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[None]]


async def serve_app(make_app: Callable[[], Any], host: str, port: int, errorlog: str,
                    task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the ASGI app `make_app()` until cancelled; reports (host, bound port) through
    task_status. `errorlog` names the logger hypercorn writes its errors to."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(100)  # hypercorn's backlog
        task_status.started((host, sock.getsockname()[1]))
        await trio.lowlevel.wait_readable(sock)
        from hypercorn.config import Config
        from hypercorn.trio import serve

        app = make_app()
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
