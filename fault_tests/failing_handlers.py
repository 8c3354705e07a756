"""The broker's own CLI with one extra control, `test-raise-in-handlers`, that makes the handlers
of chosen API keys raise (a broker bug, as a client meets it): a dispatch hook whose answer
raises RuntimeError, so the failure leaves dispatch exactly as a failing handler's does. It is
the tests' program, not a switch in the product.

    kafkalite.start(module="fault_tests.failing_handlers", controls=0)
"""

from __future__ import annotations

import sys
from typing import Any

from kafkalite.broker.cli import main
from kafkalite.broker.controls import control
from kafkalite.broker.hooks import HookContext, Interception

RAISED = "raised on purpose by test-raise-in-handlers"


def _raise() -> Any:
    raise RuntimeError(RAISED)


class RaiseInHandler:
    """The dispatch hook of one API key: its next `count` requests (every one, with None) fail."""

    def __init__(self, broker: Any, api_key: int, count: int | None):
        self.broker, self.api_key, self.left = broker, api_key, count

    def __call__(self, ctx: HookContext, request: Any) -> Interception:
        if self.left is not None:
            self.left -= 1
            if self.left <= 0:
                self.broker.hooks.remove(self.api_key, self)
        return Interception(answer=_raise)


@control("test-raise-in-handlers")
async def raise_in_handlers(broker, *, api_keys: list[int], count: int | None = None):
    """The next `count` requests of each of these API keys (every one, without a count) fail
    inside the broker."""
    for key in api_keys:
        broker.hooks.add(int(key), RaiseInHandler(broker, int(key), count))
    return {"api_keys": sorted(api_keys)}


if __name__ == "__main__":
    sys.exit(main())
