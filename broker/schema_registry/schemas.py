"""One entry for the three schema types: parse a schema with its references (`parse`) and tell
why one schema cannot replace another under a compatibility level (`incompatibilities`).

- A reference names another subject's version; it is resolved through the store (`lookup`),
  depth first, and an unknown or cyclic one makes the schema invalid (42201).
- Parsing yields what is stored and answered (`text`: compact JSON for Avro and JSON Schema,
  `.proto` text for Protobuf, whichever form came in) and the model the checks compare.
- Levels: BACKWARD, the new schema reads data written with the old; FORWARD, the old reads the
  new; FULL, both; the _TRANSITIVE forms apply the same to every earlier version instead of the
  latest (the registry chooses which versions: registry.py); NONE, no check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from . import errors
from .records import Reference, SchemaValue

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
MAX_REFERENCE_DEPTH = 32

Lookup = Callable[[str, int], SchemaValue]


@dataclass
class Parsed:
    schema_type: str
    text: str
    model: Any
    references: tuple[Reference, ...] = ()
    # what the references resolved to: Avro texts depth first, Protobuf descriptors, JSON schemas by name
    resolved: Any = field(default_factory=list)


def _resolve_all(references: tuple[Reference, ...], lookup: Lookup, depth: int = 0,
                 seen: frozenset[tuple[str, int]] = frozenset()) -> list[tuple[Reference, SchemaValue]]:
    """Every schema reached through the references, dependencies before dependants."""
    if depth > MAX_REFERENCE_DEPTH:
        raise errors.invalid_schema("references are nested too deep")
    out: list[tuple[Reference, SchemaValue]] = []
    for ref in references:
        key = (ref.subject, ref.version)
        if key in seen:
            raise errors.invalid_schema(f"reference cycle through subject {ref.subject!r} version {ref.version}")
        try:
            value = lookup(ref.subject, ref.version)
        except errors.RegistryError:
            raise errors.invalid_schema(f"reference {ref.name!r}: no subject {ref.subject!r} "
                                        f"version {ref.version}") from None
        out.extend(_resolve_all(value.references, lookup, depth + 1, seen | {key}))
        out.append((ref, value))
    return out


def parse(schema_type: str, text: str, references: tuple[Reference, ...], lookup: Lookup,
          name: str = "schema.proto") -> Parsed:
    """The parsed schema; RegistryError 42201 with the reason when it is invalid."""
    from . import avro_schemas, json_schemas, protobuf_schemas  # each type's libraries, on first use

    resolved = _resolve_all(references, lookup)
    try:
        if schema_type == "AVRO":
            texts = [v.schema for _ref, v in resolved]
            return Parsed("AVRO", avro_schemas.compact(text), avro_schemas.parse(text, texts), references, texts)
        if schema_type == "JSON":
            by_name = {ref.name: json_schemas.parse(v.schema) for ref, v in resolved}
            return Parsed("JSON", json_schemas.compact(text), json_schemas.parse(text), references, by_name)
        if schema_type == "PROTOBUF":
            deps: list[Any] = []
            for ref, v in resolved:
                dep, _text = protobuf_schemas.parse(v.schema, ref.name, deps)
                dep.name = ref.name
                deps.append(dep)
            fdp, stored = protobuf_schemas.parse(text, name, deps)
            return Parsed("PROTOBUF", stored, fdp, references, deps)
    except (ValueError, TypeError, RecursionError) as exc:
        raise errors.invalid_schema(f"{schema_type} schema: {exc}") from None
    raise errors.RegistryError(422, 42201, f"Invalid schema type {schema_type}")


def _cannot_read(reader: Parsed, writer: Parsed) -> list[str]:
    from . import avro_schemas, json_schemas, protobuf_schemas

    if reader.schema_type != writer.schema_type:
        return [f"{{errorType:'SCHEMA_TYPE_CHANGED', description:'{writer.schema_type} -> {reader.schema_type}'}}"]
    if reader.schema_type == "AVRO":
        return avro_schemas.incompatibilities(reader.model, writer.model)
    if reader.schema_type == "JSON":
        return json_schemas.incompatibilities(reader.model, writer.model, reader.resolved, writer.resolved)
    return protobuf_schemas.incompatibilities(reader.model, writer.model)


def incompatibilities(new: Parsed, old: Parsed, level: str) -> list[str]:
    """Why `new` may not follow `old` under `level` (empty: it may)."""
    base = level.removesuffix("_TRANSITIVE")
    out: list[str] = []
    try:
        if base in ("BACKWARD", "FULL"):
            out += _cannot_read(new, old)
        if base in ("FORWARD", "FULL"):
            out += _cannot_read(old, new)
    except RecursionError:
        raise errors.invalid_schema("the schema is nested too deeply to compare") from None
    return out
