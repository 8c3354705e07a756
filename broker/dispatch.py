"""Dispatch: one request to its handler, through the hooks test controls registered.

Rules:
- The handler of a request is `HANDLERS[api_key]` (broker.handlers, filled by `@api`); the
  connection loop has checked the version against the broker's API ranges before.
- The dispatch hooks (broker.hooks) are asked here and only here, before the handler: an
  interception with an `answer` replaces the handler; one that drops or delays the response lets
  the handler run and tells the connection loop what to do with the response.
- The request log (the record-requests control) is written here, before the hooks, so that it
  holds what clients sent whatever a fault then does; off, it costs one `is not None`.
- A handler's CloseConnection, and one raised by an interception's answer, reach the caller.
"""

from __future__ import annotations

from typing import Any

from .context import RequestContext
from .handlers import HANDLERS
from .hooks import Interception


async def dispatch(ctx: RequestContext, request: Any) -> tuple[Any, Interception | None]:
    """The response to `request` (None: send nothing) and the interception that applied, if any."""
    broker = ctx.broker
    if broker.request_log is not None:
        broker.request_log.record(ctx, request)
    hooks = broker.hooks
    interception = hooks.intercept(ctx, request) if hooks else None
    if interception is not None and interception.answer is not None:
        return interception.answer(), interception
    return await HANDLERS[ctx.header.api_key](ctx, request), interception
