"""The console with the schema registry: the Schemas page's data (subjects, levels, versions and
their texts) and the partition view decoding values framed with a registered schema id, for Avro,
JSON Schema and Protobuf, as confluent-kafka's serializers write them."""

from __future__ import annotations

import json
import urllib.request

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafkalite.tests import suite_brokers

AVRO = '{"type":"record","name":"Point","fields":[{"name":"x","type":"int"},{"name":"tag","type":"string"}]}'
# a title: older confluent-kafka releases (2.6 among them) take the schema's name from it and refuse one without
JSON_SCHEMA = '{"title":"Person","type":"object","properties":{"name":{"type":"string"}}}'


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(schema_registry=0, console=0) as b:
        yield b


def get(url: str):
    with urllib.request.urlopen(url, timeout=20) as r:
        return json.loads(r.read())


def produce(bootstrap: str, topic: str, value: bytes) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, value)
    assert p.flush(20) == 0


def point_class():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="geo.proto", package="geo", syntax="proto3")
    outer = fdp.message_type.add(name="Outer")
    outer.field.add(name="unused", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL, json_name="unused")
    point = fdp.message_type.add(name="Point")
    point.field.add(name="x", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL, json_name="x")
    point.field.add(name="label", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="label")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("geo.Point"))


def test_schemas_page_and_decoded_records(broker):
    client = SchemaRegistryClient({"url": broker.schema_registry_url})
    console = broker.console_url
    assert get(console + "api/schemas")["subjects"] == []
    values = {
        "avro-t": AvroSerializer(client, AVRO)({"x": 3, "tag": "a"}, SerializationContext("avro-t", MessageField.VALUE)),
        "json-t": JSONSerializer(JSON_SCHEMA, client)({"name": "ada"}, SerializationContext("json-t", MessageField.VALUE)),
    }
    Point = point_class()
    # use.deprecated.format: confluent-kafka 2.10 wants it said (the current framing); later releases default it
    values["proto-t"] = ProtobufSerializer(Point, client, {"use.deprecated.format": False})(Point(x=7, label="p"),
                                                          SerializationContext("proto-t", MessageField.VALUE))
    for topic, value in values.items():
        produce(broker.bootstrap, topic, value)
    produce(broker.bootstrap, "plain-t", b"not framed")
    client.set_compatibility("avro-t-value", "FULL")

    page = get(console + "api/schemas")
    assert page["enabled"] is True and page["compatibility"] == "BACKWARD"
    by_subject = {s["subject"]: s for s in page["subjects"]}
    assert sorted(by_subject) == ["avro-t-value", "json-t-value", "proto-t-value"]
    assert by_subject["avro-t-value"]["compatibility"] == "FULL"
    assert by_subject["proto-t-value"]["versions"][0]["schema_type"] == "PROTOBUF"
    assert json.loads(by_subject["avro-t-value"]["versions"][0]["schema"])["name"] == "Point"

    decoded = {t: get(f"{console}api/records/{t}/0/0")["records"][0]["value_schema"] for t in values}
    assert json.loads(decoded["avro-t"]["json"]) == {"x": 3, "tag": "a"}
    assert json.loads(decoded["json-t"]["json"]) == {"name": "ada"}
    assert json.loads(decoded["proto-t"]["json"]) == {"x": 7, "label": "p"}
    assert decoded["proto-t"]["schema_type"] == "PROTOBUF"
    assert get(f"{console}api/records/plain-t/0/0")["records"][0]["value_schema"] is None
    # a framed value whose body does not decode says why
    produce(broker.bootstrap, "avro-t", values["avro-t"][:6])
    broken = get(f"{console}api/records/avro-t/0/1")["records"][0]["value_schema"]
    assert broken["schema_id"] == decoded["avro-t"]["schema_id"] and "error" in broken


def test_console_without_registry_says_so():
    with suite_brokers.running(console=0) as b:
        assert get(b.console_url + "api/schemas") == {"enabled": False, "subjects": []}
        produce(b.bootstrap, "t", b"\x00\x00\x00\x00\x01xyz")
        assert get(f"{b.console_url}api/records/t/0/0")["records"][0]["value_schema"] is None


@pytest.mark.browser
def test_schemas_page_in_a_browser(broker):
    """The page in headless Chromium (Debian's, as the console's browser tests use): the Schemas
    link appears, a subject's version opens its schema text, a framed record shows decoded."""
    import os

    from playwright.sync_api import sync_playwright

    client = SchemaRegistryClient({"url": broker.schema_registry_url})
    value = AvroSerializer(client, AVRO)({"x": 41, "tag": "seen"}, SerializationContext("browser-t", MessageField.VALUE))
    produce(broker.bootstrap, "browser-t", value)
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=os.environ.get("KAFKALITE_CHROMIUM", "/usr/bin/chromium"),
                                      headless=True, args=["--no-sandbox"])
        try:
            page = chromium.new_page()
            page.goto(broker.console_url)
            page.get_by_role("link", name="Schemas", exact=True).click()
            row = page.locator("[data-testid=subject][data-subject='browser-t-value']")
            row.wait_for()
            row.get_by_role("button").first.click()
            assert '"name": "Point"' in page.get_by_test_id("schema-text").inner_text()
            page.goto(f"{broker.console_url}#/partition/browser-t/0")
            page.get_by_test_id("batch").first.click()
            decoded = page.get_by_test_id("value-schema")
            decoded.wait_for()
            assert json.loads(decoded.locator("pre").inner_text()) == {"x": 41, "tag": "seen"}
        finally:
            chromium.close()
