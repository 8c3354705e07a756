"""Snapshots: `snapshot` then `restore` brings back topics with their records and configs, group
offsets, committed and aborted transactions (read_committed sees only the committed), ACLs and
SCRAM users, and removes what came after; segments are hard links, so a restore of 10 topics x
4 partitions x 1 000 records copies no records."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter, AclOperation, AclPermissionType, AdminClient, ConfigResource, NewTopic, ResourcePatternType,
    ResourceType, ScramMechanism,
)

from kafkalite.controls import ControlFailed
from kafkalite.tests import suite_brokers

from .admin_helpers import allow_read_and_add_user

ANY_ACL = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                           AclPermissionType.ANY)


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(controls=0, config={
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS"}) as b:
        yield b


@pytest.fixture
def admin(broker):
    broker.controls.reset()
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _read_all(broker, topic, partitions, isolation="read_committed", expect=None, timeout=15.0):
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values, eof = [], set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (len(eof) < partitions or (expect is not None and len(values) < expect)):
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == -191:  # _PARTITION_EOF
                eof.add(msg.partition())
            continue
        values.append(msg.value())
    consumer.close()
    return sorted(values)


def _committed(admin, group, topic, partitions):
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    got = admin.list_consumer_group_offsets([req])[group].result(10)
    return {tp.partition: tp.offset for tp in got.topic_partitions}


def _retention(admin, topic):
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([res])[res].result(10)["retention.ms"].value


def test_snapshot_and_restore_round_trip(broker, admin):
    topic = f"snap-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 3, 1, config={"retention.ms": "12345678"})])[topic].result(10)
    plain = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(300):
        plain.produce(topic, key=b"k%d" % i, value=b"plain-%03d" % i, partition=i % 3)
    assert plain.flush(10) == 0
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{topic}"})
    txn.init_transactions(10)
    txn.begin_transaction()
    txn.produce(topic, value=b"committed", partition=0)
    txn.commit_transaction(10)
    txn.begin_transaction()
    txn.produce(topic, value=b"aborted", partition=1)
    assert txn.flush(10) == 0  # written before the abort (an abort purges what is not sent)
    txn.abort_transaction(10)
    group = f"g-{topic}"
    for fut in admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
            group, [TopicPartition(topic, 0, 42), TopicPartition(topic, 2, 7)])]).values():
        fut.result(10)
    allow_read_and_add_user(admin, topic, "alice", ScramMechanism.SCRAM_SHA_512, b"alice-secret")
    before = _read_all(broker, topic, 3, expect=301)
    assert len(before) == 301 and b"committed" in before and b"aborted" not in before

    saved = broker.controls.snapshot(name="base")
    assert saved["topics"] == [topic] and saved["partitions"] >= 3

    # what comes after the snapshot: more records, another topic, offsets moved, the ACL gone
    other = f"after-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(other, 1, 1)])[other].result(10)
    for i in range(50):
        plain.produce(topic, value=b"later-%d" % i, partition=0)
    assert plain.flush(10) == 0
    for fut in admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
            group, [TopicPartition(topic, 0, 99)])]).values():
        fut.result(10)
    for fut in admin.delete_acls([ANY_ACL]).values():
        fut.result(10)

    for _ in range(2):  # a snapshot restores as often as asked: the restored copy never writes into it
        restored = broker.controls.restore(name="base")
        assert restored["topics"] == [topic]
        assert set(admin.list_topics(timeout=10).topics) - {"__consumer_offsets", "__transaction_state"} == {topic}
        assert _retention(admin, topic) == "12345678"
        assert _read_all(broker, topic, 3, expect=301) == before
        assert b"aborted" in _read_all(broker, topic, 3, isolation="read_uncommitted", expect=302)
        assert _committed(admin, group, topic, 3) == {0: 42, 1: -1001, 2: 7}
        acls = admin.describe_acls(ANY_ACL).result(10)
        assert [(a.name, a.principal) for a in acls] == [(topic, "User:alice")]
        users = admin.describe_user_scram_credentials().result()
        assert set(users) == {"alice"}
        for i in range(20):  # writes after a restore land after the restored records
            plain.produce(topic, value=b"again-%d" % i, partition=0)
        assert plain.flush(10) == 0

    # the transactional producer of the snapshot's state goes on
    txn.begin_transaction()
    txn.produce(topic, value=b"after-restore", partition=2)
    txn.commit_transaction(10)
    assert b"after-restore" in _read_all(broker, topic, 3, expect=322)
    assert [s["name"] for s in broker.controls.snapshots()] == ["base"]
    broker.controls.drop_snapshot(name="base")
    assert broker.controls.snapshots() == []


def test_sealed_segments_are_hard_links(broker, admin):
    topic = f"rolled-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 1, 1, config={"internal.segment.bytes": "16384"})])[topic].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "batch.num.messages": 50})
    for i in range(2000):
        producer.produce(topic, value=b"record-%05d-" % i + b"x" * 40, partition=0)
    assert producer.flush(30) == 0
    broker.controls.snapshot(name="rolled")
    snap = Path(broker.data_dir) / ".kafkalite-snapshots" / "rolled" / "partitions" / f"{topic}-0"
    logs = sorted(snap.glob("*.log"))
    assert len(logs) > 1, "internal.segment.bytes=16384 rolls segments"
    # linked: the snapshot and the broker's log (and the copy prepared for the next restore)
    assert all(os.stat(p).st_nlink >= 2 for p in logs[:-1]) and os.stat(logs[-1]).st_nlink == 1
    broker.controls.restore(name="rolled")
    assert len(_read_all(broker, topic, 1, isolation="read_uncommitted", expect=2000)) == 2000
    broker.controls.drop_snapshot(name="rolled")


def test_restore_of_ten_topics_of_four_partitions_of_a_thousand_records(broker, admin):
    topics = [f"bulk{i}-{uuid.uuid4().hex[:4]}" for i in range(10)]
    for fut in admin.create_topics([NewTopic(t, 4, 1) for t in topics]).values():
        fut.result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    for t in topics:
        for i in range(4000):
            producer.produce(t, value=b"record-%05d-" % i + b"x" * 40, partition=i % 4)
    assert producer.flush(30) == 0
    broker.controls.snapshot(name="bulk")
    restores = [broker.controls.restore(name="bulk") for _ in range(5)]
    # the records are linked, not copied: what is copied is indexes and metadata
    assert all(r["bytes_copied"] < 64 * 1024 for r in restores), restores
    # the time it takes is bench.isolation's figure (target 100 ms), not asserted on a shared machine
    assert all(r["took_ms"] > 0 for r in restores)
    assert len(_read_all(broker, topics[3], 4, isolation="read_uncommitted", expect=4000)) == 4000
    broker.controls.drop_snapshot(name="bulk")


def test_bad_names_are_refused(broker):
    with pytest.raises(ControlFailed, match="snapshot name"):
        broker.controls.snapshot(name="../escape")
    with pytest.raises(ControlFailed, match="no snapshot named"):
        broker.controls.restore(name="never-saved")
