"""Seed files: a broker started with --seed (through suite_brokers.running(seed=...)) has the topics,
configs, records (plain, committed and aborted transactions), group offsets, ACLs and SCRAM users
of the file when it is ready, as real confluent-kafka clients see them; a mistake in the file is
one line naming the file, the entry and the fault, and exit status 2; the seed control applies
the same document at run time."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter, AclOperation, AclPermissionType, AdminClient, ConfigResource, ResourcePatternType, ResourceType,
)

from kafkalite.broker.seed import SeedError, default_partition, load_seed
from kafkalite.controls import ControlFailed
from kafkalite.launcher import _broker_env, broker_command
from kafkalite.tests import suite_brokers

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}


def _write_seed(tmp_path: Path, document: dict, jsonl: list[dict] | None = None) -> Path:
    if jsonl is not None:
        (tmp_path / "data").mkdir(exist_ok=True)
        (tmp_path / "data" / "orders.jsonl").write_text("\n".join(json.dumps(r) for r in jsonl) + "\n\n")
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(document))
    return path


SEED = {
    "topics": [
        {"name": "orders", "partitions": 3, "replication_factor": 1, "configs": {"cleanup.policy": "compact"},
         "records": "data/orders.jsonl"},
        {"name": "payments", "records": [
            {"key": "p1", "value": {"amount": 3}, "headers": {"source": "seed", "empty": None},
             "timestamp": 1_700_000_000_000, "partition": 0},
            {"key": "p2", "value": "committed-1", "transaction": "commit", "partition": 0},
            {"key": "p3", "value": "committed-2", "transaction": "commit", "partition": 0},
            {"key": "p4", "value": "aborted-1", "transaction": "abort", "partition": 0},
            {"key": None, "value": None, "partition": 0},
            {"value": "committed-3", "transaction": "commit", "partition": 0}]}],
    "groups": [{"group": "billing", "offsets": {"orders": {"0": 5}}}],
    "acls": [{"principal": "User:alice", "resource_type": "TOPIC", "name": "orders", "pattern": "LITERAL",
              "operation": "READ", "permission": "ALLOW"}],
    "users": [{"name": "alice", "mechanism": "SCRAM-SHA-256", "password": "alice-secret"}],
}
ORDERS = [{"key": f"o{i}", "value": {"order": i}} for i in range(20)]


def _consume(bootstrap, topic, partitions, isolation, expect, timeout=15.0):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "isolation.level": isolation, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, eof = [], set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (len(eof) < partitions or len(got) < expect):
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == -191:
                eof.add(msg.partition())
            continue
        got.append(msg)
    consumer.close()
    return got


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    path = _write_seed(tmp_path_factory.mktemp("seed"), SEED, ORDERS)
    with suite_brokers.running(seed=path, config=AUTHORIZER, controls=0) as broker:
        yield broker


def test_everything_is_in_place_at_the_ready_line(seeded):
    admin = AdminClient({"bootstrap.servers": seeded.bootstrap})
    topics = admin.list_topics(timeout=10).topics
    assert len(topics["orders"].partitions) == 3 and len(topics["payments"].partitions) == 1
    res = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    assert admin.describe_configs([res])[res].result(10)["cleanup.policy"].value == "compact"

    orders = _consume(seeded.bootstrap, "orders", 3, "read_committed", 20)
    assert sorted(json.loads(m.value())["order"] for m in orders) == list(range(20))
    # keyed records without a partition go where the Java client's murmur2 partitioner puts them
    probe = Producer({"bootstrap.servers": seeded.bootstrap, "partitioner": "murmur2"})
    placed = []
    for i in range(20):
        probe.produce("orders", key=f"o{i}".encode(), value=b"probe",
                      on_delivery=lambda err, msg: placed.append((msg.key().decode(), msg.partition())))
    assert probe.flush(10) == 0
    assert {m.key().decode(): m.partition() for m in orders} == dict(placed)
    assert all(default_partition(k.encode(), 3, [0]) == p for k, p in placed)

    committed = _consume(seeded.bootstrap, "payments", 1, "read_committed", 5)
    assert [m.value() for m in committed] == [b'{"amount":3}', b"committed-1", b"committed-2", None,
                                             b"committed-3"]
    first = committed[0]
    assert first.key() == b"p1" and first.timestamp()[1] == 1_700_000_000_000
    assert first.headers() == [("source", b"seed"), ("empty", None)]
    everything = _consume(seeded.bootstrap, "payments", 1, "read_uncommitted", 6)
    assert b"aborted-1" in [m.value() for m in everything]

    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("billing", [
        TopicPartition("orders", 0), TopicPartition("orders", 1)])])["billing"].result(10)
    assert [(tp.partition, tp.offset) for tp in offsets.topic_partitions] == [(0, 5), (1, -1001)]
    acls = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                AclOperation.ANY, AclPermissionType.ANY)).result(10)
    assert [(a.name, a.principal, a.operation) for a in acls] == [("orders", "User:alice", AclOperation.READ)]
    assert set(admin.describe_user_scram_credentials().result()) == {"alice"}


def test_the_seed_control_applies_a_document_at_run_time(seeded):
    result = seeded.controls.seed(document={"topics": [{"name": "late", "partitions": 2, "records": [
        {"value": "a"}, {"value": "b"}, {"value": "c"}]}]})
    assert result["topics"] == ["late"] and result["records"] == 3
    got = _consume(seeded.bootstrap, "late", 2, "read_committed", 3)
    assert sorted(m.value() for m in got) == [b"a", b"b", b"c"]
    assert {m.partition() for m in got} == {0, 1}  # records without a key go round the partitions
    with pytest.raises(ControlFailed, match=r"seed control: topics\[0\] \(bad\)\.records\[0\]: partition 5"):
        seeded.controls.seed(document={"topics": [{"name": "bad", "partitions": 2,
                                                   "records": [{"value": "x", "partition": 5}]}]})
    assert "bad" not in AdminClient({"bootstrap.servers": seeded.bootstrap}).list_topics(timeout=10).topics


@pytest.mark.parametrize("document, jsonl, message", [
    ({"topic": []}, None, r"the document: unknown key 'topic'"),
    ({"topics": [{"name": "t", "partitions": 0}]}, None, r"topics\[0\] \(t\): partitions must be a positive"),
    ({"topics": [{"name": "t", "configs": {"cleanup.policy": "squash"}}]}, None,
     r"topics\[0\] \(t\)\.configs: .*squash"),
    ({"topics": [{"name": "t", "records": [{"key": "k"}]}]}, None, r"topics\[0\] \(t\)\.records\[0\]: a record needs a value"),
    ({"topics": [{"name": "t", "records": [{"value": 1, "transaction": "maybe"}]}]}, None,
     r"topics\[0\] \(t\)\.records\[0\]: transaction must be"),
    ({"topics": [{"name": "t", "records": "data/orders.jsonl"}]}, [{"value": 1}, {"valu": 2}],
     r"topics\[0\] \(t\)\.records .*orders\.jsonl:2: unknown key 'valu'"),
    ({"topics": [{"name": "t", "records": "missing.jsonl"}]}, None, r"topics\[0\] \(t\)\.records: cannot read .*missing\.jsonl"),
    ({"groups": [{"group": "g", "offsets": {"t": {"x": 1}}}]}, None, r"groups\[0\] \(g\)\.offsets\.t\.x: partition"),
    ({"acls": [{"principal": "User:a", "resource_type": "TOPIC", "name": "t", "operation": "EAT"}]}, None,
     r"acls\[0\]: operation must be one of"),
    ({"users": [{"name": "a", "mechanism": "PLAIN", "password": "x"}]}, None, r"users\[0\] \(a\): mechanism"),
])
def test_mistakes_name_the_file_the_entry_and_the_fault(tmp_path, document, jsonl, message):
    path = _write_seed(tmp_path, document, jsonl)
    with pytest.raises(SeedError, match=rf"^{path}: {message}"):
        load_seed(path)


def test_a_bad_seed_file_stops_the_start_with_one_line_and_status_2(tmp_path):
    path = _write_seed(tmp_path, {"topics": [{"name": "t", "records": [{"value": "x", "partition": -1}]}]})
    for args in (["--seed", str(path)], ["--seed", str(tmp_path / "absent.json")]):
        proc = subprocess.run(broker_command(["--port", "0", *args]), capture_output=True, text=True, timeout=60,
                              env=_broker_env())
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"kafkalite: {args[1]}: "), proc.stderr
        assert "ready" not in proc.stdout
    # ACLs without an authorizer are refused once the broker runs, still before the ready line
    acl_only = _write_seed(tmp_path, {"acls": SEED["acls"]})
    proc = subprocess.run(broker_command(["--port", "0", "--seed", str(acl_only)]), capture_output=True, text=True,
                          timeout=60, env=_broker_env())
    assert proc.returncode == 2 and "ready" not in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == (f"kafkalite: {acl_only}: acls: ACLs need the broker's "
                                                    "authorizer (authorizer.class.name)")


def test_kafkalite_seed_environment_variable(tmp_path):
    """KAFKALITE_SEED is read as --seed is (kafkalite.start passes seed= as --seed and keeps the
    caller's variable away from the broker)."""
    path = _write_seed(tmp_path, {"topics": [{"name": "t", "partitions": "three"}]})
    proc = subprocess.run(broker_command(["--port", "0"]), capture_output=True, text=True, timeout=60,
                          env={**_broker_env(), "KAFKALITE_SEED": str(path)})
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"kafkalite: {path}: topics[0] (t): partitions must be a positive integer, not 'three'"


def test_reset_puts_the_start_seed_back(seeded):
    admin = AdminClient({"bootstrap.servers": seeded.bootstrap})
    for fut in admin.delete_topics(["payments"]).values():
        fut.result(10)
    result = seeded.controls.reset()
    assert "orders" in result["topics"] and "payments" not in result["topics"]
    assert result["seeded"]["topics"] == ["orders", "payments"]
    topics = admin.list_topics(timeout=10).topics
    assert {"orders", "payments"} <= set(topics) and "late" not in topics
    assert len(_consume(seeded.bootstrap, "payments", 1, "read_committed", 5)) == 5


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "too large"])
def test_only_regular_files_up_to_seed_max_bytes_are_read(tmp_path, kind):
    """A FIFO without a writer, /dev/zero or a directory would block or never end, a file over
    seed.max.bytes would not fit: each is refused at once, naming the file, as a seed file and as
    a records file."""
    import os

    from kafkalite.broker.seed import parse_seed

    if kind == "fifo":
        path = tmp_path / "records.fifo"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path / "a-dir"
        path.mkdir()
    elif kind == "device":
        path = Path("/dev/zero")
    else:
        path = tmp_path / "big.jsonl"
        path.write_text('{"value": "v"}\n' * 100)
    values = {"seed.max.bytes": 1000}
    started = time.monotonic()
    with pytest.raises(SeedError) as err:
        load_seed(path, values)
    assert str(path) in str(err.value)
    with pytest.raises(SeedError) as err:
        parse_seed({"topics": [{"name": "t", "records": str(path)}]}, "seed control", tmp_path, values)
    assert str(path) in str(err.value) and "topics[0] (t).records" in str(err.value)
    expected = {"fifo": "a FIFO", "directory": "a directory", "device": "a device", "too large": "seed.max.bytes"}
    assert expected[kind] in str(err.value)
    assert time.monotonic() - started < 5
    # under the cap, the same records file reads
    if kind == "too large":
        seed = parse_seed({"topics": [{"name": "t", "records": str(path)}]}, "seed control", tmp_path,
                          {"seed.max.bytes": 10_000})
        assert len(seed.topics[0].records) == 100
