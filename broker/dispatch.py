"""Dispatch: one request to its handler, through the hooks test controls registered.

Rules:
- The handler of a request is `HANDLERS[api_key]` (broker.handlers, filled by `@api`); the
  connection loop has checked the version against the broker's API ranges before.
- The dispatch hooks (broker.hooks) are asked here and only here, before the handler: an
  interception with an `answer` replaces the handler; one that drops or delays the response lets
  the handler run and tells the connection loop what to do with the response.
- A handler's CloseConnection, and one raised by an interception's answer, reach the caller.
"""

from __future__ import annotations

from typing import Any

from .context import RequestContext
from .handlers import HANDLERS
from .hooks import Interception


async def dispatch(ctx: RequestContext, request: Any) -> tuple[Any, Interception | None]:
    """The response to `request` (None: send nothing) and the interception that applied, if any."""
    hooks = ctx.broker.hooks
    interception = hooks.intercept(ctx, request) if hooks else None
    if interception is not None and interception.answer is not None:
        return interception.answer(), interception
    return await HANDLERS[ctx.header.api_key](ctx, request), interception
