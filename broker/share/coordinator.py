"""The share coordinator: share groups (KIP-932) and their share-partitions.

- membership (ShareGroupHeartbeat): a member joins with epoch 0 and its own member id, leaves
  with epoch -1, and is removed when no heartbeat came for group.share.session.timeout.ms.
  Every change of members or of subscribed topics' partitions bumps the group epoch and
  recomputes the assignment at once (share groups have no revocation), after Kafka's simple
  assignor: with fewer members than partitions each partition goes to one member, round
  robin; otherwise every member gets one partition and partitions are shared.
- share-partitions (SharePartition, one per group and topic partition) are created on first
  fetch at the start `share.auto.offset.reset` names (latest: the high watermark; earliest: the
  log start offset), read from the group configs.
- share sessions, one per (group, member) on each node (each broker keeps its own share session
  cache: a consumer fetches from every leader of its partitions): epoch 0 opens (replacing an
  older one on that node), -1 closes and releases the member's acquired records of the
  partitions that node leads, any other epoch must be the next one. A session
  belongs to the connection that opened it; when that connection closes its records are
  released, as Kafka's share session cache does on disconnect. A member that leaves keeps its
  session (a closing client sends its last acknowledgements with epoch -1 around its leave);
  one removed for its session timeout loses it, and its records.
- persistence: after every change a share-partition's ShareSnapshot is appended to
  `__share_group_state` (state_store.py, records.py); on startup the topic is read back. Group
  membership is not persisted: members rejoin after a restart, with their share state intact.
  Group existence is: a group with share-partitions is listed (Empty) after a restart.
- a failed write (full disk, failed fsync) never closes the connection. Acknowledgements are
  durable before they are answered: a failed write undoes them and answers
  COORDINATOR_NOT_AVAILABLE for the partition (Kafka's SharePartition rolls back, its
  persister's NOT_COORDINATOR surfacing so). AlterShareGroupOffsets, DeleteShareGroupOffsets and
  DeleteGroups write first and answer NOT_COORDINATOR, changing nothing not written. An
  acquisition, a lock timeout, a release and a new share-partition stand (Kafka does not
  persist acquisitions and goes ahead with a lock timeout whose write failed); their state is
  written with the share-partition's next change.
- timers: one trio task sleeps until the earliest acquisition lock or session deadline, on the
  broker clock: an advance of it (advance-clock) wakes the task, so a lock past its deadline
  expires at once.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import trio
from kio.schema.errors import ErrorCode

from kafkalite.protocol.batch import iter_batches
from kafkalite.storage import OffsetOutOfRange

from ..clock import CLOCK, on_jump
from ..group_configs import GroupConfigs
from ..internal_store import CoordinatorWriteError
from .partition import Batch, SharePartition
from .state_store import SharePartitionKey, ShareStateStore

log = logging.getLogger("kafkalite.share")

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
LEAVE_EPOCH = -1
ASSIGNOR = "simple"

TP = tuple[uuid.UUID, int]


class ShareError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code
        self.message = message


@dataclass
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: tuple[str, ...]
    epoch: int = 0
    deadline: int = 0
    assignment: dict[uuid.UUID, list[int]] = field(default_factory=dict)
    sent_epoch: int = -1  # the epoch of the last assignment sent to the member


@dataclass
class ShareGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    topics_seen: dict[str, int] = field(default_factory=dict)  # subscribed topic -> partitions at last assignment

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"


@dataclass
class ShareSession:
    epoch: int
    peer: str
    partitions: set[TP] = field(default_factory=set)


def heartbeat_error(group_id: str, member_id: str, member_epoch: int,
                    subscribed: tuple[str, ...] | None) -> ShareError | None:
    """What Kafka's request validation refuses in a ShareGroupHeartbeat (INVALID_REQUEST), before
    the request is routed to the group's coordinator; None for a valid request."""
    if not group_id:
        return ShareError(ErrorCode.invalid_request, "GroupId can't be empty.")
    if not member_id:
        return ShareError(ErrorCode.invalid_request, "MemberId can't be empty.")
    if member_epoch == INITIAL_EPOCH and not subscribed:
        return ShareError(ErrorCode.invalid_request, "SubscribedTopicNames must be set in first request.")
    return None


class ShareCoordinator:
    def __init__(self, broker: Any, *, clock: Callable[[], int] = CLOCK) -> None:
        self.broker = broker
        self.config = broker.config
        self.clock = clock
        self.groups: dict[str, ShareGroup] = {}
        self.partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        # (group, member, node) -> the member's share session on that node
        self.sessions: dict[tuple[str, str, int], ShareSession] = {}
        self.configs: GroupConfigs = broker.services.group_configs
        self._created: dict[tuple[str, uuid.UUID, int], int] = {}
        self.state_store = ShareStateStore(broker, clock=clock)
        self._wake: trio.Event | None = None
        # ShareFetch requests waiting for records to become available again (a release)
        self.waiters: set[trio.Event] = set()

    def notify_available(self) -> None:
        for ev in self.waiters:
            ev.set()

    @property
    def cluster(self) -> Any:
        return self.broker.cluster

    # --- service ---------------------------------------------------------------------------
    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Session and lock deadlines. The state on disk is read by `load`, which the broker's
        services call first (broker.services)."""
        self._wake = trio.Event()
        task_status.started()
        # a jump of the broker's clock (advance-clock) re-reads session and lock deadlines at once
        unregister = on_jump(self.clock, self.kick)
        try:
            while True:
                now = self.clock()
                self.tick(now)
                deadline = self.next_deadline()
                self._wake = trio.Event()
                wait = 60.0 if deadline is None else max(0.0, (deadline - self.clock()) / 1000)
                with trio.move_on_after(wait):
                    await self._wake.wait()
        finally:
            unregister()

    def close(self) -> None:
        pass

    def kick(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def next_deadline(self) -> int | None:
        ds = [m.deadline for g in self.groups.values() for m in g.members.values()]
        ds += [d for sp in self.partitions.values() if (d := sp.next_lock_deadline()) is not None]
        return min(ds) if ds else None

    def tick(self, now: int) -> None:
        for group in list(self.groups.values()):
            expired = [m for m in group.members.values() if m.deadline <= now]
            for m in expired:
                log.info("share group %s: member %s removed (session timeout)", group.group_id, m.member_id)
                self._remove_member(group, m.member_id)
        for key, sp in self.partitions.items():
            if sp.expire_locks(now, self._delivery_limit(key[0])):
                self._persist_or_defer(key)
                self.notify_available()

    # --- configs ---------------------------------------------------------------------------
    def _delivery_limit(self, group_id: str) -> int:
        return self.configs.get_int(group_id, "share.delivery.count.limit")

    def lock_ms(self, group_id: str) -> int:
        return self.configs.get_int(group_id, "share.record.lock.duration.ms")

    def read_committed(self, group_id: str) -> bool:
        return self.configs.get(group_id, "share.isolation.level") == "read_committed"

    # --- membership ------------------------------------------------------------------------
    def heartbeat(self, *, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: tuple[str, ...] | None, client_id: str, client_host: str) -> ShareMember | None:
        """One ShareGroupHeartbeat; the member after it (None once it left). Raises ShareError."""
        now = self.clock()
        session_ms = self.config["group.share.session.timeout.ms"]
        if (invalid := heartbeat_error(group_id, member_id, member_epoch, subscribed)) is not None:
            raise invalid
        other = self.broker.services.groups.groups.get(group_id)
        if other is not None:
            raise ShareError(ErrorCode.group_id_not_found, f"Group {group_id} is not a share group.")
        group = self.groups.get(group_id)
        if member_epoch == LEAVE_EPOCH:
            if group is not None and member_id in group.members:
                # the share session outlives the membership: a leaving client still sends its last
                # acknowledgements (epoch -1); its connection closing releases what it holds
                self._remove_member(group, member_id, close_session=False)
            return None
        if group is None:
            if member_epoch != INITIAL_EPOCH:
                raise ShareError(ErrorCode.unknown_member_id, f"Member {member_id} is not a member of group {group_id}.")
            group = self.groups[group_id] = ShareGroup(group_id)
        member = group.members.get(member_id)
        if member is None:
            if member_epoch != INITIAL_EPOCH:
                raise ShareError(ErrorCode.unknown_member_id, f"Member {member_id} is not a member of group {group_id}.")
            member = ShareMember(member_id, client_id, client_host, rack_id, tuple(subscribed or ()))
            group.members[member_id] = member
            group.epoch += 1
        elif member_epoch not in (member.epoch, INITIAL_EPOCH):
            raise ShareError(ErrorCode.fenced_member_epoch,
                             f"The share group member has a smaller member epoch ({member_epoch}) than the one "
                             f"known by the group coordinator ({member.epoch}).")
        if subscribed is not None and tuple(subscribed) != member.subscribed:
            member.subscribed = tuple(subscribed)
            group.epoch += 1
        if rack_id is not None:
            member.rack_id = rack_id
        member.deadline = now + session_ms
        if member_epoch == INITIAL_EPOCH:
            member.sent_epoch = -1
        self._maybe_assign(group)
        self.kick()
        return member

    def _subscribed_partitions(self, group: ShareGroup) -> dict[str, int]:
        names = {t for m in group.members.values() for t in m.subscribed}
        out = {}
        for name in sorted(names):
            topic = self.cluster.topics.get(name)
            if topic is not None:
                out[name] = len(topic.partitions)
        return out

    def _maybe_assign(self, group: ShareGroup) -> None:
        seen = self._subscribed_partitions(group)
        if seen != group.topics_seen:
            group.topics_seen = seen
            group.epoch += 1
        if group.assignment_epoch == group.epoch:
            return
        for m in group.members.values():
            m.assignment = {}
        # per topic, the members subscribed to it (Kafka's simple assignor, homogeneous or not)
        for name, count in seen.items():
            topic = self.cluster.topics[name]
            members = sorted(mid for mid, m in group.members.items() if name in m.subscribed)
            if not members or not count:
                continue
            if len(members) <= count:
                for p in range(count):
                    group.members[members[p % len(members)]].assignment.setdefault(topic.topic_id, []).append(p)
            else:
                for i, mid in enumerate(members):
                    group.members[mid].assignment.setdefault(topic.topic_id, []).append(i % count)
        group.assignment_epoch = group.epoch
        for m in group.members.values():
            m.epoch = group.epoch

    def _remove_member(self, group: ShareGroup, member_id: str, *, close_session: bool = True) -> None:
        group.members.pop(member_id, None)
        group.epoch += 1
        if close_session:
            self._close_session(group.group_id, member_id)
        self._maybe_assign(group)

    # --- sessions --------------------------------------------------------------------------
    def _close_session(self, group_id: str, member_id: str, node: int | None = None) -> None:
        """Close the member's session on `node` (releasing its records of the partitions the node
        leads), or on every node (all its records) when node is None."""
        for key in [k for k in self.sessions if k[:2] == (group_id, member_id) and node in (None, k[2])]:
            del self.sessions[key]
        self.release_member(group_id, member_id, node)

    def release_member(self, group_id: str, member_id: str, node: int | None = None) -> None:
        limit = self._delivery_limit(group_id)
        for key, sp in self.partitions.items():
            if key[0] != group_id or (node is not None and not self._leads(node, key[1], key[2])):
                continue
            if sp.release_member(member_id, limit):
                self._persist_or_defer(key)
                self.notify_available()

    def _leads(self, node: int, topic_id: uuid.UUID, index: int) -> bool:
        topic = self.cluster.topics_by_id.get(topic_id)
        return topic is not None and 0 <= index < len(topic.partitions) and topic.partitions[index].leader == node

    def connection_closed(self, peer: str) -> None:
        """The connection that opened these share sessions is gone: close them."""
        for (gid, mid, node), s in list(self.sessions.items()):
            if s.peer == peer:
                self._close_session(gid, mid, node)

    def session(self, group_id: str, member_id: str, node: int | None = None) -> ShareSession | None:
        return self.sessions.get((group_id, member_id, self.cluster.node_id if node is None else node))

    def open_session(self, group_id: str, member_id: str, epoch: int, peer: str,
                     node: int | None = None) -> ShareSession:
        """The session a ShareFetch with this epoch works in on `node` (the first node by default;
        raises ShareError for a bad epoch)."""
        node = self.cluster.node_id if node is None else node
        key = (group_id, member_id, node)
        if epoch == INITIAL_EPOCH:
            group = self.groups.get(group_id)
            if group is None or member_id not in group.members:
                raise ShareError(ErrorCode.unknown_member_id,
                                 f"Member {member_id} is not a member of group {group_id}.")
            if key in self.sessions:
                self._close_session(group_id, member_id, node)
            opened = self.sessions[key] = ShareSession(1, peer)
            return opened
        s = self.sessions.get(key)
        if s is None:
            raise ShareError(ErrorCode.share_session_not_found)
        if epoch != FINAL_EPOCH:
            if epoch != s.epoch:
                raise ShareError(ErrorCode.invalid_share_session_epoch)
            s.epoch += 1
        return s

    def final(self, group_id: str, member_id: str, node: int | None = None) -> None:
        self._close_session(group_id, member_id, self.cluster.node_id if node is None else node)

    # --- share-partitions ------------------------------------------------------------------
    def share_partition(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition:
        key = (group_id, topic_id, index)
        sp = self.partitions.get(key)
        topic = self.cluster.topics_by_id[topic_id]
        part = topic.partitions[index]
        if sp is None:
            if self.configs.get(group_id, "share.auto.offset.reset") == "earliest":
                start = part.log_start_offset
            else:
                start = part.high_watermark
            sp = self.partitions[key] = SharePartition(start)
            self._created[key] = self.clock()
            self._persist_or_defer(key)
        sp.skip_below(part.log_start_offset)
        return sp

    def acquire(self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int, *, max_records: int,
                max_bytes: int, strict_limit: bool) -> tuple[bytes, list]:
        """Acquire records of one partition for the member: (the log batches, acquired ranges)."""
        sp = self.share_partition(group_id, topic_id, index)
        part = self.cluster.topics_by_id[topic_id].partitions[index]
        committed = self.read_committed(group_id)
        upper = part.last_stable_offset if committed else part.high_watermark
        start = sp.next_fetch_offset()
        if start >= upper or max_records <= 0:
            return b"", []
        try:
            data = part.read(start, max(max_bytes, 1), upper_bound=upper, min_one=True)
        except OffsetOutOfRange:  # retention moved the log start past it since skip_below
            return b"", []
        if not data:
            return b"", []
        aborted = part.aborted_txns(start, upper) if committed else []
        spans: list[tuple[int, int, Batch]] = []
        for pos, h in iter_batches(data):
            is_aborted = bool(h.is_transactional and not h.is_control and any(
                a.producer_id == h.producer_id and a.first_offset <= h.base_offset <= a.last_offset for a in aborted))
            spans.append((pos, h.total_size, Batch(h.base_offset, h.last_offset, h.is_control, is_aborted)))
        acquired, used = sp.acquire(member_id, [b for _, _, b in spans], now=self.clock(),
                                    lock_ms=self.lock_ms(group_id), max_records=max_records,
                                    max_locks=self.config["group.share.partition.max.record.locks"],
                                    strict_limit=strict_limit)
        used_set = set(b.base_offset for b in used)
        out = b"".join(bytes(data[pos:pos + size]) for pos, size, b in spans if b.base_offset in used_set)
        self._persist_or_defer((group_id, topic_id, index))
        if acquired:
            self.kick()
        return out, acquired

    def acknowledge(self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int,
                    batches: list[tuple[int, int, tuple[int, ...]]]) -> None:
        from .partition import AckError
        key = (group_id, topic_id, index)
        sp = self.partitions.get(key)
        if sp is None:
            raise ShareError(ErrorCode.invalid_record_state, "The share-partition has no acquired records.")
        checkpoint = sp.checkpoint()
        refused: ShareError | None = None
        try:
            try:
                for first, last, types in batches:
                    sp.acknowledge(member_id, first, last, types, now=self.clock(), lock_ms=self.lock_ms(group_id),
                                   delivery_limit=self._delivery_limit(group_id))
            except AckError as exc:
                # the batches before the refused one stay acknowledged, as in Kafka
                refused = ShareError(ErrorCode.invalid_record_state, str(exc))
            try:
                self._persist(key)
            except CoordinatorWriteError:
                # Kafka's SharePartition rolls back what its persister could not write, and its
                # persister's NOT_COORDINATOR reaches the client as COORDINATOR_NOT_AVAILABLE
                sp.rollback(checkpoint)
                raise ShareError(ErrorCode.coordinator_not_available,
                                 "The share-partition's state could not be written.") from None
            if refused is not None:
                raise refused
        finally:
            sp.keep(checkpoint)
            if sp.has_available():
                self.notify_available()

    def has_available(self, group_id: str, topic_id: uuid.UUID, index: int) -> bool:
        sp = self.partitions.get((group_id, topic_id, index))
        return sp is not None and sp.has_available()

    # --- admin -----------------------------------------------------------------------------
    def group_partitions(self, group_id: str) -> dict[tuple[uuid.UUID, int], SharePartition]:
        return {(t, p): sp for (g, t, p), sp in self.partitions.items() if g == group_id}

    def known(self, group_id: str) -> bool:
        return group_id in self.groups or any(g == group_id for g, _, _ in self.partitions)

    def list_groups(self) -> list[tuple[str, str]]:
        ids = set(self.groups) | {g for g, _, _ in self.partitions}
        return sorted((gid, self.groups[gid].state if gid in self.groups else "Empty") for gid in ids)

    def alter_offset(self, group_id: str, topic_id: uuid.UUID, index: int, start_offset: int) -> ErrorCode:
        """AlterShareGroupOffsets for one partition: written first; NOT_COORDINATOR (nothing
        changed) when the write fails."""
        key = (group_id, topic_id, index)
        sp = self.partitions.get(key)
        if sp is None:
            fresh, created = SharePartition(start_offset), self.clock()
            try:
                self.state_store.write(key, fresh, created_ms=created)
            except CoordinatorWriteError:
                return ErrorCode.not_coordinator
            self.partitions[key], self._created[key] = fresh, created
            return ErrorCode.none
        checkpoint = sp.checkpoint()
        sp.reset(start_offset)
        try:
            self._persist(key)
        except CoordinatorWriteError:
            sp.rollback(checkpoint)
            return ErrorCode.not_coordinator
        sp.keep(checkpoint)
        return ErrorCode.none

    def delete_offsets(self, group_id: str, topic_id: uuid.UUID) -> ErrorCode:
        """DeleteShareGroupOffsets for one topic: each share-partition's tombstone is written
        before it is forgotten; NOT_COORDINATOR when a write fails (those not yet deleted stay)."""
        for key in [k for k in self.partitions if k[0] == group_id and k[1] == topic_id]:
            try:
                self.state_store.delete(key)
            except CoordinatorWriteError:
                return ErrorCode.not_coordinator
            del self.partitions[key]
        return ErrorCode.none

    def delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is not None and group.members:
            return ErrorCode.non_empty_group
        for key in [k for k in self.partitions if k[0] == group_id]:
            try:
                self.state_store.delete(key)
            except CoordinatorWriteError:
                return ErrorCode.not_coordinator  # the group stays, with what is not deleted yet
            del self.partitions[key]
        try:
            self.configs.delete_group(group_id)
        except OSError as exc:
            log.error("deleting the configs of share group %s failed: %s", group_id, exc)
            return ErrorCode.not_coordinator  # the group stays, with its configs
        self.groups.pop(group_id, None)
        return ErrorCode.none

    # --- persistence -----------------------------------------------------------------------
    def _persist(self, key: SharePartitionKey) -> None:
        """Write the share-partition's state if it changed. Raises CoordinatorWriteError."""
        sp = self.partitions.get(key)
        if sp is not None:
            self.state_store.write(key, sp, created_ms=self._created.get(key, self.clock()))

    def _persist_or_defer(self, key: SharePartitionKey) -> None:
        """_persist for a change that stands even when its write fails (an acquisition, a lock
        timeout, a release, a new share-partition), as Kafka goes ahead with those: the store
        logged the failure, and the state is written with the share-partition's next change."""
        with contextlib.suppress(CoordinatorWriteError):
            self._persist(key)

    def load(self) -> None:
        restored = self.state_store.load(lambda topic_id: topic_id in self.cluster.topics_by_id)
        for key, (sp, created) in restored.items():
            self.partitions[key] = sp
            self._created[key] = created
