"""The group coordinator's state and its persistence in `__consumer_offsets`: the groups, the
committed offsets, and the records that make them durable (records.py, streams_records.py).

Rules:
- `groups` holds every group this coordinator knows, one object per group id, of one type:
  ClassicGroup, ConsumerGroup (KIP-848) or StreamsGroup (KIP-1071). A group changes type only
  when it is empty, by `_delete_group_state(keep_offsets=True)` and a new group of the other type.
- Every change Kafka persists is appended (one batch through the InternalTopicStore) before the
  request that made it is answered, and applied only after the append returned: offset
  commits, classic group metadata, consumer group epochs, members and their current assignments,
  streams group records, tombstones for deleted offsets, groups and members. A failed append
  raises CoordinatorWriteError; the request answers NOT_COORDINATOR and the state stays as
  written. What a group changed and could not write stays marked (`_dirty_classic`, the dirty
  member sets, `StreamsGroup.persisted`) and is written with the group's next change.
- A classic group whose first (empty) metadata record was never written is in
  `_unwritten_classic`; a failed first write drops it (classic_requests).
- `empty_since` holds when each empty group became empty: offset retention counts from there.
- `load` rebuilds the groups and offsets from the topic (replay.py reads its records): a group
  with offsets and no group record becomes an empty classic ("simple") group, as in Kafka.
- Coordinator failover (`--nodes`): when a __consumer_offsets partition gets another leader
  (a chaos move, the move-coordinator and node-down controls, a reassignment), the groups and
  offsets it holds are unloaded (`unload_partition`: classic members waiting in JoinGroup or
  SyncGroup are answered NOT_COORDINATOR) and loaded again from its log (`load_partition`), as
  Kafka's old coordinator resigns and the new one loads the partition: the nodes share one
  process, but what a group is after a move is what was written, never what only the old
  coordinator's memory held.
- Offsets of a deleted topic (or one deleted and created again under the same name) are removed
  (`_drop_offsets_of_deleted_topics`), with tombstones, before offsets are read or written.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, Callable

import trio
from kio.schema.errors import ErrorCode

from ..clock import CLOCK
from ..internal_store import CoordinatorWriteError, InternalTopicStore
from ..internal_topics import OFFSETS_TOPIC, partition_for
from . import records as rec
from .classic import ClassicGroup
from .consumer import ConsumerGroup, TopicView
from .offsets import OffsetStore
from .replay import Replayed, replay_offsets_topic
from .states import MemberState
from .streams import StreamsGroup
from .streams_records import STREAMS_GROUP_METADATA_KEY
from .streams_records import changes as streams_changes
from .streams_records import records_of as streams_records_of
from .streams_records import restore as restore_streams

if TYPE_CHECKING:
    from ..cluster import Partition

log = logging.getLogger("kafkalite.groups")

# With group.initial.rebalance.delay.ms=0, members that join an empty group together are still
# put in one generation: the first join phase waits until no new member arrived for this long.
BURST_SETTLE_MS = 100
# KIP-848 members heartbeat this often while their group assigns, reconciles or just changed.
BUSY_HEARTBEAT_INTERVAL_MS = 250

Group = ClassicGroup | ConsumerGroup | StreamsGroup


class GroupPersistence:
    """The coordinator's state and its writes; the request modules build on it."""

    def __init__(self, broker: Any, *, clock: Callable[[], int] = CLOCK) -> None:
        self.broker = broker
        self.config = broker.config
        self.clock = clock
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore()
        self.empty_since: dict[str, int] = {}
        self._dirty_classic: set[str] = set()
        # classic groups whose metadata record was never written (a failed first write drops them)
        self._unwritten_classic: set[str] = set()
        # topic name -> the id of the topic the committed offsets for that name belong to
        self._offset_topic_ids: dict[str, uuid.UUID | None] = {}
        self._wake: trio.Event | None = None
        self.store = InternalTopicStore(
            # Kafka's configs (GroupCoordinatorService: offsets.topic.segment.bytes is 100 MiB)
            broker.cluster, OFFSETS_TOPIC, clock=clock,
            configs={"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": str(100 * 1024 * 1024)},
            num_partitions=lambda: max(1, self.config["offsets.topic.num.partitions"]))
        # a leader change of a __consumer_offsets partition unloads and loads it (close() unregisters)
        self._unlisten_leaders = broker.cluster.changes.on_leader_change(self._leader_changed)

    @property
    def cluster(self) -> Any:
        return self.broker.cluster

    def _kick(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def offsets_partition(self, group_id: str) -> Partition:
        """The __consumer_offsets partition of the group (the topic is created on first use;
        OSError when it cannot be)."""
        return self.store.partition_of(group_id)

    # --- persistence of group state ----------------------------------------------------------
    def _on_classic_change(self, group: ClassicGroup) -> None:
        self._dirty_classic.add(group.group_id)

    def _after(self, group: Group) -> None:
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

    def _persist(self, group: Group) -> None:
        gid = group.group_id
        if isinstance(group, StreamsGroup):
            records_, persisted = streams_changes(group, group.persisted)
            self.store.append(gid, records_)
            group.persisted = persisted
        elif isinstance(group, ClassicGroup):
            if gid in self._dirty_classic:
                self.store.append(gid, [(rec.group_metadata_key(gid), rec.group_metadata_value(group.to_record_value()))])
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
            self.store.append(gid, records)
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
        if self.store.existing() is None:
            return
        self._install(replay_offsets_topic(self.store))

    def _leader_changed(self, topic: str, index: int, leader: int, previous: int) -> None:
        """A __consumer_offsets partition got another leader (StateChanges.on_leader_change): this
        coordinator resigns it and loads it again, as Kafka's GroupCoordinator does on the old
        leader's onResignation (removeGroupsForPartition) and the new one's onElection
        (loadGroupsForPartition). Leaderless, it stays unloaded until a leader is elected."""
        if topic != OFFSETS_TOPIC or leader == previous:
            return
        self.unload_partition(index)
        if leader >= 0:
            self.load_partition(index)

    def unload_partition(self, index: int) -> list[str]:
        """Forget the groups and offsets kept in __consumer_offsets partition `index`, answering
        the classic members waiting in JoinGroup or SyncGroup NOT_COORDINATOR (ClassicGroup.unload).
        What was written stays in the log; what was not (a change whose write failed) is lost,
        as on Kafka. Returns the group ids forgotten."""
        topic = self.store.existing()
        if topic is None:
            return []
        count, now = len(topic.partitions), self.clock()
        pending = [gid for groups in self.offsets.pending.values() for gid in groups]
        gone = sorted({gid for gid in (*self.groups, *self.offsets.committed, *pending)
                       if partition_for(gid, count) == index})
        answered = 0
        for gid in gone:
            group = self.groups.pop(gid, None)
            if isinstance(group, ClassicGroup):
                answered += group.unload(now)
            self.offsets.drop_group(gid)
            self.empty_since.pop(gid, None)
            self._dirty_classic.discard(gid)
            self._unwritten_classic.discard(gid)
        self.offsets.pending = {pid: groups for pid, groups in self.offsets.pending.items() if groups}
        if gone:
            log.info("%s-%d has another leader: %d group(s) unloaded, %d waiting member(s) answered "
                     "NOT_COORDINATOR", OFFSETS_TOPIC, index, len(gone), answered)
        self._kick()
        return gone

    def load_partition(self, index: int) -> list[str]:
        """Read the groups and offsets of __consumer_offsets partition `index` back from its log
        (this coordinator leads it now): each classic group as its last metadata record left it
        (Stable with its members and assignments, or Empty), with new session deadlines. Returns
        the group ids loaded."""
        if self.store.existing() is None:
            return []
        loaded = self._install(replay_offsets_topic(self.store, only=index))
        log.info("%s-%d loaded: %d group(s)", OFFSETS_TOPIC, index, len(loaded))
        self._kick()
        return loaded

    def _install(self, state: Replayed) -> list[str]:
        """Add the groups and offsets `state` replayed (every group in it is new to this
        coordinator); returns their ids."""
        now = self.clock()
        for gid, offsets in state.offsets.committed.items():
            self.offsets.commit(gid, offsets)
        for pid, groups in state.offsets.pending.items():
            for gid, offsets in groups.items():
                self.offsets.stage(pid, gid, offsets)
        classic_values, consumer_epochs = state.classic_values, state.consumer_epochs
        members, assignments = state.members, state.assignments
        loaded: list[str] = []
        for gid, value in classic_values.items():
            if value is None:
                continue
            classic = self._new_classic(gid)
            loaded.append(gid)
            self._unwritten_classic.discard(gid)
            classic.load_record_value(value, now)
            if classic.is_empty():
                self.empty_since[gid] = value.current_state_timestamp if value.current_state_timestamp > 0 else now
        for gid, epoch in consumer_epochs.items():
            if epoch is None:
                continue
            self._new_consumer(gid).group_epoch = epoch
            loaded.append(gid)
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
            loaded.append(gid)
            restore_streams(streams, replayed, now)
            streams.persisted = streams_records_of(streams)
            if streams.is_empty():
                self.empty_since[gid] = now
        for gid in loaded:
            group = self.groups[gid]
            if isinstance(group, ConsumerGroup):
                # the target is what members own. A group whose every member had reached its epoch
                # loads Stable, as Kafka's (which keeps the target's epoch in its records) does;
                # any other is Assigning, its target recomputed on the next heartbeat
                group.target = {mid: {t: set(ps) for t, ps in m.assigned.items()} for mid, m in group.members.items()}
                reached = all(m.state == MemberState.STABLE and m.member_epoch == group.group_epoch
                              for m in group.members.values())
                group.assignment_epoch = group.group_epoch if reached else group.group_epoch - 1
                # resolutions are not persisted: the regexes are resolved again at load
                group.resolve_regexes(self._topic_view(), now)
                group._refresh_subscription_metadata(self._topic_view())
                if group.is_empty():
                    self.empty_since[group.group_id] = now
        self._drop_offsets_of_deleted_topics(full_scan=True)
        for gid in state.offsets.committed:
            if gid in self.offsets.committed and gid not in self.groups:
                self._new_classic(gid)
                loaded.append(gid)
                self.empty_since[gid] = 0
        return loaded

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
                        self.store.append(gid, [(rec.offset_commit_key(gid, t, p), None) for t, p in gone])
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
            self.store.append(gid, [(rec.group_metadata_key(gid), rec.group_metadata_value(group.to_record_value()))])
        except CoordinatorWriteError:
            return ErrorCode.not_coordinator
        self._dirty_classic.discard(gid)
        self._unwritten_classic.discard(gid)
        return None

    def _apply_group_timeouts(self, group: ConsumerGroup | StreamsGroup, kind: str) -> None:
        """Before a heartbeat of a KIP-848 (`consumer`) or KIP-1071 (`streams`) group: the group's
        own `<kind>.session.timeout.ms` and `<kind>.heartbeat.interval.ms` (its group configs, else
        the broker's settings), read at each heartbeat as Kafka's coordinator reads them."""
        configs = self.broker.services.group_configs
        group.session_timeout_ms = configs.get_int(group.group_id, f"{kind}.session.timeout.ms")
        group.heartbeat_interval_ms = configs.get_int(group.group_id, f"{kind}.heartbeat.interval.ms")

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
        def lookup(name: str) -> tuple[uuid.UUID, int] | None:
            topic = self.cluster.topics.get(name)
            if topic is None or not topic.partitions:
                return None
            return (topic.topic_id, len(topic.partitions))
        return TopicView(lookup, lambda: list(self.cluster.topics))

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

    def _delete_group_state(self, group: Group, keep_offsets: bool = False) -> None:
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
        self.store.append(gid, records)  # first: a failed write leaves the group as it was
        if not keep_offsets:
            self.offsets.drop_group(gid)
        self.groups.pop(gid, None)
        self.empty_since.pop(gid, None)
        self._dirty_classic.discard(gid)
        self._unwritten_classic.discard(gid)

