"""The group coordinator: classic and KIP-848 consumer groups, KIP-1071 streams groups and
committed offsets, kept in the internal topic `__consumer_offsets` in Kafka's record formats.

One class, `GroupCoordinator`, built from one module per job; this module is the service:
- persistence.py: the state (groups, offsets) and its writes to `__consumer_offsets`, and `load`;
  replay.py reads the topic back, records.py and streams_records.py are the record formats;
- classic_requests.py: JoinGroup, SyncGroup, Heartbeat, LeaveGroup;
- consumer_requests.py: ConsumerGroupHeartbeat; streams_requests.py: StreamsGroupHeartbeat;
- offset_requests.py: OffsetCommit, OffsetFetch, OffsetDelete, retention, and the transaction
  coordinator's hooks (TxnOffsetCommit and its markers);
- listing.py: ListGroups, DeleteGroups.
The state machines (classic.py, consumer.py, streams.py) are plain classes; the request modules
feed them requests and time.

Rules:
- The leader of a group's partition of `__consumer_offsets` coordinates it (with `--nodes`, the
  other nodes answer NOT_COORDINATOR, broker.handlers.leadership; a leader change unloads and
  loads the partition, persistence.py). A group lives on partition
  `Utils.abs(groupId.hashCode) % offsets.topic.num.partitions` of `__consumer_offsets`
  (`offsets_partition`, broker.internal_store), as in Kafka; the topic is created on first use.
- Time: one trio task (`run`) sleeps until the earliest session/rebalance deadline of any group,
  or until a request changes the deadlines (`_kick`) or the broker's clock jumps, and ticks the
  groups whose deadline passed; every offsets.retention.check.interval.ms it expires offsets.
- Requests and ticks run without awaiting between a change and its write, so each change is
  atomic on the trio loop; only JoinGroup/SyncGroup wait, for the rebalance to answer them.
- The state on disk is read by `load`, which the broker's services call before `run`.
"""

from __future__ import annotations

import contextlib
import logging

import trio

from ..clock import on_jump
from ..internal_store import CoordinatorWriteError
from .classic import ClassicGroup
from .classic_requests import ClassicRequests
from .consumer_requests import ConsumerRequests
from .listing import GroupListing
from .offset_requests import OffsetRequests
from .persistence import Group
from .streams_requests import StreamsRequests

log = logging.getLogger("kafkalite.groups")

RETENTION_CHECK_INTERVAL_MS = 600_000  # offsets.retention.check.interval.ms


class GroupCoordinator(ClassicRequests, ConsumerRequests, StreamsRequests, OffsetRequests, GroupListing):
    """`broker.services.groups`: the request methods of its bases, and the timer task."""

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The session and rebalance deadlines. The state on disk is read by `load`, which the
        broker's services call first (broker.services)."""
        self._wake = trio.Event()
        task_status.started()
        # a jump of the broker's clock (advance-clock) re-reads every deadline at once
        unregister = on_jump(self.clock, self._kick)
        try:
            await self._deadlines()
        finally:
            unregister()

    async def _deadlines(self) -> None:
        next_retention = self.clock() + RETENTION_CHECK_INTERVAL_MS
        while True:
            now = self.clock()
            deadline = next_retention
            for group in list(self.groups.values()):
                d = group.next_deadline()
                if d is not None and d <= now:
                    self._tick(group, now)
                    d = group.next_deadline()
                if d is not None:
                    deadline = min(deadline, d)
            if now >= next_retention:
                self.expire_offsets(now)
                next_retention = now + RETENTION_CHECK_INTERVAL_MS
                deadline = min(deadline, next_retention)
            self._wake = trio.Event()
            with trio.move_on_after(max(0.0, (deadline - self.clock()) / 1000)):
                await self._wake.wait()

    def close(self) -> None:
        self._unlisten_leaders()

    def _tick(self, group: Group, now: int) -> None:
        if isinstance(group, ClassicGroup):
            group.tick(now)
        else:
            for member_id in group.tick(now):
                log.info("group %s: member %s fenced (session or rebalance timeout)", group.group_id, member_id)
        with contextlib.suppress(CoordinatorWriteError):  # logged; written again with the next change
            self._after(group)
        # a member removed or a rebalance timed out without a request: the controls' waits look again
        self.broker.cluster.changes.notify()

