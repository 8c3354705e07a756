"""Protobuf compatibility, Confluent's rules: its `protobuf/diff` package (`SchemaDiff`,
`MessageSchemaDiff`, `FieldSchemaDiff`) as of confluentinc/schema-registry 794611bd (Aug 2026),
followed here on descriptors. `differences(original, update)` names every change from the schema
the data was written with (original) to the schema that reads it (update); the names outside
`COMPATIBLE` refuse. BACKWARD compares (old, new), FORWARD (new, old).

- PACKAGE_CHANGED: the file's package differs. MESSAGE_REMOVED (refused) / MESSAGE_ADDED: by
  name, nested ones too; map entries are no messages. ENUM_ADDED / ENUM_REMOVED and changed
  constants are fine (constants are not compared).
- Fields are matched by number across the whole message, whichever oneof holds them:
  FIELD_ADDED / FIELD_REMOVED (fine), REQUIRED_FIELD_ADDED / REQUIRED_FIELD_REMOVED (proto2,
  refused); FIELD_NAME_CHANGED (fine).
- Kinds: scalar (an enum field is a scalar), map, message; a field changing kind is
  FIELD_KIND_CHANGED. Scalars fall in wire groups {int32, int64, uint32, uint64, bool, any enum},
  {sint32, sint64}, {string, bytes}, {fixed32, sfixed32}, {fixed64, sfixed64}, {float}, {double};
  leaving the group is FIELD_SCALAR_KIND_CHANGED (enum names are never compared).
- Labels are compared only when both fields carry one (proto2 optional/required/repeated, proto3
  `optional` or `repeated`; a proto3 field without a label and a oneof member carry none, as in
  Confluent's `ProtobufSchema.label`): a numeric field changing label is
  FIELD_NUMERIC_LABEL_CHANGED (refused), a string or bytes one FIELD_STRING_OR_BYTES_LABEL_CHANGED
  (fine); message fields' labels are not compared.
- A message field naming another type (by its name within the package) is
  FIELD_NAMED_TYPE_CHANGED, and so is one naming a message of the same name that compares
  incompatibly. Maps compare their key and value types.
- Oneofs (the rules of Confluent's June 2026 `MessageSchemaDiff`, DGS-24604; releases before it
  compared a oneof's fields only with those of the oneof of the same name, so renaming or deleting
  a oneof hid a member's type change or removal):
  ONEOF_ADDED / ONEOF_REMOVED (fine); a member of an original oneof gone from the message is
  ONEOF_FIELD_REMOVED (refused) unless no member of that oneof survives anywhere (a whole oneof
  deleted); ONEOF_FIELD_ADDED and ONEOF_FIELD_MOVED_TO_TOP_LEVEL are fine; an update oneof whose
  surviving members come from more than one original group (an original oneof, or each original
  top-level field) is MULTIPLE_FIELDS_MOVED_TO_ONEOF when more than one top-level field moved
  in, else FIELD_MOVED_TO_EXISTING_ONEOF (both refused).

Schemas are compared as descriptors (protobuf_descriptors.py), whichever form they came in."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2

from . import protobuf_descriptors as pd

F = descriptor_pb2.FieldDescriptorProto

COMPATIBLE = frozenset({
    "MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED", "ENUM_CONST_ADDED", "ENUM_CONST_CHANGED",
    "ENUM_CONST_REMOVED", "FIELD_ADDED", "FIELD_REMOVED", "FIELD_NAME_CHANGED", "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
    "ONEOF_ADDED", "ONEOF_REMOVED", "ONEOF_FIELD_ADDED", "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
})

# FieldSchemaDiff.scalarKind: the wire groups (an enum is a GENERAL_NUMBER)
_SCALAR_KIND = {
    F.TYPE_INT32: "GENERAL_NUMBER", F.TYPE_INT64: "GENERAL_NUMBER", F.TYPE_UINT32: "GENERAL_NUMBER",
    F.TYPE_UINT64: "GENERAL_NUMBER", F.TYPE_BOOL: "GENERAL_NUMBER", F.TYPE_ENUM: "GENERAL_NUMBER",
    F.TYPE_SINT32: "SIGNED_NUMBER", F.TYPE_SINT64: "SIGNED_NUMBER",
    F.TYPE_STRING: "STRING_OR_BYTES", F.TYPE_BYTES: "STRING_OR_BYTES",
    F.TYPE_FIXED32: "FIXED32", F.TYPE_SFIXED32: "FIXED32", F.TYPE_FIXED64: "FIXED64", F.TYPE_SFIXED64: "FIXED64",
    F.TYPE_FLOAT: "FLOAT", F.TYPE_DOUBLE: "DOUBLE",
}


class _File:
    """One side of the comparison: the file's messages and enums by name within its package."""

    def __init__(self, fdp: descriptor_pb2.FileDescriptorProto):
        self.fdp = fdp
        self.proto3 = fdp.syntax == "proto3"
        self.prefix = f".{fdp.package}." if fdp.package else "."
        self.messages: dict[str, Any] = {}
        self.enums: set[str] = set()

        def walk(messages: Any, enums: Any, scope: str) -> None:
            self.enums.update(f"{scope}{e.name}" for e in enums)
            for m in messages:
                self.messages[f"{scope}{m.name}"] = m
                walk(m.nested_type, m.enum_type, f"{scope}{m.name}.")

        walk(fdp.message_type, fdp.enum_type, "")

    def local(self, type_name: str) -> str:
        """A type's name within this file's package (a type of another package keeps its full name)."""
        return type_name[len(self.prefix):] if type_name.startswith(self.prefix) else type_name.lstrip(".")

    def map_entry(self, field: Any) -> Any:
        if field.type != F.TYPE_MESSAGE or field.label != F.LABEL_REPEATED:
            return None
        entry = self.messages.get(self.local(field.type_name))
        return entry if entry is not None and entry.options.map_entry else None

    def label(self, field: Any, in_oneof: bool) -> str | None:
        """The label Confluent's model gives the field (None: none written)."""
        if field.proto3_optional:
            return "OPTIONAL"
        if in_oneof or (self.proto3 and field.label != F.LABEL_REPEATED):
            return None
        return {F.LABEL_OPTIONAL: "OPTIONAL", F.LABEL_REQUIRED: "REQUIRED", F.LABEL_REPEATED: "REPEATED"}[field.label]


def _oneofs(message: Any) -> tuple[dict[int, Any], dict[int, str], dict[str, list[int]]]:
    """Fields by number, the real oneof (not proto3 `optional`'s) of each member, and each oneof's members."""
    by_number = {f.number: f for f in message.field}
    member_of: dict[int, str] = {}
    members: dict[str, list[int]] = {}
    for f in message.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            name = message.oneof_decl[f.oneof_index].name
            member_of[f.number] = name
            members.setdefault(name, []).append(f.number)
    return by_number, member_of, members


class _Diff:
    def __init__(self, original: descriptor_pb2.FileDescriptorProto, update: descriptor_pb2.FileDescriptorProto):
        self.o, self.u = _File(original), _File(update)
        self.found: list[tuple[str, str]] = []
        # messages compared (by name) and whether they compared compatibly; in progress: True
        self._compatible: dict[str, bool] = {}

    def add(self, kind: str, path: str) -> None:
        self.found.append((kind, path))

    def run(self) -> None:
        if self.o.fdp.package != self.u.fdp.package:
            self.add("PACKAGE_CHANGED", "#/")
        for name in sorted(set(self.o.messages) | set(self.u.messages)):
            o_msg, u_msg = self.o.messages.get(name), self.u.messages.get(name)
            if o_msg is not None and o_msg.options.map_entry or u_msg is not None and u_msg.options.map_entry:
                continue
            if u_msg is None:
                self.add("MESSAGE_REMOVED", f"#/{name}")
            elif o_msg is None:
                self.add("MESSAGE_ADDED", f"#/{name}")
            else:
                self.message(name)
        for name in sorted(self.o.enums - self.u.enums):
            self.add("ENUM_REMOVED", f"#/{name}")
        for name in sorted(self.u.enums - self.o.enums):
            self.add("ENUM_ADDED", f"#/{name}")

    def message(self, name: str) -> bool:
        """Compare the message of this name on both sides once; whether it compared compatibly."""
        if name in self._compatible:
            return self._compatible[name]
        self._compatible[name] = True  # a message reached again through its own fields
        before = len(self.found)
        self._compare_message(self.o.messages[name], self.u.messages[name], f"#/{name}")
        ok = all(kind in COMPATIBLE for kind, _ in self.found[before:])
        self._compatible[name] = ok
        return ok

    def _compare_message(self, original: Any, update: Any, path: str) -> None:
        o_fields, o_oneof_of, o_oneofs = _oneofs(original)
        u_fields, u_oneof_of, u_oneofs = _oneofs(update)
        deleted = {name for name, numbers in o_oneofs.items()
                   if name not in u_oneofs and not any(n in u_fields for n in numbers)}
        for name, numbers in u_oneofs.items():
            groups: set[str] = set()
            moved_in = 0
            for number in numbers:
                if number in o_oneof_of:
                    groups.add(f"oneof:{o_oneof_of[number]}")
                elif number in o_fields:
                    groups.add(f"field:{number}")
                    moved_in += 1
            if len(groups) > 1:
                self.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF" if moved_in > 1 else "FIELD_MOVED_TO_EXISTING_ONEOF",
                         f"{path}/{name}")
        for name in sorted(set(o_oneofs) | set(u_oneofs)):
            if name not in u_oneofs:
                self.add("ONEOF_REMOVED", f"{path}/{name}")
            elif name not in o_oneofs:
                self.add("ONEOF_ADDED", f"{path}/{name}")
        for number in sorted(set(o_fields) | set(u_fields)):
            o: Any = o_fields.get(number)
            u: Any = u_fields.get(number)
            o_oneof, u_oneof = o_oneof_of.get(number), u_oneof_of.get(number)
            if u is None:
                if o_oneof is not None:
                    if o_oneof not in deleted:
                        self.add("ONEOF_FIELD_REMOVED", f"{path}/{o_oneof}/{number}")
                else:
                    self.add("REQUIRED_FIELD_REMOVED" if o.label == F.LABEL_REQUIRED else "FIELD_REMOVED",
                             f"{path}/{number}")
            elif o is None:
                if u_oneof is not None:
                    self.add("ONEOF_FIELD_ADDED", f"{path}/{u_oneof}/{number}")
                else:
                    self.add("REQUIRED_FIELD_ADDED" if u.label == F.LABEL_REQUIRED else "FIELD_ADDED",
                             f"{path}/{number}")
            else:
                if o_oneof is not None and u_oneof is None:
                    self.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", f"{path}/{number}")
                where = f"{path}/{u_oneof}/{number}" if u_oneof is not None else f"{path}/{number}"
                if o.name != u.name:
                    self.add("FIELD_NAME_CHANGED", where)
                self._labels_and_types(self.o.label(o, o_oneof is not None), self.u.label(u, u_oneof is not None),
                                       o, u, where)

    def _kind(self, side: _File, field: Any) -> str:
        if field.type == F.TYPE_ENUM or field.type in _SCALAR_KIND:
            return "SCALAR"
        return "MAP" if side.map_entry(field) is not None else "MESSAGE"

    def _labels_and_types(self, o_label: str | None, u_label: str | None, o: Any, u: Any, where: str) -> None:
        o_kind, u_kind = self._kind(self.o, o), self._kind(self.u, u)
        if o_kind != u_kind:
            self.add("FIELD_KIND_CHANGED", where)
        elif o_kind == "SCALAR":
            o_scalar, u_scalar = _SCALAR_KIND[o.type], _SCALAR_KIND[u.type]
            if o_scalar != u_scalar:
                self.add("FIELD_SCALAR_KIND_CHANGED", where)
            elif o_label is not None and u_label is not None and o_label != u_label:
                self.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED" if o_scalar == "STRING_OR_BYTES"
                         else "FIELD_NUMERIC_LABEL_CHANGED", where)
        elif o_kind == "MAP":
            o_entry, u_entry = self.o.map_entry(o), self.u.map_entry(u)
            for i in (0, 1):  # key, value
                self._labels_and_types(None, None, o_entry.field[i], u_entry.field[i], where)
        else:
            o_name, u_name = self.o.local(o.type_name), self.u.local(u.type_name)
            if o_name != u_name:
                self.add("FIELD_NAMED_TYPE_CHANGED", where)
            elif o_name in self.o.messages and o_name in self.u.messages and not self.message(o_name):
                self.add("FIELD_NAMED_TYPE_CHANGED", where)


def differences(original: descriptor_pb2.FileDescriptorProto,
                update: descriptor_pb2.FileDescriptorProto) -> list[tuple[str, str]]:
    """Every difference from `original` (the writer's schema) to `update` (the reader's), compatible
    or not, by Confluent's names."""
    diff = _Diff(original, update)
    diff.run()
    return diff.found


def incompatibilities(reader: descriptor_pb2.FileDescriptorProto,
                      writer: descriptor_pb2.FileDescriptorProto) -> list[str]:
    """Why `reader` cannot read what `writer` wrote (empty: it can)."""
    return [f"{{errorType:'{kind}', location:'{path}'}}" for kind, path in differences(writer, reader)
            if kind not in COMPATIBLE]


def parse(text: str, name: str, dependencies: list[descriptor_pb2.FileDescriptorProto]) -> \
        tuple[descriptor_pb2.FileDescriptorProto, str]:
    """(descriptor, text to store) for a schema given as .proto text or as a base64 descriptor
    (stored as text, as Confluent stores it). ValueError with the reason when it is not valid."""
    serialized = pd.decode_serialized(text)
    if serialized is not None:
        try:
            return serialized, pd.to_text(serialized)
        except (KeyError, ValueError) as exc:
            raise ValueError(f"cannot read the descriptor: {exc}") from None
    return pd.from_text(text, name, dependencies), text
