"""Dispatch: one request to its handler, through the hooks test controls registered.

Rules:
- The handler of a request is `HANDLERS[api_key]` (broker.handlers, filled by `@api`); the
  connection loop has checked the version against the broker's API ranges before.
- The dispatch hooks (broker.hooks) are asked here and only here, before the handler: an
  interception with an `answer` replaces the handler; one that drops or delays the response lets
  the handler run and tells the connection loop what to do with the response.
- The request log (broker.request_log) is written here, before the hooks, so that it holds what
  clients sent whatever a fault then does, and completed with the answer and its time; off
  (request.log.size=0), it costs one `is not None`.
- Once a request is handled, the cluster's state changes are notified (broker.changes): the
  controls waiting on a group's state, a commit or the broker going idle check again.
- A handler's CloseConnection, and one raised by an interception's answer, reach the caller.
"""

from __future__ import annotations

import time
from typing import Any

from .context import RequestContext
from .handlers import HANDLERS
from .hooks import Interception


async def dispatch(ctx: RequestContext, request: Any) -> tuple[Any, Interception | None]:
    """The response to `request` (None: send nothing) and the interception that applied, if any."""
    broker = ctx.broker
    request_log = broker.request_log
    entry = request_log.record(ctx, request) if request_log is not None else None
    started = time.perf_counter()
    hooks = broker.hooks
    interception = hooks.intercept(ctx, request) if hooks else None
    try:
        if interception is not None and interception.answer is not None:
            response = interception.answer()
        else:
            response = await HANDLERS[ctx.header.api_key](ctx, request)
    finally:
        broker.cluster.changes.notify()
    if entry is not None and request_log is not None:
        request_log.answered(entry, response, (time.perf_counter() - started) * 1000)
    return response, interception
