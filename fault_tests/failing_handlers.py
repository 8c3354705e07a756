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


def _hook(ctx: HookContext, request: Any) -> Interception:
    return Interception(answer=_raise)


@control("test-raise-in-handlers")
async def raise_in_handlers(broker, *, api_keys: list[int]):
    """Every later request of these API keys fails inside the broker (until the broker stops)."""
    for key in api_keys:
        broker.hooks.add(int(key), _hook)
    return {"api_keys": sorted(api_keys)}


if __name__ == "__main__":
    sys.exit(main())
