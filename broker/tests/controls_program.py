"""The broker's own CLI with a few extra controls registered, for the tests of the controls
transport (the HTTP endpoint, the Python client, `kafkalite control`): one that answers with
what it was given and what it saw of the broker, one that refuses, one that fails, one whose
result is not JSON.

    kafkalite.start(module="kafkalite.broker.tests.controls_program", controls=0)
"""

from __future__ import annotations

import sys

from kafkalite.broker.cli import main
from kafkalite.broker.controls import ControlError, control


@control("test-echo")
async def echo(broker, *, text: str, times: int = 1, extra: list | None = None):
    """Answers with its arguments and the broker's first listener.

    A second line of documentation."""
    return {"text": text * times, "extra": extra, "listener": broker.listeners[0].name}


@control("test-refuse")
async def refuse(broker, *, why: str = "no reason"):
    """Always refuses."""
    raise ControlError(f"refused: {why}")


@control("test-crash")
async def crash(broker):
    """Always fails inside."""
    raise RuntimeError("the control broke")


@control("test-not-json")
async def not_json(broker):
    """Returns something JSON cannot carry."""
    return object()


if __name__ == "__main__":
    sys.exit(main())
