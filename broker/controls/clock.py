"""The broker's clock (broker.clock) as controls.

    clock           {"now_ms", "mode", "offset_ms"}
    advance-clock   ms: move the broker's time forward; every timer due by then fires at once
                    (transaction timeouts abort, group members whose session ran out are removed,
                    retention and expiration scans run); returns the new time
    set-clock       mode: system | manual; manual time stands still until advanced

advance-clock returns once the broker's tasks have reacted to the jump (every task is waiting
again, or after a second), so a test can look for the abort right after the call; work those
tasks hand to a worker thread (retention) may still be running then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio
import trio.testing

from ..clock import CLOCK, MODES
from . import ControlError, control, is_int

if TYPE_CHECKING:
    from ..state import Broker


def _state() -> dict[str, Any]:
    return {"now_ms": CLOCK(), "mode": CLOCK.mode, "offset_ms": CLOCK.offset_ms}


async def _settle() -> None:
    # the woken timers run, write what they write and go back to waiting
    with trio.move_on_after(1.0):
        await trio.testing.wait_all_tasks_blocked(0.01)


@control("clock")
async def clock(broker: "Broker"):
    """The broker's time (ms since the epoch), its mode and how far it was advanced."""
    return _state()


@control("advance-clock")
async def advance_clock(broker: "Broker", *, ms: int):
    """Move the broker's time forward by `ms` milliseconds; timers due by then fire at once."""
    if not is_int(ms) or ms < 0:
        raise ControlError(f"ms must be a non-negative integer (time never goes backwards), not {ms!r}")
    CLOCK.advance(ms)
    await _settle()
    return _state()


@control("set-clock")
async def set_clock(broker: "Broker", *, mode: str):
    """Switch the clock to `manual` (time stands still until advanced) or back to `system`."""
    if mode not in MODES:
        raise ControlError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    CLOCK.set_mode(mode)
    await _settle()
    return _state()
