"""Hold partition reassignments running (a broker started with `--nodes N`).

    hold-reassignments  held
                        true: reassignments started from now on stay in progress (their
                        partitions list the target and the leaving replicas, ListPartitionReassignments
                        shows them with their adding and removing replicas) until released;
                        false: every held reassignment completes now, and later ones once
                        their new replicas have caught up (reassignment.catch.up.ms)
    list-reassignments  the reassignments in progress: {"topic", "partition", "replicas",
                        "adding", "removing"}

Without a hold, a reassignment that adds replicas completes reassignment.catch.up.ms after it
started, by the broker's clock (advance-clock finishes it sooner; broker.reassignments). A running
reassignment goes with its topic when the topic is deleted, and the reset control ends every one
and the hold; they live in memory only, so a restart finds them completed (topics.json holds
their targets).
"""

from __future__ import annotations

from . import ControlError, control


@control("hold-reassignments")
async def hold_reassignments(broker, *, held):
    """Hold reassignments in progress (true) or let them complete (false)."""
    if not isinstance(held, bool):
        raise ControlError(f"held must be true or false, not {held!r}")
    finished = broker.reassignments.hold(held)
    return {"held": held, "completed": finished}


@control("list-reassignments")
async def list_reassignments(broker):
    """The reassignments in progress."""
    return [{"topic": t, "partition": p, "replicas": step.replicas, "adding": step.adding, "removing": step.removing}
            for (t, p), step in sorted(broker.reassignments.ongoing.items())]
