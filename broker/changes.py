"""The broker's state changes, for the controls that wait on a condition (broker.controls.waits).

A wait checks its condition, and when it does not hold yet sleeps until the next change: a record
appended or a transaction marker written (`Partition.wake`), a request handled (broker.dispatch:
a group's members and states change in its handlers), a group coordinator's timer firing (a
member whose session ran out), or a jump of the broker's clock. Nothing polls: a change wakes the
waits, each checks its condition again, all on the trio loop with no await between the check and
the sleep, so no change is missed.

`notify` costs one attribute test while nobody waits.

Leader changes have listeners of their own (`on_leader_change`): a coordinator whose internal
topic partition gets another leader resigns and loads it again, as Kafka's coordinators do on
their broker's onResignation/onElection (broker.groups.coordinator, broker.transactions)."""

from __future__ import annotations

from typing import Callable

import trio

# called after a partition's leader changed, with its topic's name, its index, its leader now and
# the node that led it before (-1: none); plain values, so that this module needs no Partition
LeaderListener = Callable[[str, int, int, int], None]


class StateChanges:
    """One event per round of waiting: set (and forgotten) by the next change."""

    def __init__(self) -> None:
        self._event: trio.Event | None = None
        # responses held back by a delay fault (the connection sleeps before sending them)
        self.held_responses = 0
        self._leader_listeners: list[LeaderListener] = []

    def on_leader_change(self, listener: LeaderListener) -> Callable[[], None]:
        """Call `listener` after every leader change; returns what unregisters it."""
        self._leader_listeners.append(listener)
        return lambda: self._leader_listeners.remove(listener)

    def leader_changed(self, topic: str, index: int, leader: int, previous: int) -> None:
        """Partition.set_leader's report: the listeners run now, before any other request."""
        for listener in list(self._leader_listeners):
            listener(topic, index, leader, previous)

    def notify(self) -> None:
        event = self._event
        if event is not None:
            self._event = None
            event.set()

    async def next_change(self, seconds: float) -> None:
        """Return at the next change, or after `seconds`."""
        if self._event is None:
            self._event = trio.Event()
        event = self._event
        with trio.move_on_after(max(0.0, seconds)):
            await event.wait()
