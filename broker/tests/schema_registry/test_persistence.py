"""The registry's state lives in `_schemas` and nowhere else: a restart and a kill -9 of the broker
on the same data dir keep ids, versions, configs, modes and deletes, and new ids go on from the
highest. The topic holds Confluent's record format (compact JSON keys and values, one partition,
compacted), so another registry could read it."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafkalite.tests import suite_brokers

from .conftest import Registry

A = {"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]}
A2 = {**A, "fields": A["fields"] + [{"name": "y", "type": "string", "default": ""}]}
B = {"type": "enum", "name": "B", "symbols": ["ONE", "TWO"]}
J = {"type": "object", "properties": {"p": {"type": "string"}}, "additionalProperties": False}


def populate(r: Registry) -> dict:
    ids = {"a1": r.register("a", A)[1]["id"], "a2": r.register("a", A2)[1]["id"],
           "b": r.register("b", B)[1]["id"], "j": r.register("j", J, "JSON")[1]["id"]}
    assert r.register("a-copy", A)[1]["id"] == ids["a1"]
    r.register("gone", {"type": "fixed", "name": "G", "size": 2})
    r.register("soft", {"type": "fixed", "name": "S", "size": 2})
    assert r.put("/config", {"compatibility": "FULL_TRANSITIVE"})[0] == 200
    assert r.put("/config/b", {"compatibility": "NONE"})[0] == 200
    assert r.put("/mode/j", {"mode": "READONLY"})[0] == 200
    assert r.delete("/subjects/a/versions/1") == (200, 1)
    assert r.delete("/subjects/soft") == (200, [1])
    assert r.delete("/subjects/gone") == (200, [1])
    assert r.delete("/subjects/gone?permanent=true") == (200, [1])
    return ids


def check(r: Registry, ids: dict, later: tuple[str, ...] = ()) -> None:
    assert r.get("/subjects") == (200, sorted(["a", "a-copy", "b", "j", *later]))
    assert r.get("/subjects?deleted=true") == (200, sorted(["a", "a-copy", "b", "j", "soft", *later]))
    assert r.get("/subjects/a/versions") == (200, [2])
    assert r.get("/subjects/a/versions?deleted=true") == (200, [1, 2])
    assert r.get("/subjects/a/versions/1?deleted=true")[1]["id"] == ids["a1"]
    assert r.get("/subjects/a/versions/latest")[1]["id"] == ids["a2"]
    assert r.get("/subjects/a-copy/versions/1")[1]["id"] == ids["a1"]
    assert json.loads(r.get(f"/schemas/ids/{ids['b']}")[1]["schema"]) == B
    assert r.get(f"/schemas/ids/{ids['j']}")[1]["schemaType"] == "JSON"
    assert r.get("/config") == (200, {"compatibilityLevel": "FULL_TRANSITIVE"})
    assert r.get("/config/b") == (200, {"compatibilityLevel": "NONE"})
    assert r.get("/mode/j") == (200, {"mode": "READONLY"})
    assert r.get("/subjects/gone/versions?deleted=true")[1]["error_code"] == 40401


def test_restart_and_kill_keep_everything(tmp_path):
    data = tmp_path / "data"
    with suite_brokers.running(data_dir=data, schema_registry=0) as broker:
        r = Registry(broker.schema_registry_url)
        ids = populate(r)
        check(r, ids)
        highest = max(ids.values())
    with suite_brokers.running(data_dir=data, schema_registry=0) as broker:  # a clean stop and start
        r = Registry(broker.schema_registry_url)
        check(r, ids)
        status, body = r.register("c", {"type": "fixed", "name": "C", "size": 4})
        assert status == 200 and body["id"] > highest
        ids["c"] = body["id"]
        assert r.register("b", {"type": "enum", "name": "B", "symbols": ["THREE"]}) == (200, {"id": body["id"] + 1})
        broker.kill()  # kill -9: nothing flushed on the way out
    with suite_brokers.running(data_dir=data, schema_registry=0) as broker:
        r = Registry(broker.schema_registry_url)
        check(r, ids, later=("c",))
        assert r.get("/subjects/c/versions/1")[1]["id"] == ids["c"]
        assert r.get("/subjects/b/versions") == (200, [1, 2])
        status, body = r.register("d", {"type": "fixed", "name": "D", "size": 5})
        assert body["id"] == ids["c"] + 2
        records = read_schemas_topic(broker.bootstrap)
    keys = [json.loads(k) for k, _v in records]
    assert {"keytype": "SCHEMA", "subject": "a", "version": 1, "magic": 1} in keys
    assert {"keytype": "CONFIG", "subject": None, "magic": 0} in keys
    assert {"keytype": "CONFIG", "subject": "b", "magic": 0} in keys
    assert {"keytype": "MODE", "subject": "j", "magic": 0} in keys
    assert {"keytype": "DELETE_SUBJECT", "subject": "soft", "magic": 0} in keys
    values = {k: v for k, v in records}
    first = json.loads(values[b'{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}'])
    assert first == {"subject": "a", "version": 1, "id": ids["a1"], "schema": json.dumps(A, separators=(",", ":")),
                     "deleted": True}
    assert values[b'{"keytype":"SCHEMA","subject":"gone","version":1,"magic":1}'] is None  # the permanent delete
    assert json.loads(values[b'{"keytype":"SCHEMA","subject":"j","version":1,"magic":1}'])["schemaType"] == "JSON"


def read_schemas_topic(bootstrap: str) -> list[tuple[bytes, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "read-schemas", "enable.auto.commit": False})
    try:
        meta = consumer.list_topics("_schemas", timeout=10)
        assert list(meta.topics["_schemas"].partitions) == [0]
        consumer.assign([TopicPartition("_schemas", 0, 0)])
        _low, high = consumer.get_watermark_offsets(TopicPartition("_schemas", 0), timeout=10)
        out: list[tuple[bytes, bytes | None]] = []
        while len(out) < high:
            msg = consumer.poll(5)
            if msg is None:
                pytest.fail(f"read {len(out)} of {high} records of _schemas")
            if msg.error() is None:
                out.append((msg.key(), msg.value()))
        return out
    finally:
        consumer.close()
