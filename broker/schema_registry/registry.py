"""The registry's operations, Confluent Schema Registry's semantics over the store (store.py);
the HTTP layer (api.py) only translates requests and answers. Rules, in Confluent's words:

- Register: a schema equal to a live version of the subject returns that version's id without a
  check (re-registering is idempotent); otherwise it must pass the subject's compatibility level
  (the subject's config, else the global one, BACKWARD by default) against the latest live
  version, or every live version for a _TRANSITIVE level, and becomes version latest+1 (numbers of
  soft-deleted versions are not reused). Its id is the id the same schema (type, text, references)
  already has under any subject, else the highest id + 1.
- Modes: READWRITE (default); READONLY refuses registrations and deletes (42205); IMPORT takes
  registrations with an explicit id (and version), checks no compatibility, and refuses an id that
  already holds another schema. An explicit id outside IMPORT mode is refused (42205).
- Deletes: a soft delete hides a version (or all of a subject's versions) from reads without
  `deleted=true`; a permanent delete (`permanent=true`) needs the soft delete first (40405/40407) and
  removes the records (a subject's, also its compatibility level and mode). A schema registered
  again afterwards gets a new id, as in Confluent, whose register finds a schema's id by hash only
  while a subject-version holds it. A version that another live schema references cannot be deleted (42206).
- Reads of a version: "latest" and -1 mean the newest live version; a soft-deleted one is 40402
  unless `deleted=true`.
- A compatibility check against a named version checks that version only, whatever the level
  (Confluent's `CompatibilityResource`; Karapace checks every version under a _TRANSITIVE level):
  we follow Confluent. Against "latest" of a subject without live versions (unknown, or all
  soft-deleted) it is compatible; a numbered version that is not live is 40402, whether or not
  the subject exists (`CompatibilityResource.testCompatibilityBySubjectName`). `GET /config/{s}?defaultToGlobal=true` answers the global level also for
  a subject without schemas (Confluent; Karapace answers 40401).

Parsed schemas are cached by id (a stored schema never changes under its id)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import errors
from . import records as rec
from .records import Reference, SchemaValue
from .schemas import LEVELS, Parsed, incompatibilities, parse
from .store import SchemaStore, StoredSchema

MODES = ("READWRITE", "READONLY", "IMPORT")
DEFAULT_LEVEL = "BACKWARD"
MAX_VERSION = 2**31 - 1


def parse_version(text: str) -> int | None:
    """A version path parameter: None for latest (also -1), else 1..2^31-1; 42202 otherwise."""
    if text == "latest":
        return None
    try:
        number = int(text)
    except ValueError:
        raise errors.invalid_version(text) from None
    if number == -1:
        return None
    if not 1 <= number <= MAX_VERSION:
        raise errors.invalid_version(text)
    return number


class Registry:
    def __init__(self, store: SchemaStore):
        self.store = store
        self._parsed: dict[int, Parsed] = {}

    # --- schemas ----------------------------------------------------------------------------
    def schema(self, schema_id: int) -> StoredSchema:
        found = self.store.schema(schema_id)
        if found is None:
            raise errors.schema_not_found(schema_id)
        return found

    def parsed(self, schema_id: int) -> Parsed:
        cached = self._parsed.get(schema_id)
        if cached is None:
            s = self.schema(schema_id)
            cached = self._parsed[schema_id] = parse(s.schema_type, s.schema, s.references, self._reference)
        return cached

    def usages(self, schema_id: int, include_deleted: bool) -> list[SchemaValue]:
        return [v for name in sorted(self.store.subject_names())
                for v in self.store.versions(name, include_deleted) if v.id == schema_id]

    def _reference(self, subject: str, version: int) -> SchemaValue:
        for v in self.store.versions(subject, include_deleted=True):
            if v.version == version:
                return v
        raise errors.version_not_found(version)

    # --- subjects and versions ---------------------------------------------------------------
    def subjects(self, prefix: str = "", include_deleted: bool = False, deleted_only: bool = False) -> list[str]:
        out = []
        for name in sorted(self.store.subject_names()):
            if not name.startswith(prefix):
                continue
            live = bool(self.store.versions(name))
            if (deleted_only and not live) or (not deleted_only and (live or include_deleted)):
                out.append(name)
        return out

    def versions(self, subject: str, include_deleted: bool = False, deleted_only: bool = False) -> list[int]:
        every = self.store.versions(subject, include_deleted=True)
        if not every or (not include_deleted and not deleted_only and all(v.deleted for v in every)):
            raise errors.subject_not_found(subject)
        if deleted_only:
            return [v.version for v in every if v.deleted]
        return [v.version for v in every if include_deleted or not v.deleted]

    def version(self, subject: str, version_text: str, include_deleted: bool = False) -> SchemaValue:
        number = parse_version(version_text)
        every = self.store.versions(subject, include_deleted=True)
        visible = [v for v in every if include_deleted or not v.deleted]
        if not every or (not visible and number is None):
            raise errors.subject_not_found(subject)
        if number is None:
            return visible[-1]
        for v in visible:
            if v.version == number:
                return v
        raise errors.version_not_found(number)

    def referenced_by(self, subject: str, version_text: str) -> list[int]:
        target = self.version(subject, version_text, include_deleted=True)
        return sorted({v.id for name in self.store.subject_names() for v in self.store.versions(name)
                       if any(r.subject == subject and r.version == target.version
                              for r in self.schema(v.id).references)})

    # --- configuration -----------------------------------------------------------------------
    def level(self, subject: str | None) -> str:
        configs = self.store.index.configs
        if subject is not None and subject in configs:
            return configs[subject]
        return configs.get(None, DEFAULT_LEVEL)

    def subject_level(self, subject: str, default_to_global: bool) -> str:
        configs = self.store.index.configs
        if subject in configs:
            return configs[subject]
        if default_to_global:
            return self.level(None)
        raise errors.subject_config_not_found(subject)

    def set_level(self, subject: str | None, level: Any) -> str:
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise errors.invalid_compatibility_level()
        self.store.write([(rec.config_key(subject), rec.config_value(level.upper()))])
        return level.upper()

    def delete_level(self, subject: str | None) -> str:
        old = self.level(subject) if subject is None else self.subject_level(subject, False)
        self.store.write([(rec.config_key(subject), None)])
        return old

    def mode(self, subject: str | None, default_to_global: bool = True) -> str:
        modes = self.store.index.modes
        if subject is not None and subject in modes:
            return modes[subject]
        if subject is not None and not default_to_global:
            raise errors.subject_mode_not_found(subject)
        return modes.get(None, "READWRITE")

    def set_mode(self, subject: str | None, mode: Any, force: bool = False) -> str:
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode(mode)
        mode = mode.upper()
        if mode == "IMPORT" and not force:
            names = [subject] if subject is not None else list(self.store.subject_names())
            if any(self.store.versions(n, include_deleted=True) for n in names):
                raise errors.not_permitted("Cannot import since found existing subjects")
        self.store.write([(rec.mode_key(subject), rec.mode_value(mode))])
        return mode

    def delete_mode(self, subject: str) -> str:
        old = self.mode(subject, default_to_global=False)
        self.store.write([(rec.mode_key(subject), None)])
        return old

    def _writable(self, subject: str) -> str:
        mode = self.mode(subject)
        if mode == "READONLY":
            raise errors.not_permitted(f"Subject {subject} is in read-only mode")
        return mode

    # --- registering -------------------------------------------------------------------------
    def find(self, subject: str, candidate: Parsed, include_deleted: bool = False) -> SchemaValue | None:
        """The subject's version holding this very schema (the newest one)."""
        schema_id = self.store.id_of(candidate.schema_type, candidate.text, candidate.references)
        if schema_id is None:
            return None
        matches = [v for v in self.store.versions(subject, include_deleted) if v.id == schema_id]
        return matches[-1] if matches else None

    def parse_request(self, schema_type: str, text: str, references: tuple[Reference, ...], subject: str) -> Parsed:
        return parse(schema_type, text, references, self._reference, name=subject)

    def lookup(self, subject: str, candidate: Parsed, include_deleted: bool = False) -> SchemaValue:
        if not self.store.versions(subject, include_deleted=True):
            raise errors.subject_not_found(subject)
        found = self.find(subject, candidate, include_deleted)
        if found is None:
            raise errors.schema_not_found()
        return found

    def check(self, subject: str, candidate: Parsed, version_text: str | None) -> list[str]:
        """Why the candidate fails the subject's level against the named version, or (None) against
        the versions the level names; empty when it passes."""
        level = self.level(subject)
        if version_text is not None:
            number = parse_version(version_text)
            live = self.store.versions(subject)
            if number is None:
                # "latest" of a subject without live versions: nothing to be compatible with
                olds = live[-1:]
            else:
                olds = [v for v in live if v.version == number]
                if not olds:
                    raise errors.version_not_found(number)
        else:
            olds = self.store.versions(subject)
            if not level.endswith("_TRANSITIVE"):
                olds = olds[-1:]
        if level == "NONE":
            return []
        out: list[str] = []
        for old in reversed(olds):
            out += incompatibilities(candidate, self.parsed(old.id), level)
        return out

    def register(self, subject: str, candidate: Parsed, schema_id: int | None = None,
                 version: int | None = None) -> int:
        mode = self._writable(subject)
        existing = self.find(subject, candidate)
        if existing is not None and (schema_id is None or schema_id == existing.id):
            return existing.id
        if schema_id is not None and mode != "IMPORT":
            raise errors.not_permitted(f"Subject {subject} is not in import mode")
        if mode != "IMPORT":
            problems = self.check(subject, candidate, None)
            if problems:
                raise errors.incompatible(subject, problems)
        known = self.store.id_of(candidate.schema_type, candidate.text, candidate.references)
        if schema_id is not None:
            holder = self.store.schema(schema_id)
            if holder is not None and holder.identity != (candidate.schema_type, candidate.text, candidate.references):
                raise errors.not_permitted(f"Overwrite new schema with id {schema_id} is not permitted.")
        else:
            schema_id = known if known is not None and self.store.schema(known) is not None else self.store.next_id()
        every = self.store.versions(subject, include_deleted=True)
        if version is None:
            version = (every[-1].version + 1) if every else 1
        elif any(v.version == version for v in every):
            raise errors.not_permitted(f"Version {version} of subject {subject} exists already")
        value = SchemaValue(subject=subject, version=version, id=schema_id, schema=candidate.text,
                            schema_type=candidate.schema_type, references=candidate.references)
        self.store.write([(rec.schema_key(subject, version), rec.schema_value(value))])
        self._parsed.setdefault(schema_id, candidate)
        return schema_id

    # --- deleting ----------------------------------------------------------------------------
    def _refuse_if_referenced(self, subject: str, versions: list[int]) -> None:
        for name in self.store.subject_names():
            for v in self.store.versions(name):
                for r in self.schema(v.id).references:
                    if r.subject == subject and r.version in versions:
                        raise errors.reference_exists(subject, r.version)

    def delete_version(self, subject: str, version_text: str, permanent: bool) -> int:
        self._writable(subject)
        number = parse_version(version_text)
        every = self.store.versions(subject, include_deleted=True)
        if not every:
            raise errors.subject_not_found(subject)
        if number is None:
            live = [v for v in every if not v.deleted]
            if not live:
                raise errors.subject_not_found(subject)
            target = live[-1]
        else:
            matches = [v for v in every if v.version == number]
            if not matches:
                raise errors.version_not_found(number)
            target = matches[0]
        key = rec.schema_key(subject, target.version)
        if permanent:
            if not target.deleted:
                raise errors.version_not_soft_deleted(subject, target.version)
            self.store.write([(key, None)])
        else:
            if target.deleted:
                raise errors.version_soft_deleted(subject, target.version)
            self._refuse_if_referenced(subject, [target.version])
            self.store.write([(key, rec.schema_value(replace(target, deleted=True)))])
        return target.version

    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        self._writable(subject)
        every = self.store.versions(subject, include_deleted=True)
        if not every:
            raise errors.subject_not_found(subject)
        live = [v.version for v in every if not v.deleted]
        if permanent:
            if live:
                raise errors.subject_not_soft_deleted(subject)
            tombstones: list[tuple[Any, Any]] = [(rec.schema_key(subject, v.version), None) for v in every]
            # the subject's own level and mode go with it (Confluent's KafkaSchemaRegistry.deleteSubject)
            if subject in self.store.index.configs:
                tombstones.append((rec.config_key(subject), None))
            if subject in self.store.index.modes:
                tombstones.append((rec.mode_key(subject), None))
            self.store.write(tombstones)
            return [v.version for v in every]
        if not live:
            raise errors.subject_soft_deleted(subject)
        self._refuse_if_referenced(subject, live)
        self.store.write([(rec.delete_subject_key(subject), rec.delete_subject_value(subject, every[-1].version))])
        return live
