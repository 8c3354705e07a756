"""The fault schedule of a run (Jepsen's nemesis): seeded, non-overlapping faults, each a kind
from FAULTS with a begin and an end.

A kind is a class with ``begin(broker)`` and ``end(broker)``; ``broker`` is the run's broker
(compat_tests/brokers.py: ``kill()``, ``restart()``, ``pid``, ``bootstrap``), and a kind is made
with the run's ``Targets`` (its topics, group and transactional ids, a seeded random source).
Dropped responses, delayed requests and clock jumps go through kafkalite's test controls, and so
do leader and coordinator moves of a multi-node kafkalite (``nodes``) and its seeded chaos engine
(``chaos``); a kind that only one broker can do says so in ``supports(broker)``, and the schedule
leaves it out on the other. A kind's ``details()`` (after its end) go into the history with the
fault's completion: the chaos kind's seed, profile and chaos log.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class Targets:
    """What a run's faults may act on."""

    topics: list[str]
    partitions: int
    groups: list[str]
    transactional_ids: list[str]
    rng: random.Random


class Fault:
    name = "fault"
    stretch = 1.0  # the kind's windows are this many times the schedule's drawn length

    def __init__(self, targets: Targets | None = None):
        self.targets = targets

    @staticmethod
    def supports(broker: Any) -> bool:
        return True

    def begin(self, broker: Any) -> None:
        raise NotImplementedError

    def end(self, broker: Any) -> None:
        raise NotImplementedError

    def details(self) -> dict[str, Any]:
        """What the history keeps of the fault besides its kind and length."""
        return {}


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


class _Control(Fault):
    """A fault through kafkalite's test controls (broker/controls/): the broker must have been
    started with them (runner.start_broker does), so Apache Kafka leaves these kinds out."""

    @staticmethod
    def supports(broker: Any) -> bool:
        return getattr(broker, "controls_url", None) is not None

    def end(self, broker: Any) -> None:
        broker.controls.call("clear-faults")


class DropEndTxn(_Control):
    """The next EndTxn is applied but its response is lost: the client times out, reconnects
    and retries an EndTxn the coordinator has already completed (KIP-890 retry rules)."""

    name = "drop-end-txn"

    def begin(self, broker: Any) -> None:
        broker.controls.call("drop-responses", api="EndTxn", count=1)


class DropProduce(_Control):
    """The next two Produce responses are lost after the records were appended: the producer
    retries them, and the idempotent sequence checks must keep them from being written twice."""

    name = "drop-produce"

    def begin(self, broker: Any) -> None:
        broker.controls.call("drop-responses", api="Produce", count=2)


class DelayProduce(_Control):
    """Every Produce response held 1.5 s while the fault lasts (a slow disk or network)."""

    name = "delay-produce"

    def begin(self, broker: Any) -> None:
        broker.controls.call("delay-responses", api="Produce", ms=1500, count=None)


class ClockJump(_Control):
    """The broker's clock jumps 10 s ahead: open transactions pass transaction.timeout.ms and are
    aborted, group members pass their session timeout."""

    name = "clock-jump"

    def begin(self, broker: Any) -> None:
        broker.controls.call("advance-clock", ms=10_000)

    def end(self, broker: Any) -> None:
        pass


class _Move(_Control):
    """A topology change of a kafkalite serving several nodes (``--nodes N``): what Kafka's
    controller does on a reassignment or a failover. The move stays; clients must follow it
    (NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR, then new metadata or FindCoordinator)."""

    @staticmethod
    def supports(broker: Any) -> bool:
        return _Control.supports(broker) and len(getattr(broker, "nodes", {}) or {}) > 1

    def _node(self, broker: Any) -> int:
        assert self.targets is not None
        return self.targets.rng.choice(sorted(broker.nodes))

    def end(self, broker: Any) -> None:
        pass


class MoveLeader(_Move):
    """The leaders of two of the run's partitions move to another node, each with a new leader
    epoch: producers, consumers and transaction markers must go to the new leader."""

    name = "move-leader"

    def begin(self, broker: Any) -> None:
        assert self.targets is not None
        t = self.targets
        tps = [(topic, p) for topic in t.topics for p in range(t.partitions)]
        for topic, p in t.rng.sample(tps, min(2, len(tps))):
            broker.controls.call("move-leader", topic=topic, partition=p, node=self._node(broker))


class MoveCoordinator(_Move):
    """The group coordinator of the run's group and the transaction coordinator of one of its
    transactional ids move to other nodes (the leaders of their __consumer_offsets and
    __transaction_state partitions): open transactions must still end once, offsets commit once."""

    name = "move-coordinator"

    def begin(self, broker: Any) -> None:
        assert self.targets is not None
        t = self.targets
        for group in t.groups:
            broker.controls.call("move-coordinator", group=group, node=self._node(broker))
        tid = t.rng.choice(t.transactional_ids)
        broker.controls.call("move-coordinator", transactional_id=tid, node=self._node(broker))


class Chaos(_Control):
    """kafkalite's seeded chaos (broker/chaos.py, the control ``chaos``) for the window: retriable
    errors, dropped and delayed responses, closed connections and leader and coordinator moves on
    every client's requests, drawn from a seed drawn from the run's; its profile (default or
    harsh) is drawn too. At the end the chaos log (every fault it injected) is read, then chaos
    stops; ``details()`` gives both to the history. Its windows are three times as long as the
    others: chaos faults a few requests in a hundred, and a window should meet dozens."""

    name = "chaos"
    stretch = 3.0
    PROFILES = ("default", "harsh")

    def __init__(self, targets: Targets | None = None):
        super().__init__(targets)
        self.seed: int | None = None
        self.profile = ""
        self.log: list[dict[str, Any]] = []

    def begin(self, broker: Any) -> None:
        assert self.targets is not None
        self.seed = self.targets.rng.randrange(2**31)
        self.profile = self.targets.rng.choice(self.PROFILES)
        broker.controls.call("chaos", seed=self.seed, profile=self.profile)

    def end(self, broker: Any) -> None:
        try:
            self.log = broker.controls.call("chaos-log")
        finally:
            broker.controls.call("chaos", enabled=False)

    def details(self) -> dict[str, Any]:
        return {"seed": self.seed, "profile": self.profile, "injected": len(self.log), "chaos_log": self.log}


FAULTS: dict[str, type[Fault]] = {"kill": Kill, "pause": Pause, "drop-end-txn": DropEndTxn,
                                  "drop-produce": DropProduce, "delay-produce": DelayProduce,
                                  "clock-jump": ClockJump, "move-leader": MoveLeader,
                                  "move-coordinator": MoveCoordinator, "chaos": Chaos}
PROCESS_FAULTS = ("kill", "pause")
MOVES = ("move-leader", "move-coordinator")
HEALTHY = 1.5  # seconds of a healthy broker between two faults, at least


@dataclass(frozen=True)
class Planned:
    at: float        # seconds after the run began
    kind: str
    length: float    # seconds the fault lasts


def schedule(rng: random.Random, seconds: float, kinds: tuple[str, ...], *, first: float = 1.5,
             gap: tuple[float, float] = (1.0, 2.5), length: tuple[float, float] = (0.5, 2.5),
             lead: tuple[str, ...] = ()) -> list[Planned]:
    """Faults one after another from ``first`` until ``seconds``, none overlapping, the last one
    over before the end (so the run ends on a healthy broker). Every kind comes once before any
    comes twice: those of ``lead`` first (in that order), then the process faults (kill, pause),
    then the moves, then the rest, each group in a seeded order."""
    plan: list[Planned] = []
    t = first
    ahead = [k for k in lead if k in kinds]
    core = [k for k in kinds if k in PROCESS_FAULTS and k not in ahead]
    moves = [k for k in kinds if k in MOVES and k not in ahead]
    rest = [k for k in kinds if k not in PROCESS_FAULTS and k not in MOVES and k not in ahead]
    first_round = ahead + rng.sample(core, len(core)) + rng.sample(moves, len(moves)) + rng.sample(rest, len(rest))
    while kinds:
        n = round(rng.uniform(*length), 2)
        if t + n > seconds:
            break
        kind = first_round.pop(0) if first_round else rng.choice(kinds)
        n = round(n * FAULTS[kind].stretch, 2)
        if t + n > seconds:
            break
        plan.append(Planned(round(t, 2), kind, n))
        t += n + rng.uniform(*gap)
    return plan


class Nemesis(threading.Thread):
    """Runs a schedule against the broker, recording each fault's begin and end as operations of
    the process "nemesis" (through ``record``)."""

    def __init__(self, broker: Any, plan: list[Planned], record: Callable[..., Any], t0: float,
                 targets: Targets | None = None):
        super().__init__(name="nemesis", daemon=True)
        self.broker, self.plan, self.record, self.t0 = broker, plan, record, t0
        self.targets = targets
        self.stopping = threading.Event()
        self.errors: list[str] = []
        self.done: list[Planned] = []
        self.details: list[dict[str, Any]] = []  # each done fault's details(), in order

    def labels(self) -> list[str]:
        """One line per fault done: kind@begin/length, and a chaos window's seed, profile and
        count of injected faults."""
        out = []
        for p, d in zip(self.done, self.details):
            extra = f" (seed {d['seed']}, {d['profile']}: {d['injected']} injected)" if "injected" in d else ""
            out.append(f"{p.kind}@{p.at}s/{p.length}s{extra}")
        return out

    def injected(self) -> int:
        """The faults the chaos windows injected, all of them."""
        return sum(d.get("injected", 0) for d in self.details)

    def run(self) -> None:
        healthy_since = self.t0
        for p in self.plan:
            # At its planned time, and never before the broker has had HEALTHY seconds since the
            # last fault ended (a restart of Apache Kafka can outlast the plan's gaps).
            start = max(self.t0 + p.at, healthy_since + HEALTHY)
            if self.stopping.wait(max(0.0, start - time.monotonic())):
                return
            fault = FAULTS[p.kind](self.targets)
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
            details = fault.details()
            self.record(process="nemesis", type="ok", f="fault", value={"kind": p.kind, "length": p.length, **details})
            self.done.append(p)
            self.details.append(details)
            healthy_since = time.monotonic()
