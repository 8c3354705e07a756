"""ListGroups and DeleteGroups over every group this coordinator knows (DescribeGroups and
the describe of consumer and streams groups read `groups` in their handlers).

Rules:
- A group's type is "classic" for a ClassicGroup, else its protocol type ("consumer",
  "streams"); the states and types filters compare without case, as Kafka.
- Only an empty group is deleted (a classic one only in state Empty): its offsets and records
  get tombstones first; a failed write answers NOT_COORDINATOR for that group and keeps it.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from ..internal_store import CoordinatorWriteError
from .classic import ClassicGroup
from .persistence import GroupPersistence
from .states import ClassicGroupState


class GroupListing(GroupPersistence):
    def list_groups(self, states: list[str] | None = None,
                    types: list[str] | None = None) -> list[tuple[str, str, str, str]]:
        """[(group id, protocol type, state, group type)]"""
        states_l = {s.lower() for s in states} if states else None
        types_l = {t.lower() for t in types} if types else None
        out: list[tuple[str, str, str, str]] = []
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

