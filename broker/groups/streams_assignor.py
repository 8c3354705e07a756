"""The task assignor of streams groups (KIP-1071): Kafka's `sticky` assignor in its essentials.

Input: the tasks of the configured topology (subtopology id -> number of partitions, and which
subtopologies are stateful), the members with their process ids and their current tasks, and
`num.standby.replicas`. Output: the target assignment, member id -> Tasks (active, standby,
warmup).

- Active tasks are balanced over members: every member ends with floor(n / members) or one
  more, and no more members than `n % members` get the extra one.
- Sticky: a task stays with the member that owns it (or is revoking it) while that member has
  room; a task nobody keeps goes first to a member whose process holds it as a standby (its
  state is there), then to the least loaded member, preferring the least loaded process.
- Standby tasks, for stateful tasks only, `num_standby` per task, each on a process other than
  the active task's and the other standbys' (a standby on the same process as its active task
  protects nothing); sticky to previous standby owners, then least loaded. When there are not
  enough processes a task gets fewer standbys, as in Kafka.
- Warmup tasks are not computed (Kafka uses them to move stateful tasks once a standby has
  caught up; without them a task moves at once and restores from its changelog).

Deterministic: ties break on member id, tasks are taken in (subtopology, partition) order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Task = tuple[str, int]  # (subtopology id, partition)


@dataclass
class Tasks:
    """Tasks by role, each subtopology id -> partitions (Kafka's TasksTuple)."""

    active: dict[str, set[int]] = field(default_factory=dict)
    standby: dict[str, set[int]] = field(default_factory=dict)
    warmup: dict[str, set[int]] = field(default_factory=dict)

    @staticmethod
    def flat(tasks: dict[str, set[int]]) -> set[Task]:
        return {(s, p) for s, ps in tasks.items() for p in ps}

    @staticmethod
    def nest(tasks: set[Task]) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for s, p in tasks:
            out.setdefault(s, set()).add(p)
        return out

    def is_empty(self) -> bool:
        return not any(self.active.values()) and not any(self.standby.values()) and not any(self.warmup.values())

    def key(self) -> tuple:
        return tuple(tuple(sorted(self.flat(d))) for d in (self.active, self.standby, self.warmup))

    def copy(self) -> "Tasks":
        return Tasks({s: set(p) for s, p in self.active.items()}, {s: set(p) for s, p in self.standby.items()},
                     {s: set(p) for s, p in self.warmup.items()})


@dataclass
class AssignorMember:
    process_id: str
    active: set[Task] = field(default_factory=set)  # owned now (assigned or pending revocation)
    standby: set[Task] = field(default_factory=set)


def assign(members: dict[str, AssignorMember], subtopologies: dict[str, int], stateful: set[str],
           num_standby: int) -> dict[str, Tasks]:
    """The target assignment; `subtopologies`: id -> number of tasks (partitions)."""
    if not members:
        return {}
    tasks = sorted((s, p) for s, n in subtopologies.items() for p in range(n))
    ids = sorted(members)
    active: dict[str, set[Task]] = {m: set() for m in ids}

    # quotas: floor for everyone, one more for `extra` members
    base, extra = divmod(len(tasks), len(ids))

    def room(m: str) -> bool:
        n = len(active[m])
        if n < base:
            return True
        return n == base and extra > 0 and sum(1 for x in ids if len(active[x]) > base) < extra

    def process_load(process: str) -> int:
        return sum(len(active[x]) for x in ids if members[x].process_id == process)

    unassigned: list[Task] = []
    # 1. sticky: the previous owner keeps its task while it has room (floor first, then the extras)
    owner = {t: m for m in ids for t in members[m].active}
    for t in tasks:
        m = owner.get(t)
        if m is not None and len(active[m]) < base:
            active[m].add(t)
        else:
            unassigned.append(t)
    left = []
    for t in unassigned:
        m = owner.get(t)
        if m is not None and room(m):
            active[m].add(t)
        else:
            left.append(t)
    # 2. a task's state lives on the processes that held it as a standby; then least loaded
    for t in left:
        warm = [m for m in ids if t in members[m].standby and room(m)]
        candidates = warm or [m for m in ids if room(m)] or ids
        m = min(candidates, key=lambda x: (len(active[x]), process_load(members[x].process_id), x))
        active[m].add(t)

    # 3. standbys for stateful tasks, on processes without the task
    standby: dict[str, set[Task]] = {m: set() for m in ids}
    if num_standby > 0:
        active_process = {t: members[m].process_id for m in ids for t in active[m]}
        for t in tasks:
            if t[0] not in stateful:
                continue
            used = {active_process[t]}
            for _ in range(num_standby):
                candidates = [m for m in ids if members[m].process_id not in used]
                if not candidates:
                    break
                m = min(candidates, key=lambda x: (t not in members[x].standby,
                                                    len(active[x]) + len(standby[x]), x))
                standby[m].add(t)
                used.add(members[m].process_id)
    return {m: Tasks(Tasks.nest(active[m]), Tasks.nest(standby[m])) for m in ids}
