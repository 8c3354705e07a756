"""KIP-848 consumer groups (ConsumerGroupHeartbeat) as a plain state machine.

The group has a group epoch (bumped when membership, subscriptions or the partition counts of
subscribed topics change), a target assignment computed by a server-side assignor at the
group epoch, and members that move towards their target one heartbeat at a time, as in
Kafka's CurrentAssignmentBuilder:

- a member whose target takes partitions away keeps its epoch and is asked to revoke them
  (UNREVOKED_PARTITIONS) until a heartbeat reports it no longer owns them; it must do so
  within its rebalance timeout or it is fenced. One that has revoked them and finds that the
  target moved on and takes more keeps the same epoch again, so that the retry of a heartbeat
  whose answer was lost (same epoch, same owned partitions) is not fenced;
- a partition another member still owns (or is revoking) is not given out yet
  (UNRELEASED_PARTITIONS); the member gets it on a later heartbeat;
- otherwise the member moves to the target epoch (STABLE).

Member epoch checks: a larger epoch than ours, or a smaller one that is not the previous epoch
(the one the member had before its last reconciliation step, whether that step changed it or
not, as Kafka's updateMemberEpoch) with owned partitions a subset of the assignment, gets
FENCED_MEMBER_EPOCH; an unknown member
id with epoch > 0 gets UNKNOWN_MEMBER_ID; epoch 0 with a known member id is that member
rejoining after it was fenced (KAFKA-19233) and gets its current assignment again. Epoch -1 leaves; -2 is a static member's temporary
leave (it keeps its assignment until its session times out or the same instance id rejoins).
Group states: Empty, Assigning, Reconciling, Stable.

Assignment epochs (KIP-1251): each partition a member holds keeps the member epoch it was given
at (`assignment_epochs`; a partition kept across a bump keeps its own). A commit with an epoch
older than the member's is accepted for a partition the member holds (assigned or pending
revocation) since that epoch or earlier, and is STALE_MEMBER_EPOCH for the others, so a member
whose epoch-bumping answer was lost still commits what it consumed. The epochs live in memory:
a member loaded from __consumer_offsets holds its partitions since its current epoch.

Regular-expression subscriptions (SubscribedTopicRegex) are resolved as Kafka's
GroupMetadataManager does, apart from the heartbeat that asks for them: a heartbeat that brings a
regex no member of the group had (validated then: INVALID_REGULAR_EXPRESSION), or that finds a
topic created since the group's last resolution, schedules a resolution of all the group's
regexes; Kafka runs it on an executor after answering that heartbeat, here it runs at the start
of the group's next heartbeat. So the heartbeat that subscribes gets the topics named literally
and none of the regex's (librdkafka's 0045 expects the regex's in a later answer). A resolution
matches the whole name (RE2J's matches()) against every topic, internal ones included, and
bumps the group epoch when a regex's topics changed. Resolutions are at least
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS (10 s) apart within a group; a regex no member subscribes to
any longer is dropped. A deleted topic leaves the assignment at once (it leaves the subscription
metadata), without waiting for a resolution.

Heartbeat interval: group.consumer.heartbeat.interval.ms (5 s, as Kafka) once the group is
Stable and unchanged for a few seconds; while it assigns or reconciles, or just changed, the
response asks for `busy_heartbeat_interval_ms` instead (the interval is the coordinator's to
give in every response), so a rebalance takes a few round trips instead of a few 5 s waits.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Callable, Mapping

from kio.schema.errors import ErrorCode

from .assignors import ASSIGNORS, DEFAULT_ASSIGNOR
from .states import GroupError
from .member_epochs import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, MemberEpochGroup, PartitionCheck
from .states import ConsumerGroupState, MemberState

M = MemberState

TopicPartitions = dict[uuid.UUID, set[int]]


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = 300_000
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = M.STABLE
    assigned: TopicPartitions = field(default_factory=dict)
    pending_revocation: TopicPartitions = field(default_factory=dict)
    # (topic id, partition) -> the member epoch the partition was given at (KIP-1251); a
    # partition without one is held since the current epoch
    assignment_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict, compare=False)
    session_deadline: int = 0
    rebalance_deadline: int | None = None
    # the assignment_key() last written to __consumer_offsets (set by the coordinator)
    persisted_assignment: tuple | None = field(default=None, compare=False, repr=False)

    def metadata_key(self):
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                tuple(self.subscribed_topic_names), self.subscribed_topic_regex,
                self.rebalance_timeout_ms, self.server_assignor)

    def assignment_key(self):
        return (self.member_epoch, self.previous_member_epoch, self.state,
                _freeze(self.assigned), _freeze(self.pending_revocation))


def _freeze(tps: TopicPartitions):
    return tuple(sorted((str(t), tuple(sorted(ps))) for t, ps in tps.items() if ps))


@dataclass
class HeartbeatResult:
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicPartitions | None = None


class TopicView:
    """What the group needs to know about topics: name -> (topic id, partition count), and
    the names of every topic (for regular-expression subscriptions)."""

    def __init__(self, lookup: Callable[[str], tuple[uuid.UUID, int] | None],
                 names: Callable[[], list[str]] | None = None):
        self.lookup = lookup
        self.names = names or (lambda: [])


# Kafka's GroupMetadataManager.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000


@dataclass(frozen=True)
class ResolvedRegex:
    """Kafka's ResolvedRegularExpression: the topics a regex matched and when."""
    topics: frozenset[str]
    refreshed_at: int


def regex_error(regex: str) -> str | None:
    """Kafka's throwIfRegularExpressionIsInvalid: its message for a regex that does not compile."""
    try:
        re.compile(regex)
    except re.error as exc:
        return f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc.msg}."
    return None


def _matches(regex: str, names: list[str]) -> set[str]:
    try:
        pattern = re.compile(regex)
    except re.error:
        return set()
    # every topic, internal ones included, as Kafka's refreshRegularExpressions
    return {n for n in names if pattern.fullmatch(n)}


class ConsumerGroup(MemberEpochGroup):
    protocol_type = "consumer"
    member_type = ConsumerMember
    empty_assignment = dict

    def __init__(self, group_id: str, *, session_timeout_ms: int = 45000, heartbeat_interval_ms: int = 5000,
                 busy_heartbeat_interval_ms: int = 0, busy_window_ms: int = 3000):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, TopicPartitions] = {}
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        # while the group is changing, members are asked to heartbeat more often
        self.busy_heartbeat_interval_ms = busy_heartbeat_interval_ms
        self.busy_window_ms = busy_window_ms
        self.last_change = -(1 << 62)
        self._topics = TopicView(lambda name: None)
        # what changed since the coordinator last persisted the group
        self.epoch_dirty = False
        self.dirty_members: set[str] = set()
        self.removed_members: set[str] = set()
        # regex -> its last resolution; a subscribed regex missing here is not resolved yet
        self.resolved_regexes: dict[str, ResolvedRegex] = {}
        # the topic names the last resolution saw (Kafka compares metadata image versions)
        self.regex_topics_seen: frozenset[str] = frozenset()
        # a resolution was asked for by a heartbeat; it runs at the start of the next one
        self.regex_refresh_due = False

    # --- queries ---------------------------------------------------------------------------
    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.state != M.STABLE or m.member_epoch != self.assignment_epoch:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def member_topics(self, m: ConsumerMember) -> set[str]:
        # a regex counts with its last resolution (none yet: no topics), as Kafka's
        out = set(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            resolved = self.resolved_regexes.get(m.subscribed_topic_regex)
            if resolved is not None:
                out |= resolved.topics
        return out

    def subscribed_regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex}

    def subscribed_topics(self) -> set[str]:
        out: set[str] = set()
        for m in self.members.values():
            out |= self.member_topics(m)
        return out

    def preferred_assignor(self) -> str:
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return DEFAULT_ASSIGNOR
        return max(sorted(counts), key=lambda n: counts[n])

    def partition_owner_epoch(self, tid: uuid.UUID, p: int, exclude: str) -> int:
        for m in self.members.values():
            if m.member_id == exclude:
                continue
            if p in m.assigned.get(tid, ()) or p in m.pending_revocation.get(tid, ()):
                return m.member_epoch
        return -1

    # --- ConsumerGroupHeartbeat ------------------------------------------------------------
    def heartbeat(self, *, member_id: str, member_epoch: int, instance_id: str | None, rack_id: str | None,
                  rebalance_timeout_ms: int, client_id: str, client_host: str,
                  subscribed_topic_names: list[str] | None, subscribed_topic_regex: str | None,
                  server_assignor: str | None, owned: TopicPartitions | None,
                  topics: TopicView, now: int) -> HeartbeatResult:
        try:
            return self._heartbeat(member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                                   client_id, client_host, subscribed_topic_names, subscribed_topic_regex,
                                   server_assignor, owned, topics, now)
        except GroupError as exc:
            return HeartbeatResult(exc.code, str(exc) if str(exc) != exc.code.name else None,
                                   member_id=member_id or None, member_epoch=member_epoch)

    def _heartbeat(self, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms, client_id,
                   client_host, subscribed_topic_names, subscribed_topic_regex, server_assignor, owned,
                   topics, now) -> HeartbeatResult:
        if server_assignor is not None and server_assignor not in ASSIGNORS:
            raise GroupError(ErrorCode.unsupported_assignor,
                             f"ServerAssignor {server_assignor} is not supported. Supported assignors: "
                             + ", ".join(ASSIGNORS) + ".")
        if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            left_id, left_epoch = self._leave(member_id, instance_id, member_epoch)
            return HeartbeatResult(member_id=left_id, member_epoch=left_epoch)
        joining = member_epoch == 0
        if not member_id:
            member_id = str(uuid.uuid4())
        # 0. a resolution an earlier heartbeat scheduled completes first, as its own change
        if self._complete_regex_refresh(topics, now):
            self._refresh_subscription_metadata(topics)
            self._bump_group_epoch(now)
        member = self._heartbeat_member(member_id, member_epoch, instance_id, owned)
        old_regex = member.subscribed_topic_regex if member.member_id in self.members else None
        if subscribed_topic_regex and subscribed_topic_regex != old_regex \
                and subscribed_topic_regex not in self.subscribed_regexes():
            invalid = regex_error(subscribed_topic_regex)
            if invalid is not None:
                raise GroupError(ErrorCode.invalid_regular_expression, invalid)
        old_meta = member.metadata_key() if member.member_id in self.members else None
        old_assigned = _freeze(member.assigned)
        old_epoch = member.member_epoch
        # 1. update the member; bump the group epoch when subscriptions or metadata changed
        self._update_member(member, instance_id, rack_id, rebalance_timeout_ms, client_id, client_host)
        if server_assignor is not None:
            member.server_assignor = server_assignor
        if subscribed_topic_names is not None:
            member.subscribed_topic_names = list(subscribed_topic_names)
        if subscribed_topic_regex is not None:
            member.subscribed_topic_regex = subscribed_topic_regex
        is_new = member.member_id not in self.members
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        bump = is_new or old_meta is None or old_meta[4] != tuple(member.subscribed_topic_names) \
            or old_meta[7] != member.server_assignor
        if self._update_regexes(old_regex, member.subscribed_topic_regex, topics, now):
            bump = True
        if old_meta != member.metadata_key():
            self.dirty_members.add(member.member_id)
        if self._refresh_subscription_metadata(topics):
            bump = True
        if bump:
            self._bump_group_epoch(now)
        # 2. a new target assignment when the group epoch moved past it
        if self.group_epoch > self.assignment_epoch:
            self._compute_target()
        # 3. move the member towards its target
        self._reconcile(member, owned, now)
        member.session_deadline = now + self.session_timeout_ms
        if member.assignment_key() != member.persisted_assignment:
            self.dirty_members.add(member.member_id)
        full = joining or (rebalance_timeout_ms is not None and rebalance_timeout_ms >= 0
                           and subscribed_topic_names is not None and owned is not None)
        send = full or _freeze(member.assigned) != old_assigned or member.member_epoch != old_epoch
        return HeartbeatResult(member_id=member.member_id, member_epoch=member.member_epoch,
                               heartbeat_interval_ms=self.interval_for(now),
                               assignment={t: set(ps) for t, ps in member.assigned.items() if ps} if send else None)

    def _bump_group_epoch(self, now: int) -> None:
        self.group_epoch += 1
        self.epoch_dirty = True
        self.last_change = now

    def _owns_only_assigned(self, member: ConsumerMember, owned: TopicPartitions | None) -> bool:
        return _is_subset(owned, member.assigned)

    def _member_changed(self, member_id: str) -> None:
        self.dirty_members.add(member_id)

    def _member_renamed(self, old_id: str, new_id: str) -> None:
        self.removed_members.add(old_id)
        self.dirty_members.discard(old_id)
        self.dirty_members.add(new_id)

    def _member_removed(self, member_id: str) -> None:
        # the last member subscribed to a regex takes its resolution away (Kafka's tombstone)
        self._drop_unsubscribed_regexes(self.subscribed_regexes())
        self.dirty_members.discard(member_id)
        self.removed_members.add(member_id)
        self.epoch_dirty = True

    def _update_regexes(self, old: str | None, new: str | None, topics: TopicView, now: int) -> bool:
        """Kafka's maybeUpdateRegularExpressions, after the member's subscription was updated:
        whether the group epoch must be bumped (the member took a regex already resolved);
        schedules a resolution when one is due."""
        subscribed = self.subscribed_regexes()
        self._drop_unsubscribed_regexes(subscribed)
        bump = require = False
        if old != new and new:
            if new in self.resolved_regexes:
                bump = True
            else:
                require = True
        if not subscribed or self.regex_refresh_due:
            return bump
        last = max((r.refreshed_at for r in self.resolved_regexes.values()), default=None)
        if last is not None and now <= last + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
            return bump
        require = require or len(subscribed) != len(self.resolved_regexes) \
            or not self.regex_topics_seen.issuperset(topics.names())
        if require:
            self.regex_refresh_due = True
            self.last_change = now  # members heartbeat soon to learn of the resolution
        return bump

    def _drop_unsubscribed_regexes(self, subscribed: set[str]) -> None:
        for regex in [r for r in self.resolved_regexes if r not in subscribed]:
            del self.resolved_regexes[regex]

    def _complete_regex_refresh(self, topics: TopicView, now: int) -> bool:
        """The scheduled resolution (Kafka's refreshRegularExpressions and
        handleRegularExpressionsResult): whether a regex's topics changed."""
        if not self.regex_refresh_due:
            return False
        self.regex_refresh_due = False
        return self.resolve_regexes(topics, now)

    def resolve_regexes(self, topics: TopicView, now: int) -> bool:
        """Resolves every subscribed regex now; whether one's topics changed."""
        subscribed = self.subscribed_regexes()
        self._drop_unsubscribed_regexes(subscribed)
        names = topics.names()
        changed = False
        for regex in sorted(subscribed):
            found = frozenset(_matches(regex, names))
            old = self.resolved_regexes.get(regex)
            changed = changed or old is None and bool(found) or old is not None and old.topics != found
            self.resolved_regexes[regex] = ResolvedRegex(found, now)
        self.regex_topics_seen = frozenset(names)
        if changed:
            self.last_change = now
        return changed

    def _refresh_subscription_metadata(self, topics: TopicView) -> bool:
        self._topics = topics
        meta = {}
        for name in sorted(self.subscribed_topics()):
            info = topics.lookup(name)
            if info is not None:
                meta[name] = info
        if meta != self.subscription_metadata:
            self.subscription_metadata = meta
            return True
        return False

    def _compute_target(self) -> None:
        assignor = ASSIGNORS[self.preferred_assignor()]
        subs = {mid: self.member_topics(m) for mid, m in self.members.items()}
        self.target = assignor(subs, self.subscription_metadata, self.target)
        self.assignment_epoch = self.group_epoch

    def _reconcile(self, member: ConsumerMember, owned: TopicPartitions | None, now: int) -> None:
        target_epoch = self.assignment_epoch
        target = self.target.get(member.member_id, {})
        # Kafka restarts the rebalance timeout whenever the member's assignment state changes
        # into (or within) UNREVOKED_PARTITIONS, e.g. when it is asked to revoke more at its epoch
        before = member.assignment_key()
        if member.state == M.STABLE:
            if member.member_epoch != target_epoch:
                self._next_assignment(member, target, target_epoch, owned)
        elif member.state == M.UNREVOKED_PARTITIONS:
            if not _owns_any(owned, member.pending_revocation):
                self._next_assignment(member, target, target_epoch, owned)
        elif member.state == M.UNRELEASED_PARTITIONS:
            self._next_assignment(member, target, target_epoch, owned)
        self._revocation_deadline(member, member.state == M.UNREVOKED_PARTITIONS,
                                  member.assignment_key() != before, now)

    def _next_assignment(self, member: ConsumerMember, target: TopicPartitions, target_epoch: int,
                         owned: TopicPartitions | None) -> None:
        """Kafka's computeNextAssignment: revoke at the member's own epoch, else move to the
        target epoch (the epoch rules are in the module docstring)."""
        new_assigned: TopicPartitions = {}
        revoke: TopicPartitions = {}
        pending: TopicPartitions = {}
        unreleased = False
        for tid in set(target) | set(member.assigned):
            tgt = target.get(tid, set())
            cur = member.assigned.get(tid, set())
            keep = cur & tgt
            gone = cur - keep
            todo = set()
            for p in tgt - keep:
                if self.partition_owner_epoch(tid, p, member.member_id) != -1:
                    unreleased = True
                else:
                    todo.add(p)
            if keep:
                new_assigned[tid] = keep
            if gone:
                revoke[tid] = gone
            if todo:
                pending[tid] = todo
        prev_epoch = member.member_epoch
        before = {(tid, p) for tps in (member.assigned, member.pending_revocation) for tid, ps in tps.items() for p in ps}
        if revoke and _owns_any(owned, revoke):
            member.state = M.UNREVOKED_PARTITIONS
            new_epoch = prev_epoch
            member.assigned = new_assigned
            member.pending_revocation = revoke
        else:
            for tid, ps in pending.items():
                new_assigned.setdefault(tid, set()).update(ps)
            member.state = M.UNRELEASED_PARTITIONS if unreleased else M.STABLE
            new_epoch = target_epoch
            member.assigned = new_assigned
            member.pending_revocation = {}
        member.previous_member_epoch = prev_epoch
        member.member_epoch = new_epoch
        held = {(tid, p) for tps in (member.assigned, member.pending_revocation) for tid, ps in tps.items() for p in ps}
        member.assignment_epochs = {tp: (member.assignment_epochs.get(tp, prev_epoch) if tp in before else new_epoch)
                                    for tp in held}

    def _older_epoch_commit(self, member: ConsumerMember, epoch: int) -> PartitionCheck:
        """KIP-1251: a partition the member holds since `epoch` or earlier may be committed."""
        def check(topic_id: uuid.UUID, partition: int) -> bool:
            held = partition in member.assigned.get(topic_id, ()) or partition in member.pending_revocation.get(topic_id, ())
            return held and member.assignment_epochs.get((topic_id, partition), member.member_epoch) <= epoch
        return check

    # --- loading ---------------------------------------------------------------------------
    def load_member(self, member: ConsumerMember, now: int) -> None:
        member.session_deadline = now + self.session_timeout_ms
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id


def _is_subset(owned: TopicPartitions | None, assigned: TopicPartitions) -> bool:
    """Kafka's isSubset: unknown ownership (null) is not a subset, nor is a topic the member
    is not assigned, even with no partitions listed."""
    if owned is None:
        return False
    for tid, ps in owned.items():
        if tid not in assigned or not set(ps) <= assigned[tid]:
            return False
    return True


def _owns_any(owned: TopicPartitions | None, revoke: Mapping[uuid.UUID, set[int]]) -> bool:
    if owned is None:
        return True
    for tid, ps in owned.items():
        if set(ps) & revoke.get(tid, set()):
            return True
    return False
