"""The classic group protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup) as a plain state
machine. No trio and no clock of its own: every call carries `now` (ms) and the coordinator
calls `tick(now)` at `next_deadline()`; tests drive it with a fake clock.

States (Kafka's ClassicGroupState): Empty, PreparingRebalance, CompletingRebalance, Stable, Dead.

- A JoinGroup without a member id gets a fresh id; from v4 on it is answered at once with
  MEMBER_ID_REQUIRED and the id is remembered as pending until the member joins with it or its
  session timeout passes (KIP-394). A pending member holds the join phase back, as in Kafka.
- The join phase completes as soon as every known member (and every pending one) has sent a
  JoinGroup, or when the rebalance timeout (the largest of the members') passes; dynamic
  members that did not rejoin are then removed. group.initial.rebalance.delay.ms delays the
  first rebalance of an empty group (KIP-134; 0 by default). With no delay, a lone dynamic
  member forms its group at once, but when several members join an empty group together (or
  a static member, which has no MEMBER_ID_REQUIRED round trip for the others to arrive in) the
  first join phase waits until no new member has arrived for `burst_settle_ms` (100 ms): a member
  whose first JoinGroup lands just after the others' join phase would otherwise cost a second
  round, which librdkafka delays by at least a second and a Stable member only notices at its
  next heartbeat.
- The leader's SyncGroup carries the assignment: the group becomes Stable and every member
  waiting in SyncGroup is answered. Members that send no SyncGroup within the rebalance
  timeout are removed and the group rebalances.
- A static member (group.instance.id, KIP-345) that rejoins with a new member id while the
  group is Stable takes over its old id's place and assignment without a rebalance; the old
  id is fenced (FENCED_INSTANCE_ID).
- Errors: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID,
  INCONSISTENT_GROUP_PROTOCOL, INVALID_SESSION_TIMEOUT, as Kafka's GroupMetadataManager.
"""

from __future__ import annotations

import logging
import uuid
from typing import Callable

from kio.schema.errors import ErrorCode

from .classic_members import ClassicMember, JoinArgs, JoinResult, SyncResult, Waiter
from .records import GroupMetadataValue, MemberMetadata
from .states import ClassicGroupState, GroupError

log = logging.getLogger("kafkalite.groups")

S = ClassicGroupState


class ClassicGroup:
    def __init__(self, group_id: str, *, initial_rebalance_delay_ms: int = 0,
                 min_session_timeout_ms: int = 6000, max_session_timeout_ms: int = 1_800_000,
                 burst_settle_ms: int = 0, on_change: Callable[["ClassicGroup"], None] | None = None):
        self.group_id = group_id
        self.state = S.EMPTY
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, ClassicMember] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: dict[str, int] = {}  # member id -> deadline (KIP-394)
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.join_deadline: int | None = None  # PreparingRebalance: rebalance timeout
        self.initial_delay_deadline: int | None = None
        # several members forming an empty group at once: wait until joins stop arriving
        self.burst_settle_ms = burst_settle_ms
        self.forming = False
        self.last_arrival = 0
        self.settle_deadline: int | None = None
        self.initial_delay_limit: int | None = None
        self.sync_deadline: int | None = None  # CompletingRebalance: members must sync by then
        self.current_state_timestamp = -1
        self.on_change = on_change  # called when the group's persisted metadata changed
        # writes the group's metadata record at once, answering None or the error to give the
        # members (SyncGroup's leader assignment must be written before anyone is answered)
        self.store: Callable[["ClassicGroup"], ErrorCode | None] | None = None

    # --- queries ---------------------------------------------------------------------------
    def is_empty(self) -> bool:
        return not self.members

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def next_deadline(self) -> int | None:
        ds = list(self.pending_members.values())
        for m in self.members.values():
            if m.join_waiter is None and m.sync_waiter is None:
                ds.append(m.heartbeat_deadline)
        for d in (self.join_deadline, self.initial_delay_deadline, self.sync_deadline, self.settle_deadline):
            if d is not None:
                ds.append(d)
        return min(ds) if ds else None

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, read from consumer-protocol metadata (None if unknown)."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        from .assignors import decode_consumer_subscription
        topics: set[str] = set()
        for m in self.members.values():
            try:
                topics.update(decode_consumer_subscription(m.metadata(self.protocol_name)))
            except Exception:
                return None
        return topics

    # --- helpers ---------------------------------------------------------------------------
    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    def _transition(self, state: ClassicGroupState, now: int) -> None:
        self.state = state
        self.current_state_timestamp = now

    def _supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        candidates = self._candidate_protocols()
        return any(name in candidates for name, _ in protocols)

    def _candidate_protocols(self) -> set[str]:
        sets = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str | None:
        candidates = self._candidate_protocols()
        if not candidates:
            return None
        votes: dict[str, int] = {}
        first_choice_order: list[str] = []
        for m in self.members.values():
            for name in m.protocol_names():
                if name in candidates:
                    votes[name] = votes.get(name, 0) + 1
                    if name not in first_choice_order:
                        first_choice_order.append(name)
                    break
        return max(first_choice_order, key=lambda n: (votes[n], -first_choice_order.index(n)))

    def _max_rebalance_timeout(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def _new_member_id(self, client_id: str, instance_id: str | None) -> str:
        return f"{instance_id or client_id or 'member'}-{uuid.uuid4()}"

    def _check_static(self, member_id: str, instance_id: str | None) -> None:
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise GroupError(ErrorCode.unknown_member_id)
            if existing != member_id:
                raise GroupError(ErrorCode.fenced_instance_id)
        if member_id not in self.members:
            raise GroupError(ErrorCode.unknown_member_id)

    def _current_result(self, member: ClassicMember, *, with_members: bool, skip_assignment: bool = False) -> JoinResult:
        return JoinResult(
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=self.leader_id or "",
            member_id=member.member_id,
            members=self._member_list() if with_members else [],
            skip_assignment=skip_assignment,
        )

    def _member_list(self) -> list[tuple[str, str | None, bytes]]:
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.members.values()]

    # --- JoinGroup -------------------------------------------------------------------------
    def join(self, *, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
             session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
             protocols: list[tuple[str, bytes]], require_known_member_id: bool, supports_skip_assignment: bool,
             waiter: Waiter, now: int) -> JoinResult | None:
        """Returns an immediate answer, or None when `waiter` will be called with the JoinResult."""
        if self.state == S.DEAD:
            return JoinResult(ErrorCode.coordinator_not_available, member_id=member_id)
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            return JoinResult(ErrorCode.invalid_session_timeout, member_id=member_id)
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms
        if not self._supports(protocol_type, protocols):
            return JoinResult(ErrorCode.inconsistent_group_protocol, member_id=member_id)
        args: JoinArgs = (client_id, client_host, session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols)
        if not member_id:
            new_id = self._new_member_id(client_id, group_instance_id)
            if group_instance_id is not None:
                old_id = self.static_members.get(group_instance_id)
                if old_id is not None and old_id in self.members:
                    return self._static_rejoin(old_id, new_id, args, supports_skip_assignment, waiter, now)
                self._add_member_and_rebalance(new_id, group_instance_id, args, waiter, now)
                return None
            self.last_arrival = now
            if require_known_member_id:
                self.pending_members[new_id] = now + session_timeout_ms
                return JoinResult(ErrorCode.member_id_required, member_id=new_id)
            self._add_member_and_rebalance(new_id, None, args, waiter, now)
            return None
        if member_id in self.pending_members:
            del self.pending_members[member_id]
            self._add_member_and_rebalance(member_id, group_instance_id, args, waiter, now)
            return None
        try:
            self._check_static(member_id, group_instance_id)
        except GroupError as exc:
            return JoinResult(exc.code, member_id=member_id)
        member = self.members[member_id]
        if self.state == S.PREPARING_REBALANCE:
            self._update_member(member, args, waiter)
            self._maybe_complete_join(now)
            return None
        if self.state == S.COMPLETING_REBALANCE:
            if protocols == member.protocols:
                # a duplicate of the join that completed this generation: answer it again
                member.heartbeat_deadline = now + member.session_timeout_ms
                return self._current_result(member, with_members=member_id == self.leader_id)
            self._update_member(member, args, waiter)
            self._prepare_rebalance(now, f"member {member_id} rejoined with new metadata")
            return None
        if self.state == S.STABLE:
            if member_id == self.leader_id or protocols != member.protocols:
                self._update_member(member, args, waiter)
                self._prepare_rebalance(now, f"{'leader' if member_id == self.leader_id else 'member'} "
                                             f"{member_id} rejoined")
                return None
            member.heartbeat_deadline = now + member.session_timeout_ms
            return self._current_result(member, with_members=False)
        return JoinResult(ErrorCode.unknown_member_id, member_id=member_id)

    def _update_member(self, member: ClassicMember, args: JoinArgs, waiter: Waiter | None) -> None:
        (member.client_id, member.client_host, member.session_timeout_ms, member.rebalance_timeout_ms,
         member.protocol_type, member.protocols) = args
        if member.join_waiter is not None and member.join_waiter is not waiter:
            # a newer JoinGroup from the same member replaces the one still waiting
            member.join_waiter(JoinResult(ErrorCode.unknown_member_id, member_id=member.member_id))
        member.join_waiter = waiter

    def _add_member_and_rebalance(self, member_id: str, instance_id: str | None, args: JoinArgs, waiter: Waiter,
                                  now: int) -> None:
        client_id, client_host, session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols = args
        self.last_arrival = now
        member = ClassicMember(member_id, instance_id, client_id, client_host, session_timeout_ms,
                               rebalance_timeout_ms, protocol_type, protocols, join_waiter=waiter,
                               heartbeat_deadline=now + session_timeout_ms, is_new=True)
        if not self.members:
            self.protocol_type = protocol_type
        self.members[member_id] = member
        if instance_id is not None:
            self.static_members[instance_id] = member_id
        if self.state == S.PREPARING_REBALANCE and self.initial_delay_deadline is not None:
            assert self.initial_delay_limit is not None  # the deadline and its limit are set together
            # KIP-134: each new member extends the initial delay, up to the rebalance timeout
            self.initial_delay_deadline = min(now + self.initial_rebalance_delay_ms, self.initial_delay_limit)
        self._maybe_prepare_rebalance(now)

    def _static_rejoin(self, old_id: str, new_id: str, args: JoinArgs, supports_skip: bool, waiter: Waiter,
                       now: int) -> JoinResult | None:
        old = self.members.pop(old_id)
        instance_id = old.group_instance_id
        assert instance_id is not None  # a static member is known by its instance id
        current_leader = self.leader_id
        for w, result in ((old.join_waiter, JoinResult(ErrorCode.fenced_instance_id, member_id=old_id)),
                          (old.sync_waiter, SyncResult(ErrorCode.fenced_instance_id))):
            if w is not None:
                w(result)
        old.join_waiter = old.sync_waiter = None
        old.member_id = new_id
        self.members[new_id] = old
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        old.heartbeat_deadline = now + args[2]
        old_protocols = old.protocols
        if self.state == S.STABLE:
            (old.client_id, old.client_host, old.session_timeout_ms, old.rebalance_timeout_ms,
             old.protocol_type, old.protocols) = args
            if self.select_protocol() == self.protocol_name:
                self._changed()
                is_leader = new_id == self.leader_id
                if supports_skip:
                    return self._current_result(old, with_members=is_leader, skip_assignment=is_leader)
                # before v9 the answer names the leader as it was, so a restarted static leader
                # acts as a follower and does not reassign (as Kafka does)
                result = self._current_result(old, with_members=False)
                result.leader = current_leader or ""
                return result
            old.join_waiter = waiter
            self._prepare_rebalance(now, f"static member {instance_id} rejoined with other protocols")
            return None
        del old_protocols
        self._update_member(old, args, waiter)
        if self.state == S.COMPLETING_REBALANCE:
            self._prepare_rebalance(now, f"static member {instance_id} rejoined during the sync")
        else:
            self._maybe_complete_join(now)
        return None

    def _maybe_prepare_rebalance(self, now: int) -> None:
        if self.state in (S.EMPTY, S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(now, "a member joined")
        elif self.state == S.PREPARING_REBALANCE:
            self._maybe_complete_join(now)

    def _prepare_rebalance(self, now: int, reason: str = "") -> None:
        log.info("group %s: preparing to rebalance (generation %d, %s): %s", self.group_id, self.generation_id,
                 self.state, reason)
        if self.state == S.COMPLETING_REBALANCE:
            # the assignment of the generation being synced will never come: tell those waiting
            for m in self.members.values():
                m.assignment = b""
                if m.sync_waiter is not None:
                    m.sync_waiter(SyncResult(ErrorCode.rebalance_in_progress))
                    m.sync_waiter = None
        was_empty = self.state == S.EMPTY
        self.forming = was_empty
        self.sync_deadline = None
        self._transition(S.PREPARING_REBALANCE, now)
        timeout = self._max_rebalance_timeout()
        self.join_deadline = now + timeout
        if was_empty and self.initial_rebalance_delay_ms > 0:
            self.initial_delay_limit = now + max(timeout, self.initial_rebalance_delay_ms)
            self.initial_delay_deadline = min(now + self.initial_rebalance_delay_ms, self.initial_delay_limit)
            self.join_deadline = None
            return
        self._maybe_complete_join(now)

    def _all_joined(self) -> bool:
        return not self.pending_members and all(m.join_waiter is not None for m in self.members.values())

    def _maybe_complete_join(self, now: int) -> None:
        if self.state == S.PREPARING_REBALANCE and self.initial_delay_deadline is None and self._all_joined():
            if self.forming and self.burst_settle_ms > 0 and now < self.last_arrival + self.burst_settle_ms \
                    and (len(self.members) > 1 or self._has_static_member()):
                # members are arriving together at an empty group: a member whose first
                # JoinGroup is still on its way would otherwise force a second round. A lone
                # dynamic member has already spent a round trip (MEMBER_ID_REQUIRED) in which the
                # others' first joins arrive; a static member joins in one request, so a lone
                # static member waits too, or the static members started with it join a group
                # whose leader already holds every partition and must revoke them
                self.settle_deadline = self.last_arrival + self.burst_settle_ms
                return
            self._complete_join(now)

    def _has_static_member(self) -> bool:
        return any(m.group_instance_id is not None for m in self.members.values())

    def _complete_join(self, now: int) -> None:
        self.join_deadline = None
        self.settle_deadline = None
        self.forming = False
        self.initial_delay_deadline = self.initial_delay_limit = None
        for m in list(self.members.values()):
            if m.join_waiter is None and m.group_instance_id is None:
                self._remove_member(m)
        self.pending_members.clear()
        self.generation_id += 1
        if not self.members:
            self.protocol_name = None
            self.leader_id = None
            self._transition(S.EMPTY, now)
            self._changed()
            return
        self.protocol_name = self.select_protocol()
        if self.leader_id not in self.members or self.members[self.leader_id].join_waiter is None:
            joined = [m for m in self.members.values() if m.join_waiter is not None]
            self.leader_id = (joined or list(self.members.values()))[0].member_id
        self._transition(S.COMPLETING_REBALANCE, now)
        self.sync_deadline = now + self._max_rebalance_timeout()
        for m in self.members.values():
            m.heartbeat_deadline = now + m.session_timeout_ms
            m.is_new = False
            if m.join_waiter is not None:
                w, m.join_waiter = m.join_waiter, None
                w(self._current_result(m, with_members=m.member_id == self.leader_id))

    def _remove_member(self, member: ClassicMember) -> None:
        self.members.pop(member.member_id, None)
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member.member_id:
            del self.static_members[member.group_instance_id]
        if member.join_waiter is not None:
            member.join_waiter(JoinResult(ErrorCode.unknown_member_id, member_id=member.member_id))
            member.join_waiter = None
        if member.sync_waiter is not None:
            member.sync_waiter(SyncResult(ErrorCode.unknown_member_id))
            member.sync_waiter = None
        if self.leader_id == member.member_id:
            self.leader_id = next(iter(self.members), None)

    def _remove_member_and_update(self, member: ClassicMember, now: int) -> None:
        self._remove_member(member)
        if self.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(now, f"member {member.member_id} left or its session expired")
        elif self.state == S.PREPARING_REBALANCE:
            self._maybe_complete_join(now)

    # --- SyncGroup -------------------------------------------------------------------------
    def sync(self, *, member_id: str, group_instance_id: str | None, generation_id: int,
             protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes],
             waiter: Waiter, now: int) -> SyncResult | None:
        try:
            self._check_static(member_id, group_instance_id)
        except GroupError as exc:
            return SyncResult(exc.code)
        if generation_id != self.generation_id:
            return SyncResult(ErrorCode.illegal_generation)
        if (protocol_type is not None and protocol_type != self.protocol_type) or \
                (protocol_name is not None and protocol_name != self.protocol_name):
            return SyncResult(ErrorCode.inconsistent_group_protocol)
        member = self.members[member_id]
        if self.state == S.EMPTY:
            return SyncResult(ErrorCode.unknown_member_id)
        if self.state == S.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.rebalance_in_progress)
        member.heartbeat_deadline = now + member.session_timeout_ms
        if self.state == S.STABLE:
            return SyncResult(protocol_type=self.protocol_type, protocol_name=self.protocol_name,
                              assignment=member.assignment)
        # CompletingRebalance
        if member.sync_waiter is not None:
            member.sync_waiter(SyncResult(ErrorCode.rebalance_in_progress))
        member.sync_waiter = waiter
        if member_id == self.leader_id:
            for m in self.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            self.sync_deadline = None
            self._transition(S.STABLE, now)
            error = self.store(self) if self.store is not None else None
            if error is not None:
                # Kafka's resetAndPropagateAssignmentWithError, then a new rebalance: nobody
                # is given an assignment that was not written
                for m in self.members.values():
                    m.assignment = b""
                    if m.sync_waiter is not None:
                        w, m.sync_waiter = m.sync_waiter, None
                        w(SyncResult(error))
                self._prepare_rebalance(now, f"error {error.name} when storing the group assignment")
                return None
            if self.store is None:
                self._changed()
            for m in self.members.values():
                if m.sync_waiter is not None:
                    w, m.sync_waiter = m.sync_waiter, None
                    m.heartbeat_deadline = now + m.session_timeout_ms
                    w(SyncResult(protocol_type=self.protocol_type, protocol_name=self.protocol_name,
                                 assignment=m.assignment))
        return None

    # --- Heartbeat -------------------------------------------------------------------------
    def heartbeat(self, *, member_id: str, group_instance_id: str | None, generation_id: int, now: int) -> ErrorCode:
        if self.state == S.DEAD:
            return ErrorCode.coordinator_not_available
        if (refused := self._check_generation(member_id, group_instance_id, generation_id)) is not None:
            return refused
        if self.state == S.EMPTY:
            return ErrorCode.unknown_member_id
        member = self.members[member_id]
        member.heartbeat_deadline = now + member.session_timeout_ms
        if self.state == S.PREPARING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    def _check_generation(self, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode | None:
        """The member and generation checks a Heartbeat and an offset commit share; None when they pass."""
        try:
            self._check_static(member_id, instance_id)
        except GroupError as exc:
            return exc.code
        return ErrorCode.illegal_generation if generation_id != self.generation_id else None

    # --- OffsetCommit / TxnOffsetCommit ----------------------------------------------------
    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation_id: int, *,
                               transactional: bool) -> ErrorCode:
        """Kafka's ClassicGroup.validateOffsetCommit / validateTxnOffsetCommit: a commit with no
        generation (-1) to an Empty group is a "simple" one; otherwise the member and generation
        must be current, and a plain commit waits out CompletingRebalance."""
        if self.state == S.DEAD:
            return ErrorCode.coordinator_not_available
        if generation_id < 0 and self.state == S.EMPTY:
            return ErrorCode.none
        if generation_id >= 0 or member_id or instance_id is not None:
            if (refused := self._check_generation(member_id, instance_id, generation_id)) is not None:
                return refused
        elif not transactional and self.state != S.EMPTY:
            return ErrorCode.unknown_member_id
        if not transactional and self.state == S.COMPLETING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    # --- LeaveGroup ------------------------------------------------------------------------
    def leave(self, members: list[tuple[str, str | None]], now: int) -> list[ErrorCode]:
        out = []
        for member_id, instance_id in members:
            if self.state == S.DEAD:
                out.append(ErrorCode.coordinator_not_available)
                continue
            if instance_id is None and member_id in self.pending_members:
                del self.pending_members[member_id]
                self._maybe_complete_join(now)
                out.append(ErrorCode.none)
                continue
            if instance_id is not None:
                existing = self.static_members.get(instance_id)
                if existing is None:
                    out.append(ErrorCode.unknown_member_id)
                    continue
                if member_id and existing != member_id:
                    out.append(ErrorCode.fenced_instance_id)
                    continue
                member_id = existing
            member = self.members.get(member_id)
            if member is None:
                out.append(ErrorCode.unknown_member_id)
                continue
            self._remove_member_and_update(member, now)
            out.append(ErrorCode.none)
        return out

    # --- time ------------------------------------------------------------------------------
    def tick(self, now: int) -> None:
        for member_id, deadline in list(self.pending_members.items()):
            if deadline <= now:
                del self.pending_members[member_id]
                self._maybe_complete_join(now)
        for m in list(self.members.values()):
            if m.member_id not in self.members:
                continue
            if m.join_waiter is None and m.sync_waiter is None and m.heartbeat_deadline <= now:
                self._remove_member_and_update(m, now)
        if self.state == S.PREPARING_REBALANCE:
            if self.settle_deadline is not None and self.settle_deadline <= now:
                self.settle_deadline = None
                self._maybe_complete_join(now)
            if self.initial_delay_deadline is not None and self.initial_delay_deadline <= now:
                self.initial_delay_deadline = self.initial_delay_limit = None
                self.join_deadline = now + self._max_rebalance_timeout()
                self._maybe_complete_join(now)
            if self.join_deadline is not None and self.join_deadline <= now:
                self._complete_join(now)
        if self.state == S.COMPLETING_REBALANCE and self.sync_deadline is not None and self.sync_deadline <= now:
            self.sync_deadline = None
            for m in list(self.members.values()):
                if m.sync_waiter is None:
                    self._remove_member(m)
            self._prepare_rebalance(now, "members did not sync within the rebalance timeout")

    # --- unloading -------------------------------------------------------------------------
    def unload(self, now: int) -> int:
        """This coordinator resigns (its __consumer_offsets partition has another leader): the
        group goes Dead, and every member waiting in JoinGroup (PreparingRebalance) or SyncGroup
        (CompletingRebalance) is answered NOT_COORDINATOR, as Kafka's GroupMetadataManager.onUnloaded
        completes their futures; its client finds the new coordinator and joins again. Returns
        how many were answered."""
        answered = 0
        self._transition(S.DEAD, now)
        self.join_deadline = self.sync_deadline = self.settle_deadline = None
        self.initial_delay_deadline = self.initial_delay_limit = None
        for m in self.members.values():
            if m.join_waiter is not None:
                waiter, m.join_waiter = m.join_waiter, None
                waiter(JoinResult(ErrorCode.not_coordinator, member_id=m.member_id))
                answered += 1
            if m.sync_waiter is not None:
                sync_waiter, m.sync_waiter = m.sync_waiter, None
                sync_waiter(SyncResult(ErrorCode.not_coordinator))
                answered += 1
        return answered

    # --- persistence -----------------------------------------------------------------------
    def to_record_value(self) -> GroupMetadataValue:
        members = []
        if self.state in (S.STABLE, S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE):
            members = [MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                      m.rebalance_timeout_ms, m.session_timeout_ms, m.metadata(self.protocol_name),
                                      m.assignment) for m in self.members.values()]
        return GroupMetadataValue(self.protocol_type or "", self.generation_id, self.protocol_name,
                                  self.leader_id, self.current_state_timestamp, members)

    def load_record_value(self, v: GroupMetadataValue, now: int) -> None:
        """Restore from a GroupMetadataValue (startup): Stable with its members, or Empty."""
        self.protocol_type = v.protocol_type or None
        self.generation_id = v.generation
        self.protocol_name = v.protocol
        self.leader_id = v.leader
        self.members.clear()
        self.static_members.clear()
        self.current_state_timestamp = v.current_state_timestamp
        for mm in v.members:
            member = ClassicMember(mm.member_id, mm.group_instance_id, mm.client_id, mm.client_host,
                                   mm.session_timeout, mm.rebalance_timeout, v.protocol_type,
                                   [(v.protocol, mm.subscription)] if v.protocol else [],
                                   assignment=mm.assignment, heartbeat_deadline=now + mm.session_timeout)
            self.members[mm.member_id] = member
            if mm.group_instance_id is not None:
                self.static_members[mm.group_instance_id] = mm.member_id
        self.state = S.STABLE if self.members else S.EMPTY
