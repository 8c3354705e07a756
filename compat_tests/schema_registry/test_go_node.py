"""The registry's Go and Node clients: franz-go's pkg/sr (compat_tests/go, `godriver franz
schema-registry`) and kafkajs's @kafkajs/confluent-schema-registry (compat_tests/node,
schema_registry.js) register, fetch, look up, check compatibility and delete against the broker's
registry, and frame records in Confluent's wire format."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from compat_tests.clients import golang

NODE_DIR = Path(__file__).resolve().parents[1] / "node"


def run(command: list[str], cwd: Path | None = None) -> dict:
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no answer (exit {proc.returncode}): {proc.stderr[-2000:]}"
    answer = json.loads(lines[-1])
    assert answer["ok"], answer["error"]
    return answer["result"]


def test_franz_go_sr(registry_broker):
    subject = f"go-{uuid.uuid4().hex[:8]}"
    config = {"url": registry_broker.schema_registry_url, "subject": subject, "bootstrap": registry_broker.bootstrap}
    out = run([str(golang.build()), "franz", "schema-registry", json.dumps(config)])
    assert sorted(out["types"]) == ["AVRO", "JSON", "PROTOBUF"]
    assert out["v1"]["version"] == 1 and out["v1"]["subject"] == subject
    assert json.loads(out["by_id"])["name"] == "Reading"
    assert out["v2"]["version"] == 2 and out["v2"]["id"] != out["v1"]["id"]
    assert (out["latest_version"], out["lookup_version"]) == (2, 1)
    assert out["bad_is_compatible"] is False and out["bad_status"] == 409
    assert out["compatibility"] == "FULL"
    assert out["versions"] == [1, 2]
    assert out["proto"]["type"] == "PROTOBUF" and "message Reading" in out["proto"]["schema"]
    assert out["consumed_id"] == out["v2"]["id"]
    assert out["deleted"] == {"soft": [1, 2], "hard": [1, 2]}
    assert subject not in out["subjects"] and f"{subject}-proto" in out["subjects"]


def test_kafkajs_confluent_schema_registry(registry_broker):
    from confluent_kafka import Consumer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    tag = uuid.uuid4().hex[:8]
    config = {"url": registry_broker.schema_registry_url, "subject": f"node-{tag}",
              "bootstrap": registry_broker.bootstrap, "topic": f"node-{tag}"}
    out = run(["node", "schema_registry.js", json.dumps(config)], cwd=NODE_DIR)
    assert out["latest_id"] == out["lookup_id"] == out["avro_id"]
    assert out["encoded_prefix"] == [0, *out["avro_id"].to_bytes(4, "big")]
    assert out["avro_decoded"] == {"sensor": "s1", "value": 21.5}
    assert out["bad_refused"] is True
    assert out["json_decoded"] == {"name": "ada"}
    assert out["proto_decoded"] == {"sensor": "s2", "value": 3}
    assert len(set(out["ids"])) == 3
    # the record kafkajs wrote decodes with confluent-kafka's deserializer
    consumer = Consumer({"bootstrap.servers": registry_broker.bootstrap, "group.id": f"g-{tag}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([config["topic"]])
    try:
        msg = None
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                break
        assert msg is not None and msg.error() is None
        deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry_broker.schema_registry_url}))
        value = deserializer(msg.value(), SerializationContext(config["topic"], MessageField.VALUE))
        assert value == {"sensor": "s1", "value": 21.5}
    finally:
        consumer.close()
