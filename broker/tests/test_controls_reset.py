"""The reset control: after it, real clients' admin calls find no topic, group, offset,
transactional id, ACL, run-time SCRAM user or fault, the clock reads real time, and clients that
were connected carry on (an idempotent producer of the old incarnation keeps producing)."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType,
    ScramMechanism,
)

from compat_tests.differ.core import request
from kafkalite.protocol.client import WireClient, decode_response
from kafkalite.tests import suite_brokers

from .admin_helpers import allow_read_and_add_user

CONFIGURED_USER = "configured"


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(controls=0, config={
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
            "scram.users": f"SCRAM-SHA-256=[name={CONFIGURED_USER},password=configured-secret]",
            "transaction.version": 2}) as b:
        yield b


@pytest.fixture
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _consume(consumer, n, timeout=15.0):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            got.append(msg.value())
    return got


def _transactional_ids(broker) -> list[str]:
    with WireClient(broker.bootstrap) as wire:
        resp = wire.request(request(66, 1, state_filters=[], producer_id_filters=[], duration_filter=-1))
    return sorted(t.transactional_id for t in resp.transaction_states)


def _scram_users(admin) -> set[str]:
    described = admin.describe_user_scram_credentials().result()
    return set(described)


def _fill(broker, admin) -> dict:
    """Everything a test could leave behind."""
    topic = f"reset-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 2, 1, config={"cleanup.policy": "compact"})])[topic].result(10)
    idem = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "client.id": "idem"})
    for i in range(5):
        idem.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0)
    assert idem.flush(10) == 0
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{topic}"})
    txn.init_transactions(10)
    txn.begin_transaction()
    txn.produce(topic, key=b"t", value=b"open", partition=1)
    txn.flush(10)  # the transaction stays open
    classic = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"classic-{topic}",
                        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    classic.subscribe([topic])
    assert len(_consume(classic, 5)) == 5
    classic.commit(asynchronous=False)
    modern = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"consumer-{topic}",
                       "group.protocol": "consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    modern.subscribe([topic])
    assert len(_consume(modern, 5)) == 5
    modern.commit(asynchronous=False)
    allow_read_and_add_user(admin, topic, "runtime-user", ScramMechanism.SCRAM_SHA_256, b"pw")
    broker.controls.fail_requests(api="Metadata", error="NOT_CONTROLLER", count=None, client_id="nobody")
    broker.controls.advance_clock(ms=3_600_000)
    return {"topic": topic, "idem": idem, "txn": txn, "classic": classic, "modern": modern}


def test_reset_leaves_nothing_behind_and_clients_carry_on(broker, admin):
    state = _fill(broker, admin)
    topic = state["topic"]
    groups = {g.group_id for g in admin.list_consumer_groups().result(10).valid}
    assert {f"classic-{topic}", f"consumer-{topic}"} <= groups
    assert _transactional_ids(broker) == [f"tx-{topic}"]
    assert _scram_users(admin) == {CONFIGURED_USER, "runtime-user"}

    state["modern"].close()  # the classic consumer stays, and may rejoin its group at once
    result = broker.controls.reset()
    assert topic in result["topics"] and result["groups"] >= 2 and result["acls"] == 1
    assert result["scram_users"] == 1 and result["faults"] == 1

    # __consumer_offsets may be back already: the classic consumer looks for its coordinator
    assert set(admin.list_topics(timeout=10).topics) <= {"__consumer_offsets"}
    assert {g.group_id for g in admin.list_consumer_groups().result(10).valid} <= {f"classic-{topic}"}
    for tp_group in (f"classic-{topic}", f"consumer-{topic}"):
        committed = admin.list_consumer_group_offsets([_group_request(tp_group, topic)])[tp_group].result(10)
        assert all(tp.offset < 0 for tp in committed.topic_partitions)
    assert admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                AclOperation.ANY, AclPermissionType.ANY)).result(10) == []
    assert _scram_users(admin) == {CONFIGURED_USER}
    assert _transactional_ids(broker) == []
    assert broker.controls.list_faults() == []
    clock = broker.controls.clock()
    assert clock["offset_ms"] == 0 and clock["mode"] == "system"
    assert abs(clock["now_ms"] - time.time() * 1000) < 5_000

    # the idempotent producer of the old incarnation carries on: its topic is created again
    # (auto-creation) and its next batches are accepted under its old producer id
    idem = state["idem"]
    delivered = []
    for i in range(3):
        idem.produce(topic, value=b"after-%d" % i, partition=0,
                     on_delivery=lambda err, msg: delivered.append(err))
    assert idem.flush(15) == 0 and delivered == [None, None, None]
    check = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"check-{topic}",
                      "auto.offset.reset": "earliest"})
    check.assign([TopicPartition(topic, 0, 0)])
    assert _consume(check, 3) == [b"after-0", b"after-1", b"after-2"]
    check.close()
    # the classic consumer of the old incarnation rejoins and reads the new records
    assert len(_consume(state["classic"], 3)) == 3
    # the open transaction's id is forgotten: its producer cannot commit (it must init again)
    with pytest.raises(KafkaException):
        state["txn"].commit_transaction(10)
    state["classic"].close()
    broker.controls.reset()


def _group_request(group, topic):
    from confluent_kafka import ConsumerGroupTopicPartitions

    return ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0), TopicPartition(topic, 1)])


def test_empty_reset_touches_nothing(broker):
    """An empty reset has nothing to delete or write: its answer says so and reports the time it
    took in the broker (bench.isolation holds the figure to its target of 5 ms; timings are not
    asserted by tests on a shared machine)."""
    broker.controls.reset()
    result = broker.controls.reset()
    assert result == {"topics": [], "groups": 0, "transactional_ids": 0, "acls": 0, "scram_users": 0, "faults": 0,
                      "cluster_admin": 0, "seeded": None, "took_ms": result["took_ms"]}
    assert 0 <= result["took_ms"] < 1000


def test_reset_answers_members_waiting_in_join_group(broker):
    """A classic member parked in JoinGroup (a rebalance waiting for another member) is answered
    NOT_COORDINATOR, not left hanging."""
    topic = f"join-{uuid.uuid4().hex[:6]}"
    group = f"g-{topic}"
    with WireClient(broker.bootstrap) as first:
        proto = [{"name": "range", "metadata": b""}]
        join = request(11, 5, group_id=group, session_timeout=30_000, rebalance_timeout=30_000,
                       member_id="", group_instance_id=None, protocol_type="consumer", protocols=proto)
        resp = first.request(join)
        member = resp.member_id  # MEMBER_ID_REQUIRED, then join with it
        resp = first.request(request(11, 5, group_id=group, session_timeout=30_000, rebalance_timeout=30_000,
                                     member_id=member, group_instance_id=None, protocol_type="consumer",
                                     protocols=proto))
        assert resp.error_code == 0
        with WireClient(broker.bootstrap) as second:
            resp2 = second.request(join)
            member2 = resp2.member_id
            # the second member's join starts a rebalance that waits for the first to rejoin
            second.send_only(request(11, 5, group_id=group, session_timeout=30_000, rebalance_timeout=30_000,
                                 member_id=member2, group_instance_id=None, protocol_type="consumer",
                                 protocols=proto))
            # the broker says when the second join is parked: the group rebalances, waiting for the first
            broker.wait_for_group(group, state="PreparingRebalance", members=2, assigned=False)
            broker.controls.reset()
            answer = decode_response(11, 5, second.recv_frame())
            assert answer.error_code == 16  # NOT_COORDINATOR


ISOLATION_CONTROLS = {"reset", "snapshot", "restore", "snapshots", "drop-snapshot", "seed", "record-requests",
                      "requests"}


def test_listed_and_reachable_from_the_shell(broker, tmp_path):
    """GET controls lists them; `kafkalite control` runs them, and `seed file=` sends a seed file
    of this machine (its JSON Lines records read here) to the broker."""
    import json
    import subprocess

    from kafkalite.launcher import _broker_env, broker_command

    assert ISOLATION_CONTROLS <= set(broker.controls.names())
    (tmp_path / "records.jsonl").write_text('{"value": "one"}\n{"value": "two"}\n')
    (tmp_path / "seed.json").write_text(json.dumps({"topics": [{"name": "shell", "records": "records.jsonl"}]}))

    def control(*args):
        proc = subprocess.run(broker_command(["control", "--url", broker.controls_url, *args]), capture_output=True,
                              text=True, timeout=60, env=_broker_env(), cwd="/")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    assert control("seed", f"file={tmp_path / 'seed.json'}") == {
        "topics": ["shell"], "records": 2, "groups": [], "acls": 0, "users": []}
    assert control("snapshot", "name=shell")["topics"] == ["shell"]
    assert control("reset")["topics"] == ["shell"]
    assert control("restore", "name=shell")["topics"] == ["shell"]
    control("record-requests")
    assert control("requests", "api=Produce") == []
    control("record-requests", "enabled=false")
    control("drop-snapshot", "name=shell")
    control("reset")


def test_share_and_streams_groups_go_too(broker, admin):
    """Every group kind: a share group and a streams group (joined by raw heartbeats, as Kafka's
    Java clients would) are listed before the reset and gone after it."""
    from .test_nodes_share_streams import share_heartbeat, streams_heartbeat

    topic = f"kinds-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)

    def groups(wire):
        resp = wire.request(request(16, 5, states_filter=[], types_filter=[]))
        return {(g.group_id, g.group_type) for g in resp.groups}

    with WireClient(broker.bootstrap) as wire:
        assert wire.request(share_heartbeat(f"share-{topic}", "m1", topic)).error_code == 0
        assert wire.request(streams_heartbeat(f"streams-{topic}", "m2", topic)).error_code == 0
        assert {(f"share-{topic}", "share"), (f"streams-{topic}", "streams")} <= groups(wire)
        assert broker.controls.reset()["groups"] >= 1
        assert groups(wire) == set()


def test_reset_forgets_the_cluster_administration_state(broker):
    """A client quota, an armed throttle, a dynamic broker config and a finalized feature level set
    by one test are gone after a reset: the next starts from the broker's static settings."""
    broker.controls.reset()
    with WireClient(broker.bootstrap) as wire:
        quota = wire.request(request(49, 1, validate_only=False, entries=[
            {"entity": [{"entity_type": "client-id", "entity_name": "reset-me"}],
             "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}]))
        assert quota.entries[0].error_code == 0
        dynamic = wire.request(request(44, 1, validate_only=False, resources=[
            {"resource_type": 4, "resource_name": "", "configs": [
                {"name": "log.retention.ms", "config_operation": 0, "value": "1000"}]}]))
        assert dynamic.responses[0].error_code == 0
        downgrade = wire.request(request(57, 1, timeout=5000, validate_only=False, feature_updates=[
            {"feature": "transaction.version", "max_version_level": 1, "upgrade_type": 2, "allow_downgrade": False}]))
        assert downgrade.error_code == 0
        broker.controls.call("throttle-client", ms=100, count=None, client_id="reset-me")

        result = broker.controls.reset()
        assert result["cluster_admin"] == 3  # the quota, dynamic config and feature files

        quotas = wire.request(request(48, 1, strict=False, components=[]))
        assert quotas.entries == ()
        described = wire.request(request(32, 4, include_synonyms=False, include_documentation=False, resources=[
            {"resource_type": 4, "resource_name": "", "configuration_keys": None}]))
        assert described.results[0].configs == ()
        versions = wire.request(request(18, 4, client_software_name="t", client_software_version="1"))
        assert {f.name: f.max_version_level for f in versions.finalized_features}["transaction.version"] == 2
    assert broker.controls.call("list-throttles") == []
