"""Real clients against a 3-node kafkalite whose topology changes under them, through the test
controls (broker/controls/topology.py, over the controls endpoint): a partition's leader moves
while an idempotent producer writes, a coordinator moves while a transactional copier and its
consumer group run, the ISR shrinks below min.insync.replicas, a node goes down and comes back.
Each client must do what it does on a Kafka cluster: follow the new leader or coordinator
without losing or duplicating a record.

Apache Kafka cannot be steered like this, so these tests run on kafkalite only."""

from __future__ import annotations

import datetime
import threading
import uuid
from typing import Any, Callable

import kio.schema.list_offsets.v7.request as lo7
import kio.schema.metadata.v12.request as md12
import pytest

from compat_tests.cleanup import killed_at_end
from compat_tests.brokers import requires_kafkalite
from compat_tests.clients.base import Msg
from compat_tests.waiting import wait_until
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers

pytestmark = [pytest.mark.controls, pytest.mark.timeout(240)]

CLIENTS = ["java", "librdkafka"]
MS = datetime.timedelta(milliseconds=1)

# Small batches and five in flight: a leader move lands between and inside in-flight requests.
IN_FLIGHT = {
    "java": {"batch.size": 256, "linger.ms": 0, "max.in.flight.requests.per.connection": 5},
    "librdkafka": {"batch.num.messages": 10, "linger.ms": 0, "max.in.flight": 5},
}


@pytest.fixture
def cluster(_cluster):
    """The module's 3-node kafkalite; every node is up again after each test (each test works on
    topics, groups and transactional ids of its own)."""
    yield _cluster
    # node-up answers which nodes are (still) down
    for node in _cluster.controls.call("node-up", node=1)["down"]:
        _cluster.controls.call("node-up", node=node)


@pytest.fixture(scope="module")
def _cluster(tmp_path_factory):
    """A 3-node kafkalite with its controls endpoint; the internal topics have 3 partitions each
    so that coordinators spread over the nodes."""
    requires_kafkalite("test controls")
    with suite_brokers.running(data_dir=tmp_path_factory.mktemp("nodes"), nodes=3, controls="127.0.0.1:0", config={
            "offsets.topic.num.partitions": 3, "transaction.state.log.num.partitions": 3,
            # KIP-848 members heartbeat often enough to notice a moved coordinator at once
            "group.consumer.heartbeat.interval.ms": 300, "group.min.session.timeout.ms": 1000}) as b:
        yield b


def adapter(name: str, bootstrap: str):
    if name == "java":
        from compat_tests.clients.java import JavaClient
        return JavaClient(bootstrap)
    from compat_tests.clients.librdkafka import LibrdkafkaClient
    return LibrdkafkaClient(bootstrap)


def create(cluster, topic: str, partitions: int = 1, rf: int = 3, configs: dict[str, str] | None = None) -> None:
    from compat_tests.clients.librdkafka import LibrdkafkaAdmin
    LibrdkafkaAdmin(cluster.bootstrap).create_topic(topic, partitions, configs or {}, replication_factor=rf)


def metadata(cluster, topic: str, node: int | None = None):
    address = cluster.nodes[node] if node is not None else cluster.bootstrap
    with WireClient(address) as c:
        md = c.request(md12.MetadataRequest(topics=(md12.MetadataRequestTopic(topic_id=None, name=topic),),
                                            allow_auto_topic_creation=False,
                                            include_topic_authorized_operations=False))
    return md


def leader_of(cluster, topic: str, partition: int = 0, node: int | None = None) -> int:
    return metadata(cluster, topic, node).topics[0].partitions[partition].leader_id


def high_watermark(cluster, topic: str, partition: int = 0) -> int:
    leader = leader_of(cluster, topic, partition)
    with WireClient(cluster.nodes[leader]) as c:
        resp = c.request(lo7.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
            lo7.ListOffsetsTopic(name=topic, partitions=(
                lo7.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1, timestamp=-1),)),)))
    return resp.topics[0].partitions[0].offset


class Background:
    """Runs `fn` in a thread; `result()` joins it and returns its value or raises its error."""

    def __init__(self, fn: Callable[[], Any]):
        self._out: list[Any] = []
        self._err: list[BaseException] = []

        def run():
            try:
                self._out.append(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                self._err.append(exc)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    @property
    def running(self) -> bool:
        return self.thread.is_alive()

    def result(self, timeout: float = 180) -> Any:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the client did not finish"
        if self._err:
            raise self._err[0]
        return self._out[0]


@pytest.mark.idempotence
@pytest.mark.parametrize("client_name", CLIENTS)
def test_idempotent_producer_follows_a_moved_leader(cluster, client_name):
    topic = f"moved-{client_name}-{uuid.uuid4().hex[:6]}"
    create(cluster, topic)
    client = adapter(client_name, cluster.bootstrap)
    n = 30_000
    msgs = [Msg(key=b"k", value=f"{i:06d}".encode()) for i in range(n)]
    first = leader_of(cluster, topic)
    producing = Background(lambda: client.produce(topic, msgs, partition=0, idempotent=True,
                                                   config=IN_FLIGHT[client_name], timeout=120))
    moves = []
    for at, target in ((n // 6, first % 3 + 1), (n // 2, (first + 1) % 3 + 1)):
        wait_until(lambda at=at: high_watermark(cluster, topic) >= at or not producing.running, 120, 0.01,
                   f"{at} records written")
        assert producing.running, "the producer finished before the leader moved; nothing was tested"
        moves.append(cluster.controls.call("move-leader", topic=topic, partition=0, node=target))
    assert [m["leader_epoch"] for m in moves] == [1, 2]
    results = producing.result()
    assert [(r.partition, r.offset) for r in results] == [(0, i) for i in range(n)]
    got = client.consume(topic, [0], n, timeout_s=90)
    assert [m.value for m in got] == [m.value for m in msgs]  # nothing lost, nothing twice, in order
    assert high_watermark(cluster, topic) == n


@pytest.mark.java
@pytest.mark.transactions
@pytest.mark.groups
def test_java_transactions_and_group_survive_coordinator_moves(cluster):
    """A consume-transform-produce copier (kafka-clients, transactions and a consumer group)
    keeps copying while first its transaction coordinator and then its group coordinator move:
    every record is copied exactly once, and the group's committed offset is the end."""
    from compat_tests.clients.librdkafka import LibrdkafkaClient
    from compat_tests.txn import java_txn

    suffix = uuid.uuid4().hex[:6]
    source, sink = f"src-{suffix}", f"sink-{suffix}"
    create(cluster, source)
    create(cluster, sink)
    n = 1500
    LibrdkafkaClient(cluster.bootstrap).produce(source, [Msg(value=f"v{i}".encode()) for i in range(n)], partition=0)
    tid, group = f"copier-{suffix}", f"copy-group-{suffix}"
    copying = Background(lambda: java_txn.run(cluster.bootstrap, "copy", timeout=150, transactional_id=tid,
                                              group=group, source=source, sink=sink, count=n, timeout_ms=90_000,
                                              batch=10)[-1]["copied"])
    for at, key in ((n // 5, {"transactional_id": tid}), (n // 2, {"group": group})):
        # the sink's high watermark counts copied records and one marker per transaction
        wait_until(lambda at=at: high_watermark(cluster, sink) >= at or not copying.running, 120, 0.02,
                   f"{at} offsets in the sink")
        assert copying.running, "the copier finished before the coordinator moved; nothing was tested"
        state = cluster.controls.call("move-coordinator", **key, node=_another_node(cluster, key))
        assert state["leader"] != -1
    assert copying.result() >= n
    got = adapter("librdkafka", cluster.bootstrap).consume(sink, [0], n, isolation="read_committed", timeout_s=60)
    assert [m.value for m in got] == [f"copied:v{i}".encode() for i in range(n)]
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "broker.address.family": "v4"})
    try:
        committed = c.committed([TopicPartition(source, 0)], timeout=20)
    finally:
        c.close()
    assert [tp.offset for tp in committed] == [n]


def _another_node(cluster, key: dict[str, str]) -> int:
    """A node other than the key's current coordinator."""
    import kio.schema.find_coordinator.v4.request as fc4

    key_type, value = (1, key["transactional_id"]) if "transactional_id" in key else (0, key["group"])
    with WireClient(cluster.bootstrap) as c:
        current = c.request(fc4.FindCoordinatorRequest(key_type=key_type, coordinator_keys=(value,))).coordinators[0]
    return current.node_id % 3 + 1


@pytest.mark.parametrize("client_name", CLIENTS)
def test_acks_all_fails_below_min_insync_replicas_and_recovers(cluster, client_name):
    topic = f"isr-{client_name}-{uuid.uuid4().hex[:6]}"
    create(cluster, topic, configs={"min.insync.replicas": "2"})
    client = adapter(client_name, cluster.bootstrap)
    no_retries = {"retries": 0} if client_name == "java" else {"retries": 0, "enable.idempotence": False}
    client.produce(topic, [Msg(value=b"before")], partition=0, config=no_retries)
    leader = leader_of(cluster, topic)
    state = cluster.controls.call("shrink-isr", topic=topic, partition=0, replicas=[leader])
    assert state["isr"] == [leader]
    assert list(metadata(cluster, topic).topics[0].partitions[0].isr_nodes) == [leader]
    with pytest.raises(Exception) as refused:
        client.produce(topic, [Msg(value=b"refused")], partition=0, config=no_retries, timeout=10)
    # both adapters name the Kafka error the broker answered (JavaError.code, DeliveryError.code)
    assert getattr(refused.value, "code", None) == "NOT_ENOUGH_REPLICAS", refused.value
    # acks=1 does not wait for the ISR
    client.produce(topic, [Msg(value=b"acks=1")], partition=0, acks="1", config=no_retries)
    cluster.controls.call("restore-isr", topic=topic, partition=0)
    client.produce(topic, [Msg(value=b"after")], partition=0, config=no_retries)
    got = client.consume(topic, [0], 3, timeout_s=30)
    assert [m.value for m in got] == [b"before", b"acks=1", b"after"]


@pytest.mark.parametrize("client_name", CLIENTS)
def test_node_down_then_up(cluster, client_name):
    """The node leading a partition goes down: its port refuses connections, the partition moves
    to another in-sync replica, and an idempotent producer and a consumer carry on there; the
    node comes back into the ISR when it returns."""
    topic = f"down-{client_name}-{uuid.uuid4().hex[:6]}"
    create(cluster, topic)
    client = adapter(client_name, cluster.bootstrap)
    batch = [Msg(key=b"k", value=f"a{i}".encode()) for i in range(200)]
    client.produce(topic, batch, partition=0, idempotent=True)
    victim = leader_of(cluster, topic)
    survivor = victim % 3 + 1
    state = cluster.controls.call("node-down", node=victim)
    assert state["down"] == [victim]
    moved = next(p for p in state["moved"] if p["topic"] == topic)
    assert moved["leader"] != victim and victim not in moved["isr"]
    part = metadata(cluster, topic, node=survivor).topics[0].partitions[0]
    assert (part.leader_id, list(part.offline_replicas)) == (moved["leader"], [victim])
    # a client that knew the old leader finds the new one (the bootstrap may be the node that went down)
    survivor_client = adapter(client_name, cluster.nodes[survivor])
    more = [Msg(key=b"k", value=f"b{i}".encode()) for i in range(200)]
    survivor_client.produce(topic, more, partition=0, idempotent=True)
    state = cluster.controls.call("node-up", node=victim)
    assert state["down"] == []
    wait_until(lambda: victim in metadata(cluster, topic).topics[0].partitions[0].isr_nodes, 10)
    last = [Msg(key=b"k", value=f"c{i}".encode()) for i in range(200)]
    client.produce(topic, last, partition=0, idempotent=True)
    got = client.consume(topic, [0], 600, timeout_s=60)
    assert [m.value for m in got] == [m.value for m in batch + more + last]


GROUP_KINDS = [
    pytest.param(("confluent", "classic"), marks=pytest.mark.librdkafka, id="confluent-classic"),
    pytest.param(("confluent", "consumer"), marks=pytest.mark.librdkafka, id="confluent-consumer"),
    pytest.param(("java", "consumer"), marks=pytest.mark.java, id="java-consumer"),
]


@pytest.mark.groups
@pytest.mark.parametrize("kind", GROUP_KINDS)
def test_consumer_group_recovers_from_a_coordinator_move(cluster, kind):
    """A member consumes and commits, its group coordinator moves to another node, and it goes on
    consuming and committing there; a new member of the group resumes at the offsets committed
    after the move."""
    from compat_tests.clients.librdkafka import LibrdkafkaClient
    from compat_tests.groups.members import Member

    client, protocol = kind
    topic, group = f"grp-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    create(cluster, topic, partitions=3)
    producer = LibrdkafkaClient(cluster.bootstrap)

    def produce(prefix: str, n: int) -> None:
        for p in range(3):
            producer.produce(topic, [Msg(value=f"{prefix}-{p}-{i}".encode()) for i in range(n)], partition=p)

    with killed_at_end() as started:
        produce("old", 3)
        m = Member(client, cluster.bootstrap, group, topic, protocol=protocol, session_timeout_ms=6000,
                   heartbeat_interval_ms=300)
        started.append(m)
        m.wait_records(9, timeout=60)
        m.commit()
        state = cluster.controls.call("move-coordinator", group=group, node=_another_node(cluster, {"group": group}))
        assert state["topic"] == "__consumer_offsets"
        produce("new", 2)
        recs = m.wait_records(15, timeout=60)
        assert sorted(r["value"] for r in recs[9:]) == sorted(f"new-{p}-{i}" for p in range(3) for i in range(2))
        m.commit()  # to the new coordinator, after NOT_COORDINATOR from the old one
        m.close()
        produce("last", 1)
        m2 = Member(client, cluster.bootstrap, group, topic, protocol=protocol, session_timeout_ms=6000,
                    heartbeat_interval_ms=300)
        started.append(m2)
        recs2 = m2.wait_records(3, timeout=60)
        assert sorted(r["value"] for r in recs2) == sorted(f"last-{p}-0" for p in range(3))
        assert all(r["offset"] == 5 for r in recs2)
        m2.close()


class PollingMember:
    """A confluent-kafka classic group member polling in a thread of its own, committing each
    record's offset synchronously before it takes the next (retrying what a moved coordinator
    answers), so that no record is read twice across a rebalance."""

    RETRIABLE = {"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE",
                 "REQUEST_TIMED_OUT", "_TRANSPORT", "_TIMED_OUT"}

    def __init__(self, cluster, group: str, topic: str, client_id: str):
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": client_id, "group.id": group,
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1000,
                                  "reconnect.backoff.max.ms": 500})
        # a revoke callback makes the member's rejoin wait for its poll(), so that pausing it
        # keeps a rebalance parked (confluent-kafka still assigns and unassigns by itself)
        self.consumer.subscribe([topic], on_revoke=lambda consumer, partitions: None)
        self.values: list[str] = []
        self.stop = threading.Event()
        self.paused = threading.Event()
        self.worker = Background(self._run)

    def _run(self) -> None:
        from confluent_kafka import KafkaException

        try:
            while not self.stop.is_set():
                if self.paused.is_set():
                    self.stop.wait(0.02)  # not polling: a rebalance waits for this member
                    continue
                msg = self.consumer.poll(0.2)
                if msg is None or msg.error() is not None:
                    continue
                self.values.append(msg.value().decode())
                for _ in range(50):
                    try:
                        self.consumer.commit(message=msg, asynchronous=False)
                        break
                    except KafkaException as exc:
                        if exc.args[0].name() not in self.RETRIABLE:
                            raise
                else:
                    raise AssertionError(f"offset {msg.offset() + 1} of partition {msg.partition()} never committed")
        finally:
            self.consumer.close()

    def close(self) -> None:
        self.stop.set()
        self.worker.result(30)


@pytest.mark.groups
@pytest.mark.librdkafka
def test_a_coordinator_move_during_a_rebalance_answers_the_waiting_member_and_the_group_stabilises(cluster):
    """A second member joins a Stable group, and while the rebalance waits (the joiner parked in
    JoinGroup, or in SyncGroup) the group's coordinator moves: the old coordinator answers the
    parked request NOT_COORDINATOR, as Kafka's onUnloaded does, the new one loads the group from
    __consumer_offsets, both members find it, the group is Stable with two members, and every
    record is consumed once."""
    from confluent_kafka import Producer

    topic, group = f"fo-{uuid.uuid4().hex[:6]}", f"fo-{uuid.uuid4().hex[:6]}"
    create(cluster, topic, partitions=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})

    def produce(prefix: str, n: int) -> list[str]:
        values = [f"{prefix}-{i}" for i in range(n)]
        for v in values:
            producer.produce(topic, v.encode(), key=v.encode())
        assert producer.flush(30) == 0
        return values

    before = produce("before", 30)
    first = PollingMember(cluster, group, topic, "failover-first")
    members = [first]
    try:
        wait_until(lambda: len(first.values) >= len(before), 30, what="the first member reads every record")
        cluster.controls.wait_for_committed(group, topic)
        # the first member stops polling, so the rebalance the second starts stays parked (its
        # JoinGroup waits for the first to rejoin) until the move, however slow the machine
        first.paused.set()
        second = PollingMember(cluster, group, topic, "failover-second")
        members.append(second)
        cluster.controls.wait_for_group(group, state="PreparingRebalance", assigned=False)
        mark = max(e["seq"] for e in cluster.controls.requests())
        cluster.controls.call("move-coordinator", group=group, node=_another_node(cluster, {"group": group}))
        first.paused.clear()
        cluster.controls.wait_for_group(group, state="Stable", members=2, timeout_ms=60_000)
        parked = [e for e in cluster.controls.requests(group_id=group)
                  if e["seq"] <= mark and e["api"] in ("JoinGroup", "SyncGroup") and e["error"] == "NOT_COORDINATOR"]
        assert parked, "no JoinGroup or SyncGroup waiting at the move was answered NOT_COORDINATOR"
        after = produce("after", 30)
        wait_until(lambda: len(first.values) + len(second.values) >= len(before) + len(after), 30,
                   what="the members read the records produced after the move")
        cluster.controls.wait_for_committed(group, topic)
    finally:
        for m in members:
            m.close()
    consumed = first.values + second.values
    assert sorted(consumed) == sorted(before + after)  # every record once: none lost, none twice
    assert second.values, "the member that joined during the move got no partition"
