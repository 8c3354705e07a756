"""The fault schedule of a run (Jepsen's nemesis): seeded, non-overlapping faults, each a kind
from FAULTS with a begin and an end.

A kind is a class with ``begin(broker)`` and ``end(broker)``; ``broker`` is the run's broker
(compat_tests/brokers.py: ``kill()``, ``restart()``, ``pid``, ``bootstrap``). More kinds (dropped
responses, delayed requests, coordinator and leader moves, clock jumps through the broker's test
controls) plug in as more entries of FAULTS; a kind that only one broker can do says so in
``supports(broker)``, and the schedule leaves it out on the other.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable


class Fault:
    name = "fault"

    @staticmethod
    def supports(broker: Any) -> bool:
        return True

    def begin(self, broker: Any) -> None:
        raise NotImplementedError

    def end(self, broker: Any) -> None:
        raise NotImplementedError


class Kill(Fault):
    """kill -9 of the broker, then a restart from its files (same data dir and port)."""

    name = "kill"

    def begin(self, broker: Any) -> None:
        broker.kill()

    def end(self, broker: Any) -> None:
        broker.restart()


class Pause(Fault):
    """SIGSTOP of the broker process, SIGCONT at the end: a broker that stops answering while
    its connections stay open (a GC pause, a stalled VM)."""

    name = "pause"

    def begin(self, broker: Any) -> None:
        os.kill(broker.pid, signal.SIGSTOP)

    def end(self, broker: Any) -> None:
        os.kill(broker.pid, signal.SIGCONT)


FAULTS: dict[str, type[Fault]] = {"kill": Kill, "pause": Pause}
HEALTHY = 1.5  # seconds of a healthy broker between two faults, at least


@dataclass(frozen=True)
class Planned:
    at: float        # seconds after the run began
    kind: str
    length: float    # seconds the fault lasts


def schedule(rng: random.Random, seconds: float, kinds: tuple[str, ...], *, first: float = 1.5,
             gap: tuple[float, float] = (1.0, 3.0), length: tuple[float, float] = (0.5, 3.0)) -> list[Planned]:
    """Faults one after another from ``first`` until ``seconds``, none overlapping, the last one
    over before the end (so the run ends on a healthy broker). Every kind comes once (in a
    seeded order) before any comes twice."""
    plan: list[Planned] = []
    t = first
    first_round = rng.sample(list(kinds), len(kinds))
    while kinds:
        n = round(rng.uniform(*length), 2)
        if t + n > seconds:
            break
        kind = first_round.pop(0) if first_round else rng.choice(kinds)
        plan.append(Planned(round(t, 2), kind, n))
        t += n + rng.uniform(*gap)
    return plan


class Nemesis(threading.Thread):
    """Runs a schedule against the broker, recording each fault's begin and end as operations of
    the process "nemesis" (through ``record``)."""

    def __init__(self, broker: Any, plan: list[Planned], record: Callable[..., Any], t0: float):
        super().__init__(name="nemesis", daemon=True)
        self.broker, self.plan, self.record, self.t0 = broker, plan, record, t0
        self.stopping = threading.Event()
        self.errors: list[str] = []
        self.done: list[Planned] = []

    def run(self) -> None:
        healthy_since = self.t0
        for p in self.plan:
            # At its planned time, and never before the broker has had HEALTHY seconds since the
            # last fault ended (a restart of Apache Kafka can outlast the plan's gaps).
            start = max(self.t0 + p.at, healthy_since + HEALTHY)
            if self.stopping.wait(max(0.0, start - time.monotonic())):
                return
            fault = FAULTS[p.kind]()
            self.record(process="nemesis", type="invoke", f="fault", value={"kind": p.kind, "length": p.length})
            try:
                fault.begin(self.broker)
            except Exception as e:  # noqa: BLE001 - reported by the run
                self.errors.append(f"{p.kind} begin: {e!r}")
                continue
            self.stopping.wait(p.length)  # a stop request ends the fault early, never skips its end
            try:
                fault.end(self.broker)
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"{p.kind} end: {e!r}")
                self.record(process="nemesis", type="info", f="fault", value={"kind": p.kind, "error": repr(e)})
                return
            self.record(process="nemesis", type="ok", f="fault", value={"kind": p.kind, "length": p.length})
            self.done.append(p)
            healthy_since = time.monotonic()
