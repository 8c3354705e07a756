"""A write to `_schemas` that fails (a full disk, an I/O error) is Confluent's 50001 and leaves the
registry as it was: nothing is applied to the index that the log does not hold."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from kafkalite.broker.schema_registry.errors import RegistryError
from kafkalite.broker.schema_registry.registry import Registry
from kafkalite.broker.schema_registry.store import SchemaStore


class Partition:
    index = 0

    def __init__(self):
        self.fail = False
        self.batches: list[bytes] = []

    def append(self, batch, **_kw):
        if self.fail:
            raise OSError(28, "No space left on device")
        self.batches.append(bytes(batch))


def registry_with(partition: Partition) -> Registry:
    topic = SimpleNamespace(partitions=[partition])
    cluster = SimpleNamespace(topics={}, create_topic=lambda name, n, configs: cluster.topics.setdefault(name, topic))
    return Registry(SchemaStore(SimpleNamespace(cluster=cluster)))


def test_a_failed_write_is_50001_and_changes_nothing():
    partition = Partition()
    registry = registry_with(partition)
    first = registry.parse_request("AVRO", '"string"', (), "s")
    assert registry.register("s", first) == 1
    partition.fail = True
    second = registry.parse_request("AVRO", json.dumps({"type": "enum", "name": "E", "symbols": ["A"]}), (), "t")
    with pytest.raises(RegistryError) as err:
        registry.register("t", second)
    assert (err.value.http_status, err.value.error_code) == (500, 50001)
    assert list(registry.store.subject_names()) == ["s"] and registry.store.next_id() == 2
    with pytest.raises(RegistryError) as err:
        registry.set_level(None, "NONE")
    assert err.value.error_code == 50001 and registry.level(None) == "BACKWARD"
    with pytest.raises(RegistryError):
        registry.delete_subject("s", permanent=False)
    assert registry.versions("s") == [1]
    partition.fail = False
    assert registry.register("t", second) == 2
    assert len(partition.batches) == 2
