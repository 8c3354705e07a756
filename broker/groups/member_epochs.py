"""What KIP-848 consumer groups (consumer.py) and KIP-1071 streams groups (streams.py) share:
members with epochs, static members (instance ids, epoch -2 a temporary leave), leaves (-1),
the member-epoch checks of a heartbeat, of OffsetCommit and of OffsetFetch, the heartbeat
interval, and fencing when a session or rebalance deadline passes.

A subclass says what a member is (`member_type`), what an empty assignment is
(`empty_assignment`), whether a member's reported ownership fits its assignment
(`_owns_only_assigned`), and may hear of members that changed, were renamed or removed (to
persist them)."""

from __future__ import annotations

import uuid
from typing import Any, Callable

from kio.schema.errors import ErrorCode

from .states import GroupError

# (topic id, partition) -> may it be committed
PartitionCheck = Callable[[uuid.UUID, int], bool]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberEpochGroup:
    protocol_type: str
    member_type: Callable[..., Any]
    empty_assignment: Callable[[], Any]

    group_id: str
    group_epoch: int
    members: dict[str, Any]
    static_members: dict[str, str]
    target: dict[str, Any]
    heartbeat_interval_ms: int
    busy_heartbeat_interval_ms: int
    busy_window_ms: int
    last_change: int

    # --- what a subclass adds ----------------------------------------------------------------
    def _owns_only_assigned(self, member, owned) -> bool:
        raise NotImplementedError

    def _member_changed(self, member_id: str) -> None:
        pass

    def _member_renamed(self, old_id: str, new_id: str) -> None:
        pass

    def _member_removed(self, member_id: str) -> None:
        pass

    # --- queries -----------------------------------------------------------------------------
    def is_empty(self) -> bool:
        return not self.members

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def next_deadline(self) -> int | None:
        ds = []
        for m in self.members.values():
            ds.append(m.session_deadline)
            if m.rebalance_deadline is not None:
                ds.append(m.rebalance_deadline)
        return min(ds) if ds else None

    def interval_for(self, now: int) -> int:
        """The heartbeat interval to give a member: the group's heartbeat interval, or a short one
        while the group is not Stable or changed in the last few seconds, so that members see
        revocations and released partitions or tasks within a fraction of a second."""
        busy = self.busy_heartbeat_interval_ms
        if busy and busy < self.heartbeat_interval_ms and (
                self.state != "Stable" or now - self.last_change < self.busy_window_ms):
            return busy
        return self.heartbeat_interval_ms

    @property
    def state(self) -> str:
        raise NotImplementedError

    # --- OffsetCommit / TxnOffsetCommit / OffsetFetch ------------------------------------------
    def validate_offset_commit(self, member_id: str, instance_id: str | None, epoch: int) -> PartitionCheck | None:
        """Raises GroupError for the whole commit; returns None when every partition may be
        committed, or the check of each partition when the member's epoch is older than its
        current one (KIP-1251: `_older_epoch_commit`)."""
        if epoch < 0 and not self.members:
            return None
        member = self.members.get(member_id)
        if member is None:
            raise GroupError(ErrorCode.unknown_member_id)
        if epoch == member.member_epoch:
            return None
        if epoch > member.member_epoch:
            raise GroupError(ErrorCode.stale_member_epoch)
        return self._older_epoch_commit(member, epoch)

    def _older_epoch_commit(self, member, epoch: int) -> PartitionCheck | None:
        """A commit with an epoch older than the member's: refused, unless a subclass checks it
        partition by partition."""
        raise GroupError(ErrorCode.stale_member_epoch)

    def validate_offset_fetch(self, member_id: str | None, epoch: int) -> None:
        if member_id is None and epoch < 0:
            return
        self._check_offset_member(member_id or "", epoch)

    def _check_offset_member(self, member_id: str, epoch: int) -> None:
        member = self.members.get(member_id)
        if member is None:
            raise GroupError(ErrorCode.unknown_member_id)
        if epoch != member.member_epoch:
            raise GroupError(ErrorCode.stale_member_epoch)

    # --- heartbeat: which member, its epoch, leaves --------------------------------------------
    def _heartbeat_member(self, member_id: str, member_epoch: int, instance_id: str | None, owned):
        """The member a (non-leaving) heartbeat speaks for: a new one when it joins."""
        joining = member_epoch == 0
        if instance_id is not None:
            return self._static_member(member_id, member_epoch, instance_id, owned, joining)
        member = self.members.get(member_id)
        if member is None:
            if not joining:
                raise GroupError(ErrorCode.unknown_member_id,
                                 f"Member {member_id} is not a member of group {self.group_id}.")
            return self.member_type(member_id)
        self._check_epoch(member, member_epoch, owned)
        return member

    @staticmethod
    def _update_member(member, instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int | None,
                       client_id: str, client_host: str) -> None:
        """What every heartbeat may update of a member, whatever the group type."""
        if instance_id is not None:
            member.instance_id = instance_id
        if rack_id is not None:
            member.rack_id = rack_id
        if rebalance_timeout_ms is not None and rebalance_timeout_ms >= 0:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        member.client_id = client_id
        member.client_host = client_host

    def _check_epoch(self, member, epoch: int, owned) -> None:
        if epoch == 0:
            # a fenced member rejoins with its own member id (KIP-1082 ids; KAFKA-19233)
            return
        if epoch > member.member_epoch:
            raise GroupError(ErrorCode.fenced_member_epoch,
                             f"The {self.protocol_type} group member has a greater member epoch ({epoch}) than the "
                             f"one known by the group coordinator ({member.member_epoch}). The member must "
                             "abandon all its partitions and rejoin.")
        if epoch < member.member_epoch:
            if epoch != member.previous_member_epoch or not self._owns_only_assigned(member, owned):
                raise GroupError(ErrorCode.fenced_member_epoch,
                                 f"The {self.protocol_type} group member has a smaller member epoch ({epoch}) than "
                                 f"the one known by the group coordinator ({member.member_epoch}). The member must "
                                 "abandon all its partitions and rejoin.")

    def _static_member(self, member_id: str, member_epoch: int, instance_id: str, owned, joining: bool):
        existing_id = self.static_members.get(instance_id)
        existing = self.members.get(existing_id) if existing_id else None
        if joining:
            if existing is None:
                return self.member_type(member_id, instance_id=instance_id)
            # Kafka's throwIfInstanceIdIsUnreleased: only a static member that left with epoch -2
            # may be replaced, even by a join that carries its own member id (a static member
            # fenced by FENCED_MEMBER_EPOCH rejoins into UNRELEASED_INSTANCE_ID on Kafka 4.4 too)
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise GroupError(ErrorCode.unreleased_instance_id,
                                 f"Static member {member_id} with instance id {instance_id} cannot join the group "
                                 f"because the instance id is owned by {existing.member_id} member.")
            if existing.member_id == member_id:
                existing.member_epoch = 0
                existing.previous_member_epoch = 0
                existing.rebalance_deadline = None
                self._member_changed(member_id)
                return existing
            # the new incarnation takes over the old one's assignment
            old_id = existing.member_id
            del self.members[old_id]
            existing.member_id = member_id
            existing.member_epoch = 0
            existing.previous_member_epoch = 0
            existing.rebalance_deadline = None
            if old_id in self.target:
                self.target[member_id] = self.target.pop(old_id)
            self.members[member_id] = existing
            self._member_renamed(old_id, member_id)
            return existing
        if existing is None:
            raise GroupError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(ErrorCode.fenced_instance_id,
                             f"Static member {member_id} with instance id {instance_id} was fenced by member "
                             f"{existing.member_id}.")
        self._check_epoch(existing, member_epoch, owned)
        return existing

    def _leave(self, member_id: str, instance_id: str | None, epoch: int) -> tuple[str, int]:
        """A leave (epoch -1) or a static member's temporary leave (-2): the member id and epoch to answer."""
        if instance_id is None:
            if member_id not in self.members:
                raise GroupError(ErrorCode.unknown_member_id,
                                 f"Member {member_id} is not a member of group {self.group_id}.")
            self.remove_member(member_id)
            return member_id, epoch
        existing_id = self.static_members.get(instance_id)
        if existing_id is None or existing_id not in self.members:
            raise GroupError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
        if existing_id != member_id:
            raise GroupError(ErrorCode.fenced_instance_id)
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            member = self.members[member_id]
            member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            member.pending_revocation = self.empty_assignment()
            member.rebalance_deadline = None
            self._member_changed(member_id)
            return member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH
        self.remove_member(member_id)
        return member_id, epoch

    def remove_member(self, member_id: str) -> None:
        """Fence or remove a member: the group epoch is bumped and its assignment goes to others."""
        member = self.members.pop(member_id, None)
        if member is None:
            return
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.target.pop(member_id, None)
        self.group_epoch += 1
        self._member_removed(member_id)

    @staticmethod
    def _revocation_deadline(member, revoking: bool, asked_again: bool, now: int) -> None:
        """A member asked to revoke must do so within its rebalance timeout, counted from when it
        was last asked (`asked_again`: this heartbeat asked it); otherwise it has no deadline."""
        if not revoking:
            member.rebalance_deadline = None
        elif asked_again or member.rebalance_deadline is None:
            member.rebalance_deadline = now + member.rebalance_timeout_ms

    # --- time --------------------------------------------------------------------------------
    def tick(self, now: int) -> list[str]:
        """Fence members whose session or revocation deadline passed; returns their ids."""
        fenced = []
        for m in list(self.members.values()):
            if m.session_deadline <= now or (m.rebalance_deadline is not None and m.rebalance_deadline <= now):
                self.remove_member(m.member_id)
                fenced.append(m.member_id)
        return fenced
