"""Compatibility levels for the three schema types, through the REST API of a running broker:
the earlier versions are registered under NONE, the subject is set to the level, and the new
schema is both checked (`POST /compatibility/subjects/{s}/versions`) and registered (200, or 409
when incompatible). Cases come from Confluent's documentation of each type's rules; each type has
transitive cases where the level without _TRANSITIVE passes and the transitive one refuses."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from kafkalite.broker.schema_registry import json_schemas, protobuf_descriptors, protobuf_schemas


def rec(*fields: dict, name: str = "R") -> dict:
    return {"type": "record", "name": name, "fields": list(fields)}


INT_A = {"name": "a", "type": "int"}
AVRO = [
    # (case, level, earlier versions, new schema, compatible?)
    ("field added with a default", "BACKWARD", [rec(INT_A)], rec(INT_A, {"name": "b", "type": "string", "default": ""}),
     True),
    ("field added without a default", "BACKWARD", [rec(INT_A)], rec(INT_A, {"name": "b", "type": "string"}), False),
    ("field removed", "BACKWARD", [rec(INT_A, {"name": "b", "type": "string"})], rec(INT_A), True),
    ("field removed that old readers need", "FORWARD", [rec(INT_A, {"name": "b", "type": "string"})], rec(INT_A),
     False),
    ("field added without default, forward", "FORWARD", [rec(INT_A)], rec(INT_A, {"name": "b", "type": "string"}),
     True),
    ("field added with default, full", "FULL", [rec(INT_A)], rec(INT_A, {"name": "b", "type": "long", "default": 1}),
     True),
    ("field added without default, full", "FULL", [rec(INT_A)], rec(INT_A, {"name": "b", "type": "long"}), False),
    ("int promoted to long", "BACKWARD", [rec(INT_A)], rec({"name": "a", "type": "long"}), True),
    ("long narrowed to int", "BACKWARD", [rec({"name": "a", "type": "long"})], rec(INT_A), False),
    ("string read as bytes", "BACKWARD", [rec({"name": "a", "type": "string"})], rec({"name": "a", "type": "bytes"}),
     True),
    ("enum symbol added", "BACKWARD", [{"type": "enum", "name": "E", "symbols": ["A"]}],
     {"type": "enum", "name": "E", "symbols": ["A", "B"]}, True),
    ("enum symbol removed", "BACKWARD", [{"type": "enum", "name": "E", "symbols": ["A", "B"]}],
     {"type": "enum", "name": "E", "symbols": ["A"]}, False),
    ("union widened", "BACKWARD", [rec({"name": "a", "type": "string"})],
     rec({"name": "a", "type": ["null", "string"]}), True),
    ("union narrowed", "BACKWARD", [rec({"name": "a", "type": ["null", "string"]})],
     rec({"name": "a", "type": "string"}), False),
    ("field renamed with an alias", "BACKWARD", [rec(INT_A)], rec({"name": "z", "type": "int", "aliases": ["a"]}),
     True),
    ("record renamed", "BACKWARD", [rec(INT_A)], rec(INT_A, name="Other"), False),
    # v1 {a:int}, v2 {} (a removed), new {a:string=""}: fine against v2, not against v1
    ("type changed over a removal", "BACKWARD", [rec(INT_A), rec()],
     rec({"name": "a", "type": "string", "default": ""}), True),
    ("type changed over a removal", "BACKWARD_TRANSITIVE", [rec(INT_A), rec()],
     rec({"name": "a", "type": "string", "default": ""}), False),
    # v1 {a:int}, v2 {a:int=0}, new {}: v2 reads new with the default, v1 cannot
    ("default only in the latest", "FORWARD", [rec(INT_A), rec({**INT_A, "default": 0})], rec(), True),
    ("default only in the latest", "FORWARD_TRANSITIVE", [rec(INT_A), rec({**INT_A, "default": 0})], rec(), False),
    ("default only in the latest", "FULL_TRANSITIVE", [rec(INT_A), rec({**INT_A, "default": 0})], rec(), False),
    ("anything", "NONE", [rec(INT_A)], {"type": "string"}, True),
]


def obj(props: dict, additional: Any = None, required: list | None = None) -> dict:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if additional is not None:
        out["additionalProperties"] = additional
    if required:
        out["required"] = required
    return out


S, I, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}
JSON = [
    ("property added to an open content model", "BACKWARD", [obj({"a": S})], obj({"a": S, "b": I}), False),
    ("optional property added to a closed content model", "BACKWARD", [obj({"a": S}, False)],
     obj({"a": S, "b": I}, False), True),
    ("required property added to a closed content model", "BACKWARD", [obj({"a": S}, False)],
     obj({"a": S, "b": I}, False, ["b"]), False),
    ("property removed from an open content model", "BACKWARD", [obj({"a": S, "b": I})], obj({"a": S}), True),
    ("property removed from a closed content model", "BACKWARD", [obj({"a": S, "b": I}, False)],
     obj({"a": S}, False), False),
    ("property added, covered by a partially open model", "BACKWARD", [obj({"a": S}, S)], obj({"a": S, "b": S}, S),
     True),
    ("property added, not covered by a partially open model", "BACKWARD", [obj({"a": S}, S)],
     obj({"a": S, "b": I}, S), False),
    ("type narrowed", "BACKWARD", [obj({"a": N})], obj({"a": I}), False),
    ("type extended", "BACKWARD", [obj({"a": I})], obj({"a": N}), True),
    ("required attribute added", "BACKWARD", [obj({"a": S})], obj({"a": S}, required=["a"]), False),
    ("required attribute removed", "BACKWARD", [obj({"a": S}, required=["a"])], obj({"a": S}), True),
    ("maxLength decreased", "BACKWARD", [{"type": "string", "maxLength": 10}], {"type": "string", "maxLength": 5},
     False),
    ("maxLength increased", "BACKWARD", [{"type": "string", "maxLength": 5}], {"type": "string", "maxLength": 10},
     True),
    ("enum narrowed", "BACKWARD", [{"enum": ["a", "b"]}], {"enum": ["a"]}, False),
    ("enum extended", "BACKWARD", [{"enum": ["a"]}], {"enum": ["a", "b"]}, True),
    ("additionalProperties removed", "BACKWARD", [obj({"a": S})], obj({"a": S}, False), False),
    ("property removed from open, forward", "FORWARD", [obj({"a": S, "b": I})], obj({"a": S}), False),
    ("optional property added to closed, full", "FULL", [obj({"a": S}, False)], obj({"a": S, "b": I}, False), False),
    ("type narrowed two versions back", "BACKWARD", [N, I], {"type": "integer", "description": "v3"}, True),
    ("type narrowed two versions back", "BACKWARD_TRANSITIVE", [N, I], {"type": "integer", "description": "v3"},
     False),
]

P3 = 'syntax = "proto3";\n'
PROTO = [
    ("field added", "BACKWARD", [P3 + "message M { int32 a = 1; }"], P3 + "message M { int32 a = 1; string b = 2; }",
     True),
    ("field removed", "BACKWARD", [P3 + "message M { int32 a = 1; string b = 2; }"], P3 + "message M { int32 a = 1; }",
     True),
    ("int32 to int64 (one wire type)", "BACKWARD", [P3 + "message M { int32 a = 1; }"], P3 + "message M { int64 a = 1; }",
     True),
    ("string to bytes", "BACKWARD", [P3 + "message M { string a = 1; }"], P3 + "message M { bytes a = 1; }", True),
    ("int32 to string", "BACKWARD", [P3 + "message M { int32 a = 1; }"], P3 + "message M { string a = 1; }", False),
    ("field number reused with another type", "BACKWARD", [P3 + "message M { int32 a = 1; string name = 2; }"],
     P3 + "message M { int32 a = 1; int32 count = 2; }", False),
    ("scalar to message", "BACKWARD", [P3 + "message M { int32 a = 1; } message N { int32 x = 1; }"],
     P3 + "message M { N a = 1; } message N { int32 x = 1; }", False),
    ("message type changed", "BACKWARD",
     [P3 + "message M { N a = 1; } message N { int32 x = 1; } message O { int32 y = 1; }"],
     P3 + "message M { O a = 1; } message N { int32 x = 1; } message O { int32 y = 1; }", False),
    ("message removed", "BACKWARD", [P3 + "message M { int32 a = 1; } message N { int32 x = 1; }"],
     P3 + "message M { int32 a = 1; }", False),
    ("package changed", "BACKWARD", [P3 + "package a; message M { int32 a = 1; }"],
     P3 + "package b; message M { int32 a = 1; }", False),
    ("one field moved into a new oneof", "BACKWARD", [P3 + "message M { int32 a = 1; }"],
     P3 + "message M { oneof o { int32 a = 1; } }", True),
    ("two fields moved into a new oneof", "BACKWARD", [P3 + "message M { int32 a = 1; int32 b = 2; }"],
     P3 + "message M { oneof o { int32 a = 1; int32 b = 2; } }", False),
    ("required field added (proto2)", "BACKWARD", ['syntax = "proto2"; message M { optional int32 a = 1; }'],
     'syntax = "proto2"; message M { optional int32 a = 1; required int32 b = 2; }', False),
    ("message added, forward", "FORWARD", [P3 + "message M { int32 a = 1; }"],
     P3 + "message M { int32 a = 1; } message N { int32 b = 1; }", False),
    ("number reused two versions back", "BACKWARD", [P3 + "message M { int32 a = 1; }", P3 + "message M { }"],
     P3 + "message M { string b = 1; }", True),
    ("number reused two versions back", "BACKWARD_TRANSITIVE", [P3 + "message M { int32 a = 1; }",
                                                                 P3 + "message M { }"],
     P3 + "message M { string b = 1; }", False),
    ("number reused two versions back", "FULL_TRANSITIVE", [P3 + "message M { int32 a = 1; }", P3 + "message M { }"],
     P3 + "message M { string b = 1; }", False),
]

CASES = [("AVRO", *c) for c in AVRO] + [("JSON", *c) for c in JSON] + [("PROTOBUF", *c) for c in PROTO]


def test_each_type_has_ten_cases_and_transitive_ones():
    for schema_type in ("AVRO", "JSON", "PROTOBUF"):
        cases = [c for c in CASES if c[0] == schema_type]
        assert len(cases) >= 10
        assert any(c[2].endswith("_TRANSITIVE") and not c[5] for c in cases)


def text(schema: Any) -> str:
    return schema if isinstance(schema, str) else json.dumps(schema)


@pytest.mark.parametrize("schema_type,case,level,earlier,new,compatible", CASES,
                         ids=[f"{c[0]}-{c[2]}-{c[1]}" for c in CASES])
def test_compatibility(registry, schema_type, case, level, earlier, new, compatible):
    s = f"c-{uuid.uuid4().hex[:10]}"
    assert registry.put(f"/config/{s}", {"compatibility": "NONE"})[0] == 200
    for old in earlier:
        status, body = registry.register(s, text(old), schema_type)
        assert status == 200, body
    assert registry.put(f"/config/{s}", {"compatibility": level}) == (200, {"compatibility": level})
    body = {"schema": text(new), "schemaType": schema_type}
    status, answer = registry.post(f"/compatibility/subjects/{s}/versions?verbose=true", body)
    assert status == 200 and answer["is_compatible"] is compatible, answer
    assert bool(answer["messages"]) is not compatible
    status, answer = registry.register(s, text(new), schema_type)
    assert status == (200 if compatible else 409), answer
    if not compatible:
        assert answer["error_code"] == 409


def test_a_named_version_is_checked_alone_under_a_transitive_level(registry):
    """Confluent checks the named version only (Karapace checks all under _TRANSITIVE)."""
    s = f"c-{uuid.uuid4().hex[:10]}"
    registry.put(f"/config/{s}", {"compatibility": "NONE"})
    registry.register(s, rec(INT_A))
    registry.register(s, rec())
    registry.put(f"/config/{s}", {"compatibility": "BACKWARD_TRANSITIVE"})
    new = {"schema": json.dumps(rec({"name": "a", "type": "string", "default": ""}))}
    assert registry.post(f"/compatibility/subjects/{s}/versions/2", new) == (200, {"is_compatible": True})
    assert registry.post(f"/compatibility/subjects/{s}/versions/1", new) == (200, {"is_compatible": False})
    assert registry.post(f"/compatibility/subjects/{s}/versions", new) == (200, {"is_compatible": False})


# Confluent's rules where an earlier reading here differed, each with the difference Confluent's
# checker names (confluentinc/schema-registry 794611bd): the example, and its mirror where the
# direction matters. (case, schema type, level, old, new, compatible?, difference named)
KIND = P3 + "enum Kind { KIND_A = 0; KIND_B = 1; }\n"
KIND2 = P3 + "enum Kind2 { KIND_A = 0; KIND_B = 1; }\n"
WITH_DEFAULT = {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}
CONFLUENT_RULES = [
    # protobuf/diff/FieldSchemaDiff.kind and scalarKind: an enum field is a scalar of the
    # GENERAL_NUMBER group; enum names are never compared
    ("enum type renamed while a field uses it", "PROTOBUF", "FULL", KIND + "message M { Kind k = 1; }",
     KIND2 + "message M { Kind2 k = 1; }", True, "ENUM_ADDED"),
    ("enum field to int32, same number", "PROTOBUF", "FULL", KIND + "message M { Kind k = 1; }",
     KIND + "message M { int32 k = 1; }", True, None),
    ("enum field to sint32 (another wire group)", "PROTOBUF", "BACKWARD", KIND + "message M { Kind k = 1; }",
     KIND + "message M { sint32 k = 1; }", False, "FIELD_SCALAR_KIND_CHANGED"),
    ("enum field to a message", "PROTOBUF", "BACKWARD", KIND + "message M { Kind k = 1; } message N { }",
     KIND + "message M { N k = 1; } message N { }", False, "FIELD_KIND_CHANGED"),
    # FieldSchemaDiff.compareScalarTypes compares labels only when both fields carry one;
    # ProtobufSchema.label gives a proto3 field without a label none (Confluent's own example,
    # diff-schema-examples.json "Detect incompatible field label change for number", is optional -> repeated)
    ("numeric field without a label made repeated (proto3)", "PROTOBUF", "FULL", P3 + "message M { int32 a = 1; }",
     P3 + "message M { repeated int32 a = 1; }", True, None),
    ("optional numeric field made repeated", "PROTOBUF", "BACKWARD", P3 + "message M { optional int32 a = 1; }",
     P3 + "message M { repeated int32 a = 1; }", False, "FIELD_NUMERIC_LABEL_CHANGED"),
    ("repeated numeric field made optional", "PROTOBUF", "BACKWARD", P3 + "message M { repeated int32 a = 1; }",
     P3 + "message M { optional int32 a = 1; }", False, "FIELD_NUMERIC_LABEL_CHANGED"),
    ("proto2 optional numeric field made repeated", "PROTOBUF", "FORWARD",
     'syntax = "proto2"; message M { optional int64 a = 1; }', 'syntax = "proto2"; message M { repeated int64 a = 1; }',
     False, "FIELD_NUMERIC_LABEL_CHANGED"),
    ("optional string field made repeated", "PROTOBUF", "FULL", P3 + "message M { optional string a = 1; }",
     P3 + "message M { repeated string a = 1; }", True, "FIELD_STRING_OR_BYTES_LABEL_CHANGED"),
    ("proto2 optional enum field made repeated", "PROTOBUF", "BACKWARD",
     'syntax = "proto2"; enum E { A = 0; } message M { optional E a = 1; }',
     'syntax = "proto2"; enum E { A = 0; } message M { repeated E a = 1; }', False, "FIELD_NUMERIC_LABEL_CHANGED"),
    # protobuf/diff/MessageSchemaDiff (DGS-24604, 2026): fields matched by number across oneofs
    ("field moved into a new oneof, forward", "PROTOBUF", "FORWARD", P3 + "message M { int32 a = 1; string b = 2; }",
     P3 + "message M { string b = 2; oneof c { int32 a = 1; } }", True, "ONEOF_FIELD_MOVED_TO_TOP_LEVEL"),
    ("field moved into a new oneof, backward", "PROTOBUF", "BACKWARD", P3 + "message M { int32 a = 1; string b = 2; }",
     P3 + "message M { string b = 2; oneof c { int32 a = 1; } }", True, "ONEOF_ADDED"),
    ("a new oneof of new fields, forward", "PROTOBUF", "FORWARD", P3 + "message M { int32 a = 1; }",
     P3 + "message M { int32 a = 1; oneof c { string x = 2; int64 y = 3; } }", True, "ONEOF_REMOVED"),
    ("a new oneof of new fields, backward", "PROTOBUF", "BACKWARD", P3 + "message M { int32 a = 1; }",
     P3 + "message M { int32 a = 1; oneof c { string x = 2; int64 y = 3; } }", True, "ONEOF_FIELD_ADDED"),
    ("one member of a surviving oneof removed", "PROTOBUF", "BACKWARD",
     P3 + "message M { oneof c { string x = 2; int64 y = 3; } }", P3 + "message M { oneof c { string x = 2; } }",
     False, "ONEOF_FIELD_REMOVED"),
    ("a field joins an existing oneof", "PROTOBUF", "BACKWARD",
     P3 + "message M { int32 a = 1; oneof c { string x = 2; } }",
     P3 + "message M { oneof c { string x = 2; int32 a = 1; } }", False, "FIELD_MOVED_TO_EXISTING_ONEOF"),
    # newest releases only: a oneof renamed no longer hides its member's type change
    ("a oneof renamed while its member changes type", "PROTOBUF", "BACKWARD",
     P3 + "message M { oneof c { int32 a = 1; } }", P3 + "message M { oneof d { string a = 1; } }", False,
     "FIELD_SCALAR_KIND_CHANGED"),
    ("a oneof renamed, members kept", "PROTOBUF", "FULL", P3 + "message M { oneof c { int32 a = 1; string b = 2; } }",
     P3 + "message M { oneof d { int32 a = 1; string b = 2; } }", True, "ONEOF_REMOVED"),
    ("a oneof deleted with all its members", "PROTOBUF", "BACKWARD",
     P3 + "message M { int32 z = 9; oneof c { int32 a = 1; string b = 2; } }", P3 + "message M { int32 z = 9; }",
     True, "ONEOF_REMOVED"),
    # json/diff/ObjectSchemaDiff.compareRequired: a required property with a default is filled in
    ("required added to a property with a default", "JSON", "BACKWARD", WITH_DEFAULT,
     {**WITH_DEFAULT, "required": ["a"]}, True, "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"),
    ("required removed from a property with a default", "JSON", "FORWARD", WITH_DEFAULT,
     {**WITH_DEFAULT, "required": ["a"]}, True, "REQUIRED_ATTRIBUTE_REMOVED"),
    ("required added to a property without a default", "JSON", "BACKWARD", obj({"a": S}),
     obj({"a": S}, required=["a"]), False, "REQUIRED_ATTRIBUTE_ADDED"),
    ("required property with a default added to a closed model", "JSON", "BACKWARD", obj({"a": S}, False),
     obj({"a": S, "b": {"type": "string", "default": "y"}}, False, ["b"]), True,
     "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"),
]


def named_differences(schema_type: str, original: Any, update: Any) -> set[str]:
    """The differences Confluent's checker would name from `original` (the writer's) to `update`."""
    if schema_type == "JSON":
        return {kind for kind, _ in json_schemas.differences(original, update)}
    o, u = (protobuf_descriptors.from_text(t, "m.proto", []) for t in (original, update))
    return {kind for kind, _ in protobuf_schemas.differences(o, u)}


@pytest.mark.parametrize("case,schema_type,level,old,new,compatible,named", CONFLUENT_RULES,
                         ids=[c[0] for c in CONFLUENT_RULES])
def test_confluent_rule(registry, case, schema_type, level, old, new, compatible, named):
    s = f"r-{uuid.uuid4().hex[:10]}"
    assert registry.put(f"/config/{s}", {"compatibility": level})[0] == 200
    assert registry.register(s, text(old), schema_type)[0] == 200
    body = {"schema": text(new), "schemaType": schema_type}
    status, answer = registry.post(f"/compatibility/subjects/{s}/versions/latest?verbose=true", body)
    assert status == 200 and answer["is_compatible"] is compatible, answer
    if named is not None and not compatible:
        assert any(f"'{named}'" in m for m in answer["messages"]), answer
    status, answer = registry.register(s, text(new), schema_type)
    assert status == (200 if compatible else 409), answer
    original, update = (new, old) if level.startswith("FORWARD") else (old, new)
    found = named_differences(schema_type, original, update)
    assert (named in found) if named is not None else not found, found
