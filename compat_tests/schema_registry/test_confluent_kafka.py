"""confluent-kafka's SchemaRegistryClient and its Avro, JSON Schema and Protobuf serializers and
deserializers against the broker's registry: records produced to and consumed from kafkalite in
Confluent's wire format (magic byte 0, the 4-byte schema id, the payload), with auto-registration
and with `use.latest.version`."""

from __future__ import annotations

import json
import struct
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

USER = """{"type": "record", "name": "User", "namespace": "example",
 "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}"""
USER_V2 = """{"type": "record", "name": "User", "namespace": "example",
 "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
            {"name": "email", "type": ["null", "string"], "default": null}]}"""


@pytest.fixture
def client(registry_broker) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": registry_broker.schema_registry_url.rstrip("/")})


def round_trip(bootstrap: str, topic: str, values: list[bytes]) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        producer.produce(topic, value=v)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    out: list[bytes] = []
    try:
        for _ in range(100):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                out.append(msg.value())
            if len(out) == len(values):
                break
    finally:
        consumer.close()
    assert len(out) == len(values), f"consumed {len(out)} of {len(values)}"
    return out


def schema_id_of(payload: bytes) -> int:
    assert payload[0] == 0
    return struct.unpack(">I", payload[1:5])[0]


def test_avro_auto_register_produce_consume(registry_broker, client):
    topic = f"avro-{uuid.uuid4().hex[:8]}"
    ctx = SerializationContext(topic, MessageField.VALUE)
    serializer = AvroSerializer(client, USER)
    values = [serializer({"name": f"n{i}", "age": i}, ctx) for i in range(3)]
    consumed = round_trip(registry_broker.bootstrap, topic, values)
    registered = client.get_latest_version(f"{topic}-value")
    assert registered.version == 1
    assert {schema_id_of(v) for v in consumed} == {registered.schema_id}
    # a fresh client, with nothing cached, reads the schema back by id
    fresh = SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    deserializer = AvroDeserializer(fresh)
    assert [deserializer(v, ctx) for v in consumed] == [{"name": f"n{i}", "age": i} for i in range(3)]


def test_avro_use_latest_version_and_incompatible_registration(registry_broker, client):
    topic = f"latest-{uuid.uuid4().hex[:8]}"
    subject = f"{topic}-value"
    first = client.register_schema(subject, Schema(USER, "AVRO"))
    second = client.register_schema(subject, Schema(USER_V2, "AVRO"))
    assert second != first
    assert client.get_versions(subject) == [1, 2]
    ctx = SerializationContext(topic, MessageField.VALUE)
    serializer = AvroSerializer(client, USER, conf={"auto.register.schemas": False, "use.latest.version": True})
    payload = serializer({"name": "x", "age": 1, "email": None}, ctx)
    assert schema_id_of(payload) == second
    consumed = round_trip(registry_broker.bootstrap, topic, [payload])
    assert AvroDeserializer(client)(consumed[0], ctx) == {"name": "x", "age": 1, "email": None}
    assert client.test_compatibility(subject, Schema(USER, "AVRO")) is True
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(subject, Schema(USER.replace('"int"', '"string"'), "AVRO"))
    assert err.value.http_status_code == 409
    assert client.lookup_schema(subject, Schema(USER, "AVRO")).version == 1
    client.set_compatibility(subject, "FULL")
    assert client.get_compatibility(subject) == "FULL"
    assert client.delete_version(subject, 1) == 1
    assert client.delete_subject(subject) == [2]
    assert client.delete_subject(subject, permanent=True) == [1, 2]
    assert subject not in client.get_subjects()


PERSON = """{"$schema": "http://json-schema.org/draft-07/schema#", "title": "Person", "type": "object",
 "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
 "required": ["name"], "additionalProperties": false}"""


def test_json_schema_serializer(registry_broker, client):
    topic = f"json-{uuid.uuid4().hex[:8]}"
    ctx = SerializationContext(topic, MessageField.VALUE)
    serializer = JSONSerializer(PERSON, client)
    values = [serializer({"name": "ada", "tags": ["x"]}, ctx), serializer({"name": "bob", "tags": []}, ctx)]
    consumed = round_trip(registry_broker.bootstrap, topic, values)
    registered = client.get_latest_version(f"{topic}-value")
    assert registered.schema.schema_type == "JSON"
    assert schema_id_of(consumed[0]) == registered.schema_id
    fresh = SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    deserializer = JSONDeserializer(None, schema_registry_client=fresh)
    assert [deserializer(v, ctx) for v in consumed] == [{"name": "ada", "tags": ["x"]}, {"name": "bob", "tags": []}]
    # adding an optional property to a closed content model is backward compatible
    wider = PERSON.replace('"tags"', '"email": {"type": "string"}, "tags"')
    assert client.test_compatibility(f"{topic}-value", Schema(wider, "JSON")) is True
    narrower = PERSON.replace('"required": ["name"]', '"required": ["name", "tags"]')
    assert client.test_compatibility(f"{topic}-value", Schema(narrower, "JSON")) is False


def order_class() -> Any:
    """A protobuf message class as protoc would generate it (package shop, message Order with a
    nested Line and an enum), built from its descriptor."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name=f"shop_{uuid.uuid4().hex[:6]}.proto", package="shop",
                                             syntax="proto3")
    order = fdp.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL, json_name="id")
    order.field.add(name="lines", number=2, type=F.TYPE_MESSAGE, type_name=".shop.Order.Line",
                    label=F.LABEL_REPEATED, json_name="lines")
    order.field.add(name="status", number=3, type=F.TYPE_ENUM, type_name=".shop.Order.Status",
                    label=F.LABEL_OPTIONAL, json_name="status")
    line = order.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="sku")
    line.field.add(name="count", number=2, type=F.TYPE_UINT32, label=F.LABEL_OPTIONAL, json_name="count")
    status = order.enum_type.add(name="Status")
    status.value.add(name="NEW", number=0)
    status.value.add(name="PAID", number=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def test_protobuf_serializer(registry_broker, client):
    Order = order_class()
    topic = f"proto-{uuid.uuid4().hex[:8]}"
    ctx = SerializationContext(topic, MessageField.VALUE)
    serializer = ProtobufSerializer(Order, client)
    msg = Order(id=7, status=1)
    msg.lines.add(sku="a", count=2)
    consumed = round_trip(registry_broker.bootstrap, topic, [serializer(msg, ctx)])
    registered = client.get_latest_version(f"{topic}-value")
    assert registered.schema.schema_type == "PROTOBUF"
    assert "message Order" in registered.schema.schema_str  # stored as .proto text
    assert schema_id_of(consumed[0]) == registered.schema_id
    deserializer = ProtobufDeserializer(Order, {"use.deprecated.format": False})
    assert deserializer(consumed[0], ctx) == msg
    # the deserializer that reads the writer's schema from the registry (format=serialized)
    fresh = SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    reading = ProtobufDeserializer(Order, {"use.deprecated.format": False}, schema_registry_client=fresh)
    assert reading(consumed[0], ctx) == msg
    # re-serializing registers nothing new; a field number reused with another type is refused
    serializer(msg, ctx)
    assert client.get_versions(f"{topic}-value") == [1]
    changed = registered.schema.schema_str.replace("int64 id = 1", "string id = 1")
    assert changed != registered.schema.schema_str
    assert client.test_compatibility(f"{topic}-value", Schema(changed, "PROTOBUF")) is False


def test_protobuf_with_a_referenced_file(registry_broker, client):
    """A message whose file imports another: the serializer registers the imported file as its own
    subject and references it; a deserializer resolves the reference with format=serialized."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    tag = uuid.uuid4().hex[:6]
    common = descriptor_pb2.FileDescriptorProto(name=f"money_{tag}.proto", package=f"pay{tag}", syntax="proto3")
    money = common.message_type.add(name="Money")
    money.field.add(name="cents", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL, json_name="cents")
    money.field.add(name="currency", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="currency")
    main = descriptor_pb2.FileDescriptorProto(name=f"invoice_{tag}.proto", package=f"pay{tag}", syntax="proto3",
                                              dependency=[common.name])
    invoice = main.message_type.add(name="Invoice")
    invoice.field.add(name="total", number=1, type=F.TYPE_MESSAGE, type_name=f".pay{tag}.Money",
                      label=F.LABEL_OPTIONAL, json_name="total")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(common)
    pool.Add(main)
    Invoice = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"pay{tag}.Invoice"))
    topic = f"invoice-{tag}"
    ctx = SerializationContext(topic, MessageField.VALUE)
    payload = ProtobufSerializer(Invoice, client)(Invoice(total={"cents": 250, "currency": "EUR"}), ctx)
    registered = client.get_latest_version(f"{topic}-value")
    assert [(r.name, r.subject, r.version) for r in registered.schema.references] == [(common.name, common.name, 1)]
    assert client.get_latest_version(common.name).schema.schema_type == "PROTOBUF"
    fresh = SchemaRegistryClient({"url": registry_broker.schema_registry_url})
    reading = ProtobufDeserializer(Invoice, {"use.deprecated.format": False}, schema_registry_client=fresh)
    consumed = round_trip(registry_broker.bootstrap, topic, [payload])
    decoded = reading(consumed[0], ctx)
    assert (decoded.total.cents, decoded.total.currency) == (250, "EUR")
    # the referenced version cannot go while the invoice schema uses it
    with pytest.raises(SchemaRegistryError) as err:
        client.delete_version(common.name, 1)
    assert err.value.error_code == 42206


def test_client_checks_a_subject_without_versions_and_ids_after_a_permanent_delete(registry_broker, client):
    """SchemaRegistryClient.test_compatibility against "latest" of a subject that does not exist is
    True (Confluent's CompatibilityResource); re-registering a schema after the subject's permanent
    delete gives a new id (Confluent's register: the tombstoned schema is no longer found by hash)."""
    nope = f"nope-{uuid.uuid4().hex[:8]}"
    assert client.test_compatibility(nope, Schema(USER, "AVRO")) is True
    with pytest.raises(SchemaRegistryError) as err:
        client.test_compatibility(nope, Schema(USER, "AVRO"), version=1)
    assert err.value.error_code == 40402
    assert nope not in client.get_subjects(deleted=True)
    subject = f"gone-{uuid.uuid4().hex[:8]}"
    schema = Schema(USER.replace('"User"', f'"User{uuid.uuid4().hex[:8]}"'), "AVRO")
    first = client.register_schema(subject, schema)
    assert client.delete_subject(subject) == [1]
    assert client.delete_subject(subject, permanent=True) == [1]
    fresh = SchemaRegistryClient({"url": registry_broker.schema_registry_url.rstrip("/")})  # no cached ids
    with pytest.raises(SchemaRegistryError) as err:
        fresh.get_schema(first)
    assert err.value.error_code == 40403
    again = fresh.register_schema(subject, schema)
    assert again > first


def test_client_sees_confluents_protobuf_and_json_rules(client):
    """Rules of Confluent's protobuf/diff and json/diff through SchemaRegistryClient: an enum field's
    type renamed, or made int32, is compatible (FieldSchemaDiff: an enum is a scalar of int32's
    group); a numeric field from optional to repeated is not (FIELD_NUMERIC_LABEL_CHANGED); a oneof
    of new fields is compatible both ways (MessageSchemaDiff: ONEOF_REMOVED); `required` added to a
    property with a default is compatible (ObjectSchemaDiff: REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED)."""
    proto = 'syntax = "proto3";\nenum Kind { KIND_A = 0; }\nenum Kind2 { KIND2_A = 0; }\n'
    subject = f"rules-{uuid.uuid4().hex[:8]}"
    client.set_compatibility(subject, "FULL")
    client.register_schema(subject, Schema(proto + "message M { Kind k = 1; optional int64 n = 2; }", "PROTOBUF"))
    for new, compatible in [("message M { Kind2 k = 1; optional int64 n = 2; }", True),
                            ("message M { int32 k = 1; optional int64 n = 2; }", True),
                            ("message M { Kind k = 1; repeated int64 n = 2; }", False),
                            ("message M { Kind k = 1; optional int64 n = 2; oneof c { string x = 3; } }", True)]:
        assert client.test_compatibility(subject, Schema(proto + new, "PROTOBUF")) is compatible, new
    json_subject = f"rules-{uuid.uuid4().hex[:8]}"
    client.set_compatibility(json_subject, "BACKWARD")
    person = {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}}
    client.register_schema(json_subject, Schema(json.dumps(person), "JSON"))
    required = Schema(json.dumps({**person, "required": ["name"]}), "JSON")
    assert client.test_compatibility(json_subject, required) is True
    assert client.register_schema(json_subject, required) > 0
