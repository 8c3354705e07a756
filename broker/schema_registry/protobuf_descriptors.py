"""Protobuf schemas in their two forms: `.proto` text (what the Java serializer registers and
Confluent answers) and a base64 `FileDescriptorProto` (what confluent-kafka's Python serializer
registers and reads back with `?format=serialized`). Text is parsed with proto-schema-parser and
turned into a `FileDescriptorProto` here (names resolved to full names as protoc does: innermost
scope first; map fields as nested `XEntry` messages; oneofs, proto3 `optional` as a synthetic
oneof; reserved ranges); a descriptor is printed back as text. Compatibility (protobuf_schemas.py)
compares descriptors, so both forms of one schema compare and match alike.

Types a schema uses from its imports are looked up in the referenced schemas' descriptors, then
among protobuf's well-known types (google/protobuf/*.proto)."""

from __future__ import annotations

import base64
import binascii
from typing import Any, Iterable

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

F = descriptor_pb2.FieldDescriptorProto
SCALARS: dict[str, int] = {
    "double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64,
    "int32": F.TYPE_INT32, "fixed64": F.TYPE_FIXED64, "fixed32": F.TYPE_FIXED32, "bool": F.TYPE_BOOL,
    "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "uint32": F.TYPE_UINT32, "sfixed32": F.TYPE_SFIXED32,
    "sfixed64": F.TYPE_SFIXED64, "sint32": F.TYPE_SINT32, "sint64": F.TYPE_SINT64,
}
SCALAR_NAMES = {v: k for k, v in SCALARS.items()}
_WELL_KNOWN = ("any", "api", "duration", "empty", "field_mask", "source_context", "struct", "timestamp", "type",
               "wrappers", "descriptor")


def decode_serialized(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The descriptor when `text` is a base64 FileDescriptorProto, else None (then it is .proto text)."""
    stripped = text.strip()
    if not stripped or "{" in stripped or ";" in stripped:
        return None
    try:
        raw = base64.b64decode(stripped, validate=True)
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return fdp


def encode_serialized(fdp: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.b64encode(fdp.SerializeToString()).decode()


def _well_known_kinds() -> dict[str, int]:
    """Full name (".google.protobuf.Timestamp") -> TYPE_MESSAGE or TYPE_ENUM for the well-known types."""
    import importlib

    kinds: dict[str, int] = {}
    for module in _WELL_KNOWN:
        try:
            mod = importlib.import_module(f"google.protobuf.{module}_pb2")
        except ImportError:
            continue
        fdp = descriptor_pb2.FileDescriptorProto()
        mod.DESCRIPTOR.CopyToProto(fdp)
        kinds.update(declared_types(fdp))
    return kinds


def declared_types(fdp: descriptor_pb2.FileDescriptorProto) -> dict[str, int]:
    """Every message and enum the file declares, by full name with a leading dot."""
    out: dict[str, int] = {}
    prefix = f".{fdp.package}" if fdp.package else ""

    def walk(messages: Iterable[Any], enums: Iterable[Any], scope: str) -> None:
        for e in enums:
            out[f"{scope}.{e.name}"] = F.TYPE_ENUM
        for m in messages:
            out[f"{scope}.{m.name}"] = F.TYPE_MESSAGE
            walk(m.nested_type, m.enum_type, f"{scope}.{m.name}")

    walk(fdp.message_type, fdp.enum_type, prefix)
    return out


def _entry_name(field_name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in field_name.split("_")) + "Entry"


def _ranges(raw: Iterable[str]) -> list[tuple[int, int]]:
    out = []
    for item in raw:
        lo, _sep, hi = str(item).replace(" ", "").partition("to")
        start = int(lo)
        end = 536870911 if hi == "max" else int(hi or lo)
        out.append((start, end + 1))
    return out


def from_text(text: str, name: str, dependencies: list[descriptor_pb2.FileDescriptorProto]) -> \
        descriptor_pb2.FileDescriptorProto:
    """The descriptor of `.proto` text. ValueError with the reason when the text is not a valid
    schema (a syntax error, an unknown type)."""
    from proto_schema_parser import ast
    from proto_schema_parser.parser import Parser

    from antlr4.error.ErrorListener import ErrorListener

    class Refuse(ErrorListener):
        # ANTLR recovers from syntax errors and prints them; a schema with one is invalid
        def syntaxError(self, recognizer, offendingSymbol, line, column, msg, e):  # noqa: N802, N803
            raise ValueError(f"line {line}:{column} {msg}")

    def strict(recognizer: Any) -> None:
        recognizer.removeErrorListeners()
        recognizer.addErrorListener(Refuse())

    try:
        tree = Parser(setup_lexer=strict, setup_parser=strict).parse(text)
    except Exception as exc:  # noqa: BLE001 - the parser raises its own and ANTLR's errors
        raise ValueError(f"cannot parse the .proto text: {exc}") from None
    fdp = descriptor_pb2.FileDescriptorProto(name=name)
    fdp.syntax = tree.syntax or "proto2"
    known: dict[str, int] = {}
    for dep in dependencies:
        known.update(declared_types(dep))
    for element in tree.file_elements:
        if isinstance(element, ast.Package):
            fdp.package = element.name
        elif isinstance(element, ast.Import):
            if element.public:
                fdp.public_dependency.append(len(fdp.dependency))
            fdp.dependency.append(element.name)
    scope_root = f".{fdp.package}" if fdp.package else ""
    pending: list[tuple[Any, str, str]] = []  # (FieldDescriptorProto, type text, scope) to resolve

    def build_enum(node: Any, target: Any) -> None:
        target.name = node.name
        for el in node.elements:
            if isinstance(el, ast.EnumValue):
                target.value.add(name=el.name, number=el.number)

    def build_message(node: Any, target: Any, scope: str) -> None:
        target.name = node.name
        here = f"{scope}.{node.name}"
        known[here] = F.TYPE_MESSAGE
        real_oneofs: list[tuple[str, list[Any]]] = []
        synthetic: list[Any] = []
        for el in node.elements:
            if isinstance(el, ast.Field):
                add_field(target, el, here, None, synthetic)
            elif isinstance(el, ast.MapField):
                entry = target.nested_type.add(name=_entry_name(el.name))
                entry.options.map_entry = True
                key = entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL)
                set_type(key, el.key_type, here)
                value = entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL)
                set_type(value, el.value_type, here)
                known[f"{here}.{entry.name}"] = F.TYPE_MESSAGE
                target.field.add(name=el.name, number=el.number, label=F.LABEL_REPEATED, type=F.TYPE_MESSAGE,
                                 type_name=f"{here}.{entry.name}", json_name=_json_name(el.name))
            elif isinstance(el, ast.OneOf):
                real_oneofs.append((el.name, [f for f in el.elements if isinstance(f, ast.Field)]))
            elif isinstance(el, ast.Message):
                build_message(el, target.nested_type.add(), here)
            elif isinstance(el, ast.Enum):
                known[f"{here}.{el.name}"] = F.TYPE_ENUM
                build_enum(el, target.enum_type.add())
            elif isinstance(el, ast.Reserved):
                for start, end in _ranges(el.ranges):
                    target.reserved_range.add(start=start, end=end)
                target.reserved_name.extend(el.names)
        for index, (oneof_name, fields) in enumerate(real_oneofs):
            target.oneof_decl.add(name=oneof_name)
            for f in fields:
                add_field(target, f, here, index, synthetic)
        for field in synthetic:
            field.oneof_index = len(target.oneof_decl)
            target.oneof_decl.add(name=f"_{field.name}")

    def add_field(target: Any, el: Any, scope: str, oneof: int | None, synthetic: list[Any]) -> None:
        card = getattr(el.cardinality, "value", None)
        label = {"REPEATED": F.LABEL_REPEATED, "REQUIRED": F.LABEL_REQUIRED}.get(card or "", F.LABEL_OPTIONAL)
        field = target.field.add(name=el.name, number=el.number, label=label, json_name=_json_name(el.name))
        set_type(field, el.type, scope)
        if oneof is not None:
            field.oneof_index = oneof
        elif card == "OPTIONAL" and fdp.syntax == "proto3":
            field.proto3_optional = True
            synthetic.append(field)
        for option in getattr(el, "options", []) or []:
            if getattr(option, "name", None) == "default":
                field.default_value = str(getattr(option, "value", ""))

    def set_type(field: Any, type_text: str, scope: str) -> None:
        if type_text in SCALARS:
            field.type = SCALARS[type_text]
        else:
            pending.append((field, type_text, scope))

    for element in tree.file_elements:
        if isinstance(element, ast.Message):
            build_message(element, fdp.message_type.add(), scope_root)
        elif isinstance(element, ast.Enum):
            known[f"{scope_root}.{element.name}"] = F.TYPE_ENUM
            build_enum(element, fdp.enum_type.add())
    for field, type_text, scope in pending:
        full = _resolve(type_text, scope, known)
        field.type_name = full
        field.type = known[full]
    return fdp


_KNOWN_WELL: dict[str, int] = {}


def _resolve(type_text: str, scope: str, known: dict[str, int]) -> str:
    if type_text.startswith("."):
        candidates = [type_text]
    else:
        candidates = []
        parts = scope.split(".")
        while True:
            prefix = ".".join(parts)
            candidates.append(f"{prefix}.{type_text}")
            if not parts or parts == [""]:
                break
            parts = parts[:-1]
    for full in candidates:
        if full in known:
            return full
    if not _KNOWN_WELL:
        _KNOWN_WELL.update(_well_known_kinds())
    for full in candidates:
        if full in _KNOWN_WELL:
            known[full] = _KNOWN_WELL[full]
            return full
    raise ValueError(f"unknown type {type_text!r}")


def _json_name(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def to_text(fdp: descriptor_pb2.FileDescriptorProto) -> str:
    """`.proto` text for a descriptor (types printed by full name)."""
    lines = [f'syntax = "{fdp.syntax or "proto2"}";']
    if fdp.package:
        lines.append(f"package {fdp.package};")
    for i, dep in enumerate(fdp.dependency):
        lines.append(f'import {"public " if i in fdp.public_dependency else ""}"{dep}";')
    proto3 = fdp.syntax == "proto3"
    scope = f".{fdp.package}" if fdp.package else ""
    for message in fdp.message_type:
        _print_message(message, lines, "", proto3, scope)
    for enum in fdp.enum_type:
        _print_enum(enum, lines, "")
    return "\n".join(lines) + "\n"


def _print_enum(enum: Any, lines: list[str], indent: str) -> None:
    lines.append(f"{indent}enum {enum.name} {{")
    for value in enum.value:
        lines.append(f"{indent}  {value.name} = {value.number};")
    lines.append(f"{indent}}}")


def _type_text(field: Any) -> str:
    return SCALAR_NAMES[field.type] if field.type in SCALAR_NAMES else field.type_name


def _print_field(field: Any, entries: dict[str, Any], indent: str, proto3: bool, in_oneof: bool) -> str:
    if field.type_name in entries and field.label == F.LABEL_REPEATED:
        key, value = entries[field.type_name].field[0], entries[field.type_name].field[1]
        return f"{indent}map<{_type_text(key)}, {_type_text(value)}> {field.name} = {field.number};"
    label = ""
    if not in_oneof:
        if field.label == F.LABEL_REPEATED:
            label = "repeated "
        elif field.label == F.LABEL_REQUIRED:
            label = "required "
        elif field.proto3_optional or not proto3:
            label = "optional "
    default = f' [default = {field.default_value}]' if field.HasField("default_value") else ""
    return f"{indent}{label}{_type_text(field)} {field.name} = {field.number}{default};"


def _print_message(message: Any, lines: list[str], indent: str, proto3: bool, scope: str = "") -> None:
    lines.append(f"{indent}message {message.name} {{")
    inner = indent + "  "
    here = f"{scope}.{message.name}"
    full_entries = {f"{here}.{nested.name}": nested for nested in message.nested_type if nested.options.map_entry}
    real = {i for i, o in enumerate(message.oneof_decl)
            if not any(f.proto3_optional and f.oneof_index == i and f.HasField("oneof_index") for f in message.field)}
    for field in message.field:
        if field.HasField("oneof_index") and field.oneof_index in real:
            continue
        lines.append(_print_field(field, full_entries, inner, proto3, False))
    for i in sorted(real):
        lines.append(f"{inner}oneof {message.oneof_decl[i].name} {{")
        for field in message.field:
            if field.HasField("oneof_index") and field.oneof_index == i:
                lines.append(_print_field(field, full_entries, inner + "  ", proto3, True))
        lines.append(f"{inner}}}")
    for r in message.reserved_range:
        lines.append(f"{inner}reserved {r.start}" + (f" to {r.end - 1};" if r.end - 1 > r.start else ";"))
    if message.reserved_name:
        lines.append(f"{inner}reserved " + ", ".join(f'"{n}"' for n in message.reserved_name) + ";")
    for nested in message.nested_type:
        if not nested.options.map_entry:
            _print_message(nested, lines, inner, proto3, here)
    for enum in message.enum_type:
        _print_enum(enum, lines, inner)
    lines.append(f"{indent}}}")
