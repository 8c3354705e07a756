"""Seeded schema evolutions of Avro, JSON Schema and Protobuf, with the verdicts Confluent's rules
give them at every compatibility level.

A case is three versions of one schema, each made from the one before by a random edit: fields
added and removed with and without defaults, type changes within and across wire groups, enums,
labels, oneofs, `required`, `additionalProperties`, numeric and length bounds. Schemas are small
models (below), rendered as the registry receives them (Avro and JSON Schema as text, Protobuf as
the descriptor its text parses to). What each version pair differs by, and whether that refuses,
comes from `expected_differences`: Confluent's rules written over the models, from its classes
(cited at each), independently of the registry's checker. `table()` lists every case's verdicts
at the six levels and the refusing differences; it is committed beside this file
(evolution_verdicts.txt), so a change of rule shows as a diff of that table.
`python -m kafkalite.broker.tests.schema_registry.evolution` writes it anew."""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from google.protobuf import descriptor_pb2

SEED = 40
CASES_PER_TYPE = 160
LEVELS = ("BACKWARD", "FORWARD", "FULL", "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE")
TABLE = Path(__file__).with_name("evolution_verdicts.txt")

# =============================================================================================
# Avro: a record of fields; Avro's schema resolution (Confluent's AvroSchema.isBackwardCompatible
# is Avro's SchemaCompatibility): the reader (update) reads the writer's (original) data.
# =============================================================================================
AVRO_TYPES = ("int", "long", "float", "double", "string", "bytes", "boolean", "enum2", "enum3", "nullable_string",
              "array_int", "array_long")
# reader type -> writer types it reads: the same type, Avro's promotions, string <-> bytes
_AVRO_READS = {
    "int": {"int"}, "long": {"int", "long"}, "float": {"int", "long", "float"},
    "double": {"int", "long", "float", "double"}, "string": {"string", "bytes"}, "bytes": {"string", "bytes"},
    "boolean": {"boolean"}, "enum2": {"enum2"}, "enum3": {"enum2", "enum3"},
    "nullable_string": {"string", "bytes", "nullable_string"}, "array_int": {"array_int"},
    "array_long": {"array_int", "array_long"},
}
_AVRO_DEFAULT = {"int": 0, "long": 0, "float": 0.0, "double": 0.0, "string": "", "bytes": "", "boolean": False,
                 "enum2": "A", "enum3": "A", "nullable_string": None, "array_int": [], "array_long": []}


@dataclass
class AvroField:
    type: str
    has_default: bool


def avro_render(fields: dict[str, AvroField]) -> str:
    def type_json(name: str, t: str) -> Any:
        if t.startswith("enum"):
            return {"type": "enum", "name": f"E_{name}", "symbols": ["A", "B", "C"][:int(t[-1])]}
        if t == "nullable_string":
            return ["null", "string"]
        if t.startswith("array_"):
            return {"type": "array", "items": t[len("array_"):]}
        return t

    out = []
    for name, f in fields.items():
        entry: dict[str, Any] = {"name": name, "type": type_json(name, f.type)}
        if f.has_default:
            entry["default"] = _AVRO_DEFAULT[f.type]
        out.append(entry)
    return json.dumps({"type": "record", "name": "R", "fields": out})


def avro_expected(original: dict[str, AvroField], update: dict[str, AvroField]) -> list[tuple[str, bool]]:
    """Avro SchemaCompatibility's incompatibilities of reader `update` against writer `original`."""
    found: list[tuple[str, bool]] = []
    for name, r in update.items():
        w = original.get(name)
        if w is None:
            if not r.has_default:
                found.append(("READER_FIELD_MISSING_DEFAULT_VALUE", False))
        elif w.type not in _AVRO_READS[r.type]:
            if r.type == "enum2" and w.type == "enum3":
                found.append(("MISSING_ENUM_SYMBOLS", False))
            elif w.type == "nullable_string":
                found.append(("MISSING_UNION_BRANCH", False))
            else:
                found.append(("TYPE_MISMATCH", False))
    return found


def avro_edit(rng: random.Random, fields: dict[str, AvroField], serial: int) -> tuple[dict[str, AvroField], str]:
    fields = copy.deepcopy(fields)
    names = list(fields)
    enums = [n for n in names if fields[n].type.startswith("enum")]
    kinds = ["add", "add", "remove", "type", "type", "default"] + (["symbols", "symbols"] if enums else [])
    kind = rng.choice(kinds if names else ["add"])
    if kind == "symbols":
        name = rng.choice(enums)
        fields[name].type = "enum3" if fields[name].type == "enum2" else "enum2"
        return fields, f"{name} {'gains' if fields[name].type == 'enum3' else 'loses'} a symbol"
    if kind == "add":
        name, t, d = f"f{serial}", rng.choice(AVRO_TYPES), rng.random() < 0.5
        fields[name] = AvroField(t, d)
        return fields, f"add {name}:{t}{' with default' if d else ''}"
    name = rng.choice(names)
    if kind == "remove":
        del fields[name]
        return fields, f"remove {name}"
    if kind == "type":
        t = rng.choice([t for t in AVRO_TYPES if t != fields[name].type])
        fields[name].type = t
        return fields, f"{name} to {t}"
    fields[name].has_default = not fields[name].has_default
    return fields, f"{name} {'gets' if fields[name].has_default else 'loses'} its default"


def avro_start(rng: random.Random) -> dict[str, AvroField]:
    return {f"a{i}": AvroField(rng.choice(AVRO_TYPES), rng.random() < 0.5) for i in range(rng.randint(1, 3))}


# =============================================================================================
# JSON Schema: an object of properties; Confluent's json/diff (ObjectSchemaDiff, NumberSchemaDiff,
# StringSchemaDiff, SchemaDiff.compareTypes) under its default STRICT policy.
# =============================================================================================
JSON_TYPES = ("string", "integer", "number", "boolean")
_JSON_DEFAULT = {"string": "x", "integer": 1, "number": 1.5, "boolean": False}
_JSON_BOUNDS = {"string": ("maxLength", "minLength"), "integer": ("maximum", "minimum"),
                "number": ("maximum", "minimum")}
_BOUND_STEM = {"maxLength": "MAX_LENGTH", "minLength": "MIN_LENGTH", "maximum": "MAXIMUM", "minimum": "MINIMUM"}
_JSON_STRICT_COMPATIBLE = {
    "TYPE_EXTENDED", "MAX_LENGTH_INCREASED", "MAX_LENGTH_REMOVED", "MIN_LENGTH_DECREASED", "MIN_LENGTH_REMOVED",
    "MAXIMUM_INCREASED", "MAXIMUM_REMOVED", "MINIMUM_DECREASED", "MINIMUM_REMOVED", "DEFAULT_CHANGED",
    "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", "REQUIRED_ATTRIBUTE_REMOVED", "ADDITIONAL_PROPERTIES_ADDED",
    "ADDITIONAL_PROPERTIES_EXTENDED", "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
    "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
    "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
}
PARTIAL = {"type": "string"}  # the schema of additionalProperties of a partially open object


@dataclass
class JsonProperty:
    type: str
    has_default: bool = False
    bounds: dict[str, int] = field(default_factory=dict)


@dataclass
class JsonObject:
    properties: dict[str, JsonProperty]
    required: set[str]
    content: str  # open (additionalProperties absent), closed (false) or partial (PARTIAL)


def json_render(o: JsonObject) -> str:
    props: dict[str, Any] = {}
    for name, p in o.properties.items():
        schema: dict[str, Any] = {"type": p.type, **p.bounds}
        if p.has_default:
            schema["default"] = _JSON_DEFAULT[p.type]
        props[name] = schema
    out: dict[str, Any] = {"type": "object", "properties": props}
    if o.required:
        out["required"] = sorted(o.required)
    if o.content != "open":
        out["additionalProperties"] = False if o.content == "closed" else PARTIAL
    return json.dumps(out)


def _json_property(original: JsonProperty, update: JsonProperty) -> list[str]:
    """SchemaDiff.compareTypes for two properties' schemas."""
    numbers = {"integer", "number"}
    if original.type != update.type and not {original.type, update.type} <= numbers:
        return ["TYPE_CHANGED"]  # other schema classes: nothing else is compared
    found = []
    if original.has_default != update.has_default or original.type != update.type and original.has_default:
        found.append("DEFAULT_CHANGED")
    for key in _JSON_BOUNDS.get(original.type, ()):
        o, u = original.bounds.get(key), update.bounds.get(key)
        if o == u:
            continue
        stem = _BOUND_STEM[key]
        if o is None:
            found.append(f"{stem}_ADDED")
        elif u is None:
            found.append(f"{stem}_REMOVED")
        else:
            found.append(f"{stem}_{'INCREASED' if u > o else 'DECREASED'}")
    if original.type != update.type:  # NumberSchemaDiff: requiresInteger
        found.append("TYPE_EXTENDED" if original.type == "integer" else "TYPE_NARROWED")
    return found


def _covered(original: JsonProperty | None, update: JsonProperty | None) -> bool:
    """Whether a property's schema and PARTIAL compare compatibly (None stands for PARTIAL)."""
    o = original or JsonProperty("string")
    u = update or JsonProperty("string")
    return all(d in _JSON_STRICT_COMPATIBLE for d in _json_property(o, u))


def json_expected(original: JsonObject, update: JsonObject) -> list[tuple[str, bool]]:
    """ObjectSchemaDiff.compare: compareRequired, compareProperties, compareAdditionalProperties."""
    found: list[str] = []
    for name in original.properties:
        if name in update.properties:
            if name in original.required and name not in update.required:
                found.append("REQUIRED_ATTRIBUTE_REMOVED")
            elif name not in original.required and name in update.required:
                found.append("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if update.properties[name].has_default
                             else "REQUIRED_ATTRIBUTE_ADDED")
    for name in sorted(set(original.properties) | set(update.properties)):
        o, u = original.properties.get(name), update.properties.get(name)
        if u is None:
            if update.content == "open":
                found.append("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
            elif update.content == "partial":
                found.append("PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if _covered(o, None)
                             else "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
            else:
                found.append("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        elif o is None:
            required = name in update.required
            with_default = "_WITH_DEFAULT" if u.has_default else ""
            if original.content == "open":
                found.append(f"REQUIRED_PROPERTY{with_default}_ADDED_TO_OPEN_CONTENT_MODEL" if required
                             else "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
                continue
            if original.content == "partial":
                found.append("PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if _covered(None, u)
                             else "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
            found.append(f"REQUIRED_PROPERTY{with_default}_ADDED_TO_UNOPEN_CONTENT_MODEL" if required
                         else "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        else:
            found += _json_property(o, u)
    permits = {"open": True, "partial": True, "closed": False}
    if permits[original.content] != permits[update.content]:
        found.append("ADDITIONAL_PROPERTIES_ADDED" if permits[update.content] else "ADDITIONAL_PROPERTIES_REMOVED")
    elif original.content == "open" and update.content == "partial":
        found.append("ADDITIONAL_PROPERTIES_NARROWED")
    elif original.content == "partial" and update.content == "open":
        found.append("ADDITIONAL_PROPERTIES_EXTENDED")
    return [(d, d in _JSON_STRICT_COMPATIBLE) for d in found]


def _json_bound_edit(rng: random.Random, p: JsonProperty) -> str:
    key = rng.choice(_JSON_BOUNDS[p.type])
    if key not in p.bounds:
        p.bounds[key] = rng.randint(1, 20)
        return f"adds {key}"
    if rng.random() < 0.3:
        del p.bounds[key]
        return f"drops {key}"
    up = p.bounds[key] == 0 or rng.random() < 0.5
    p.bounds[key] += rng.randint(1, 5) if up else -rng.randint(1, min(5, p.bounds[key]))
    return f"{key} {'raised' if up else 'lowered'}"


def json_edit(rng: random.Random, o: JsonObject, serial: int) -> tuple[JsonObject, str]:
    o = copy.deepcopy(o)
    names = list(o.properties)
    kinds = ["add", "add", "content", "type", "required", "required", "default", "bound", "bound", "remove"]
    kind = rng.choice(kinds if names else ["add", "content"])
    if kind == "add":
        name = f"p{serial}"
        p = JsonProperty(rng.choice(JSON_TYPES), rng.random() < 0.5)
        o.properties[name] = p
        required = rng.random() < 0.5
        if required:
            o.required.add(name)
        return o, f"add {name}:{p.type}{' required' if required else ''}{' with default' if p.has_default else ''}"
    if kind == "content":
        o.content = rng.choice([c for c in ("open", "closed", "partial") if c != o.content])
        return o, f"content model {o.content}"
    name = rng.choice(names)
    p = o.properties[name]
    if kind == "remove":
        del o.properties[name]
        o.required.discard(name)
        return o, f"remove {name}"
    if kind == "type":
        p.type = rng.choice([t for t in JSON_TYPES if t != p.type])
        p.bounds = {k: v for k, v in p.bounds.items() if k in _JSON_BOUNDS.get(p.type, ())}
        return o, f"{name} to {p.type}"
    if kind == "required":
        if name in o.required:
            o.required.discard(name)
            return o, f"{name} not required"
        o.required.add(name)
        return o, f"{name} required"
    if kind == "default":
        p.has_default = not p.has_default
        return o, f"{name} {'gets' if p.has_default else 'loses'} a default"
    if p.type not in _JSON_BOUNDS:
        p.type = "integer"
        return o, f"{name} to integer"
    return o, f"{name} {_json_bound_edit(rng, p)}"


def json_start(rng: random.Random) -> JsonObject:
    props = {f"a{i}": JsonProperty(rng.choice(JSON_TYPES), rng.random() < 0.3) for i in range(rng.randint(1, 3))}
    required = {n for n in props if rng.random() < 0.3}
    return JsonObject(props, required, rng.choice(["open", "open", "closed", "partial"]))


# =============================================================================================
# Protobuf: message M of one file (beside message N, and O and the enums Kind and Kind2 while
# used); Confluent's protobuf/diff (SchemaDiff, MessageSchemaDiff of 2026, FieldSchemaDiff).
# =============================================================================================
PROTO_SCALARS = ("int32", "int64", "uint32", "uint64", "bool", "sint32", "sint64", "fixed32", "sfixed32", "fixed64",
                 "sfixed64", "float", "double", "string", "bytes")
PROTO_TYPES = PROTO_SCALARS + ("Kind", "Kind2", "N", "O")
_GROUP = {**{t: "GENERAL_NUMBER" for t in ("int32", "int64", "uint32", "uint64", "bool", "Kind", "Kind2")},
          "sint32": "SIGNED_NUMBER", "sint64": "SIGNED_NUMBER", "fixed32": "FIXED32", "sfixed32": "FIXED32",
          "fixed64": "FIXED64", "sfixed64": "FIXED64", "float": "FLOAT", "double": "DOUBLE",
          "string": "STRING_OR_BYTES", "bytes": "STRING_OR_BYTES"}
_PROTO_COMPATIBLE = {
    "MESSAGE_ADDED", "ENUM_ADDED", "ENUM_REMOVED", "FIELD_ADDED", "FIELD_REMOVED", "FIELD_NAME_CHANGED",
    "FIELD_STRING_OR_BYTES_LABEL_CHANGED", "ONEOF_ADDED", "ONEOF_REMOVED", "ONEOF_FIELD_ADDED",
    "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
}


@dataclass
class ProtoField:
    name: str
    type: str
    label: str | None  # None: no label (proto3 plain field, oneof member); optional, required, repeated
    oneof: str | None = None


@dataclass
class ProtoMessage:
    proto3: bool
    fields: dict[int, ProtoField]


def _proto_used(m: ProtoMessage) -> tuple[list[str], list[str]]:
    used = {f.type for f in m.fields.values()}
    return ["N"] + (["O"] if "O" in used else []), [e for e in ("Kind", "Kind2") if e in used]


def proto_text(m: ProtoMessage) -> str:
    messages, enums = _proto_used(m)
    lines = [f'syntax = "{"proto3" if m.proto3 else "proto2"}";']
    lines += [f"enum {e} {{ {e.upper()}_A = 0; {e.upper()}_B = 1; }}" for e in enums]
    lines += [f"message {name} {{ {'' if m.proto3 else 'optional '}int32 x = 1; }}" for name in messages]
    body = []
    oneofs: dict[str, list[str]] = {}
    for number, f in sorted(m.fields.items()):
        text = f"{f.type} {f.name} = {number};"
        if f.oneof is not None:
            oneofs.setdefault(f.oneof, []).append(text)
        else:
            body.append(f"{f.label + ' ' if f.label else ''}{text}")
    body += [f"oneof {name} {{ {' '.join(members)} }}" for name, members in oneofs.items()]
    lines.append("message M { " + " ".join(body) + " }")
    return "\n".join(lines) + "\n"


def proto_descriptor(m: ProtoMessage) -> descriptor_pb2.FileDescriptorProto:
    """The descriptor proto_text(m) stands for, as protoc would build it (proto3 `optional` with its
    synthetic oneof), built directly: parsing text for every case would take the suite's budget."""
    F = descriptor_pb2.FieldDescriptorProto
    scalar = {name: getattr(F, f"TYPE_{name.upper()}") for name in PROTO_SCALARS}
    labels = {None: F.LABEL_OPTIONAL, "optional": F.LABEL_OPTIONAL, "required": F.LABEL_REQUIRED,
              "repeated": F.LABEL_REPEATED}
    fdp = descriptor_pb2.FileDescriptorProto(name="m.proto", syntax="proto3" if m.proto3 else "proto2")
    messages, enums = _proto_used(m)
    for e in enums:
        enum = fdp.enum_type.add(name=e)
        enum.value.add(name=f"{e.upper()}_A", number=0)
        enum.value.add(name=f"{e.upper()}_B", number=1)
    for name in messages:
        fdp.message_type.add(name=name).field.add(name="x", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL,
                                                  json_name="x")
    msg = fdp.message_type.add(name="M")
    real = sorted({f.oneof for f in m.fields.values() if f.oneof is not None},
                  key=lambda o: min(n for n, f in m.fields.items() if f.oneof == o))
    for name in real:
        msg.oneof_decl.add(name=name)
    for number, f in sorted(m.fields.items()):
        out = msg.field.add(name=f.name, number=number, label=labels[f.label], json_name=f.name)
        if f.type in scalar:
            out.type = scalar[f.type]
        else:
            out.type = F.TYPE_ENUM if f.type.startswith("Kind") else F.TYPE_MESSAGE
            out.type_name = f".{f.type}"
        if f.oneof is not None:
            out.oneof_index = real.index(f.oneof)
    for out in msg.field:
        if m.proto3 and m.fields[out.number].label == "optional":
            out.proto3_optional = True
            out.oneof_index = len(msg.oneof_decl)
            msg.oneof_decl.add(name=f"_{out.name}")
    return fdp


def _proto_field(original: ProtoField, update: ProtoField) -> list[str]:
    """FieldSchemaDiff.compare."""
    found = ["FIELD_NAME_CHANGED"] if original.name != update.name else []
    kind = {t: "MESSAGE" if t in ("N", "O") else "SCALAR" for t in PROTO_TYPES}
    if kind[original.type] != kind[update.type]:
        return found + ["FIELD_KIND_CHANGED"]
    if kind[original.type] == "MESSAGE":
        return found + (["FIELD_NAMED_TYPE_CHANGED"] if original.type != update.type else [])
    if _GROUP[original.type] != _GROUP[update.type]:
        return found + ["FIELD_SCALAR_KIND_CHANGED"]
    o_label = None if original.oneof else original.label
    u_label = None if update.oneof else update.label
    if o_label is not None and u_label is not None and o_label != u_label:
        found.append("FIELD_STRING_OR_BYTES_LABEL_CHANGED" if _GROUP[original.type] == "STRING_OR_BYTES"
                     else "FIELD_NUMERIC_LABEL_CHANGED")
    return found


def proto_expected(original: ProtoMessage, update: ProtoMessage) -> list[tuple[str, bool]]:
    """SchemaDiff.compareTypeElements and MessageSchemaDiff.compare for M, N, O, Kind and Kind2."""
    found: list[str] = []
    (o_messages, o_enums), (u_messages, u_enums) = _proto_used(original), _proto_used(update)
    found += ["MESSAGE_REMOVED" for name in o_messages if name not in u_messages]
    found += ["MESSAGE_ADDED" for name in u_messages if name not in o_messages]
    found += ["ENUM_REMOVED" for name in o_enums if name not in u_enums]
    found += ["ENUM_ADDED" for name in u_enums if name not in o_enums]
    o_fields, u_fields = original.fields, update.fields
    o_oneofs = {f.oneof for f in o_fields.values() if f.oneof}
    u_oneofs = {f.oneof for f in u_fields.values() if f.oneof}
    deleted = {name for name in o_oneofs - u_oneofs
               if not any(n in u_fields for n, f in o_fields.items() if f.oneof == name)}
    for name in u_oneofs:
        groups, moved_in = set(), 0
        for number, f in u_fields.items():
            if f.oneof != name or number not in o_fields:
                continue
            was = o_fields[number].oneof
            groups.add(f"oneof:{was}" if was else f"field:{number}")
            moved_in += was is None
        if len(groups) > 1:
            found.append("MULTIPLE_FIELDS_MOVED_TO_ONEOF" if moved_in > 1 else "FIELD_MOVED_TO_EXISTING_ONEOF")
    found += ["ONEOF_REMOVED" for _ in o_oneofs - u_oneofs] + ["ONEOF_ADDED" for _ in u_oneofs - o_oneofs]
    for number in sorted(set(o_fields) | set(u_fields)):
        o, u = o_fields.get(number), u_fields.get(number)
        if u is None:
            assert o is not None
            if o.oneof is None:
                found.append("REQUIRED_FIELD_REMOVED" if o.label == "required" else "FIELD_REMOVED")
            elif o.oneof not in deleted:
                found.append("ONEOF_FIELD_REMOVED")
        elif o is None:
            if u.oneof is None:
                found.append("REQUIRED_FIELD_ADDED" if u.label == "required" else "FIELD_ADDED")
            else:
                found.append("ONEOF_FIELD_ADDED")
        else:
            if o.oneof is not None and u.oneof is None:
                found.append("ONEOF_FIELD_MOVED_TO_TOP_LEVEL")
            found += _proto_field(o, u)
    return [(d, d in _PROTO_COMPATIBLE) for d in found]


def _proto_labels(m: ProtoMessage) -> list[str | None]:
    return [None, "optional", "repeated"] if m.proto3 else ["optional", "required", "repeated"]


def proto_edit(rng: random.Random, m: ProtoMessage, serial: int) -> tuple[ProtoMessage, str]:
    m = copy.deepcopy(m)
    numbers = sorted(m.fields)
    plain = [n for n in numbers if m.fields[n].oneof is None]
    members = [n for n in numbers if m.fields[n].oneof is not None]
    oneofs = sorted({m.fields[n].oneof for n in members if m.fields[n].oneof})
    kinds = ["add", "add", "remove", "type", "type", "rename"]
    kinds += ["label", "label", "into_oneof", "into_oneof"] if plain else []
    kinds += ["out_of_oneof", "rename_oneof", "delete_oneof"] if members else []
    kinds += ["rename_enum"] if any(f.type.startswith("Kind") for f in m.fields.values()) else []
    kinds += ["other_message"] if any(f.type in ("N", "O") for f in m.fields.values()) else []
    kind = rng.choice(kinds if numbers else ["add"])
    if kind == "add":
        number = (numbers[-1] if numbers else 0) + 1
        t = rng.choice(PROTO_TYPES)
        where = rng.choice(["top", "top", "oneof"])
        if where == "oneof":
            oneof = rng.choice(oneofs + [f"c{serial}"])
            m.fields[number] = ProtoField(f"f{serial}", t, None, oneof)
            return m, f"add {t} {number} to oneof {oneof}"
        label = rng.choice(_proto_labels(m))
        m.fields[number] = ProtoField(f"f{serial}", t, label)
        return m, f"add {label + ' ' if label else ''}{t} {number}"
    if kind == "remove":
        number = rng.choice(numbers)
        del m.fields[number]
        return m, f"remove {number}"
    if kind == "type":
        number = rng.choice(numbers)
        m.fields[number].type = rng.choice([t for t in PROTO_TYPES if t != m.fields[number].type])
        return m, f"{number} to {m.fields[number].type}"
    if kind == "rename":
        number = rng.choice(numbers)
        m.fields[number].name = f"r{serial}"
        return m, f"{number} renamed"
    if kind == "label":
        number = rng.choice(plain)
        old = m.fields[number].label
        m.fields[number].label = rng.choice([lb for lb in _proto_labels(m) if lb != old])
        return m, f"{number} label {old or 'none'} to {m.fields[number].label or 'none'}"
    if kind == "into_oneof":
        chosen = rng.sample(plain, k=min(len(plain), rng.choice([1, 1, 2])))
        oneof = rng.choice(oneofs + [f"c{serial}"])
        for number in chosen:
            m.fields[number].oneof, m.fields[number].label = oneof, None
        return m, f"{'+'.join(map(str, chosen))} into oneof {oneof}"
    if kind == "out_of_oneof":
        number = rng.choice(members)
        m.fields[number].oneof = None
        m.fields[number].label = None if m.proto3 else "optional"
        return m, f"{number} out of its oneof"
    if kind == "rename_oneof":
        old_name = rng.choice(oneofs)
        for f in m.fields.values():
            if f.oneof == old_name:
                f.oneof = f"o{serial}"
        return m, f"oneof {old_name} renamed"
    if kind == "delete_oneof":
        gone = rng.choice(oneofs)
        m.fields = {n: f for n, f in m.fields.items() if f.oneof != gone}
        return m, f"oneof {gone} deleted"
    if kind == "other_message":
        number = rng.choice([n for n, f in m.fields.items() if f.type in ("N", "O")])
        m.fields[number].type = "O" if m.fields[number].type == "N" else "N"
        return m, f"{number} to message {m.fields[number].type}"
    for f in m.fields.values():
        if f.type.startswith("Kind"):
            f.type = "Kind2" if f.type == "Kind" else "Kind"
    return m, "enum renamed"


def proto_start(rng: random.Random) -> ProtoMessage:
    m = ProtoMessage(rng.random() < 0.75, {})
    for number in range(1, rng.randint(2, 4)):
        oneof = "c" if rng.random() < 0.3 else None
        label = None if oneof else rng.choice(_proto_labels(m))
        m.fields[number] = ProtoField(f"a{number}", rng.choice(PROTO_TYPES), label, oneof)
    return m


# =============================================================================================
# cases and the table
# =============================================================================================
@dataclass
class Case:
    schema_type: str
    number: int
    versions: list[Any]  # three models
    edits: list[str]


@dataclass
class Kind:
    start: Callable[[random.Random], Any]
    edit: Callable[[random.Random, Any, int], tuple[Any, str]]
    expected: Callable[[Any, Any], list[tuple[str, bool]]]


KINDS = {"AVRO": Kind(avro_start, avro_edit, avro_expected), "JSON": Kind(json_start, json_edit, json_expected),
         "PROTOBUF": Kind(proto_start, proto_edit, proto_expected)}


def cases(schema_type: str) -> list[Case]:
    rng = random.Random(f"{SEED}-{schema_type}")
    kind = KINDS[schema_type]
    out = []
    for number in range(CASES_PER_TYPE):
        first = kind.start(rng)
        second, edit1 = kind.edit(rng, first, 1)
        third, edit2 = kind.edit(rng, second, 2)
        out.append(Case(schema_type, number, [first, second, third], [edit1, edit2]))
    return out


def refusals(case: Case, original: int, update: int) -> list[str]:
    """The refusing differences from version `original` to version `update` (0-based)."""
    expected = KINDS[case.schema_type].expected(case.versions[original], case.versions[update])
    return sorted({name for name, compatible in expected if not compatible})


def verdicts(case: Case) -> tuple[dict[str, bool], list[str]]:
    """Whether the third version may follow at each level, and the refusals that decide it
    (`a>b`: from version a, the writer's, to version b, the reader's)."""
    back = {old: refusals(case, old, 2) for old in (0, 1)}
    fwd = {old: refusals(case, 2, old) for old in (0, 1)}
    out = {
        "BACKWARD": not back[1], "FORWARD": not fwd[1], "FULL": not back[1] and not fwd[1],
        "BACKWARD_TRANSITIVE": not back[0] and not back[1], "FORWARD_TRANSITIVE": not fwd[0] and not fwd[1],
    }
    out["FULL_TRANSITIVE"] = out["BACKWARD_TRANSITIVE"] and out["FORWARD_TRANSITIVE"]
    why = [f"{old + 1}>3:{name}" for old in (0, 1) for name in back[old]]
    why += [f"3>{old + 1}:{name}" for old in (0, 1) for name in fwd[old]]
    return out, why


def table() -> str:
    lines = ["# Verdicts of Confluent's rules on the generated evolutions (evolution.py, seed "
             f"{SEED}): the third version against the second (and the first: _TRANSITIVE).",
             "# columns: " + " ".join(LEVELS) + " (y: may follow, n: refused); the edits; the refusals "
             "(a>b: from version a, the writer's, to b, the reader's)"]
    for schema_type in KINDS:
        for case in cases(schema_type):
            ok, why = verdicts(case)
            marks = "".join("y" if ok[level] else "n" for level in LEVELS)
            lines.append(f"{schema_type} {case.number:03d} {marks} | {' ; '.join(case.edits)} | {' '.join(why)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    TABLE.write_text(table())
    print(f"wrote {TABLE}")
