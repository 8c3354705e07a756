"""Consumer groups with every client: subscribe, consume, commit, resume; members splitting
partitions and rebalancing on leave and on death; static membership; the KIP-848 consumer
protocol (Java and librdkafka); group administration; a kill -9 of the broker.

Members run as their own processes (compat_tests/groups/members.py) so that a member can die
without leaving its group. The module runs its own broker with a short KIP-848 session
timeout (group.consumer.session.timeout.ms=3000), or uses KAFKA_BOOTSTRAP.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.cleanup import killed_at_end
from compat_tests import brokers
from compat_tests.brokers import EXTERNAL_BOOTSTRAP
from compat_tests.groups.members import Member, MemberError, settle, wait_split
from compat_tests.differ.core import request as wire_request
from compat_tests.waiting import wait_until
from kafkalite.protocol.client import WireClient

pytestmark = pytest.mark.groups

CONSUMER_SESSION_MS = 3000
# Kafka checks the KIP-848 timeouts against their minimums (45 s and 5 s by default), and a classic
# member's session.timeout.ms against group.min.session.timeout.ms (6 s by default)
BROKER_CONFIG = {"group.min.session.timeout.ms": 1000,
                 "group.consumer.session.timeout.ms": CONSUMER_SESSION_MS,
                 "group.consumer.min.session.timeout.ms": CONSUMER_SESSION_MS,
                 "group.consumer.heartbeat.interval.ms": 300,
                 "group.consumer.min.heartbeat.interval.ms": 300}
SESSION_MS = 4000  # classic members
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP

KINDS = [
    pytest.param(("confluent", "classic"), marks=pytest.mark.librdkafka, id="confluent-classic"),
    pytest.param(("confluent", "consumer"), marks=pytest.mark.librdkafka, id="confluent-consumer"),
    pytest.param(("kafka-python", "classic"), marks=pytest.mark.kafka_python, id="kafka-python"),
    pytest.param(("aiokafka", "classic"), marks=pytest.mark.aiokafka, id="aiokafka"),
    pytest.param(("kafkajs", "classic"), marks=pytest.mark.kafkajs, id="kafkajs"),
    pytest.param(("java", "classic"), marks=pytest.mark.java, id="java-classic"),
    pytest.param(("java", "consumer"), marks=pytest.mark.java, id="java-consumer"),
    pytest.param(("franz", "classic"), marks=pytest.mark.franz, id="franz-classic"),
    pytest.param(("franz", "consumer"), marks=pytest.mark.franz, id="franz-consumer"),
    pytest.param(("sarama", "classic"), marks=pytest.mark.sarama, id="sarama"),
]


@pytest.fixture(scope="module")
def gbootstrap():
    if EXTERNAL_BOOTSTRAP:
        yield EXTERNAL_BOOTSTRAP
        return
    with brokers.start(config=BROKER_CONFIG) as b:
        yield b.bootstrap


def new_topic(bootstrap: str, partitions: int) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"grp-{uuid.uuid4().hex[:10]}"
    from confluent_kafka import KafkaError, KafkaException

    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)
    except KafkaException as e:  # a retried request whose first try created it; any other error fails
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    from compat_tests.clients.librdkafka import LibrdkafkaClient

    try:  # Kafka's brokers learn of a new topic a little after CreateTopics answers
        LibrdkafkaClient(bootstrap).wait_for_leaders(name, partitions, timeout=20)
    except TimeoutError as exc:
        raise AssertionError(f"topic {name} has no leader for each of its {partitions} partitions") from exc
    return name


def produce(bootstrap: str, topic: str, per_partition: dict[int, list[str]]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for part, values in per_partition.items():
        for v in values:
            p.produce(topic, value=v.encode(), partition=part)
    assert p.flush(20) == 0


def member(kind, bootstrap, group, topic, **kw) -> Member:
    client, protocol = kind
    kw.setdefault("session_timeout_ms", SESSION_MS)
    kw.setdefault("heartbeat_interval_ms", 300)
    return Member(client, bootstrap, group, topic, protocol=protocol, **kw)


@pytest.fixture
def members():
    with killed_at_end() as started:
        yield started


def group_id() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


def group_type(bootstrap: str, group: str) -> str:
    """The group's type as ListGroups v5 gives it: "classic" or "consumer" (KIP-848)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answer: its end fails the future
    listed = admin.list_consumer_groups().result(timeout=20)
    types = {g.group_id: g.type.name.lower() for g in listed.valid}
    assert group in types, f"group {group} not listed: {sorted(types)} {listed.errors}"
    return types[group]


# --- one member ------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_consume_commit_and_resume(kind, gbootstrap, members):
    topic = new_topic(gbootstrap, 3)
    produce(gbootstrap, topic, {p: [f"old-{p}-{i}" for i in range(3)] for p in range(3)})
    group = group_id()
    m = member(kind, gbootstrap, group, topic)
    members.append(m)
    recs = m.wait_records(9, timeout=40)
    assert sorted(r["value"] for r in recs) == sorted(f"old-{p}-{i}" for p in range(3) for i in range(3))
    assert group_type(gbootstrap, group) == kind[1], "the member joined with another protocol than its case's"
    m.commit()
    m.close()
    produce(gbootstrap, topic, {p: [f"new-{p}-{i}" for i in range(2)] for p in range(3)})
    m2 = member(kind, gbootstrap, group, topic)
    members.append(m2)
    # resumed at the committed offsets: had it restarted anywhere earlier, old records (lower
    # offsets of the same partitions) would come first, so the first six settle it
    recs2 = m2.wait_records(6, timeout=40)
    assert sorted(r["value"] for r in recs2) == sorted(f"new-{p}-{i}" for p in range(3) for i in range(2))
    assert all(r["offset"] >= 3 for r in recs2)
    m2.close()


# --- several members -------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_two_members_split_then_rebalance_on_leave(kind, gbootstrap, members):
    topic = new_topic(gbootstrap, 4)
    group = group_id()
    a = member(kind, gbootstrap, group, topic, client_id="member-a")
    members.append(a)
    a.wait_assignment(lambda s: s == {0, 1, 2, 3}, 40, "all four partitions")
    b = member(kind, gbootstrap, group, topic, client_id="member-b")
    members.append(b)
    wait_split([a, b], 4, timeout=40)
    b.close()
    a.wait_assignment(lambda s: s == {0, 1, 2, 3}, 30, "all partitions back after b left")


COOPERATIVE = [
    pytest.param(("confluent", "classic", "cooperative-sticky"), marks=pytest.mark.librdkafka, id="confluent"),
    pytest.param(("java", "classic", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"),
                 marks=pytest.mark.java, id="java"),
    pytest.param(("franz", "classic", "cooperative-sticky"), marks=pytest.mark.franz, id="franz"),
    pytest.param(("sarama", "classic", "cooperative-sticky"), marks=pytest.mark.sarama, id="sarama"),
]


@pytest.mark.parametrize("coop", COOPERATIVE)
def test_cooperative_sticky_rebalance_keeps_partitions(coop, gbootstrap, members):
    """The broker passes cooperative assignments through; members keep what they own."""
    client, protocol, assignor = coop
    topic = new_topic(gbootstrap, 4)
    group = group_id()
    a = member((client, protocol), gbootstrap, group, topic, assignor=assignor, client_id="member-a")
    members.append(a)
    a.wait_assignment(lambda s: s == {0, 1, 2, 3}, 40, "all four partitions")
    revoked_before = [e for e in a.events if e.get("event") == "assigned"]
    b = member((client, protocol), gbootstrap, group, topic, assignor=assignor, client_id="member-b")
    members.append(b)
    sa, sb = wait_split([a, b], 4, timeout=40)
    # a never went through an empty assignment: only the moved partitions were revoked
    after = [e for e in a.events if e.get("event") == "assigned"][len(revoked_before):]
    assert all(e["partitions"] for e in after), after
    b.close()
    a.wait_assignment(lambda s: s == {0, 1, 2, 3}, 30, "all partitions back after b left")


@pytest.mark.parametrize("kind", KINDS)
def test_rebalance_when_a_member_dies(kind, gbootstrap, members):
    topic = new_topic(gbootstrap, 4)
    group = group_id()
    a = member(kind, gbootstrap, group, topic, client_id="member-a")
    b = member(kind, gbootstrap, group, topic, client_id="member-b")
    members.extend([a, b])
    wait_split([a, b], 4, timeout=40)
    b.kill()  # no LeaveGroup: the session timeout removes it
    t0 = time.monotonic()
    a.wait_assignment(lambda s: s == {0, 1, 2, 3}, 30, "all partitions after b died")
    elapsed = time.monotonic() - t0
    session = CONSUMER_SESSION_MS if kind[1] == "consumer" else SESSION_MS
    assert elapsed < session / 1000 + 15


@pytest.mark.parametrize("kind", KINDS)
def test_three_members_split_six_partitions(kind, gbootstrap, members):
    topic = new_topic(gbootstrap, 6)
    group = group_id()
    ms = [member(kind, gbootstrap, group, topic, client_id=f"member-{i}") for i in range(3)]
    members.extend(ms)
    deadline = time.monotonic() + 60
    while True:  # a split may pass through uneven steps while members reconcile (KIP-848)
        sets = wait_split(ms, 6, timeout=max(1.0, deadline - time.monotonic()))
        if sorted(len(s) for s in sets) == [2, 2, 2]:
            break
        assert time.monotonic() < deadline, f"uneven split {sets}"
        time.sleep(0.1)


# franz-go 1.22.2's leave848 sends a static member's temporary leave (epoch -2) without its instance
# id, which Kafka 4.4 refuses ("InstanceId can't be null.", INVALID_REQUEST): the restarted member
# then finds its instance id unreleased (UNRELEASED_INSTANCE_ID) on both brokers alike. Strict, so
# a franz-go that sends the id makes this case pass and the mark go.
_FRANZ_STATIC_LEAVE = pytest.mark.xfail(
    strict=True, raises=MemberError,
    reason="franz-go 1.22.2 leaves a KIP-848 group with epoch -2 and no instance id; Kafka refuses it")
STATIC_KINDS = [pytest.param(*k.values, marks=(*k.marks, _FRANZ_STATIC_LEAVE), id=k.id)
                if k.id == "franz-consumer" else k for k in KINDS if k.id not in ("kafkajs",)]


def give_group_session(bootstrap: str, group: str, session_ms: int) -> None:
    """A KIP-848 member's session is the group's `consumer.session.timeout.ms`, not a setting of the
    client: set it as a user of that protocol does, and wait until the broker describes it (Kafka
    applies a group config through its metadata log, a moment after the answer)."""
    resource = {"resource_type": GROUP_RESOURCE, "resource_name": group}
    with WireClient(bootstrap) as c:
        altered = c.request(wire_request(44, 1, validate_only=False, resources=[{**resource, "configs": [
            {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": str(session_ms)}]}]))
        assert [r.error_code for r in altered.responses] == [ErrorCode.none], altered

        def described() -> bool:
            got = c.request(wire_request(32, 4, include_synonyms=False, include_documentation=False, resources=[
                {**resource, "configuration_keys": ["consumer.session.timeout.ms"]}]))
            return [e.value for r in got.results for e in r.configs] == [str(session_ms)]
        wait_until(described, 20, what=f"group {group}'s consumer.session.timeout.ms described as {session_ms}")


@pytest.mark.parametrize("kind", STATIC_KINDS)
def test_static_member_restart_without_rebalance(kind, gbootstrap, members):
    topic = new_topic(gbootstrap, 4)
    group = group_id()
    if kind[1] == "consumer":  # the 10 s the members ask for, which only a classic member's client sets
        give_group_session(gbootstrap, group, 10000)
    a = member(kind, gbootstrap, group, topic, instance_id="inst-a", session_timeout_ms=10000, client_id="member-a")
    members.append(a)
    a.wait_assignment(lambda s: s == {0, 1, 2, 3}, 40, "all four partitions")  # a leads
    b = member(kind, gbootstrap, group, topic, instance_id="inst-b", session_timeout_ms=10000, client_id="member-b")
    members.append(b)
    wait_split([a, b], 4, timeout=40)
    settle([a, b])
    sa, sb = set(a.assignment), set(b.assignment)
    seen = a.assignments_seen
    b.close()  # a static member leaves no LeaveGroup behind (KIP-345)
    b2 = member(kind, gbootstrap, group, topic, instance_id="inst-b", session_timeout_ms=10000, client_id="member-b")
    members.append(b2)
    b2.wait_assignment(lambda s: s == sb, 30, f"the same partitions {sorted(sb)} after the restart")
    # b2 got its partitions: a rebalance would have taken a through a rejoin first. A round trip
    # through a (commit) makes sure every event it printed before has been read.
    a.commit()
    assert a.assignments_seen == seen and a.assignment == sa, \
        f"the other member was rebalanced: {a.events[-6:]}\n{a.tail()}"


# --- administration --------------------------------------------------------------------------

def _java_admin(bootstrap, op, group=None):
    from compat_tests.clients import java
    b = java.build()
    cmd = ["java", *java.JVM_FLAGS]
    if b.archive is not None:
        cmd.append(f"-XX:SharedArchiveFile={b.archive}")
    args = [f"bootstrap={bootstrap}", f"op={op}"] + ([f"group={group}"] if group else [])
    out = subprocess.run([*cmd, "-cp", b.classpath, "GroupAdmin", *args], capture_output=True, text=True, timeout=90)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert lines, out.stderr[-3000:]
    result = json.loads(lines[-1])
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


def _stable_group(kind, bootstrap, members, partitions=2):
    topic = new_topic(bootstrap, partitions)
    group = group_id()
    m = member(kind, bootstrap, group, topic, client_id="admin-test-member")
    members.append(m)
    produce(bootstrap, topic, {0: ["x"]})
    m.wait_records(1, timeout=40)
    m.wait_assignment(lambda s: len(s) == partitions, 30)
    m.commit()
    return topic, group, m


@pytest.mark.librdkafka
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_admin_confluent_kafka(protocol, gbootstrap, members):
    from confluent_kafka import ConsumerGroupState, TopicPartition
    from confluent_kafka.admin import AdminClient
    from confluent_kafka import ConsumerGroupTopicPartitions

    topic, group, m = _stable_group(("confluent", protocol), gbootstrap, members)
    admin = AdminClient({"bootstrap.servers": gbootstrap})
    listed = {g.group_id: g for g in admin.list_consumer_groups().result(20).valid}
    assert group in listed and listed[group].state == ConsumerGroupState.STABLE
    stable_only = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(20).valid
    assert group not in {g.group_id for g in stable_only}
    desc = admin.describe_consumer_groups([group])[group].result(20)
    assert desc.state == ConsumerGroupState.STABLE
    assert [mm.client_id for mm in desc.members] == ["admin-test-member"]
    assert {tp.partition for tp in desc.members[0].assignment.topic_partitions} == {0, 1}
    offs = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(20)
    assert {(tp.topic, tp.partition): tp.offset for tp in offs.topic_partitions}[(topic, 0)] == 1
    # a group with members cannot be deleted
    with pytest.raises(Exception, match="NON_EMPTY_GROUP|not empty"):
        admin.delete_consumer_groups([group])[group].result(20)
    m.close()
    wait_until(lambda: admin.describe_consumer_groups([group])[group].result(20).state == ConsumerGroupState.EMPTY,
               20, 0.2, "the group empty after its member left")
    admin.delete_consumer_groups([group])[group].result(20)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(20).valid}
    del TopicPartition


@pytest.mark.kafka_python
def test_admin_kafka_python(gbootstrap, members):
    from kafka import KafkaAdminClient, TopicPartition

    topic, group, m = _stable_group(("kafka-python", "classic"), gbootstrap, members)
    admin = KafkaAdminClient(bootstrap_servers=gbootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["group_state"] == "Stable" and listed[group]["group_type"] == "classic"
        assert group not in {g["group_id"] for g in admin.list_groups(states_filter=["Empty"])}
        desc = admin.describe_groups([group])[group]
        assert desc["group_state"] == "Stable" and desc["protocol_type"] == "consumer"
        (mm,) = desc["members"]
        assert mm["member_assignment"]["assigned_partitions"] == [{"topic": topic, "partitions": [0, 1]}]
        offs = admin.list_group_offsets({group: None})[group]
        assert offs[TopicPartition(topic, 0)].offset == 1
        assert admin.delete_groups([group])[group] != "OK"  # NON_EMPTY_GROUP
        m.close()
        wait_until(lambda: admin.describe_groups([group])[group]["group_state"] == "Empty", 20, 0.2,
                   "the group empty after its member left")
        assert admin.delete_groups([group]) == {group: "OK"}
        assert group not in {g["group_id"] for g in admin.list_groups()}
    finally:
        admin.close()


@pytest.mark.java
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_admin_java(protocol, gbootstrap, members):
    topic, group, m = _stable_group(("java", protocol), gbootstrap, members)
    listed = _java_admin(gbootstrap, "list")["groups"]
    assert [x.upper() for x in listed[group]] == [protocol.upper(), "STABLE"]
    desc = _java_admin(gbootstrap, "describe", group)
    assert desc["state"].upper() == "STABLE" and desc["type"].upper() == protocol.upper()
    assert [mm["partitions"] for mm in desc["members"]] == [[0, 1]]
    assert _java_admin(gbootstrap, "offsets", group)["offsets"][f"{topic}:0"] == 1
    m.close()
    wait_until(lambda: _java_admin(gbootstrap, "describe", group)["state"].upper() == "EMPTY", 20, 0.2,
               "the group empty after its member left")
    assert _java_admin(gbootstrap, "delete", group) == {"deleted": True}
    assert group not in _java_admin(gbootstrap, "list")["groups"]


def _kafkajs_admin(bootstrap, op, group=None, topic=None):
    from compat_tests.groups.members import HERE
    out = subprocess.run(["node", str(HERE / "kafkajs_admin.js"),
                          json.dumps({"bootstrap": bootstrap, "op": op, "group": group, "topic": topic})],
                         capture_output=True, text=True, timeout=60)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{") or line.startswith("[")]
    assert lines, out.stderr[-3000:]
    return json.loads(lines[-1])


@pytest.mark.kafkajs
def test_admin_kafkajs(gbootstrap, members):
    topic, group, m = _stable_group(("kafkajs", "classic"), gbootstrap, members)
    listed = {g["groupId"]: g for g in _kafkajs_admin(gbootstrap, "list")["groups"]}
    assert listed[group]["protocolType"] == "consumer"
    (desc,) = _kafkajs_admin(gbootstrap, "describe", group)["groups"]
    assert desc["state"] == "Stable" and len(desc["members"]) == 1
    offs = _kafkajs_admin(gbootstrap, "offsets", group, topic)
    (t,) = offs
    assert {p["partition"]: p["offset"] for p in t["partitions"]}[0] == "1"
    err = _kafkajs_admin(gbootstrap, "delete", group)
    assert "error" in err  # a group with members
    m.close()
    wait_until(lambda: _kafkajs_admin(gbootstrap, "describe", group)["groups"][0]["state"] == "Empty", 20, 0.2,
               "the group empty after its member left")
    assert _kafkajs_admin(gbootstrap, "delete", group) == [{"groupId": group, "errorCode": 0}]
    assert group not in {g["groupId"] for g in _kafkajs_admin(gbootstrap, "list")["groups"]}


@pytest.mark.aiokafka
def test_admin_aiokafka(gbootstrap, members):
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient

    topic, group, m = _stable_group(("aiokafka", "classic"), gbootstrap, members)

    async def go():
        admin = AIOKafkaAdminClient(bootstrap_servers=gbootstrap)
        await admin.start()
        try:
            listed = await admin.list_consumer_groups()
            assert (group, "consumer") in [(g[0], g[1]) for g in listed]
            described = await admin.describe_consumer_groups([group])
            return described, await admin.list_consumer_group_offsets(group)
        finally:
            await admin.close()

    described, offs = asyncio.run(go())
    text = repr(described)
    assert group in text and "Stable" in text
    assert {(tp.topic, tp.partition): om.offset for tp, om in offs.items()}[(topic, 0)] == 1


# --- kcat -G ---------------------------------------------------------------------------------

@pytest.mark.kcat
def test_kcat_balanced_consumer_commits_and_resumes(gbootstrap):
    if not shutil.which("kcat"):
        pytest.fail("kcat is not installed (scripts/install-test-deps.sh installs it)")
    topic = new_topic(gbootstrap, 2)
    produce(gbootstrap, topic, {0: ["a0", "a1"], 1: ["b0", "b1"]})
    group = group_id()

    def run(count):
        out = subprocess.run(["kcat", "-b", gbootstrap, "-G", group, "-X", "auto.offset.reset=earliest",
                              "-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100",
                              "-c", str(count), "-f", "%p:%o:%s\\n", "-q", topic],
                             capture_output=True, text=True, timeout=60)
        return sorted(line for line in out.stdout.splitlines() if line)

    assert run(4) == ["0:0:a0", "0:1:a1", "1:0:b0", "1:1:b1"]
    produce(gbootstrap, topic, {0: ["a2"], 1: ["b2"]})
    assert run(2) == ["0:2:a2", "1:2:b2"]


# --- the broker dies -------------------------------------------------------------------------

def _while_coordinator_loads(call, timeout: float = 30.0):
    """call(), repeated while the group coordinator is not ready: on a Kafka broker just started
    (or restarted) __consumer_offsets is created or loaded first, and until then the
    coordinator answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS. librdkafka hands these
    to the application for commit() and committed(); the Java client retries them itself."""
    from confluent_kafka import KafkaError, KafkaException

    retriable = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                 KafkaError.COORDINATOR_NOT_AVAILABLE}
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except KafkaException as exc:
            if exc.args[0].code() not in retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.restart
@pytest.mark.librdkafka
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_offsets_and_groups_survive_kill9(protocol, start_broker):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    # the KIP-848 session (broker-side) outlasts the restart as well (a JVM broker on a busy
    # machine takes many seconds); 3 s in the rest of this module
    b = start_broker({**BROKER_CONFIG, "group.consumer.session.timeout.ms": 30000})
    ms: list[Member] = []
    try:
        topic = new_topic(b.bootstrap, 2)
        produce(b.bootstrap, topic, {0: ["x0", "x1", "x2"], 1: ["y0"]})
        committed_group = group_id()
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": committed_group, "enable.auto.commit": False})
        _while_coordinator_loads(lambda: c.commit(
            offsets=[TopicPartition(topic, 0, 2, "meta-0"), TopicPartition(topic, 1, 1)], asynchronous=False))
        c.close()
        live_group = group_id()
        # librdkafka leaves and rejoins by itself when no heartbeat succeeds for session.timeout.ms,
        # so the session outlasts the restart (a JVM broker on a busy machine takes many seconds)
        m = member(("confluent", protocol), b.bootstrap, live_group, topic, session_timeout_ms=60000)
        ms.append(m)
        m.wait_records(4, timeout=40)
        before = m.assignments_seen
        b.kill()
        b.restart()
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": committed_group, "enable.auto.commit": False})
        got = _while_coordinator_loads(
            lambda: c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=20))
        c.close()
        assert [(tp.offset, tp.metadata) for tp in got] == [(2, "meta-0"), (1, None)]
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        groups = {g.group_id: g for g in admin.list_consumer_groups().result(20).valid}
        assert committed_group in groups and live_group in groups
        desc = admin.describe_consumer_groups([live_group])[live_group].result(20)
        assert desc.state.name == "STABLE" and len(desc.members) == 1
        # the live member goes on in its generation: its commit (OffsetCommit with that generation)
        # succeeds on the restarted broker, and it saw no rebalance
        m.commit(timeout=40)
        assert m.assignments_seen == before and m.assignment == {0, 1}
    finally:
        for m in ms:
            m.kill()
        b.kill()
