"""The group coordinator: classic and KIP-848 consumer groups, and committed offsets, kept in
the internal topic `__consumer_offsets` in Kafka's record formats (see records.py).

This single broker coordinates every group. A group lives on partition
`Utils.abs(groupId.hashCode) % offsets.topic.num.partitions` (broker.internal_topics), as in Kafka. Every change that
Kafka persists is appended (as an ordinary, uncompressed batch) before the request that made
it is answered: offset commits, classic group metadata after each rebalance, consumer group
epochs, members and their current assignments, tombstones for deleted offsets, groups and
members. On startup the partitions are replayed (replay.py): the last record of each key wins, a null
value deletes, transactional offset batches stay pending until their COMMIT/ABORT marker is
read (without a marker they stay pending, as the transaction is still open).

The state machines (classic.py, consumer.py) are plain classes; this object feeds them
requests and time: a trio task sleeps until the earliest session/rebalance deadline of any
group (or until a request changes the deadlines) and calls `tick`.

Hooks for the transaction coordinator: `offsets_partition`, `stage_txn_offsets`,
`complete_txn_offsets`, `has_pending_txn_offsets`.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import Any, Callable

import trio
from kio.schema.errors import ErrorCode

from kafkalite.protocol.records import Record, build_batch

from ..clock import CLOCK, on_jump
from ..cluster import AppendOrigin, validate_topic_name
from ..internal_topics import OFFSETS_TOPIC, partition_for
from ..topic_configs import ConfigError, validate_topic_configs
from . import records as rec
from .classic import ClassicGroup, GroupError, JoinResult, SyncResult
from .consumer import ConsumerGroup, HeartbeatResult, TopicView
from .member_epochs import MemberEpochGroup
from .offsets import OffsetStore
from .replay import replay_offsets_topic
from .states import ClassicGroupState, MemberState
from .streams import HeartbeatResult as StreamsResult
from .streams import StreamsGroup
from .streams_records import STREAMS_GROUP_METADATA_KEY
from .streams_records import changes as streams_changes
from .streams_records import records_of as streams_records_of
from .streams_records import restore as restore_streams

log = logging.getLogger("kafkalite.groups")


class CoordinatorWriteError(Exception):
    """A write to __consumer_offsets failed (full disk, I/O error, failed fsync). Kafka's group
    coordinator answers such a KAFKA_STORAGE_ERROR append with NOT_COORDINATOR
    (appendGroupMetadataErrorToResponseError), so clients look the coordinator up again and retry."""

OFFSET_METADATA_MAX_BYTES = 4096  # offset.metadata.max.bytes
RETENTION_CHECK_INTERVAL_MS = 600_000  # offsets.retention.check.interval.ms
# With group.initial.rebalance.delay.ms=0, members that join an empty group together are still
# put in one generation: the first join phase waits until no new member arrived for this long.
BURST_SETTLE_MS = 100
# KIP-848 members heartbeat this often while their group assigns, reconciles or just changed.
BUSY_HEARTBEAT_INTERVAL_MS = 250
# the most partitions one StreamsGroupHeartbeat may have created (admin_topics' MAX_PARTITIONS_PER_REQUEST)
INTERNAL_TOPIC_PARTITIONS_MAX = 10_000


class GroupCoordinator:
    def __init__(self, broker, *, clock: Callable[[], int] = CLOCK):
        self.broker = broker
        self.config = broker.config
        self.clock = clock
        self.groups: dict[str, ClassicGroup | ConsumerGroup | StreamsGroup] = {}
        self.offsets = OffsetStore()
        self.empty_since: dict[str, int] = {}
        self._dirty_classic: set[str] = set()
        # classic groups whose metadata record was never written (a failed first write drops them)
        self._unwritten_classic: set[str] = set()
        # topic name -> the id of the topic the committed offsets for that name belong to
        self._offset_topic_ids: dict[str, uuid.UUID | None] = {}
        self._wake: trio.Event | None = None

    @property
    def cluster(self):
        return self.broker.cluster

    # --- service ---------------------------------------------------------------------------
    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
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
        pass

    def _kick(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _tick(self, group, now: int) -> None:
        if isinstance(group, ClassicGroup):
            group.tick(now)
        else:
            for member_id in group.tick(now):
                log.info("group %s: member %s fenced (session or rebalance timeout)", group.group_id, member_id)
        with contextlib.suppress(CoordinatorWriteError):  # logged; written again with the next change
            self._after(group)

    # --- the internal topic ----------------------------------------------------------------
    def _offsets_topic(self):
        topic = self.cluster.topics.get(OFFSETS_TOPIC)
        if topic is None:
            # OSError when the disk is full or failing (nothing is created then). The configs are
            # Kafka's (GroupCoordinatorService: offsets.topic.segment.bytes is 100 MiB).
            topic = self.cluster.create_topic(OFFSETS_TOPIC, max(1, self.config["offsets.topic.num.partitions"]),
                                              {"cleanup.policy": "compact", "compression.type": "producer",
                                               "segment.bytes": str(100 * 1024 * 1024)})
        return topic

    def offsets_partition(self, group_id: str):
        """The __consumer_offsets partition of the group (the topic is created on first use)."""
        topic = self._offsets_topic()
        return topic.partitions[partition_for(group_id, len(topic.partitions))]

    def _append(self, group_id: str, records: list[tuple[bytes, bytes | None]], *, producer_id: int = -1,
                producer_epoch: int = -1, transactional: bool = False) -> None:
        if not records:
            return
        part = self.offsets_partition(group_id)
        now = self.clock()
        batch = build_batch([Record(k, v) for k, v in records], producer_id=producer_id,
                            producer_epoch=producer_epoch, base_sequence=-1, transactional=transactional,
                            timestamp_ms=now)
        try:
            part.append(batch, now_ms=now, origin=AppendOrigin.COORDINATOR, fsync_now=True)
        except OSError as exc:
            log.warning("group %s: write to %s-%d failed: %s", group_id, OFFSETS_TOPIC, part.index, exc)
            raise CoordinatorWriteError(group_id) from exc

    # --- persistence of group state ----------------------------------------------------------
    def _on_classic_change(self, group: ClassicGroup) -> None:
        self._dirty_classic.add(group.group_id)

    def _after(self, group) -> None:
        """Persist what the last operation changed, note emptiness, wake the timer task. Raises
        CoordinatorWriteError when the write fails; what was not written stays marked to be
        written with the group's next change."""
        try:
            self._persist(group)
        finally:
            if group.is_empty():
                self.empty_since.setdefault(group.group_id, self.clock())
            else:
                self.empty_since.pop(group.group_id, None)
            self._kick()

    def _persist(self, group) -> None:
        gid = group.group_id
        if isinstance(group, StreamsGroup):
            records_, persisted = streams_changes(group, group.persisted)
            self._append(gid, records_)
            group.persisted = persisted
        elif isinstance(group, ClassicGroup):
            if gid in self._dirty_classic:
                self._append(gid, [(rec.group_metadata_key(gid), rec.group_metadata_value(group.to_record_value()))])
                self._dirty_classic.discard(gid)
                self._unwritten_classic.discard(gid)
        else:
            records: list[tuple[bytes, bytes | None]] = []
            epoch_dirty, removed, dirty = group.epoch_dirty, sorted(group.removed_members), sorted(group.dirty_members)
            if epoch_dirty:
                records.append((rec.consumer_group_metadata_key(gid), rec.consumer_group_metadata_value(group.group_epoch)))
            for mid in removed:
                records.append((rec.consumer_member_key(rec.CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY, gid, mid), None))
                records.append((rec.consumer_member_key(rec.CONSUMER_GROUP_MEMBER_METADATA_KEY, gid, mid), None))
            for mid in dirty:
                m = group.members.get(mid)
                if m is None:
                    continue
                records.append((rec.consumer_member_key(rec.CONSUMER_GROUP_MEMBER_METADATA_KEY, gid, mid),
                                rec.consumer_member_metadata_value(rec.ConsumerMemberMetadata(
                                    m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
                                    m.subscribed_topic_regex, m.rebalance_timeout_ms, m.server_assignor))))
                records.append((rec.consumer_member_key(rec.CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY, gid, mid),
                                rec.consumer_assignment_value(rec.ConsumerMemberAssignment(
                                    m.member_epoch, m.previous_member_epoch, m.state,
                                    {t: sorted(ps) for t, ps in m.assigned.items()},
                                    {t: sorted(ps) for t, ps in m.pending_revocation.items()}))))
            # marks are cleared only once written: a failed write leaves them for the next change
            self._append(gid, records)
            group.epoch_dirty = False
            group.removed_members.difference_update(removed)
            group.dirty_members.difference_update(dirty)
            for mid in dirty:
                m = group.members.get(mid)
                if m is not None:
                    m.persisted_assignment = m.assignment_key()

    # --- loading -----------------------------------------------------------------------------
    def load(self) -> None:
        """Rebuild groups and offsets from __consumer_offsets (replay.py reads the records)."""
        topic = self.cluster.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return
        now = self.clock()
        state = replay_offsets_topic(topic.partitions)
        self.offsets = state.offsets
        classic_values, consumer_epochs = state.classic_values, state.consumer_epochs
        members, assignments = state.members, state.assignments
        for gid, value in classic_values.items():
            if value is None:
                continue
            classic = self._new_classic(gid)
            self._unwritten_classic.discard(gid)
            classic.load_record_value(value, now)
            if classic.is_empty():
                self.empty_since[gid] = value.current_state_timestamp if value.current_state_timestamp > 0 else now
        for gid, epoch in consumer_epochs.items():
            if epoch is None:
                continue
            self._new_consumer(gid).group_epoch = epoch
        for (gid, mid), member in members.items():
            owner = self.groups.get(gid)
            if member is None or not isinstance(owner, ConsumerGroup):
                continue
            a = assignments.get((gid, mid))
            if a is not None:
                member.member_epoch = a.member_epoch
                member.previous_member_epoch = a.previous_member_epoch
                member.state = MemberState.of(a.state)
                member.assigned = {t: set(ps) for t, ps in a.assigned.items()}
                member.pending_revocation = {t: set(ps) for t, ps in a.pending_revocation.items()}
            member.persisted_assignment = member.assignment_key()
            owner.load_member(member, now)
        for gid, replayed in state.streams.items():
            streams = self._new_streams(gid)
            restore_streams(streams, replayed, now)
            streams.persisted = streams_records_of(streams)
            if streams.is_empty():
                self.empty_since[gid] = now
        for group in self.groups.values():
            if isinstance(group, ConsumerGroup):
                # recompute the target on the next heartbeat, sticking to what members own
                group.target = {mid: {t: set(ps) for t, ps in m.assigned.items()} for mid, m in group.members.items()}
                group.assignment_epoch = group.group_epoch - 1 if group.members else group.group_epoch
                group._refresh_subscription_metadata(self._topic_view())
                if group.is_empty():
                    self.empty_since[group.group_id] = now
        self._drop_offsets_of_deleted_topics(full_scan=True)
        for gid in list(self.offsets.committed):
            if gid not in self.groups:
                self._new_classic(gid)
                self.empty_since[gid] = 0

    def _drop_offsets_of_deleted_topics(self, *, full_scan: bool = False) -> None:
        """Committed offsets of a topic that was deleted (or deleted and created again) are
        removed, as Kafka removes the offsets of deleted partitions. Only the topic names
        offsets were committed for are checked, unless `full_scan` (on load)."""
        if full_scan:
            for offsets in self.offsets.committed.values():
                for name, _p in offsets:
                    self._offset_topic_ids.setdefault(name, None)
        for name, known in list(self._offset_topic_ids.items()):
            topic = self.cluster.topics.get(name)
            if topic is not None and (known is None or known == topic.topic_id):
                self._offset_topic_ids[name] = topic.topic_id
                continue
            for gid in list(self.offsets.committed):
                gone = [tp for tp in self.offsets.group_offsets(gid) if tp[0] == name]
                if gone:
                    try:
                        self._append(gid, [(rec.offset_commit_key(gid, t, p), None) for t, p in gone])
                    except CoordinatorWriteError:
                        return  # this topic's offsets are removed at the next check
                    self.offsets.delete(gid, gone)
            log.info("offsets of deleted topic %s removed", name)
            if topic is not None:
                self._offset_topic_ids[name] = topic.topic_id
            else:
                del self._offset_topic_ids[name]

    # --- groups --------------------------------------------------------------------------------
    def _new_classic(self, group_id: str) -> ClassicGroup:
        group = ClassicGroup(
            group_id,
            initial_rebalance_delay_ms=self.config["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=self.config["group.min.session.timeout.ms"],
            max_session_timeout_ms=self.config["group.max.session.timeout.ms"],
            burst_settle_ms=BURST_SETTLE_MS if self.config["group.initial.rebalance.delay.ms"] == 0 else 0,
            on_change=self._on_classic_change,
        )
        group.store = self._store_classic
        self.groups[group_id] = group
        self._unwritten_classic.add(group_id)
        return group

    def _store_classic(self, group: ClassicGroup) -> ErrorCode | None:
        """Write the group's metadata record now (SyncGroup's assignment): None, or the error
        for the members."""
        gid = group.group_id
        try:
            self._append(gid, [(rec.group_metadata_key(gid), rec.group_metadata_value(group.to_record_value()))])
        except CoordinatorWriteError:
            return ErrorCode.not_coordinator
        self._dirty_classic.discard(gid)
        self._unwritten_classic.discard(gid)
        return None

    def _new_consumer(self, group_id: str) -> ConsumerGroup:
        group = ConsumerGroup(group_id, session_timeout_ms=self.config["group.consumer.session.timeout.ms"],
                              heartbeat_interval_ms=self.config["group.consumer.heartbeat.interval.ms"],
                              busy_heartbeat_interval_ms=BUSY_HEARTBEAT_INTERVAL_MS)
        self.groups[group_id] = group
        return group

    def _new_streams(self, group_id: str) -> StreamsGroup:
        group = StreamsGroup(group_id, session_timeout_ms=self.config["group.streams.session.timeout.ms"],
                             heartbeat_interval_ms=self.config["group.streams.heartbeat.interval.ms"],
                             num_standby_replicas=self.config["group.streams.num.standby.replicas"],
                             busy_heartbeat_interval_ms=BUSY_HEARTBEAT_INTERVAL_MS)
        self.groups[group_id] = group
        return group

    def _topic_view(self) -> TopicView:
        def lookup(name: str):
            topic = self.cluster.topics.get(name)
            if topic is None or not topic.partitions:
                return None
            return (topic.topic_id, len(topic.partitions))
        return TopicView(lookup, lambda: list(self.cluster.topics))

    # JoinGroup / SyncGroup / Heartbeat / LeaveGroup -------------------------------------------
    async def join_group(self, *, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                         client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                         protocols: list[tuple[str, bytes]], api_version: int) -> JoinResult:
        if not group_id:
            return JoinResult(ErrorCode.invalid_group_id, member_id=member_id)
        group = self.groups.get(group_id)
        if group is None:
            group = self._new_classic(group_id)
        elif not isinstance(group, ClassicGroup):
            if group.is_empty():  # an empty consumer group becomes a classic one; offsets stay
                try:
                    self._delete_group_state(group, keep_offsets=True)
                except CoordinatorWriteError:
                    return JoinResult(ErrorCode.not_coordinator, member_id=member_id)
                group = self._new_classic(group_id)
            else:
                return JoinResult(ErrorCode.inconsistent_group_protocol, member_id=member_id)
        failed = None
        if group_id in self._unwritten_classic:
            # Kafka writes a new group's (empty) metadata record first; failing that, no group
            self._dirty_classic.add(group_id)
            failed = JoinResult(ErrorCode.not_coordinator, member_id=member_id)
        result = await self._answer(group, failed, lambda waiter: group.join(
            member_id=member_id, group_instance_id=group_instance_id, client_id=client_id, client_host=client_host,
            session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=protocol_type, protocols=protocols, require_known_member_id=api_version >= 4,
            supports_skip_assignment=api_version >= 9, waiter=waiter, now=self.clock()))
        if result is failed and self.groups.get(group_id) is group and group_id in self._unwritten_classic:
            # its first write failed: the group is not kept, and those waiting in it are told
            self.groups.pop(group_id, None)
            self._dirty_classic.discard(group_id)
            self._unwritten_classic.discard(group_id)
            self.empty_since.pop(group_id, None)
            for m in list(group.members.values()):
                for attr in ("join_waiter", "sync_waiter"):
                    w = getattr(m, attr)
                    if w is not None:
                        setattr(m, attr, None)
                        w(JoinResult(ErrorCode.not_coordinator, member_id=m.member_id) if attr == "join_waiter"
                          else SyncResult(ErrorCode.not_coordinator))
        log.debug("group %s: JoinGroup v%d member %r -> %s gen %d leader %s member %s", group_id, api_version,
                  member_id, result.error.name, result.generation_id, result.leader, result.member_id)
        return result

    async def sync_group(self, *, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int,
                         protocol_type: str | None, protocol_name: str | None,
                         assignments: dict[str, bytes]) -> SyncResult:
        group = self.groups.get(group_id)
        if not isinstance(group, ClassicGroup):
            return SyncResult(ErrorCode.unknown_member_id)
        result = await self._answer(group, None, lambda waiter: group.sync(
            member_id=member_id, group_instance_id=group_instance_id, generation_id=generation_id,
            protocol_type=protocol_type, protocol_name=protocol_name, assignments=assignments, waiter=waiter,
            now=self.clock()))
        log.debug("group %s: SyncGroup member %s gen %d -> %s", group_id, member_id, generation_id, result.error.name)
        return result

    async def _answer(self, group: ClassicGroup, failed: Any, call: Callable[[Callable[[Any], None]], Any]) -> Any:
        """Run a classic-group call that answers now or later (through the waiter it is given,
        once the rebalance or sync completes), persist what it changed, and wait for the answer.
        A failed write answers `failed` (NOT_COORDINATOR) at once, or, when None, leaves the
        change to be written with the group's next one (as Kafka, which writes a join only with
        the assignment)."""
        box: list[Any] = []
        event = trio.Event()

        def waiter(result) -> None:
            box.append(result)
            event.set()

        result = call(waiter)
        try:
            self._after(group)
        except CoordinatorWriteError:
            if failed is not None:
                return failed
        if result is None:
            await event.wait()
            result = box[0]
        return result

    def heartbeat(self, *, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> ErrorCode:
        group = self.groups.get(group_id)
        if not isinstance(group, ClassicGroup):
            return ErrorCode.unknown_member_id
        err = group.heartbeat(member_id=member_id, group_instance_id=group_instance_id, generation_id=generation_id,
                              now=self.clock())
        if err != ErrorCode.none:
            log.debug("group %s: Heartbeat member %s gen %d -> %s", group_id, member_id, generation_id, err.name)
        self._kick()
        return err

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        group = self.groups.get(group_id)
        if group is None:
            # Kafka answers each member of a group it does not know, not the request as a whole
            return ErrorCode.none, [ErrorCode.unknown_member_id] * len(members)
        if not isinstance(group, ClassicGroup):
            return ErrorCode.unknown_member_id, [ErrorCode.unknown_member_id] * len(members)
        errors = group.leave(members, self.clock())
        log.debug("group %s: LeaveGroup %s -> %s", group_id, members, [e.name for e in errors])
        try:
            self._after(group)
        except CoordinatorWriteError:
            return ErrorCode.not_coordinator, [ErrorCode.not_coordinator] * len(members)
        return ErrorCode.none, errors

    # ConsumerGroupHeartbeat ---------------------------------------------------------------------
    def consumer_group_heartbeat(self, *, group_id: str, member_id: str, member_epoch: int,
                                 instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                                 subscribed_topic_names: list[str] | None, subscribed_topic_regex: str | None,
                                 server_assignor: str | None, owned: dict[uuid.UUID, set[int]] | None,
                                 client_id: str, client_host: str, api_version: int) -> HeartbeatResult:
        invalid = _validate_heartbeat(group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                                      subscribed_topic_names, subscribed_topic_regex, owned, api_version)
        if invalid is not None:
            return HeartbeatResult(ErrorCode.invalid_request, invalid, member_id=member_id or None,
                                   member_epoch=member_epoch)
        group = self.groups.get(group_id)
        if isinstance(group, ClassicGroup):
            if group.is_empty() and member_epoch == 0:
                try:
                    self._delete_group_state(group, keep_offsets=True)
                except CoordinatorWriteError:
                    return HeartbeatResult(ErrorCode.not_coordinator, member_id=member_id or None,
                                           member_epoch=member_epoch)
                group = None
            else:
                return HeartbeatResult(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.",
                                       member_id=member_id or None, member_epoch=member_epoch)
        elif isinstance(group, StreamsGroup):
            return HeartbeatResult(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.",
                                   member_id=member_id or None, member_epoch=member_epoch)
        if group is None:
            if member_epoch != 0:
                # only a member joining (epoch 0) creates a group; Kafka's answer otherwise
                return HeartbeatResult(ErrorCode.group_id_not_found, f"Consumer group {group_id} not found.",
                                       member_id=member_id or None, member_epoch=member_epoch)
            group = self._new_consumer(group_id)
            created = True
        else:
            created = False
        result = group.heartbeat(member_id=member_id, member_epoch=member_epoch, instance_id=instance_id,
                                 rack_id=rack_id, rebalance_timeout_ms=rebalance_timeout_ms, client_id=client_id,
                                 client_host=client_host, subscribed_topic_names=subscribed_topic_names,
                                 subscribed_topic_regex=subscribed_topic_regex, server_assignor=server_assignor,
                                 owned=owned, topics=self._topic_view(), now=self.clock())
        if not self._after_heartbeat(group, created):
            return HeartbeatResult(ErrorCode.not_coordinator, member_id=member_id or None, member_epoch=member_epoch)
        return result

    def _after_heartbeat(self, group: ConsumerGroup | StreamsGroup, created: bool) -> bool:
        """_after for a KIP-848 or KIP-1071 heartbeat: False when the write failed, and then a
        group the heartbeat created is not kept."""
        try:
            self._after(group)
        except CoordinatorWriteError:
            if created:
                self.groups.pop(group.group_id, None)
                self.empty_since.pop(group.group_id, None)
            return False
        return True

    # StreamsGroupHeartbeat (KIP-1071) -------------------------------------------------------------
    def streams_group_heartbeat(self, *, group_id: str, member_id: str, member_epoch: int, **kwargs) -> StreamsResult:
        """One StreamsGroupHeartbeat (the arguments of StreamsGroup.heartbeat); the group is
        created by a joining member, replaces an empty classic group (offsets stay), and is
        refused for a consumer group as Kafka refuses it."""
        group = self.groups.get(group_id)
        if isinstance(group, ClassicGroup) and group.is_empty() and member_epoch == 0:
            try:
                self._delete_group_state(group, keep_offsets=True)
            except CoordinatorWriteError:
                return StreamsResult(ErrorCode.not_coordinator)
            group = None
        if group is not None and not isinstance(group, StreamsGroup):
            return StreamsResult(ErrorCode.group_id_not_found, f"Group {group_id} is not a streams group.")
        if group is None:
            if member_epoch != 0:
                return StreamsResult(ErrorCode.group_id_not_found, f"Streams group {group_id} not found.")
            group = self._new_streams(group_id)
            created = True
        else:
            created = False

        def lookup(name: str) -> int | None:
            topic = self.cluster.topics.get(name)
            return len(topic.partitions) if topic is not None and topic.partitions else None

        def create(missing, partitions) -> None:
            # the broker's part of KIP-1071: internal topics as the topology describes them, within
            # the partition budget CreateTopics allows one request (a topology is client input)
            if sum(partitions.get(n, 0) for n in missing) > INTERNAL_TOPIC_PARTITIONS_MAX:
                log.warning("streams group %s: internal topics %s not created: more than %d partitions",
                            group_id, sorted(missing), INTERNAL_TOPIC_PARTITIONS_MAX)
                return
            for name, info in sorted(missing.items()):
                if name in self.cluster.topics or partitions.get(name, 0) <= 0:
                    continue
                # names and configs are checked as CreateTopics checks them: a bad one is not created
                # and the group keeps reporting it missing, as Kafka's failed auto-creation leaves it
                reason = validate_topic_name(name)
                try:
                    configs = validate_topic_configs(dict(info.configs)) if reason is None else {}
                except ConfigError as exc:
                    reason = str(exc)
                if reason is not None:
                    log.warning("streams group %s: internal topic %r not created: %s", group_id, name, reason)
                    continue
                self.cluster.create_topic(name, partitions[name], configs)
                log.info("streams group %s: created internal topic %s", group_id, name)

        result = group.heartbeat(member_id=member_id, member_epoch=member_epoch, lookup=lookup,
                                 names=lambda: list(self.cluster.topics), create=create, now=self.clock(), **kwargs)
        if not self._after_heartbeat(group, created):
            return StreamsResult(ErrorCode.not_coordinator)
        return result

    # Describe / List / Delete -------------------------------------------------------------------
    def list_groups(self, states: list[str] | None = None, types: list[str] | None = None):
        """[(group id, protocol type, state, group type)]"""
        states_l = {s.lower() for s in states} if states else None
        types_l = {t.lower() for t in types} if types else None
        out = []
        for gid, group in self.groups.items():
            gtype = "classic" if isinstance(group, ClassicGroup) else group.protocol_type
            state = group.state
            if states_l is not None and state.lower() not in states_l:
                continue
            if types_l is not None and gtype not in types_l:
                continue
            out.append((gid, group.protocol_type or "", state, gtype))
        return out

    def delete_groups(self, group_ids: list[str]) -> list[tuple[str, ErrorCode]]:
        out = []
        for gid in group_ids:
            group = self.groups.get(gid)
            if group is None:
                out.append((gid, ErrorCode.group_id_not_found))
            elif not group.is_empty() or (isinstance(group, ClassicGroup) and group.state != ClassicGroupState.EMPTY):
                out.append((gid, ErrorCode.non_empty_group))
            else:
                try:
                    self._delete_group_state(group)
                except CoordinatorWriteError:
                    out.append((gid, ErrorCode.not_coordinator))
                    continue
                out.append((gid, ErrorCode.none))
        self._kick()
        return out

    def _delete_group_state(self, group, keep_offsets: bool = False) -> None:
        gid = group.group_id
        records: list[tuple[bytes, bytes | None]] = []
        if not keep_offsets:
            for topic, partition in self.offsets.group_offsets(gid):
                records.append((rec.offset_commit_key(gid, topic, partition), None))
        if isinstance(group, ClassicGroup):
            records.append((rec.group_metadata_key(gid), None))
        elif isinstance(group, ConsumerGroup):
            for mid in list(group.members) + sorted(group.removed_members):
                records.append((rec.consumer_member_key(rec.CONSUMER_GROUP_CURRENT_ASSIGNMENT_KEY, gid, mid), None))
                records.append((rec.consumer_member_key(rec.CONSUMER_GROUP_MEMBER_METADATA_KEY, gid, mid), None))
            records.append((rec.consumer_group_metadata_key(gid), None))
        elif isinstance(group, StreamsGroup):
            # member records first, the group's metadata last, as Kafka deletes a group
            records += [(k, None) for k in sorted(group.persisted,
                                                  key=lambda k: int.from_bytes(k[:2]) == STREAMS_GROUP_METADATA_KEY)]
        self._append(gid, records)  # first: a failed write leaves the group as it was
        if not keep_offsets:
            self.offsets.drop_group(gid)
        self.groups.pop(gid, None)
        self.empty_since.pop(gid, None)
        self._dirty_classic.discard(gid)
        self._unwritten_classic.discard(gid)

    # Offsets ------------------------------------------------------------------------------------
    def validate_commit(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                        api_version: int, *, transactional: bool = False) -> ErrorCode:
        """Kafka's OffsetMetadataManager.validateOffsetCommit / validateTransactionalOffsetCommit."""
        group = self.groups.get(group_id)
        if group is None:
            if generation_id < 0:
                if transactional:
                    self._new_classic(group_id)  # a "simple" group, as Kafka creates
                # a plain commit creates the simple group only with the first offset it writes
                # (commit_offsets): a commit whose every partition fails leaves no group, as in Kafka
                return ErrorCode.none
            if transactional or api_version < 9:
                return ErrorCode.illegal_generation
            return ErrorCode.group_id_not_found
        if isinstance(group, MemberEpochGroup):
            try:
                group.validate_offset_commit(member_id, instance_id, generation_id)
            except GroupError as exc:
                if exc.code == ErrorCode.stale_member_epoch and (transactional or api_version < 9):
                    return ErrorCode.illegal_generation
                return exc.code
            return ErrorCode.none
        if group.state == ClassicGroupState.DEAD:
            return ErrorCode.coordinator_not_available
        if generation_id < 0 and group.state == ClassicGroupState.EMPTY:
            return ErrorCode.none
        if generation_id >= 0 or member_id or instance_id is not None:
            try:
                group._check_static(member_id, instance_id)
            except GroupError as exc:
                return exc.code
            if generation_id != group.generation_id:
                return ErrorCode.illegal_generation
        elif not transactional and group.state != ClassicGroupState.EMPTY:
            return ErrorCode.unknown_member_id
        if not transactional and group.state == ClassicGroupState.COMPLETING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    def commit_offsets(self, group_id: str, offsets: dict[tuple[str, int], tuple[int, int, str | None]],
                       *, retention_ms: int = -1) -> dict[tuple[str, int], ErrorCode]:
        """Append and apply validated commits: {(topic, partition): (offset, leader epoch, metadata)}."""
        now = self.clock()
        errors: dict[tuple[str, int], ErrorCode] = {}
        values: dict[tuple[str, int], rec.OffsetValue] = {}
        for tp, (offset, leader_epoch, metadata) in offsets.items():
            if metadata is not None and len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
                errors[tp] = ErrorCode.offset_metadata_too_large
                continue
            values[tp] = rec.OffsetValue(offset, leader_epoch, metadata or "", now,
                                         now + retention_ms if retention_ms >= 0 else -1)
            errors[tp] = ErrorCode.none
        if values:
            self._drop_offsets_of_deleted_topics()
            try:
                self._append(group_id, [(rec.offset_commit_key(group_id, t, p), rec.offset_commit_value(v))
                                        for (t, p), v in values.items()])
            except CoordinatorWriteError:
                # nothing applied: the offsets stay as written before
                return {tp: (ErrorCode.not_coordinator if tp in values else e) for tp, e in errors.items()}
            if group_id not in self.groups:
                self._new_classic(group_id)  # a "simple" group, as Kafka creates
            self.offsets.commit(group_id, values)
            for t, _p in values:
                topic = self.cluster.topics.get(t)
                if topic is not None:
                    self._offset_topic_ids[t] = topic.topic_id
            group = self.groups.get(group_id)
            if group is not None and group.is_empty():
                self.empty_since.setdefault(group_id, now)
        return errors

    def fetch_offsets(self, group_id: str, tps: list[tuple[str, int]] | None, *, require_stable: bool,
                      member_id: str | None = None, member_epoch: int = -1):
        """(group error, [(topic, partition, offset, leader epoch, metadata, error)])."""
        group = self.groups.get(group_id)
        if isinstance(group, MemberEpochGroup):
            try:
                group.validate_offset_fetch(member_id, member_epoch)
            except GroupError as exc:
                return exc.code, []
        self._drop_offsets_of_deleted_topics()
        committed = self.offsets.group_offsets(group_id)
        if tps is None:
            tps = sorted(committed)
        out = []
        for tp in tps:
            if require_stable and self.offsets.has_pending(group_id, tp):
                out.append((tp[0], tp[1], -1, -1, "", ErrorCode.unstable_offset_commit))
                continue
            v = committed.get(tp)
            if v is None:
                out.append((tp[0], tp[1], -1, -1, "", ErrorCode.none))
            else:
                out.append((tp[0], tp[1], v.offset, v.leader_epoch, v.metadata, ErrorCode.none))
        return ErrorCode.none, out

    def delete_offsets(self, group_id: str, tps: list[tuple[str, int]]):
        """OffsetDelete: (group error, {tp: error})."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.group_id_not_found, {}
        if isinstance(group, ClassicGroup) and not group.is_empty() and group.protocol_type != "consumer":
            return ErrorCode.non_empty_group, {}
        subscribed = set()
        if not group.is_empty():
            subscribed = group.subscribed_topics() or set()
        errors = {}
        gone = []
        for tp in tps:
            if tp[0] in subscribed:
                errors[tp] = ErrorCode.group_subscribed_to_topic
            else:
                errors[tp] = ErrorCode.none
                if self.offsets.get(group_id, tp) is not None:
                    gone.append(tp)
        if gone:
            try:
                self._append(group_id, [(rec.offset_commit_key(group_id, t, p), None) for t, p in gone])
            except CoordinatorWriteError:
                return ErrorCode.not_coordinator, {}
            self.offsets.delete(group_id, gone)
        return ErrorCode.none, errors

    def expire_offsets(self, now: int | None = None) -> int:
        """Offset retention, every offsets.retention.check.interval.ms (10 min): expired offsets
        get tombstones; empty groups with no offsets left are removed. Returns offsets expired."""
        now = self.clock() if now is None else now
        retention_ms = self.config["offsets.retention.minutes"] * 60_000
        total = 0
        for gid in list(set(self.offsets.committed) | set(self.groups)):
            group = self.groups.get(gid)
            empty = group is None or group.is_empty()
            empty_since = self.empty_since.get(gid, 0) if empty else None
            subscribed = None
            if isinstance(group, MemberEpochGroup) and not empty:
                subscribed = group.subscribed_topics()
            elif isinstance(group, ClassicGroup) and not empty:
                subscribed = None
            gone = self.offsets.expired(gid, now, retention_ms, empty_since=empty_since, subscribed=subscribed)
            if gone:
                try:
                    self._append(gid, [(rec.offset_commit_key(gid, t, p), None) for t, p in gone])
                except CoordinatorWriteError:
                    continue  # expired again at the next check
                self.offsets.delete(gid, gone)
                total += len(gone)
                log.info("group %s: %d offset(s) expired", gid, len(gone))
            if group is not None and empty and not self.offsets.has_offsets(gid) \
                    and (not isinstance(group, ClassicGroup) or group.state == ClassicGroupState.EMPTY):
                # an empty group with no offsets left is removed (Kafka: Empty -> Dead)
                with contextlib.suppress(CoordinatorWriteError):  # removed at the next check
                    self._delete_group_state(group)
        return total

    # --- transaction coordinator hooks (KIP-98 / KIP-447) ------------------------------------
    def stage_txn_offsets(self, group_id: str, *, producer_id: int, producer_epoch: int, generation_id: int,
                          member_id: str, group_instance_id: str | None,
                          offsets: dict[tuple[str, int], tuple[int, int, str | None]],
                          now_ms: int | None = None) -> dict[tuple[str, int], ErrorCode]:
        """TxnOffsetCommit: validate against the group (generation/member/instance, as Kafka's
        validateTransactionalOffsetCommit), append the offsets as a transactional batch of the
        producer to the group's __consumer_offsets partition and keep them pending until
        complete_txn_offsets. Returns an error per partition."""
        err = self.validate_commit(group_id, generation_id, member_id or "", group_instance_id, 99,
                                   transactional=True)
        if err != ErrorCode.none:
            return {tp: err for tp in offsets}
        now = self.clock() if now_ms is None else now_ms
        errors: dict[tuple[str, int], ErrorCode] = {}
        values: dict[tuple[str, int], rec.OffsetValue] = {}
        for tp, (offset, leader_epoch, metadata) in offsets.items():
            if self.cluster.partition(tp[0], tp[1]) is None:
                errors[tp] = ErrorCode.unknown_topic_or_partition
            elif metadata is not None and len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
                errors[tp] = ErrorCode.offset_metadata_too_large
            else:
                values[tp] = rec.OffsetValue(offset, leader_epoch, metadata or "", now)
                errors[tp] = ErrorCode.none
        if values:
            try:
                self._append(group_id, [(rec.offset_commit_key(group_id, t, p), rec.offset_commit_value(v))
                                        for (t, p), v in values.items()],
                             producer_id=producer_id, producer_epoch=producer_epoch, transactional=True)
            except CoordinatorWriteError:
                return {tp: (ErrorCode.not_coordinator if tp in values else e) for tp, e in errors.items()}
            self.offsets.stage(producer_id, group_id, values)
        return errors

    def complete_txn_offsets(self, producer_id: int, commit: bool) -> None:
        """The COMMIT/ABORT marker of the producer is in __consumer_offsets: its pending offsets
        become committed (commit) or are dropped (abort)."""
        if commit:
            for offsets in self.offsets.pending.get(producer_id, {}).values():
                for name, _p in offsets:
                    self._offset_topic_ids.setdefault(name, None)
        for gid in self.offsets.complete(producer_id, commit):
            if commit and gid not in self.groups:
                self._new_classic(gid)
                self.empty_since.setdefault(gid, self.clock())

    def has_pending_txn_offsets(self, group_id: str, topic: str, partition: int) -> bool:
        return self.offsets.has_pending(group_id, (topic, partition))


def _validate_heartbeat(group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                        subscribed_topic_names, subscribed_topic_regex, owned, api_version) -> str | None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid: a message, or None when valid."""
    if not group_id:
        return "GroupId can't be empty."
    if instance_id == "":
        return "InstanceId can't be empty."
    if rack_id == "":
        return "RackId can't be empty."
    if api_version >= 1 and not member_id:
        return "MemberId can't be empty."
    if member_epoch > 0 or member_epoch == -1:
        if not member_id:
            return "MemberId can't be empty."
    elif member_epoch == 0:
        if rebalance_timeout_ms is None or rebalance_timeout_ms == -1:
            return "RebalanceTimeoutMs must be provided in first request."
        if owned is None or any(owned.values()):
            return "TopicPartitions must be empty when (re-)joining."
        # an empty list of names or an empty regex is a member subscribed to nothing, as in Kafka
        if subscribed_topic_names is None and subscribed_topic_regex is None:
            return "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
    elif member_epoch == -2:
        if not member_id:
            return "MemberId can't be empty."
        if instance_id is None:
            return "InstanceId can't be null."
    else:
        return "MemberEpoch is invalid."
    return None
