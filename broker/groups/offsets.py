"""Committed offsets of every group, and the transactional offsets not yet decided (KIP-447).

Plain data, no I/O: the coordinator writes the records and feeds this store; on startup the
same store is rebuilt from the records of `__consumer_offsets`.

Retention (offsets.retention.minutes, KIP-211): the offsets of a group that has no members
expire `retention` after the later of their commit and the moment the group became empty;
a KIP-848 group with members also loses the offsets of topics none of its members subscribes
to, `retention` after their commit.
"""

from __future__ import annotations

from .records import OffsetValue

TopicPartition = tuple[str, int]


class OffsetStore:
    def __init__(self) -> None:
        self.committed: dict[str, dict[TopicPartition, OffsetValue]] = {}
        # producer id -> group -> offsets appended in its open transaction
        self.pending: dict[int, dict[str, dict[TopicPartition, OffsetValue]]] = {}

    # --- committed ---------------------------------------------------------------------------
    def commit(self, group: str, offsets: dict[TopicPartition, OffsetValue]) -> None:
        self.committed.setdefault(group, {}).update(offsets)

    def delete(self, group: str, tps) -> None:
        g = self.committed.get(group)
        if g is None:
            return
        for tp in tps:
            g.pop(tp, None)
        if not g:
            del self.committed[group]

    def get(self, group: str, tp: TopicPartition) -> OffsetValue | None:
        return self.committed.get(group, {}).get(tp)

    def group_offsets(self, group: str) -> dict[TopicPartition, OffsetValue]:
        return self.committed.get(group, {})

    def has_offsets(self, group: str) -> bool:
        return bool(self.committed.get(group)) or any(group in g for g in self.pending.values())

    def drop_group(self, group: str) -> list[TopicPartition]:
        tps = list(self.committed.pop(group, {}))
        for groups in self.pending.values():
            groups.pop(group, None)
        return tps

    # --- transactional -----------------------------------------------------------------------
    def stage(self, producer_id: int, group: str, offsets: dict[TopicPartition, OffsetValue]) -> None:
        self.pending.setdefault(producer_id, {}).setdefault(group, {}).update(offsets)

    def complete(self, producer_id: int, commit: bool) -> list[str]:
        """Commit or drop the pending offsets of a producer; returns the groups touched."""
        groups = self.pending.pop(producer_id, {})
        if commit:
            for group, offsets in groups.items():
                self.commit(group, offsets)
        return list(groups)

    def has_pending(self, group: str, tp: TopicPartition | None = None) -> bool:
        for groups in self.pending.values():
            offsets = groups.get(group)
            if offsets and (tp is None or tp in offsets):
                return True
        return False

    # --- retention ---------------------------------------------------------------------------
    def expired(self, group: str, now: int, retention_ms: int, *, empty_since: int | None,
                subscribed: set[str] | None) -> list[TopicPartition]:
        """Offsets of `group` past retention. `empty_since`: when the group became empty (None
        while it has members); `subscribed`: topics its members consume (None: unknown, keep)."""
        out = []
        for tp, v in self.committed.get(group, {}).items():
            if v.expire_timestamp >= 0:
                if v.expire_timestamp <= now:
                    out.append(tp)
                continue
            if empty_since is not None:
                base = max(v.commit_timestamp, empty_since)
            elif subscribed is not None and tp[0] not in subscribed:
                base = v.commit_timestamp
            else:
                continue
            if base + retention_ms <= now:
                out.append(tp)
        return out
