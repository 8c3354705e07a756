"""The records of the `_schemas` topic in Confluent Schema Registry's JSON format (Confluent's
`SchemaRegistryKey` classes and `KafkaStore`; Karapace's `schema_reader.py` reads the same), so
that a Confluent or Karapace registry pointed at the broker could read what we wrote:

    key {"keytype":"SCHEMA","subject":S,"version":V,"magic":1}
        value {"subject":S,"version":V,"id":ID,"schema":TEXT,["schemaType":T,]["references":[...],]
               "deleted":BOOL}                  a null value is a permanent delete of that version
    key {"keytype":"CONFIG","subject":S|null,"magic":0}   value {"compatibilityLevel":LEVEL} or null
    key {"keytype":"MODE","subject":S|null,"magic":0}     value {"mode":MODE} or null
    key {"keytype":"DELETE_SUBJECT","subject":S,"magic":0} value {"subject":S,"version":V}: every
        version up to V is soft-deleted
    key {"keytype":"NOOP","magic":0}                      ignored

`schemaType` is left out for AVRO, as Confluent writes it. Keys are compact JSON in Confluent's
field order, so that compaction keeps one record per key whoever wrote it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SCHEMAS_TOPIC = "_schemas"
SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")


@dataclass(frozen=True)
class Reference:
    """A schema's reference to another subject's version, under the name the schema uses for it."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class SchemaValue:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()
    deleted: bool = False


def _dumps(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def schema_key(subject: str, version: int) -> bytes:
    return _dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def schema_value(v: SchemaValue) -> bytes:
    out: dict[str, Any] = {"subject": v.subject, "version": v.version, "id": v.id, "schema": v.schema}
    if v.schema_type != "AVRO":
        out["schemaType"] = v.schema_type
    if v.references:
        out["references"] = [r.to_json() for r in v.references]
    out["deleted"] = v.deleted
    return _dumps(out)


def config_key(subject: str | None) -> bytes:
    return _dumps({"keytype": "CONFIG", "subject": subject, "magic": 0})


def config_value(level: str) -> bytes:
    return _dumps({"compatibilityLevel": level})


def mode_key(subject: str | None) -> bytes:
    return _dumps({"keytype": "MODE", "subject": subject, "magic": 0})


def mode_value(mode: str) -> bytes:
    return _dumps({"mode": mode})


def delete_subject_key(subject: str) -> bytes:
    return _dumps({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0})


def delete_subject_value(subject: str, version: int) -> bytes:
    return _dumps({"subject": subject, "version": version})


def references_from_json(raw: Any) -> tuple[Reference, ...]:
    """References as a request or a record gives them; ValueError names what is wrong."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError("references must be a list")
    out = []
    for item in raw:
        if not isinstance(item, dict):
            raise ValueError("a reference must be an object with name, subject and version")
        name, subject, version = item.get("name"), item.get("subject"), item.get("version")
        if not isinstance(name, str) or not isinstance(subject, str) or not isinstance(version, int) \
                or isinstance(version, bool):
            raise ValueError("a reference needs a string name, a string subject and an integer version")
        out.append(Reference(name, subject, version))
    return tuple(out)


def decode_schema_value(raw: dict[str, Any]) -> SchemaValue:
    """A SCHEMA record's value; KeyError/ValueError/TypeError when it is not one."""
    schema_type = raw.get("schemaType") or "AVRO"
    if schema_type not in SCHEMA_TYPES:
        raise ValueError(f"unknown schemaType {schema_type!r}")
    return SchemaValue(subject=str(raw["subject"]), version=int(raw["version"]), id=int(raw["id"]),
                       schema=str(raw["schema"]), schema_type=schema_type,
                       references=references_from_json(raw.get("references")),
                       deleted=bool(raw.get("deleted", False)))
