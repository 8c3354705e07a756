"""Group configs kept: the values set per group id, persisted in
`__cluster_metadata/group_configs.json` (Kafka keeps them in its metadata log).

Rules:
- Which keys exist, what they accept and what they fall back to is settings.group_keys'.
- Every change is written atomically before it is answered.
"""

from __future__ import annotations

import json
from pathlib import Path

from kafkalite.storage.files import write_atomic

from .settings.group_keys import GROUP_KEYS, GroupConfigError


class GroupConfigs:
    def __init__(self, meta_dir: Path, broker_values: dict):
        self.path = meta_dir / "group_configs.json"
        self.broker_values = broker_values
        self.values: dict[str, dict[str, str]] = {}
        if self.path.exists():
            self.values = {g: dict(c) for g, c in json.loads(self.path.read_text()).items()}

    def get(self, group_id: str, key: str) -> str:
        v = self.values.get(group_id, {}).get(key)
        if v is not None:
            return v
        spec = GROUP_KEYS[key]
        if spec.broker_default is not None:
            return str(self.broker_values[spec.broker_default])
        return spec.default

    def get_int(self, group_id: str, key: str) -> int:
        return int(self.get(group_id, key))

    def describe(self, group_id: str, names: list[str] | None) -> list[tuple[str, str, bool]]:
        """(name, value, set for this group) for each known key, or for `names`."""
        mine = self.values.get(group_id, {})
        return [(k, self.get(group_id, k), k in mine) for k in GROUP_KEYS if names is None or k in names]

    def alter(self, group_id: str, changes: list[tuple[str, str | None]], *, validate_only: bool) -> None:
        """Apply (key, value) changes, a None value deleting the key; nothing changes if one is
        invalid."""
        for key, value in changes:
            spec = GROUP_KEYS.get(key)
            if spec is None:
                raise GroupConfigError(f"Unknown group config name: {key}")
            if value is not None and not spec.check(value):
                raise GroupConfigError(f"Invalid value {value} for configuration {key}")
        if validate_only:
            return
        mine = self.values.setdefault(group_id, {})
        for key, value in changes:
            if value is None:
                mine.pop(key, None)
            else:
                mine[key] = value
        if not mine:
            del self.values[group_id]
        self._save()

    def delete_group(self, group_id: str) -> None:
        if self.values.pop(group_id, None) is not None:
            self._save()

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(self.values, sort_keys=True).encode(), fsync=True)
