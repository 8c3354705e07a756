"""The broker's clock: time in milliseconds since the epoch, Kafka's unit for timestamps and
timeouts. Everything in the broker reads time from the one `CLOCK` of the process (`now_ms()`
is it), so a test can move the broker's time: transaction timeouts, group session and
rebalance timeouts, retention, producer-id and transactional-id expiration and LogAppendTime
timestamps all follow it, as every Kafka component follows its `Time`.

- system mode (the default): wall-clock time plus the sum of every `advance(ms)`;
- manual mode (`kafkalite --clock manual`, or the `set-clock` control): time stands still and
  moves only when advanced (it starts at the wall-clock time when the mode is entered).

Time never goes backwards. A jump wakes every timer registered with `on_jump` at once (the
coordinators' deadline loops, retention), so an advance past a transaction timeout aborts the
transaction now, not at the next periodic scan. Coordinators also take any other clock callable
(`() -> int`), so their state machines can be tested with a fake one.

Several nodes in one process share this clock: they are one cluster, with one time.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import trio

log = logging.getLogger("kafkalite.clock")

MODES = ("system", "manual")


class BrokerClock:
    def __init__(self) -> None:
        self.offset_ms = 0
        # the mode the broker started in (reset() sets it), which the reset control returns to
        self.start_mode = "system"
        # the time in manual mode; None in system mode
        self.frozen_ms: int | None = None
        self._listeners: list[Callable[[], None]] = []

    def __call__(self) -> int:
        if self.frozen_ms is not None:
            return self.frozen_ms
        return int(time.time() * 1000) + self.offset_ms

    @property
    def mode(self) -> str:
        return "system" if self.frozen_ms is None else "manual"

    def advance(self, ms: int) -> int:
        """Move time forward by `ms`; returns the new time."""
        if ms < 0:
            raise ValueError("the clock never goes backwards")
        if self.frozen_ms is not None:
            self.frozen_ms += ms
        else:
            self.offset_ms += ms
        self._jumped()
        return self()

    def set_mode(self, mode: str) -> None:
        """Switch between system and manual time, going on from the current time. Leaving manual
        time that stands behind the wall clock jumps forward to the wall clock."""
        if mode not in MODES:
            raise ValueError(f"clock mode must be one of {', '.join(MODES)}, not {mode!r}")
        if mode == self.mode:
            return
        now = self()
        if mode == "manual":
            self.frozen_ms = now
        else:
            # go on from where manual time stood: the offset keeps time from going backwards
            self.frozen_ms = None
            self.offset_ms = max(0, now - int(time.time() * 1000))
        self._jumped()

    def reset(self, mode: str = "system") -> None:
        self.start_mode = mode
        self.offset_ms = 0
        self.frozen_ms = None
        self.set_mode(mode)
        # timers re-read their deadlines (time may have gone back to the wall clock)
        self._jumped()

    def on_jump(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (on the trio loop) whenever time jumps; returns a function that
        unregisters it."""
        self._listeners.append(callback)

        def remove() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    def _jumped(self) -> None:
        for callback in list(self._listeners):
            try:
                callback()
            except Exception:  # noqa: BLE001 - one timer must not keep the others asleep
                log.exception("a clock listener failed")


CLOCK = BrokerClock()


def now_ms() -> int:
    return CLOCK()


def on_jump(clock: Callable[[], int], callback: Callable[[], None]) -> Callable[[], None]:
    """Register `callback` with `clock` if it is the broker's clock (a fake one has no jumps to
    report); returns the unregister function."""
    register = getattr(clock, "on_jump", None)
    if register is None:
        return lambda: None
    return register(callback)


class JumpTimer:
    """A periodic loop's sleep that a jump of `clock` cuts short: `await timer.sleep(seconds)`
    returns after `seconds`, or at once when the clock jumped since the last sleep began. Use it
    as a context manager (leaving it unregisters from the clock)."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self._jumped = trio.Event()
        self._unregister = on_jump(clock, self.wake)

    def wake(self) -> None:
        """Cut the current (or next) sleep short: the clock jumped, or the sleeper has new work."""
        self._jumped.set()

    async def sleep(self, seconds: float) -> None:
        with trio.move_on_after(seconds):
            await self._jumped.wait()
        self._jumped = trio.Event()

    def __enter__(self) -> "JumpTimer":
        return self

    def __exit__(self, *exc) -> None:
        self._unregister()
