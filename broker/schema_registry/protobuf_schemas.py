"""Protobuf compatibility, Confluent's rules (its `ProtobufSchemaDiff`; Redpanda's checker says
the same): messages are matched by full name, fields by number, and the reader (the schema that
must read) is compared with the writer (the schema the data was written with). Refused:

- PACKAGE_CHANGED: the file's package differs (every full name moves);
- MESSAGE_REMOVED: a message of the writer is missing from the reader;
- FIELD_KIND_CHANGED: a field number changes between scalar, enum and message;
- FIELD_SCALAR_KIND_CHANGED: a scalar field number changes type outside the wire-compatible groups
  {int32, uint32, int64, uint64, bool}, {sint32, sint64}, {fixed32, sfixed32}, {fixed64, sfixed64},
  {string, bytes} (a field number reused with another type is caught here);
- FIELD_NAMED_TYPE_CHANGED: a message or enum field names another type;
- REQUIRED_FIELD_ADDED / REQUIRED_FIELD_REMOVED (proto2);
- ONEOF_FIELD_REMOVED: a field of a writer's oneof is gone from the reader's;
- MULTIPLE_FIELDS_MOVED_TO_ONEOF: several plain writer fields end up in one reader oneof;
- FIELD_MOVED_TO_EXISTING_ONEOF: a plain writer field joins a oneof the writer already had.
Allowed: fields added or removed (unknown fields are skipped on the wire; reserve their numbers),
renamed fields, new messages and enums, enum constants added or removed.

Schemas are compared as descriptors (protobuf_descriptors.py), whichever form they came in."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2

from . import protobuf_descriptors as pd

F = descriptor_pb2.FieldDescriptorProto
_WIRE_GROUPS = [
    {F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_BOOL},
    {F.TYPE_SINT32, F.TYPE_SINT64},
    {F.TYPE_FIXED32, F.TYPE_SFIXED32},
    {F.TYPE_FIXED64, F.TYPE_SFIXED64},
    {F.TYPE_STRING, F.TYPE_BYTES},
]


def _messages(fdp: descriptor_pb2.FileDescriptorProto) -> dict[str, Any]:
    """Every message of the file by its name within the package (map entries included)."""
    out: dict[str, Any] = {}

    def walk(messages: Any, scope: str) -> None:
        for m in messages:
            name = f"{scope}{m.name}"
            out[name] = m
            walk(m.nested_type, f"{name}.")

    walk(fdp.message_type, "")
    return out


def _kind(field: Any) -> str:
    if field.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
        return "message"
    return "enum" if field.type == F.TYPE_ENUM else "scalar"


def _local(type_name: str, package: str) -> str:
    prefix = f".{package}." if package else "."
    return type_name[len(prefix):] if type_name.startswith(prefix) else type_name


def _scalar_compatible(a: int, b: int) -> bool:
    return a == b or any(a in group and b in group for group in _WIRE_GROUPS)


def incompatibilities(reader: descriptor_pb2.FileDescriptorProto,
                      writer: descriptor_pb2.FileDescriptorProto) -> list[str]:
    """Why `reader` cannot read what `writer` wrote (empty: it can)."""
    found: list[tuple[str, str]] = []
    if reader.package != writer.package:
        found.append(("PACKAGE_CHANGED", "#/"))
    r_messages, w_messages = _messages(reader), _messages(writer)
    for name, w_msg in w_messages.items():
        r_msg = r_messages.get(name)
        if r_msg is None:
            found.append(("MESSAGE_REMOVED", f"#/{name}"))
            continue
        _compare_message(r_msg, w_msg, f"#/{name}", reader.package, writer.package, found)
    return [f"{{errorType:'{kind}', location:'{path}'}}" for kind, path in found]


def _compare_message(reader: Any, writer: Any, path: str, r_package: str, w_package: str,
                     found: list[tuple[str, str]]) -> None:
    r_fields = {f.number: f for f in reader.field}
    w_fields = {f.number: f for f in writer.field}

    def real_oneof(message: Any, field: Any) -> str | None:
        if not field.HasField("oneof_index") or field.proto3_optional:
            return None
        return message.oneof_decl[field.oneof_index].name

    for number, w in w_fields.items():
        where = f"{path}/{number}"
        r = r_fields.get(number)
        if r is None:
            if w.label == F.LABEL_REQUIRED:
                found.append(("REQUIRED_FIELD_REMOVED", where))
            if real_oneof(writer, w) is not None:
                found.append(("ONEOF_FIELD_REMOVED", where))
            continue
        if _kind(r) != _kind(w):
            found.append(("FIELD_KIND_CHANGED", where))
        elif _kind(w) == "scalar":
            if not _scalar_compatible(r.type, w.type):
                found.append(("FIELD_SCALAR_KIND_CHANGED", where))
        elif _local(r.type_name, r_package) != _local(w.type_name, w_package):
            found.append(("FIELD_NAMED_TYPE_CHANGED", where))
        if r.label == F.LABEL_REQUIRED and w.label != F.LABEL_REQUIRED:
            found.append(("REQUIRED_FIELD_ADDED", where))
        elif w.label == F.LABEL_REQUIRED and r.label != F.LABEL_REQUIRED:
            found.append(("REQUIRED_FIELD_REMOVED", where))
        w_oneof, r_oneof = real_oneof(writer, w), real_oneof(reader, r)
        if w_oneof is not None and r_oneof is None:
            found.append(("ONEOF_FIELD_REMOVED", where))
    for number, r in r_fields.items():
        if number not in w_fields and r.label == F.LABEL_REQUIRED:
            found.append(("REQUIRED_FIELD_ADDED", f"{path}/{number}"))
    # fields that moved into a oneof
    w_oneofs = {o.name for i, o in enumerate(writer.oneof_decl)
                if any(f.HasField("oneof_index") and f.oneof_index == i and not f.proto3_optional
                       for f in writer.field)}
    moved: dict[str, int] = {}
    for number, r in r_fields.items():
        r_oneof = real_oneof(reader, r)
        w = w_fields.get(number)
        if r_oneof is None or w is None or real_oneof(writer, w) is not None:
            continue
        if r_oneof in w_oneofs:
            found.append(("FIELD_MOVED_TO_EXISTING_ONEOF", f"{path}/{number}"))
        moved[r_oneof] = moved.get(r_oneof, 0) + 1
    for name, count in moved.items():
        if count > 1 and name not in w_oneofs:
            found.append(("MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"{path}/{name}"))


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
