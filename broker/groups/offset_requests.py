"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, offset retention, and the
transaction coordinator's hooks for transactional offsets (KIP-98 / KIP-447: TxnOffsetCommit
stages them, the partition's COMMIT/ABORT marker completes them).

Rules:
- A commit is checked as Kafka's OffsetMetadataManager.validateOffsetCommit /
  validateTransactionalOffsetCommit checks it (`validate_commit`, `check_commit`), then partition by
  partition when a KIP-848 member commits with an older epoch (the check `check_commit` returns, KIP-1251: every
  partition must be one it has held since then, else the whole commit is STALE_MEMBER_EPOCH,
  ILLEGAL_GENERATION when transactional, as Kafka's validator throws); metadata longer than
  offset.metadata.max.bytes answers OFFSET_METADATA_TOO_LARGE for its partition.
- Offsets are appended before they are applied; a failed append applies none of them and
  answers NOT_COORDINATOR for the partitions it carried. A plain commit to an unknown group
  creates the "simple" (empty classic) group with its first written offset, as in Kafka.
- Transactional offsets are appended as a transactional batch of the producer to the group's
  partition and stay pending (OffsetStore) until `complete_txn_offsets`; OffsetFetch with
  require_stable answers UNSTABLE_OFFSET_COMMIT for a partition with pending offsets.
- Retention (every offsets.retention.check.interval.ms): offsets older than
  offsets.retention.minutes, counted from their commit or from when their group became
  empty, get tombstones; an empty group with no offsets left is removed (Kafka: Empty -> Dead).
"""

from __future__ import annotations

import contextlib
import logging

from kio.schema.errors import ErrorCode

from ..internal_store import CoordinatorWriteError
from . import records as rec
from .classic import ClassicGroup
from .member_epochs import MemberEpochGroup, PartitionCheck
from .persistence import GroupPersistence
from .states import ClassicGroupState, GroupError

log = logging.getLogger("kafkalite.groups")

OFFSET_METADATA_MAX_BYTES = 4096  # offset.metadata.max.bytes


class OffsetRequests(GroupPersistence):
    def validate_commit(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                        api_version: int, *, transactional: bool = False) -> ErrorCode:
        """Kafka's OffsetMetadataManager.validateOffsetCommit / validateTransactionalOffsetCommit."""
        return self.check_commit(group_id, generation_id, member_id, instance_id, api_version,
                                 transactional=transactional)[0]

    def check_commit(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                     api_version: int, *, transactional: bool = False) -> tuple[ErrorCode, PartitionCheck | None]:
        """validate_commit's answer and, when it is NONE, the check of each (topic id, partition)
        of a KIP-848 member committing with an older epoch (KIP-1251), or None when every
        partition may be committed."""
        group = self.groups.get(group_id)
        if group is None:
            if generation_id < 0:
                if transactional:
                    self._new_classic(group_id)  # a "simple" group, as Kafka creates
                # a plain commit creates the simple group only with the first offset it writes
                # (commit_offsets): a commit whose every partition fails leaves no group, as in Kafka
                return ErrorCode.none, None
            if transactional or api_version < 9:
                return ErrorCode.illegal_generation, None
            return ErrorCode.group_id_not_found, None
        if isinstance(group, MemberEpochGroup):
            try:
                return ErrorCode.none, group.validate_offset_commit(member_id, instance_id, generation_id)
            except GroupError as exc:
                if exc.code == ErrorCode.stale_member_epoch and (transactional or api_version < 9):
                    return ErrorCode.illegal_generation, None
                return exc.code, None
        return group.validate_offset_commit(member_id, instance_id, generation_id, transactional=transactional), None

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
                self.store.append(group_id, [(rec.offset_commit_key(group_id, t, p), rec.offset_commit_value(v))
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
                      member_id: str | None = None,
                      member_epoch: int = -1) -> tuple[ErrorCode, list[tuple[str, int, int, int, str, ErrorCode]]]:
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

    def delete_offsets(self, group_id: str,
                       tps: list[tuple[str, int]]) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
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
                self.store.append(group_id, [(rec.offset_commit_key(group_id, t, p), None) for t, p in gone])
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
                    self.store.append(gid, [(rec.offset_commit_key(gid, t, p), None) for t, p in gone])
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
        err, check = self.check_commit(group_id, generation_id, member_id or "", group_instance_id, 99,
                                       transactional=True)
        if err != ErrorCode.none:
            return {tp: err for tp in offsets}
        now = self.clock() if now_ms is None else now_ms
        errors: dict[tuple[str, int], ErrorCode] = {}
        values: dict[tuple[str, int], rec.OffsetValue] = {}
        for tp, (offset, leader_epoch, metadata) in offsets.items():
            topic = self.cluster.topics.get(tp[0])
            if self.cluster.partition(tp[0], tp[1]) is None or topic is None:
                errors[tp] = ErrorCode.unknown_topic_or_partition
            elif check is not None and not check(topic.topic_id, tp[1]):
                return {tp: ErrorCode.illegal_generation for tp in offsets}
            elif metadata is not None and len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
                errors[tp] = ErrorCode.offset_metadata_too_large
            else:
                values[tp] = rec.OffsetValue(offset, leader_epoch, metadata or "", now)
                errors[tp] = ErrorCode.none
        if values:
            try:
                self.store.append(group_id, [(rec.offset_commit_key(group_id, t, p), rec.offset_commit_value(v))
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

