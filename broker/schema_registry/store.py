"""The registry's state: the `_schemas` topic (one partition, compacted, created on the first
write) and the in-memory index built from it, so that no request reads the topic.

- The topic is the broker's InternalTopicStore (broker.internal_store), as the coordinators' are:
  writes are one batch with coordinator origin, fsynced under fsync=always, and the index changes
  only after the append returned, by applying the very records written (`_apply`, the same code
  the replay runs), so memory never holds what the log does not.
- On start the partition is read once from its log start (`load`, the store's replay): the last
  record of each key wins and a null value deletes, as compaction would leave it. Ids continue from the highest id
  seen; versions from the highest version of the subject (a permanently deleted latest version's
  number is used again, as in Confluent).
- Records this registry cannot read (another writer's, a damaged one) are skipped with a log line.
- A failed write (full disk, I/O error) is error 50001 and changes nothing in memory.

`SchemaStore` knows records and the index; what may be written, and when, is registry.py's."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from ..clock import CLOCK
from ..internal_store import CoordinatorWriteError, InternalTopicStore, StoredRecord
from . import errors
from . import records as rec
from .records import SCHEMAS_TOPIC, Reference, SchemaValue

log = logging.getLogger("kafkalite.schema_registry")


@dataclass(frozen=True)
class StoredSchema:
    """One schema text under its id (the same text with the same references and type has one id
    across subjects)."""

    id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...]

    @property
    def identity(self) -> tuple[str, str, tuple[Reference, ...]]:
        return (self.schema_type, self.schema, self.references)


@dataclass
class Index:
    schemas: dict[int, StoredSchema] = field(default_factory=dict)
    ids: dict[tuple[str, str, tuple[Reference, ...]], int] = field(default_factory=dict)
    # subject -> version -> its record (soft-deleted versions included, flagged)
    subjects: dict[str, dict[int, SchemaValue]] = field(default_factory=dict)
    configs: dict[str | None, str] = field(default_factory=dict)
    modes: dict[str | None, str] = field(default_factory=dict)
    max_id: int = 0


class SchemaStore:
    def __init__(self, broker: Any):
        self.broker = broker
        self.index = Index()
        # one partition: the registry's records keep one order (Confluent's KafkaStore reads them so)
        self.topic = InternalTopicStore(broker.cluster, SCHEMAS_TOPIC, num_partitions=lambda: 1,
                                        configs={"cleanup.policy": "compact"}, clock=CLOCK)

    # --- the topic -------------------------------------------------------------------------
    def write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        """Append the records as one batch, then apply them to the index. RegistryError 50001
        when the write fails (nothing is applied then)."""
        try:
            self.topic.append(SCHEMAS_TOPIC, records)
        except (CoordinatorWriteError, OSError) as exc:  # OSError: the topic could not be created
            raise errors.store_error(str(exc)) from exc
        for key, value in records:
            self._apply(key, value)

    def load(self) -> None:
        """Build the index from the topic (nothing to do when it does not exist yet)."""
        count = 0

        def on_record(r: StoredRecord) -> None:
            nonlocal count
            count += 1
            self._apply(r.key, r.value, offset=r.offset)

        self.topic.replay(on_record)
        if count:
            log.info("schema registry: %d record(s) read from %s, %d schema id(s), %d subject(s)", count,
                     SCHEMAS_TOPIC, len(self.index.schemas), len(self.index.subjects))

    # --- the index -------------------------------------------------------------------------
    def _apply(self, key: bytes, value: bytes | None, offset: int = -1) -> None:
        try:
            k = json.loads(key)
            v = json.loads(value) if value is not None else None
            keytype = k["keytype"]
            if keytype == "SCHEMA":
                self._apply_schema(str(k["subject"]), int(k["version"]), v)
            elif keytype == "CONFIG":
                self._apply_setting(self.index.configs, k.get("subject"), v, "compatibilityLevel")
            elif keytype == "MODE":
                self._apply_setting(self.index.modes, k.get("subject"), v, "mode")
            elif keytype == "DELETE_SUBJECT":
                if v is not None:
                    self._apply_delete_subject(str(v["subject"]), int(v["version"]))
            elif keytype != "NOOP":
                raise ValueError(f"unknown keytype {keytype!r}")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("skipping an unreadable record at offset %d of %s: %s", offset, SCHEMAS_TOPIC, exc)

    def _apply_schema(self, subject: str, version: int, raw: dict[str, Any] | None) -> None:
        idx = self.index
        versions = idx.subjects.setdefault(subject, {})
        if raw is None:
            old = versions.pop(version, None)
            if not versions:
                del idx.subjects[subject]
            if old is not None and not self._id_in_use(old.id):
                idx.schemas.pop(old.id, None)
            return
        value = rec.decode_schema_value(raw)
        versions[version] = value
        stored = StoredSchema(value.id, value.schema_type, value.schema, value.references)
        idx.schemas[value.id] = stored
        idx.ids.setdefault(stored.identity, value.id)
        idx.max_id = max(idx.max_id, value.id)

    @staticmethod
    def _apply_setting(table: dict[str | None, str], subject: Any, raw: dict[str, Any] | None, name: str) -> None:
        subject = None if subject is None else str(subject)
        if raw is None:
            table.pop(subject, None)
        else:
            table[subject] = str(raw[name]).upper()

    def _apply_delete_subject(self, subject: str, up_to: int) -> None:
        versions = self.index.subjects.get(subject, {})
        for number, value in list(versions.items()):
            if number <= up_to:
                versions[number] = replace(value, deleted=True)

    def _id_in_use(self, schema_id: int) -> bool:
        return any(v.id == schema_id for versions in self.index.subjects.values() for v in versions.values())

    # --- reading ---------------------------------------------------------------------------
    def versions(self, subject: str, include_deleted: bool = False) -> list[SchemaValue]:
        """The subject's versions in order."""
        found = self.index.subjects.get(subject, {})
        return [found[n] for n in sorted(found) if include_deleted or not found[n].deleted]

    def subject_names(self) -> Iterable[str]:
        return self.index.subjects.keys()

    def schema(self, schema_id: int) -> StoredSchema | None:
        return self.index.schemas.get(schema_id)

    def id_of(self, schema_type: str, text: str, references: tuple[Reference, ...]) -> int | None:
        return self.index.ids.get((schema_type, text, references))

    def next_id(self) -> int:
        return self.index.max_id + 1
