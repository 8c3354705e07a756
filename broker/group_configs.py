"""Group configs kept: the values set per group id, persisted in
`__cluster_metadata/group_configs.json` (Kafka keeps them in its metadata log).

Rules:
- Which keys exist, what they accept and what they fall back to is settings.group_keys'; a
  change is validated there on the group's whole new set, so nothing changes unless all of it is
  valid.
- All or nothing: every change is written atomically, as the configs will be, before memory
  changes; a write that fails (a full disk) raises OSError with the configs as they were.
- DescribeConfigs of a GROUP resource reports each key with GROUP_CONFIG when the group sets it,
  and Kafka's synonym chain (the group's value, then the broker setting's, or GroupConfig's
  default as DEFAULT_CONFIG under the key's own name when no broker setting stands behind it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafkalite.storage.files import write_atomic

from .settings.broker_keys import BROKER_KEYS
from .settings.describe import ConfigEntry, SynonymEntry
from .settings.group_keys import GROUP_KEYS, KAFKA_BROKER_DEFAULTS, group_key_default, validate_group_configs
from .settings.values import ConfigSource, ConfigType


class GroupConfigs:
    def __init__(self, meta_dir: Path, broker_values: dict):
        self.path = meta_dir / "group_configs.json"
        self.broker_values = broker_values
        self.values: dict[str, dict[str, str]] = {}
        if self.path.exists():
            self.values = {g: dict(c) for g, c in json.loads(self.path.read_text()).items()}

    def broker_value(self, setting: str) -> Any:
        return self.broker_values.get(setting, KAFKA_BROKER_DEFAULTS.get(setting))

    def default(self, key: str) -> str | None:
        """The value of a key the group does not set: its broker setting's, else Kafka's default."""
        return group_key_default(key, self.broker_value)

    def describe_entries(self, group_id: str, names: list[str] | None) -> list[ConfigEntry]:
        """DescribeConfigs of a GROUP resource: each key with its value, GROUP_CONFIG when the group
        sets it, and the synonym chain Kafka reports (see the rules at the top)."""
        mine = self.values.get(group_id, {})
        out = []
        for key, spec in GROUP_KEYS.items():
            if names is not None and key not in names:
                continue
            chain: list[SynonymEntry] = []
            if key in mine:
                chain.append((key, mine[key], ConfigSource.GROUP_CONFIG))
            if spec.broker_synonym is not None:
                setting = spec.broker_synonym
                text = self.default(key) if key != "streams.assignor.name" else None
                info = BROKER_KEYS.get(setting)
                kafka_default = KAFKA_BROKER_DEFAULTS.get(setting) if info is None else info.kafka_default
                if text is not None:
                    static = kafka_default is not None and text != str(kafka_default)
                    chain.append((setting, text, ConfigSource.STATIC_BROKER_CONFIG if static
                                  else ConfigSource.DEFAULT_CONFIG))
            elif spec.default is not None:
                # no broker setting behind it: Kafka's ConfigHelper reports GroupConfig's default
                chain.append((key, spec.default, ConfigSource.DEFAULT_CONFIG))
            source = chain[0][2] if chain else ConfigSource.DEFAULT_CONFIG
            out.append(ConfigEntry(key, self.get(group_id, key), source, ConfigType[spec.type_name], spec.doc,
                                   synonyms=chain))
        return out

    def get(self, group_id: str, key: str) -> str | None:
        v = self.values.get(group_id, {}).get(key)
        return v if v is not None else self.default(key)

    def get_int(self, group_id: str, key: str) -> int:
        return int(self.get(group_id, key) or 0)

    def describe(self, group_id: str, names: list[str] | None) -> list[tuple[str, str | None, bool]]:
        """(name, value, set for this group) for each known key, or for `names`."""
        mine = self.values.get(group_id, {})
        return [(k, self.get(group_id, k), k in mine) for k in GROUP_KEYS if names is None or k in names]

    def alter(self, group_id: str, changes: list[tuple[str, str | None]], *, validate_only: bool) -> None:
        """Apply (key, value) changes, a None value deleting the key; nothing changes unless the
        group's whole new set is valid."""
        new = dict(self.values.get(group_id, {}))
        for key, value in changes:
            if value is None:
                new.pop(key, None)
            else:
                new[key] = value
        validate_group_configs(new, [k for k, _v in changes], self.broker_value)
        if validate_only:
            return
        values = dict(self.values)
        if new:
            values[group_id] = new
        else:
            values.pop(group_id, None)
        self._write(values)
        self.values = values

    def delete_group(self, group_id: str) -> None:
        if group_id in self.values:
            values = {g: c for g, c in self.values.items() if g != group_id}
            self._write(values)
            self.values = values

    def _write(self, values: dict[str, dict[str, str]]) -> None:
        """Save the configs as they will be, before memory changes (a failure raises OSError)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(values, sort_keys=True).encode(), fsync=True)
