"""The hand-written rules, one by one, by the difference names Confluent gives them (JSON Schema)
and the incompatibility kinds of its Protobuf checker; the Protobuf text <-> descriptor round trip."""

from __future__ import annotations

import pytest

from kafkalite.broker.schema_registry import json_schemas, protobuf_descriptors, protobuf_schemas

S, I = {"type": "string"}, {"type": "integer"}


def kinds(writer, reader) -> set[str]:
    return {kind for kind, _path in json_schemas.differences(writer, reader)}


@pytest.mark.parametrize("writer,reader,kind,refused", [
    ({"properties": {"a": S}}, {"properties": {"a": S, "b": I}}, "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", True),
    ({"properties": {"a": S}, "additionalProperties": False}, {"properties": {"a": S, "b": I},
     "additionalProperties": False}, "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", False),
    ({"properties": {"a": S}, "additionalProperties": False}, {"properties": {"a": S, "b": I}, "required": ["b"],
     "additionalProperties": False}, "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", True),
    ({"properties": {"a": S, "b": I}}, {"properties": {"a": S}}, "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", False),
    ({"properties": {"a": S, "b": I}, "additionalProperties": False}, {"properties": {"a": S},
     "additionalProperties": False}, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", True),
    ({"properties": {"a": S}, "additionalProperties": S}, {"properties": {"a": S, "b": S}, "additionalProperties": S},
     "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", False),
    ({"properties": {"a": S}, "additionalProperties": S}, {"properties": {"a": S, "b": I}, "additionalProperties": S},
     "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", True),
    ({"properties": {"a": S, "b": S}, "additionalProperties": S}, {"properties": {"a": S}, "additionalProperties": S},
     "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", False),
    ({"properties": {"a": S, "b": I}, "additionalProperties": S}, {"properties": {"a": S}, "additionalProperties": S},
     "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", True),
    ({"type": "number"}, {"type": "integer"}, "TYPE_NARROWED", True),
    ({"type": "integer"}, {"type": "number"}, "TYPE_EXTENDED", False),
    ({"type": "integer"}, {"type": "string"}, "TYPE_CHANGED", True),
    ({"properties": {"a": S}}, {"properties": {"a": S}, "required": ["a"]}, "REQUIRED_ATTRIBUTE_ADDED", True),
    ({"properties": {"a": S}}, {"properties": {"a": S}, "additionalProperties": False},
     "ADDITIONAL_PROPERTIES_REMOVED", True),
    ({"properties": {"a": S}}, {"properties": {"a": S}, "additionalProperties": S}, "ADDITIONAL_PROPERTIES_NARROWED",
     True),
    ({"type": "string"}, {"type": "string", "maxLength": 3}, "MAX_LENGTH_ADDED", True),
    ({"type": "string", "minLength": 1}, {"type": "string", "minLength": 2}, "MIN_LENGTH_INCREASED", True),
    ({"type": "number", "maximum": 10}, {"type": "number", "maximum": 5}, "MAXIMUM_DECREASED", True),
    ({"type": "string"}, {"type": "string", "pattern": "^a"}, "PATTERN_ADDED", True),
    ({"type": "array", "items": S}, {"type": "array", "items": I}, "TYPE_CHANGED", True),
    ({"enum": [1, 2]}, {"enum": [1]}, "ENUM_ARRAY_NARROWED", True),
    ({"oneOf": [S, I]}, {"oneOf": [S]}, "SUM_TYPE_NARROWED", True),
    ({"oneOf": [S]}, {"oneOf": [S, I]}, "SUM_TYPE_EXTENDED", False),
    ({"definitions": {"x": S}, "properties": {"a": {"$ref": "#/definitions/x"}}},
     {"definitions": {"x": I}, "properties": {"a": {"$ref": "#/definitions/x"}}}, "TYPE_CHANGED", True),
])
def test_json_schema_rule(writer, reader, kind, refused):
    assert kind in kinds(writer, reader)
    assert bool(json_schemas.incompatibilities(reader, writer)) is refused


def test_json_schema_validity():
    with pytest.raises(ValueError):
        json_schemas.parse('{"type": 5}')
    with pytest.raises(ValueError):
        json_schemas.parse("[1]")
    assert json_schemas.parse("true") is True


PROTO = '''syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  repeated Line lines = 2;
  map<string, string> labels = 3;
  oneof payment { string card = 4; string iban = 5; }
  optional Status status = 6;
  google.protobuf.Timestamp placed = 7;
  reserved 8, 10 to 12;
  reserved "old";
  message Line { string sku = 1; uint32 count = 2; }
  enum Status { NEW = 0; PAID = 1; }
}
'''


def test_protobuf_text_and_descriptor_round_trip():
    from google.protobuf import descriptor_pool, timestamp_pb2
    from google.protobuf.descriptor_pb2 import FileDescriptorProto

    fdp = protobuf_descriptors.from_text(PROTO, "order.proto", [])
    printed = protobuf_descriptors.to_text(fdp)
    assert protobuf_descriptors.from_text(printed, "order.proto", []) == fdp
    pool = descriptor_pool.DescriptorPool()
    ts = FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    pool.Add(ts)
    pool.Add(fdp)  # protobuf accepts it: names resolved, map entries and oneofs well formed
    order = pool.FindMessageTypeByName("shop.v1.Order")
    assert order.fields_by_name["lines"].message_type.full_name == "shop.v1.Order.Line"
    assert order.fields_by_name["status"].enum_type.full_name == "shop.v1.Order.Status"
    assert order.fields_by_name["placed"].message_type.full_name == "google.protobuf.Timestamp"
    assert [o.name for o in order.oneofs] == ["payment", "_status"]
    serialized = protobuf_descriptors.encode_serialized(fdp)
    assert protobuf_descriptors.decode_serialized(serialized) == fdp
    assert protobuf_descriptors.decode_serialized(PROTO) is None


@pytest.mark.parametrize("bad", ['syntax = "proto3"; message {', 'syntax = "proto3"; message M { Nope a = 1; }',
                                 "message M { int32 a = ; }"])
def test_protobuf_invalid_text(bad):
    with pytest.raises(ValueError):
        protobuf_schemas.parse(bad, "x.proto", [])
