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
from typing import Any

import trio

from ..http_endpoint import Guard, serve_app

log = logging.getLogger("kafkalite.console")


async def serve_console(broker: Any, host: str, port: int, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the console until cancelled (broker.http_endpoint); reports (host, bound port) through
    task_status."""
    def make_app() -> Any:
        from .app import make_app

        return make_app(broker)

    from ..http_basic_auth import BasicAuth

    # with SASL listeners the console shows records only to the broker's users; its control
    # forms need the controls' token as well (a browser's login prompt sends it as the password)
    guard = Guard(broker.http_access, host, token_prefix="/api/controls/", basic_auth=BasicAuth(broker).allows)
    await serve_app(make_app, host, port, "kafkalite.console.http", guard, task_status=task_status)
