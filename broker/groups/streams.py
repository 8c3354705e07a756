"""KIP-1071 streams groups (StreamsGroupHeartbeat) as a plain state machine.

The first member to join brings the topology (subtopologies with their source topics,
repartition topics and changelog topics, copartition groups, a topology epoch); the group keeps
it while it has members. `configure` turns it into a configured topology against the
cluster's topics, as Kafka's InternalTopicManager:

- a source topic that does not exist: status MISSING_SOURCE_TOPICS ("Source topics a, b are
  missing."), no tasks;
- repartition topics without a fixed partition count get the largest partition count of the
  source topics of the subtopologies that write to them; copartitioned topics must agree
  (else INCORRECTLY_PARTITIONED_TOPICS), flexible repartition topics among them follow;
- changelog topics get one partition per task of their subtopology;
- a subtopology has as many tasks as its largest source (or repartition source) topic has
  partitions;
- internal topics that do not exist are to be created (`missing_internal_topics`); one that
  exists with another partition count: INCORRECTLY_PARTITIONED_TOPICS.

Group epoch, target assignment (streams_assignor) and reconciliation follow KIP-848 as in
consumer.py, with tasks for partitions: an active task another member still owns is not given
out until that member has revoked it (state UNRELEASED_TASKS); a member whose target takes
active tasks away keeps its epoch until it reports they are gone (UNREVOKED_TASKS) and is fenced
when its rebalance timeout passes first. Member epoch checks, static members (instance id;
epoch -2 is a temporary leave) and leaves (-1) are those of consumer groups (member_epochs.py).

Group states (Kafka's StreamsGroupState): Empty, NotReady (the topology is not configured:
missing or incorrectly partitioned topics), Assigning, Reconciling, Stable.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Callable

from kio.schema.errors import ErrorCode

from .states import GroupError
from .member_epochs import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, MemberEpochGroup
from .streams_assignor import AssignorMember, Tasks, assign


class StreamsGroupState(enum.StrEnum):
    """Kafka's StreamsGroup.StreamsGroupState."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class StreamsMemberState(enum.IntEnum):
    """Kafka's streams MemberState."""

    STABLE = 0
    UNREVOKED_TASKS = 1
    UNRELEASED_TASKS = 2
    UNKNOWN = 127


class Status(enum.IntEnum):
    """StreamsGroupHeartbeatResponse.Status codes."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4


S = StreamsMemberState


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int = 0  # 0: decided by the broker
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    # each group: indexes into source_topics, source_topic_regex and repartition_source_topics
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]


@dataclass
class ConfiguredTopology:
    """Tasks per subtopology (None while the topology cannot be configured), the partition
    count decided for every internal topic, the internal topics to create and a status."""

    tasks: dict[str, int] | None
    stateful: set[str] = field(default_factory=set)
    internal_partitions: dict[str, int] = field(default_factory=dict)
    missing_internal_topics: dict[str, TopicInfo] = field(default_factory=dict)
    status: tuple[Status, str] | None = None


Lookup = Callable[[str], int | None]  # topic name -> partition count, None when missing


def _regex_topics(sub: Subtopology, names: list[str]) -> list[str]:
    out = []
    for rx in sub.source_topic_regex:
        try:
            pattern = re.compile(rx)
        except re.error:
            continue
        out += sorted(n for n in names if not n.startswith("__") and pattern.fullmatch(n))
    return out


def configure(topology: Topology, lookup: Lookup, names: list[str]) -> ConfiguredTopology:
    subs = topology.subtopologies
    sources = {s.subtopology_id: list(s.source_topics) + _regex_topics(s, names) for s in subs}
    missing = sorted({t for s in subs for t in s.source_topics if lookup(t) is None})
    if missing:
        return ConfiguredTopology(None, status=(Status.MISSING_SOURCE_TOPICS,
                                                f"Source topics {', '.join(missing)} are missing."))
    decided: dict[str, int] = {}

    def count(topic: str) -> int | None:
        n = lookup(topic)
        return n if n is not None else decided.get(topic)

    # repartition topics: the largest input of the subtopologies that write to them, to a fixed point
    for s in subs:
        for t in s.repartition_source_topics:
            if t.partitions > 0:
                decided[t.name] = t.partitions
    changed = True
    while changed:
        changed = False
        for s in subs:
            for t in s.repartition_source_topics:
                if t.partitions > 0:
                    continue
                inputs = [count(x) for w in subs if t.name in w.repartition_sink_topics
                          for x in sources[w.subtopology_id] + [r.name for r in w.repartition_source_topics]]
                known = [c for c in inputs if c is not None]
                if known and max(known) != decided.get(t.name):
                    decided[t.name] = max(known)
                    changed = True
    # copartition groups
    for s in subs:
        for src_idx, _regex_idx, rep_idx in s.copartition_groups:
            fixed = [s.source_topics[i] for i in src_idx if i < len(s.source_topics)]
            reps = [s.repartition_source_topics[i] for i in rep_idx if i < len(s.repartition_source_topics)]
            fixed += [r.name for r in reps if r.partitions > 0 or lookup(r.name) is not None]
            flexible = [r.name for r in reps if r.partitions == 0 and lookup(r.name) is None]
            by_topic = {t: count(t) for t in fixed}
            if len({c for c in by_topic.values() if c is not None}) > 1:
                listing = ", ".join(f"{t}={c}" for t, c in sorted(by_topic.items()))
                return ConfiguredTopology(None, status=(
                    Status.INCORRECTLY_PARTITIONED_TOPICS,
                    f"Following topics do not have the same number of partitions: [{listing}]"))
            target = next((c for c in by_topic.values() if c is not None), None)
            if target is None:
                target = max((decided.get(f, 0) for f in flexible), default=0)
            for f in flexible:
                decided[f] = target
    tasks: dict[str, int] = {}
    stateful: set[str] = set()
    for s in subs:
        names_in = sources[s.subtopology_id] + [r.name for r in s.repartition_source_topics]
        n = max((count(t) or 0 for t in names_in), default=0)
        tasks[s.subtopology_id] = n
        for c in s.state_changelog_topics:
            decided[c.name] = c.partitions if c.partitions > 0 else n
        if s.state_changelog_topics:
            stateful.add(s.subtopology_id)
    configured = ConfiguredTopology(tasks, stateful, {})
    for s in subs:
        for t in list(s.repartition_source_topics) + list(s.state_changelog_topics):
            want = decided.get(t.name, 0)
            configured.internal_partitions[t.name] = want
            have = lookup(t.name)
            if have is None:
                configured.missing_internal_topics[t.name] = t
            elif have != want:
                return ConfiguredTopology(None, status=(
                    Status.INCORRECTLY_PARTITIONED_TOPICS,
                    f"Existing topic {t.name} has different number of partitions: expected {want}, found {have}"))
    if configured.missing_internal_topics:
        configured.status = (Status.MISSING_INTERNAL_TOPICS,
                             "Internal topics are missing: " + ", ".join(sorted(configured.missing_internal_topics)))
    return configured


@dataclass
class StreamsMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: StreamsMemberState = S.STABLE
    assigned: Tasks = field(default_factory=Tasks)
    pending_revocation: Tasks = field(default_factory=Tasks)
    session_deadline: int = 0
    rebalance_deadline: int | None = None


@dataclass
class HeartbeatResult:
    error: ErrorCode = ErrorCode.none
    error_message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    status: list[tuple[int, str]] = field(default_factory=list)
    assignment: Tasks | None = None
    endpoint_information_epoch: int = 0
    # [((host, port), active {topic: partitions}, standby {topic: partitions})], or None
    partitions_by_endpoint: list | None = None


class StreamsGroup(MemberEpochGroup):
    protocol_type = "streams"
    group_type = "streams"
    member_type = StreamsMember
    empty_assignment = Tasks

    def __init__(self, group_id: str, *, session_timeout_ms: int = 45000, heartbeat_interval_ms: int = 5000,
                 num_standby_replicas: int = 0, busy_heartbeat_interval_ms: int = 0, busy_window_ms: int = 3000):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, StreamsMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, Tasks] = {}
        self.topology: Topology | None = None
        self.configured: ConfiguredTopology | None = None
        self.metadata: tuple = ()
        self.endpoint_information_epoch = 0
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.num_standby_replicas = num_standby_replicas
        self.busy_heartbeat_interval_ms = busy_heartbeat_interval_ms
        self.busy_window_ms = busy_window_ms
        self.last_change = -(1 << 62)
        # the member that asked for the whole application to shut down, until the group empties
        self.shutdown_requested_by: str | None = None
        # the records last written to __consumer_offsets (kept by the coordinator)
        self.persisted: dict[bytes, bytes] = {}

    # --- queries ---------------------------------------------------------------------------
    @property
    def state(self) -> StreamsGroupState:
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.configured is None or self.configured.tasks is None:
            return StreamsGroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return StreamsGroupState.ASSIGNING
        for m in self.members.values():
            if m.state != S.STABLE or m.member_epoch != self.assignment_epoch:
                return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def required_topics(self) -> set[str]:
        if self.topology is None:
            return set()
        out: set[str] = set()
        for s in self.topology.subtopologies:
            out |= set(s.source_topics)
            out |= {t.name for t in s.repartition_source_topics}
            out |= {t.name for t in s.state_changelog_topics}
        return out

    def subscribed_topics(self) -> set[str]:
        """The topics the group reads (OffsetDelete refuses their offsets while it has members)."""
        if self.topology is None:
            return set()
        out: set[str] = set()
        for s in self.topology.subtopologies:
            out |= set(s.source_topics) | {t.name for t in s.repartition_source_topics}
        return out

    def task_topics(self, subtopology_id: str) -> list[str]:
        """The input topics of a subtopology: an active task reads partition p of each."""
        for s in self.topology.subtopologies if self.topology else ():
            if s.subtopology_id == subtopology_id:
                return list(s.source_topics) + [t.name for t in s.repartition_source_topics]
        return []

    # --- StreamsGroupHeartbeat -------------------------------------------------------------
    def heartbeat(self, *, member_id: str, member_epoch: int, endpoint_information_epoch: int,
                  instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int, topology: Topology | None,
                  active: set[tuple[str, int]] | None, process_id: str | None, user_endpoint: tuple[str, int] | None,
                  client_tags: dict[str, str] | None, client_id: str, client_host: str, lookup: Lookup,
                  names: Callable[[], list[str]], now: int,
                  create: Callable[[dict[str, TopicInfo], dict[str, int]], None] | None = None,
                  shutdown_application: bool = False) -> HeartbeatResult:
        """`create(missing, partitions)` creates missing internal topics (the broker's part)."""
        try:
            return self._heartbeat(member_id, member_epoch, endpoint_information_epoch, instance_id, rack_id,
                                   rebalance_timeout_ms, topology, active, process_id, user_endpoint, client_tags,
                                   client_id, client_host, lookup, names, now, create, shutdown_application)
        except GroupError as exc:
            return HeartbeatResult(exc.code, str(exc) if str(exc) != exc.code.name else None,
                                   member_id=member_id, member_epoch=member_epoch)

    def _heartbeat(self, member_id, member_epoch, endpoint_information_epoch, instance_id, rack_id,
                   rebalance_timeout_ms, topology, active, process_id, user_endpoint, client_tags, client_id,
                   client_host, lookup, names, now, create, shutdown_application=False) -> HeartbeatResult:
        if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            left_id, left_epoch = self._leave(member_id, instance_id, member_epoch)
            return HeartbeatResult(member_id=left_id, member_epoch=left_epoch)
        joining = member_epoch == 0
        member = self._heartbeat_member(member_id, member_epoch, instance_id, active)
        is_new = member.member_id not in self.members
        old = (member.process_id, member.topology_epoch, member.rack_id, dict(member.client_tags))
        old_assigned = member.assigned.key()
        old_epoch = member.member_epoch
        self._update_member(member, instance_id, rack_id, rebalance_timeout_ms, client_id, client_host)
        if process_id is not None:
            member.process_id = process_id
        if user_endpoint is not None:
            member.user_endpoint = user_endpoint
        if client_tags is not None:
            member.client_tags = dict(client_tags)
        if topology is not None:
            member.topology_epoch = topology.epoch
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        bump = is_new or old != (member.process_id, member.topology_epoch, member.rack_id, member.client_tags)
        # the group's topology: brought by the first member (an empty group keeps the last one for
        # StreamsGroupDescribe), replaced when every member moved on to a newer epoch
        if topology is not None and (self.topology is None or len(self.members) == 1 or
                                     (topology.epoch > self.topology.epoch and
                                      all(m.topology_epoch >= topology.epoch for m in self.members.values()))):
            if topology != self.topology:
                self.topology = topology
                self.configured = None
                bump = True
        if self._refresh_metadata(lookup, names, create):
            bump = True
        if bump:
            self.group_epoch += 1
            self.last_change = now
        if self.group_epoch > self.assignment_epoch:
            self._compute_target()
        self._reconcile(member, active, now)
        member.session_deadline = now + self.session_timeout_ms
        status: list[tuple[int, str]] = []
        if self.topology is not None and member.topology_epoch != self.topology.epoch:
            status.append((Status.STALE_TOPOLOGY,
                           f"The member's topology epoch {member.topology_epoch} is behind the group's "
                           f"topology epoch {self.topology.epoch}."))
        if self.configured is not None and self.configured.status is not None:
            status.append((int(self.configured.status[0]), self.configured.status[1]))
        if shutdown_application and self.shutdown_requested_by is None:
            self.shutdown_requested_by = member.member_id
        if self.shutdown_requested_by is not None:
            # every member hears it, on every heartbeat, as in Kafka
            status.append((Status.SHUTDOWN_APPLICATION,
                           f"Streams group member {self.shutdown_requested_by} encountered a fatal error and "
                           "requested a shutdown for the entire application."))
        send = joining or member.assigned.key() != old_assigned or member.member_epoch != old_epoch
        result = HeartbeatResult(member_id=member.member_id, member_epoch=member.member_epoch,
                                 heartbeat_interval_ms=self.interval_for(now), status=status,
                                 assignment=member.assigned.copy() if send else None,
                                 endpoint_information_epoch=self.endpoint_information_epoch)
        if endpoint_information_epoch != self.endpoint_information_epoch and \
                any(m.user_endpoint for m in self.members.values()):
            result.partitions_by_endpoint = self.partitions_by_endpoint()
        return result

    def partitions_by_endpoint(self) -> list:
        """For interactive queries: each endpoint's active and standby topic partitions."""
        out = []
        for m in sorted(self.members.values(), key=lambda m: m.member_id):
            if m.user_endpoint is None:
                continue
            roles = []
            for tasks in (m.assigned.active, m.assigned.standby):
                by_topic: dict[str, set[int]] = {}
                for sid, ps in tasks.items():
                    for t in self.task_topics(sid):
                        by_topic.setdefault(t, set()).update(ps)
                roles.append(by_topic)
            out.append((m.user_endpoint, roles[0], roles[1]))
        return out

    def _owns_only_assigned(self, member: StreamsMember, active: set | None) -> bool:
        # Kafka's areOwnedTasksContainedInAssignedTasks: unknown ownership (null) does not fit
        return active is not None and active <= Tasks.flat(member.assigned.active)

    def _member_removed(self, member_id: str) -> None:
        if not self.members:
            self.shutdown_requested_by = None

    def _refresh_metadata(self, lookup: Lookup, names: Callable[[], list[str]], create=None) -> bool:
        """Configure the topology when it or the partition counts of its topics changed; missing
        internal topics are created through `create` and the topology configured again."""
        if self.topology is None:
            return False
        changed = self._configure(lookup, names)
        configured = self.configured
        if create is not None and configured is not None and configured.missing_internal_topics:
            create(configured.missing_internal_topics, configured.internal_partitions)
            changed = self._configure(lookup, names) or changed
        return changed

    def _configure(self, lookup: Lookup, names: Callable[[], list[str]]) -> bool:
        assert self.topology is not None
        regex = any(s.source_topic_regex for s in self.topology.subtopologies)
        all_names = names() if regex else []
        topics = sorted(self.required_topics() | set(_all_regex_topics(self.topology, all_names)))
        metadata = tuple((t, lookup(t)) for t in topics)
        if self.configured is not None and metadata == self.metadata:
            return False
        self.metadata = metadata
        configured = configure(self.topology, lookup, all_names)
        changed = self.configured is None or configured.tasks != self.configured.tasks \
            or configured.status != self.configured.status
        self.configured = configured
        return changed

    def _compute_target(self) -> None:
        tasks = self.configured.tasks if self.configured is not None else None
        if tasks is None:
            self.target = {mid: Tasks() for mid in self.members}
        else:
            spec = {mid: AssignorMember(m.process_id,
                                        Tasks.flat(m.assigned.active) | Tasks.flat(m.pending_revocation.active),
                                        Tasks.flat(m.assigned.standby))
                    for mid, m in self.members.items() if m.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
                    or m.instance_id is not None}
            self.target = assign(spec, tasks, self.configured.stateful if self.configured else set(),
                                 self.num_standby_replicas)
        self.assignment_epoch = self.group_epoch
        self.endpoint_information_epoch += 1

    def _active_elsewhere(self, task: tuple[str, int], exclude: str) -> bool:
        for m in self.members.values():
            if m.member_id == exclude:
                continue
            if task[1] in m.assigned.active.get(task[0], ()) or task[1] in m.pending_revocation.active.get(task[0], ()):
                return True
        return False

    def _reconcile(self, member: StreamsMember, active: set | None, now: int) -> None:
        target_epoch = self.assignment_epoch
        target = self.target.get(member.member_id, Tasks())
        before = (member.state, member.member_epoch)
        if member.state == S.STABLE:
            if member.member_epoch != target_epoch:
                self._next_assignment(member, target, target_epoch, active)
        elif member.state == S.UNREVOKED_TASKS:
            pending = Tasks.flat(member.pending_revocation.active)
            if active is not None and not (active & pending):
                self._next_assignment(member, target, target_epoch, active)
        elif member.state == S.UNRELEASED_TASKS:
            self._next_assignment(member, target, target_epoch, active)
        self._revocation_deadline(member, member.state == S.UNREVOKED_TASKS,
                                  before != (member.state, member.member_epoch), now)

    def _next_assignment(self, member: StreamsMember, target: Tasks, target_epoch: int, active: set | None) -> None:
        cur = Tasks.flat(member.assigned.active)
        tgt = Tasks.flat(target.active)
        keep = cur & tgt
        revoke = cur - keep
        free = {t for t in tgt - keep if not self._active_elsewhere(t, member.member_id)}
        unreleased = (tgt - keep) - free
        # standby and warmup tasks of the target, except where this member still runs them as active
        standby = Tasks.flat(target.standby) - revoke
        warmup = Tasks.flat(target.warmup) - revoke
        owns_revoked = active is None or bool(active & revoke)
        if revoke and owns_revoked:
            member.state = S.UNREVOKED_TASKS
            member.assigned = Tasks(Tasks.nest(keep), Tasks.nest(standby & Tasks.flat(member.assigned.standby)),
                                    Tasks.nest(warmup & Tasks.flat(member.assigned.warmup)))
            member.pending_revocation = Tasks(Tasks.nest(revoke))
            return
        member.assigned = Tasks(Tasks.nest(keep | free), Tasks.nest(standby), Tasks.nest(warmup))
        member.pending_revocation = Tasks()
        member.state = S.UNRELEASED_TASKS if unreleased else S.STABLE
        if member.member_epoch != target_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = target_epoch

def _all_regex_topics(topology: Topology, names: list[str]) -> list[str]:
    return [t for s in topology.subtopologies for t in _regex_topics(s, names)]


def validate_heartbeat(group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                       rack_id: str | None, rebalance_timeout_ms: int, topology, active, standby, warmup,
                       process_id: str | None) -> str | None:
    """Kafka's throwIfStreamsGroupHeartbeatRequestIsInvalid: a message, or None when valid."""
    if not group_id:
        return "GroupId can't be empty."
    if not member_id:
        return "MemberId can't be empty."
    if instance_id == "":
        return "InstanceId can't be empty."
    if rack_id == "":
        return "RackId can't be empty."
    if member_epoch == 0:
        if rebalance_timeout_ms is None or rebalance_timeout_ms == -1:
            return "RebalanceTimeoutMs must be provided in first request."
        if topology is None:
            return "Topology must be non-null when (re-)joining."
        if active is None or active:
            return "ActiveTasks must be empty when (re-)joining."
        if standby is None or standby:
            return "StandbyTasks must be empty when (re-)joining."
        if warmup is None or warmup:
            return "WarmupTasks must be empty when (re-)joining."
        if not process_id:
            return "ProcessId can't be null."
    elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if instance_id is None:
            return "InstanceId can't be null."
    elif member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        return f"MemberEpoch is {member_epoch}, but must be greater than or equal to -2."
    if len({x is None for x in (active, standby, warmup)}) > 1:
        return "If one task-type is non-null, all must be non-null."
    return None
