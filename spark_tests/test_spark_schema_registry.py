"""examples/spark_schema_registry.py against the session's kafkalite with its schema registry:
purchases written by confluent-kafka's AvroSerializer, totals read back with its AvroDeserializer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from spark_tests import other_client

pytestmark = [pytest.mark.timeout(300)]

_spec = importlib.util.spec_from_file_location(
    "spark_schema_registry", Path(__file__).resolve().parent.parent / "examples" / "spark_schema_registry.py")
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)

PURCHASE = """{"type": "record", "name": "Purchase", "namespace": "example",
 "fields": [{"name": "user", "type": "string"}, {"name": "amount", "type": "double"}]}"""


def test_totals_from_confluent_avro_records(spark, bootstrap, topic, schema_registry_url):
    source, sink = topic(1), topic(1)
    client = SchemaRegistryClient({"url": schema_registry_url})
    serializer = AvroSerializer(client, PURCHASE)
    ctx = SerializationContext(source, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": bootstrap})
    for user, amount in [("ada", 10.0), ("bob", 2.5), ("ada", 5.25), ("cy", 1.0), ("bob", 2.5)]:
        producer.produce(source, serializer({"user": user, "amount": amount}, ctx))
    assert producer.flush(30) == 0

    assert example.run(spark, bootstrap, schema_registry_url, source, sink) == 3

    deserializer = AvroDeserializer(SchemaRegistryClient({"url": schema_registry_url}))
    sink_ctx = SerializationContext(sink, MessageField.VALUE)
    records = other_client.read_all(bootstrap, sink)
    totals = {m.key.decode(): deserializer(m.value, sink_ctx) for m in records}
    assert totals == {"ada": {"user": "ada", "purchases": 2, "total": 15.25},
                      "bob": {"user": "bob", "purchases": 2, "total": 5.0},
                      "cy": {"user": "cy", "purchases": 1, "total": 1.0}}
    sink_schema = client.get_latest_version(f"{sink}-value")
    assert {m.value[1:5] for m in records} == {sink_schema.schema_id.to_bytes(4, "big")}
