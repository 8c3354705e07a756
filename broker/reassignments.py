"""Partition reassignments and leader elections, as Kafka's controller (ReplicationControlManager)
runs them on a cluster of `--nodes N` logical replicas.

Reassignment (KIP-455)
- A target replica list is checked as Kafka checks a manual assignment, with its messages
  (INVALID_REPLICA_ASSIGNMENT): not empty, every broker registered, none twice; a different
  replication factor needs allow_replication_factor_change (INVALID_REPLICATION_FACTOR).
- While it runs, the partition's replicas are the target followed by the replicas leaving
  (Metadata shows them all), `adding` are the target's new replicas and `removing` the leaving ones
  (ListPartitionReassignments). As on Kafka, a reassignment that adds replicas is in progress
  while they catch up: logical replicas have nothing to copy, so they take
  `reassignment.catch.up.ms` (kafkalite's setting, 500 ms) by the broker's clock, which the
  advance-clock control moves (manual time holds them until advanced); 0 completes them within
  the request. One that only drops or reorders replicas of the ISR completes at once, as Kafka's
  controller completes it when every target replica is in sync. The hold-reassignments control
  keeps them running until released. Completed, the replicas are the target, the ISR its live
  members, and a leader outside the target hands over to the first live replica of the target (a
  new leader epoch). A reassignment whose new replicas include a node that is down waits for it.
- A null target cancels the running reassignment (the original replicas return);
  NO_REASSIGNMENT_IN_PROGRESS when there is none. A target equal to the replicas is a no-op.
- All or nothing: the partition's new replica lists are saved (topics.json, broker.cluster)
  before memory changes; a save that fails raises OSError with the partition and its
  reassignment as they were (the handler answers KAFKA_STORAGE_ERROR). A held reassignment
  saves its target: the hold lives in memory only, so after a restart it has completed.
- A deleted topic's reassignments go with it (`topic_deleted`); the reset control opens a new
  `Reassignments`, none running and none held.

Leader election (KIP-460)
- PREFERRED: the first replica leads if it is up and in sync; ELECTION_NOT_NEEDED when it already
  leads, PREFERRED_LEADER_NOT_AVAILABLE when it cannot.
- UNCLEAN: only a partition whose leader is down or missing gets one: the first live in-sync
  replica, else (unclean) the first live replica, which becomes the whole ISR;
  ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is up.
- Leaders and ISR live in memory only (broker.cluster): an election writes nothing, so a full
  disk cannot fail it.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

from kio.schema.errors import ErrorCode

from .clock import CLOCK, JumpTimer, now_ms

if TYPE_CHECKING:
    from .cluster import Cluster
    from .partition import Partition

log = logging.getLogger("kafkalite.reassignments")

PREFERRED, UNCLEAN = 0, 1
ELECTION_TYPES = (PREFERRED, UNCLEAN)
# Errors' default messages, which Kafka's controller answers with
ELECTION_MESSAGES = {
    ErrorCode.election_not_needed: "Leader election not needed for topic partition.",
    ErrorCode.preferred_leader_not_available: "The preferred leader was not available.",
    ErrorCode.eligible_leaders_not_available: "Eligible topic partition leaders are not available.",
}


@dataclass
class Ongoing:
    original: list[int]
    target: list[int]
    # when the new replicas have caught up (the broker's clock); None while held
    caught_up_ms: int | None = None

    @property
    def adding(self) -> list[int]:
        return [n for n in self.target if n not in self.original]

    @property
    def removing(self) -> list[int]:
        return [n for n in self.original if n not in self.target]

    @property
    def replicas(self) -> list[int]:
        return self.target + self.removing


class Reassignments:
    def __init__(self, cluster: "Cluster", catch_up_ms: int = 0):
        self.cluster = cluster
        self.catch_up_ms = catch_up_ms
        self.ongoing: dict[tuple[str, int], Ongoing] = {}
        self.held = False
        # wakes the task that completes reassignments (complete_caught_up) when one starts
        self.wake: Callable[[], None] = lambda: None

    # --- AlterPartitionReassignments ------------------------------------------------------

    def check_target(self, part: "Partition", target: list[int], allow_rf_change: bool) -> tuple[ErrorCode, str] | None:
        if not target:
            return ErrorCode.invalid_replica_assignment, "The manual partition assignment includes an empty replica list."
        seen: set[int] = set()
        for node in target:
            if node not in self.cluster.node_ids:
                return (ErrorCode.invalid_replica_assignment,
                        f"The manual partition assignment includes broker {node}, but no such broker is registered.")
            if node in seen:
                return (ErrorCode.invalid_replica_assignment,
                        f"The manual partition assignment includes the broker {node} more than once.")
            seen.add(node)
        current = self.ongoing[(part.topic.name, part.index)].original if self.is_ongoing(part) else part.replicas
        if not allow_rf_change and len(target) != len(current):
            return (ErrorCode.invalid_replication_factor, f"The replication factor is changed from {len(current)} "
                    f"to {len(target)} but allowReplicationFactorChange is false")
        return None

    def is_ongoing(self, part: "Partition") -> bool:
        return (part.topic.name, part.index) in self.ongoing

    def reassign(self, part: "Partition", target: list[int] | None) -> ErrorCode:
        """Start (or finish at once), replace or cancel a partition's reassignment; the target is checked."""
        key = (part.topic.name, part.index)
        running = self.ongoing.get(key)
        if target is None:
            if running is None:
                return ErrorCode.no_reassignment_in_progress
            self._settle(part, running.original)
            del self.ongoing[key]
            log.info("reassignment of %s-%d cancelled: replicas %s", part.topic.name, part.index, running.original)
            return ErrorCode.none
        original = running.original if running is not None else list(part.replicas)
        if target == original and running is None:
            return ErrorCode.none
        step = Ongoing(original, list(target))
        in_sync = all(n in part.isr for n in target)
        if self.held or (self.catch_up_ms > 0 and not in_sync):
            # topics.json holds where the reassignment goes: no running reassignment outlives the
            # process, so the next start finds it done
            self.cluster.save(changed=part.topic, replicas=self.cluster.replicas_with(part, step.target))
            step.caught_up_ms = None if self.held else now_ms() + self.catch_up_ms
            self.ongoing[key] = step
            part.replicas = step.replicas
            log.info("reassignment of %s-%d to %s running%s: replicas %s adding %s removing %s", part.topic.name,
                     part.index, target, " (held)" if self.held else "", step.replicas, step.adding, step.removing)
            self.wake()
        else:
            self._settle(part, list(target))
            self.ongoing.pop(key, None)
        return ErrorCode.none

    def complete_due(self, now: int) -> int | None:
        """Complete the reassignments whose new replicas have caught up by `now` (and are up);
        returns the ms until the next one is due, None when none is."""
        wait: int | None = None
        for (topic, index), step in list(self.ongoing.items()):
            if step.caught_up_ms is None:
                continue
            if step.caught_up_ms > now or not all(self.cluster.alive(n) for n in step.adding):
                # a new replica on a node that is down catches up once it is back: look again then
                due = step.caught_up_ms - now if step.caught_up_ms > now else self.catch_up_ms
                wait = due if wait is None else min(wait, due)
                continue
            del self.ongoing[(topic, index)]
            part = self.cluster.partition(topic, index)
            if part is not None:
                self._settle(part, step.target)
        return wait

    def _settle(self, part: "Partition", replicas: list[int]) -> None:
        """The reassignment's end: these replicas, their live members in sync, a leader among them.
        The replica lists are saved first: a save that fails raises OSError with nothing changed."""
        self.cluster.save(changed=part.topic, replicas=self.cluster.replicas_with(part, replicas))
        part.replicas = list(replicas)
        part.isr = [n for n in replicas if self.cluster.alive(n)] or [replicas[0]]
        if part.leader not in replicas:
            part.set_leader(next((n for n in replicas if self.cluster.alive(n)), -1))
        log.info("partition %s-%d now has replicas %s, ISR %s, leader %d", part.topic.name, part.index, part.replicas,
                 part.isr, part.leader)

    def hold(self, held: bool) -> int:
        """Hold reassignments running (True) or let them finish, now and from now on (False);
        returns how many finished."""
        self.held = held
        if held:
            return 0
        finished = 0
        for (topic, index), step in list(self.ongoing.items()):
            part = self.cluster.partition(topic, index)
            if part is not None:
                self._settle(part, step.target)
                finished += 1
            del self.ongoing[(topic, index)]
        return finished

    def topic_deleted(self, topic: str) -> None:
        """A deleted topic's reassignments go with it: none is applied to a later topic of the
        same name (Kafka's controller drops them with the topic's partitions)."""
        for key in [k for k in self.ongoing if k[0] == topic]:
            del self.ongoing[key]

    # --- ElectLeaders ---------------------------------------------------------------------

    def elect(self, part: "Partition", election_type: int) -> ErrorCode:
        """One partition's election (the handler refuses election types other than these two)."""
        assert election_type in ELECTION_TYPES, election_type
        alive = self.cluster.alive
        if election_type == PREFERRED:
            preferred = part.replicas[0]
            if part.leader == preferred:
                return ErrorCode.election_not_needed
            if not alive(preferred) or preferred not in part.isr:
                return ErrorCode.preferred_leader_not_available
            part.set_leader(preferred)
            return ErrorCode.none
        if part.leader >= 0 and alive(part.leader):
            return ErrorCode.election_not_needed
        clean = next((n for n in part.replicas if n in part.isr and alive(n)), None)
        if clean is not None:
            part.set_leader(clean)
            return ErrorCode.none
        unclean = next((n for n in part.replicas if alive(n)), None)
        if unclean is None:
            return ErrorCode.eligible_leaders_not_available
        part.isr = [unclean]
        part.set_leader(unclean)
        log.warning("unclean leader election: %s-%d is led by %d, out of sync", part.topic.name, part.index, unclean)
        return ErrorCode.none


class HoldsReassignments(Protocol):
    """The broker as complete_caught_up sees it: its reassignments, which the reset control replaces."""

    reassignments: Reassignments


async def complete_caught_up(broker: HoldsReassignments) -> None:
    """The broker's task that completes reassignments once their new replicas have caught up: it
    sleeps until the next is due, and wakes when one starts or the broker's clock jumps. It reads
    broker.reassignments each time round, since the reset control replaces it."""
    with JumpTimer(CLOCK) as timer:
        while True:
            reassignments = broker.reassignments
            reassignments.wake = timer.wake
            wait_ms = reassignments.complete_due(now_ms())
            await timer.sleep(math.inf if wait_ms is None else wait_ms / 1000)
