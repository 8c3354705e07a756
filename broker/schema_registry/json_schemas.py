"""JSON Schema: parsing and Confluent's compatibility rules for JSON Schema, written here because
no library gives them. `differences(writer, reader)` walks both schemas together and names each
change the reader (the schema that must accept the data) makes against the writer (the schema
the data was valid for), with Confluent's difference names; the incompatible ones are refusals:

- type: the reader must accept every type the writer allowed (integer is within number);
  TYPE_NARROWED / TYPE_CHANGED refuse, TYPE_EXTENDED is fine.
- content models of objects: *open* (additionalProperties absent, true or {}), *closed* (false),
  *partially open* (a schema). A property the reader adds to an open writer is refused (old data
  may hold anything under that name): OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL,
  REQUIRED_PROPERTY_[WITH_DEFAULT_]ADDED_TO_OPEN_CONTENT_MODEL (Confluent's default, strict
  policy), unless its schema is empty (PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL).
  Added to a closed writer it is fine when optional (OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL)
  or required with a `default` (REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL),
  refused when required without one (REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL); against a
  partially open writer it is also refused when the property's schema does not accept the
  writer's additionalProperties schema (PROPERTY_ADDED_[IS|NOT]_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL).
  A property the reader removes is fine when the reader is open, refused when it is closed
  (PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL), and against a partially open reader fine only
  when its additionalProperties schema accepts the removed property's schema.
- additionalProperties: the reader closing or narrowing what the writer left open refuses
  (ADDITIONAL_PROPERTIES_REMOVED / _NARROWED).
- required: the reader requiring a property the writer did not refuses (REQUIRED_ATTRIBUTE_ADDED),
  unless the reader's property has a `default` (REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED).
- bounds (maxLength, minLength, pattern, maximum, minimum, exclusive bounds, multipleOf,
  maxItems, minItems, uniqueItems, maxProperties, minProperties): a bound the reader adds or
  tightens refuses (..._ADDED, ..._DECREASED / _INCREASED); one it removes or loosens is fine.
- enum: the reader must keep every value the writer allowed (ENUM_ARRAY_NARROWED refuses).
- items, properties, definitions reached through local `$ref`: compared recursively; oneOf/anyOf:
  every writer alternative must be read by some reader alternative (SUM_TYPE_NARROWED refuses).
- boolean schemas: a reader `true` accepts all; a reader `false` accepts nothing.

The names and verdicts are those of Confluent's `json/diff` (`ObjectSchemaDiff`, `SchemaDiff`'s
COMPATIBLE_CHANGES_STRICT) in confluentinc/schema-registry 794611bd (Aug 2026).
Confluent's level names map onto this: BACKWARD checks differences(old, new), FORWARD
differences(new, old). References (`$ref` to a reference's name) resolve to that schema."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import jsonschema.exceptions

COMPATIBLE = frozenset({
    "TYPE_EXTENDED", "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "ADDITIONAL_PROPERTIES_ADDED",
    "REQUIRED_ATTRIBUTE_REMOVED", "ENUM_ARRAY_EXTENDED", "SUM_TYPE_EXTENDED", "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL", "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
})

# bound keyword -> (kind of bound, name stem); "max": the reader may not lower it, "min": not raise it
_BOUNDS = {
    "maxLength": "max", "minLength": "min", "maximum": "max", "minimum": "min", "exclusiveMaximum": "max",
    "exclusiveMinimum": "min", "maxItems": "max", "minItems": "min", "maxProperties": "max",
    "minProperties": "min",
}
_STEM = {"maxLength": "MAX_LENGTH", "minLength": "MIN_LENGTH", "maximum": "MAXIMUM", "minimum": "MINIMUM",
         "exclusiveMaximum": "EXCLUSIVE_MAXIMUM", "exclusiveMinimum": "EXCLUSIVE_MINIMUM", "maxItems": "MAX_ITEMS",
         "minItems": "MIN_ITEMS", "maxProperties": "MAX_PROPERTIES", "minProperties": "MIN_PROPERTIES"}
_ALL_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})


def compact(text: str) -> str:
    return json.dumps(json.loads(text), separators=(",", ":"))


def parse(text: str) -> Any:
    """The schema as JSON; ValueError with the reason when it is not a valid JSON Schema."""
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(schema, (dict, bool)):
        raise ValueError("a JSON Schema is an object or a boolean")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise ValueError(exc.message) from None
    except (RecursionError, ValueError, TypeError) as exc:
        raise ValueError(str(exc)) from None
    return schema


def incompatibilities(reader: Any, writer: Any, references: dict[str, Any] | None = None,
                      writer_references: dict[str, Any] | None = None) -> list[str]:
    """Why `reader` does not accept every document `writer` accepted (empty: it does)."""
    walk = _Walk(writer, reader, writer_references or {}, references or {})
    walk.compare(writer, reader, "#")
    return [f"{{errorType:'{kind}', location:'{path}'}}" for kind, path in walk.found if kind not in COMPATIBLE]


def differences(writer: Any, reader: Any) -> list[tuple[str, str]]:
    """Every difference found, compatible or not (for tests and verbose answers)."""
    walk = _Walk(writer, reader, {}, {})
    walk.compare(writer, reader, "#")
    return walk.found


def _types(schema: dict[str, Any]) -> frozenset[str]:
    t = schema.get("type")
    if t is None:
        return _ALL_TYPES
    types = frozenset([t] if isinstance(t, str) else t)
    return types | {"integer"} if "number" in types else types


def _content_model(schema: dict[str, Any]) -> tuple[str, Any]:
    extra = schema.get("additionalProperties", True)
    if extra is True or extra == {}:
        return ("open", None)
    if extra is False:
        return ("closed", None)
    return ("partial", extra)


class _Walk:
    def __init__(self, writer_root: Any, reader_root: Any, writer_refs: dict[str, Any], reader_refs: dict[str, Any]):
        self.roots = (writer_root, reader_root)
        self.refs = (writer_refs, reader_refs)
        self.found: list[tuple[str, str]] = []
        self._seen: set[tuple[int, int]] = set()

    def _resolve(self, schema: Any, side: int) -> Any:
        for _ in range(32):  # a chain of $refs, bounded
            if not isinstance(schema, dict) or "$ref" not in schema or not isinstance(schema["$ref"], str):
                return schema
            ref = schema["$ref"]
            target: Any = None
            if ref.startswith("#"):
                target = self.roots[side]
                for part in ref[1:].split("/"):
                    if not part:
                        continue
                    part = part.replace("~1", "/").replace("~0", "~")
                    target = target.get(part) if isinstance(target, dict) else None
            else:
                target = self.refs[side].get(ref.split("#")[0])
            if target is None:
                return schema
            schema = target
        return schema

    def add(self, kind: str, path: str) -> None:
        self.found.append((kind, path))

    def accepts(self, writer: Any, reader: Any) -> bool:
        """Whether reader accepts what writer accepted (a nested walk, nothing recorded)."""
        sub = _Walk(self.roots[0], self.roots[1], *self.refs)
        sub._seen = set(self._seen)
        sub.compare(writer, reader, "#")
        return not any(kind not in COMPATIBLE for kind, _ in sub.found)

    def compare(self, writer: Any, reader: Any, path: str) -> None:
        writer, reader = self._resolve(writer, 0), self._resolve(reader, 1)
        pair = (id(writer), id(reader))
        if pair in self._seen:
            return
        self._seen.add(pair)
        if reader is True or reader == {} or writer is False:
            return
        if reader is False:
            self.add("SCHEMA_NARROWED", path)
            return
        if writer is True:
            writer = {}
        if not isinstance(writer, dict) or not isinstance(reader, dict):
            return
        if self._sum_types(writer, reader, path):
            return
        wt, rt = _types(writer), _types(reader)
        if not wt <= rt:
            self.add("TYPE_NARROWED" if rt < wt else "TYPE_CHANGED", f"{path}/type")
        elif wt < rt:
            self.add("TYPE_EXTENDED", f"{path}/type")
        self._enum(writer, reader, path)
        self._bounds(writer, reader, path)
        if "object" in wt & rt:
            self._object(writer, reader, path)
        if "array" in wt & rt:
            self._array(writer, reader, path)

    def _sum_types(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> bool:
        w_alts = writer.get("oneOf") or writer.get("anyOf")
        r_alts = reader.get("oneOf") or reader.get("anyOf")
        if not w_alts and not r_alts:
            return False
        w_list = w_alts if isinstance(w_alts, list) else [writer]
        r_list = r_alts if isinstance(r_alts, list) else [reader]
        for i, w in enumerate(w_list):
            if not any(self.accepts(w, r) for r in r_list):
                self.add("SUM_TYPE_NARROWED", f"{path}/oneOf/{i}")
                return True
        if len(r_list) > len(w_list):
            self.add("SUM_TYPE_EXTENDED", path)
        return True

    def _enum(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        for key in ("enum", "const"):
            if key not in reader:
                continue
            r_values = reader[key] if key == "enum" else [reader[key]]
            if key not in writer:
                self.add("ENUM_ARRAY_NARROWED" if key == "enum" else "CONST_ADDED", f"{path}/{key}")
                continue
            w_values = writer[key] if key == "enum" else [writer[key]]
            if not isinstance(r_values, list) or not isinstance(w_values, list):
                continue
            if any(v not in r_values for v in w_values):
                self.add("ENUM_ARRAY_NARROWED" if key == "enum" else "CONST_CHANGED", f"{path}/{key}")
            elif len(r_values) > len(w_values):
                self.add("ENUM_ARRAY_EXTENDED", f"{path}/{key}")

    def _bounds(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        for key, kind in _BOUNDS.items():
            r, w = reader.get(key), writer.get(key)
            if not isinstance(r, (int, float)) or isinstance(r, bool):
                continue
            if not isinstance(w, (int, float)) or isinstance(w, bool):
                self.add(f"{_STEM[key]}_ADDED", f"{path}/{key}")
            elif (kind == "max" and r < w) or (kind == "min" and r > w):
                self.add(f"{_STEM[key]}_{'DECREASED' if kind == 'max' else 'INCREASED'}", f"{path}/{key}")
        if "pattern" in reader and reader.get("pattern") != writer.get("pattern"):
            self.add("PATTERN_ADDED" if "pattern" not in writer else "PATTERN_CHANGED", f"{path}/pattern")
        r_mult, w_mult = reader.get("multipleOf"), writer.get("multipleOf")
        if isinstance(r_mult, (int, float)) and r_mult:
            if not isinstance(w_mult, (int, float)):
                self.add("MULTIPLE_OF_ADDED", f"{path}/multipleOf")
            elif (w_mult / r_mult) != int(w_mult / r_mult):
                self.add("MULTIPLE_OF_CHANGED", f"{path}/multipleOf")
        if reader.get("uniqueItems") is True and writer.get("uniqueItems") is not True:
            self.add("UNIQUE_ITEMS_ADDED", f"{path}/uniqueItems")

    def _object(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        w_props: dict[str, Any] = writer["properties"] if isinstance(writer.get("properties"), dict) else {}
        r_props: dict[str, Any] = reader["properties"] if isinstance(reader.get("properties"), dict) else {}
        w_required = set(writer.get("required") or []) if isinstance(writer.get("required"), list) else set()
        r_required = set(reader.get("required") or []) if isinstance(reader.get("required"), list) else set()
        w_model, w_extra = _content_model(writer)
        r_model, r_extra = _content_model(reader)
        for name, r_schema in r_props.items():
            where = f"{path}/properties/{name}"
            # a required property with a default is filled in for data that lacks it
            with_default = isinstance(self._resolve(r_schema, 1), dict) and "default" in self._resolve(r_schema, 1)
            if name in w_props:
                self.compare(w_props[name], r_schema, where)
                if name in r_required and name not in w_required:
                    self.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if with_default else "REQUIRED_ATTRIBUTE_ADDED",
                             f"{path}/required/{name}")
                continue
            required = "REQUIRED_PROPERTY_WITH_DEFAULT" if with_default else "REQUIRED_PROPERTY"
            if w_model == "open":
                if r_schema is True or r_schema == {}:
                    self.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", where)
                elif name in r_required:
                    self.add(f"{required}_ADDED_TO_OPEN_CONTENT_MODEL", where)
                else:
                    self.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", where)
                continue
            if w_model == "partial":
                covered = self.accepts(w_extra, r_schema)
                self.add(f"PROPERTY_ADDED_{'IS' if covered else 'NOT'}_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
            if name in r_required:
                self.add(f"{required}_ADDED_TO_UNOPEN_CONTENT_MODEL", where)
            else:
                self.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", where)
        for name, w_schema in w_props.items():
            if name in r_props:
                continue
            where = f"{path}/properties/{name}"
            if r_model == "open":
                self.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", where)
            elif r_model == "closed":
                self.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", where)
            elif self.accepts(w_schema, r_extra):
                self.add("PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
            else:
                self.add("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
        for name in w_required - r_required:
            self.add("REQUIRED_ATTRIBUTE_REMOVED", f"{path}/required/{name}")
        where = f"{path}/additionalProperties"
        if w_model != "closed" and r_model == "closed":
            self.add("ADDITIONAL_PROPERTIES_REMOVED", where)
        elif w_model == "closed" and r_model != "closed":
            self.add("ADDITIONAL_PROPERTIES_ADDED", where)
        elif w_model == "open" and r_model == "partial":
            self.add("ADDITIONAL_PROPERTIES_NARROWED", where)
        elif w_model == "partial" and r_model == "partial":
            self.compare(w_extra, r_extra, where)

    def _array(self, writer: dict[str, Any], reader: dict[str, Any], path: str) -> None:
        w_items, r_items = writer.get("items", True), reader.get("items", True)
        if isinstance(w_items, list) or isinstance(r_items, list):
            w_list = w_items if isinstance(w_items, list) else []
            r_list = r_items if isinstance(r_items, list) else []
            for i, r_item in enumerate(r_list):
                self.compare(w_list[i] if i < len(w_list) else (w_items if not isinstance(w_items, list) else True),
                             r_item, f"{path}/items/{i}")
            return
        self.compare(w_items, r_items, f"{path}/items")
