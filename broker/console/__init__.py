"""The web console: a read-only view of partitions, transactions and groups, served from the
broker process (`kafkalite --console [HOST:]PORT`).

HTTP is Starlette (an ASGI app, run on trio through anyio) served by hypercorn's trio worker
on the broker's own trio loop; the page is a small Preact app built with Vite whose assets
ship in `broker/console/static/`. This package is imported only when the console is asked
for, so a broker without it neither imports Starlette nor starts slower.

Endpoints (all GET, all JSON unless said):
- `/` the page; `/assets/*` its scripts and styles;
- `/api/overview`, `/api/topics`, `/api/partition/{topic}/{partition}[?from=OFFSET]` (timeline
  and producers), `/api/records/{topic}/{partition}/{offset}` (the batch holding that offset,
  decoded), `/api/transactions`, `/api/groups`;
- `/api/stream/{view}` with view one of topics, partition, transactions, groups (and the
  query of the matching endpoint): server-sent events, one `data:` JSON snapshot whenever it
  changed. A partition stream is woken by the partition's own append/LSO wake-up (the one
  long-polling fetches use); the transactions and groups streams by appends to
  `__transaction_state` / `__consumer_offsets` (where the coordinators write every change, for
  the appends that wake); each also looks at least every second (those two every half second),
  and only while connected.
- with the schema registry on too (`--schema-registry`): `/api/schemas` lists its subjects, levels
  and versions (the "Schemas" page), and `/api/records/...` adds `value_schema` to a record whose
  value is in Confluent's wire format with a registered id (`broker.schema_registry`, the
  registry's RegistryView);
  without it `/api/schemas` answers `{"enabled": false}`.
- with the controls endpoint on too (`--controls`): `/api/controls` lists the test controls and
  `POST /api/controls/NAME` runs one (broker.controls.http.run); the page shows them as forms
  with a run button ("Controls"). Without `--controls` the list is empty and the POST is 404, so
  the console stays read-only.
"""

from __future__ import annotations

import logging
import socket
from typing import Any, Callable

import trio

log = logging.getLogger("kafkalite.console")


async def serve_app(make_app: Callable[[], Any], host: str, port: int, errorlog: str,
                    task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve the ASGI app `make_app()` with hypercorn's trio worker on the broker's own trio loop
    until cancelled; reports (host, bound port) through task_status. The console and the controls
    endpoint (broker.controls.http) both run this way.

    The listening socket is bound at once, so the address is known and connections wait in its
    backlog; hypercorn and the app (Starlette) are imported when the first connection arrives.
    The pytest plugin starts every broker with the controls endpoint on, and most tests never
    call it: they would pay those imports (~0.13 s of CPU, ~9 MB) at every start."""
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


async def serve_console(broker, host: str, port: int, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve the console until cancelled; reports (host, bound port) through task_status."""
    def make_app():
        from .app import make_app

        return make_app(broker)

    await serve_app(make_app, host, port, "kafkalite.console.http", task_status=task_status)
