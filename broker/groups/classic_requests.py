"""The classic group protocol's requests: JoinGroup, SyncGroup, Heartbeat, LeaveGroup (the
state machine is classic.py's ClassicGroup).

Rules:
- JoinGroup creates a classic group for an unknown id; an empty consumer or streams group is
  replaced by a classic one (its offsets stay); a non-empty one answers INCONSISTENT_GROUP_PROTOCOL.
- A new group's first (empty) metadata record is written with its first join, as Kafka writes
  it; failing that write, the join answers NOT_COORDINATOR, the group is not kept and every
  member waiting in it is answered NOT_COORDINATOR.
- JoinGroup and SyncGroup answer when the group does (`_answer`): now, or once the rebalance
  or the leader's assignment completes. Other writes that fail are left to the group's next
  change (as Kafka writes a join only with the assignment), except SyncGroup's assignment,
  which the group stores itself (`_store_classic`) and answers NOT_COORDINATOR when it fails.
- Heartbeat and LeaveGroup for a group that is not classic answer UNKNOWN_MEMBER_ID; LeaveGroup
  for an unknown group answers each member UNKNOWN_MEMBER_ID, as Kafka.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import trio
from kio.schema.errors import ErrorCode

from ..internal_store import CoordinatorWriteError
from .classic import ClassicGroup
from .classic_members import JoinResult, SyncResult
from .persistence import GroupPersistence

log = logging.getLogger("kafkalite.groups")


class ClassicRequests(GroupPersistence):
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

        def waiter(result: Any) -> None:
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

