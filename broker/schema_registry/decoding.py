"""Records in Confluent's wire format read back for people (the console): magic byte 0, the
schema id as a big-endian int32, then the payload, decoded with the registered schema:

- Avro: the schemaless binary body, read with the Apache Avro library's DatumReader;
- JSON Schema: the body is the JSON document itself;
- Protobuf: the message-index array (zigzag varints: a count, then indexes into the file's
  messages and their nested ones; a single 0 stands for [0]), then the message, read with a
  class built from the registered descriptor and its references, shown as JSON.

`decode` never raises: a value that is not framed or names an unknown id gives None, one that
does not decode gives the id with the reason. `summary` is the console's Schemas page.
`RegistryView` is what the rest of the broker may read of the registry (`broker.schema_registry`,
set when the registry is served): the console calls its methods and imports nothing of this
package, so neither package imports the other's modules in a circle."""

from __future__ import annotations

import io
import json
import struct
from typing import Any

from .registry import Registry

MAGIC = 0


def _zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("a truncated message index")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _protobuf(registry: Registry, schema_id: int, body: bytes) -> Any:
    from google.protobuf import descriptor_pool, json_format, message_factory

    count, pos = _zigzag_varint(body, 0)
    indexes = [0] if count == 0 else []
    for _ in range(count):
        index, pos = _zigzag_varint(body, pos)
        indexes.append(index)
    parsed = registry.parsed(schema_id)
    pool = descriptor_pool.DescriptorPool()
    from google.protobuf import descriptor_pb2

    for module in _well_known_imports(parsed.model):
        fdp = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(fdp)
        pool.Add(fdp)
    for dep in parsed.resolved:
        pool.Add(dep)
    pool.Add(parsed.model)
    messages = pool.FindFileByName(parsed.model.name).message_types_by_name
    descriptor = list(messages.values())[indexes[0]]
    for index in indexes[1:]:
        descriptor = descriptor.nested_types[index]
    message = message_factory.GetMessageClass(descriptor)()
    message.ParseFromString(body[pos:])
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def _well_known_imports(fdp: Any) -> list[Any]:
    import importlib

    out = []
    for dep in fdp.dependency:
        if dep.startswith("google/protobuf/"):
            out.append(importlib.import_module("google.protobuf." + dep.rsplit("/", 1)[1].replace(".proto", "_pb2")))
    return out


def decode(registry: Registry, data: bytes | None) -> dict[str, Any] | None:
    if data is None or len(data) < 5 or data[0] != MAGIC:
        return None
    schema_id = struct.unpack(">I", data[1:5])[0]
    stored = registry.store.schema(schema_id)
    if stored is None:
        return None
    out: dict[str, Any] = {"schema_id": schema_id, "schema_type": stored.schema_type}
    body = bytes(data[5:])
    try:
        if stored.schema_type == "AVRO":
            import avro.io

            reader = avro.io.DatumReader(registry.parsed(schema_id).model)
            value = reader.read(avro.io.BinaryDecoder(io.BytesIO(body)))
        elif stored.schema_type == "JSON":
            value = json.loads(body)
        else:
            value = _protobuf(registry, schema_id, body)
        out["json"] = json.dumps(value, indent=2, default=_plain)
    except Exception as exc:  # noqa: BLE001 - any payload may be damaged; say why, never fail the page
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return str(value)


def summary(registry: Registry) -> dict[str, Any]:
    """Every subject with its compatibility level and versions (schema text included)."""
    subjects = []
    for name in registry.subjects(include_deleted=True):
        versions = registry.store.versions(name, include_deleted=True)
        subjects.append({
            "subject": name,
            "compatibility": registry.level(name),
            "mode": registry.mode(name),
            "deleted": all(v.deleted for v in versions),
            "versions": [{"version": v.version, "id": v.id, "schema_type": v.schema_type, "deleted": v.deleted,
                          "references": [r.to_json() for r in v.references], "schema": v.schema}
                         for v in versions],
        })
    return {"enabled": True, "compatibility": registry.level(None), "mode": registry.mode(None),
            "subjects": subjects}


class RegistryView:
    """The registry as the console reads it."""

    def __init__(self, registry: Registry):
        self._registry = registry

    def decode(self, data: bytes | None) -> dict[str, Any] | None:
        return decode(self._registry, data)

    def summary(self) -> dict[str, Any]:
        return summary(self._registry)
