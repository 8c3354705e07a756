"""Dispatch hooks: what test controls register to intercept requests before their handler runs
(as franz-go's kfake intercepts requests with its control functions).

Rules:
- A hook is `hook(ctx, request) -> Interception | None`, registered for one API key in the
  broker's `hooks` (broker.state.Broker.hooks). None lets the request through to the next hook
  and then to its handler; an `Interception` says what happens instead.
- The hooks of a key are asked in the order they were added; the first that intercepts wins.
  A hook may remove itself while it is asked (a fault whose count ran out).
- Dispatch (broker.dispatch) is the one place that asks them; the connection loop only carries
  out what the interception asks of the connection (no answer, a held answer). An API key with
  no hook costs one dict lookup per request, and coalescing of pipelined Produce answers is off
  while any hook is registered (a held or dropped answer must not hold others back).
- This module knows nothing of the broker: a hook that needs the broker holds it itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

from kafkalite.protocol.messages import RequestHeader


class HookContext(Protocol):
    """What a hook reads of the request's context (broker.context.RequestContext)."""

    @property
    def header(self) -> RequestHeader: ...

    @property
    def api_version(self) -> int: ...

    @property
    def client_id(self) -> str | None: ...

    @property
    def peer(self) -> str: ...

    @property
    def node_id(self) -> int: ...


@dataclass(frozen=True)
class Interception:
    """A hook's decision for one request."""

    # the response to send instead of the handler's: the handler does not run. It may raise
    # CloseConnection (broker.handlers.common) to close the connection instead.
    answer: Callable[[], Any] | None = None
    # the handler runs, its response is not sent, and the connection then reads and discards
    # everything it receives (a response lost in the network)
    drop: bool = False
    # the handler runs and its response is held this long before it is sent
    delay_ms: int = 0


Hook = Callable[[HookContext, Any], "Interception | None"]


class DispatchHooks:
    """The hooks by API key, in the order they were added."""

    __slots__ = ("_by_key",)

    def __init__(self) -> None:
        self._by_key: dict[int, list[Hook]] = {}

    def __bool__(self) -> bool:
        return bool(self._by_key)

    def add(self, api_key: int, hook: Hook) -> None:
        self._by_key.setdefault(api_key, []).append(hook)

    def remove(self, api_key: int, hook: Hook) -> bool:
        """Remove `hook` from `api_key`; False when it was not there."""
        hooks = self._by_key.get(api_key)
        if not hooks or hook not in hooks:
            return False
        hooks.remove(hook)
        if not hooks:
            del self._by_key[api_key]
        return True

    def registered(self) -> Iterator[tuple[int, Hook]]:
        """(api key, hook) for every hook, by key in the order keys were first hooked."""
        for key, hooks in list(self._by_key.items()):
            for hook in list(hooks):
                yield key, hook

    def intercept(self, ctx: HookContext, request: Any) -> Interception | None:
        """The first interception a hook of the request's API key makes, or None."""
        hooks = self._by_key.get(ctx.header.api_key)
        if not hooks:
            return None
        for hook in list(hooks):
            decision = hook(ctx, request)
            if decision is not None:
                return decision
        return None
