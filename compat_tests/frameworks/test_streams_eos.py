"""Kafka Streams 4.3.0 with processing.guarantee=exactly_once_v2, unmodified, against the broker.

The application (streams/EosTopology.java, see streams_app.py) has a join with a table (a state
store and its changelog), a groupBy (a repartition topic), an aggregation and a windowed count. Its
internal topics are created by Streams itself (CreateTopics with configs), and its repartition
topics are purged by Streams with DeleteRecords. Output is read with read_committed and must equal,
as a multiset, what the input determines: nothing lost, nothing twice, also when one of three
instances is killed with SIGKILL in the middle and restarted (its tasks' state comes back from the
changelogs).

The classic rebalance protocol; test_streams_groups.py runs the same application with
group.protocol=streams (KIP-1071).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from compat_tests.clients.librdkafka import LibrdkafkaAdmin
from compat_tests.frameworks import read_all
from compat_tests.frameworks import streams_app as sa

pytestmark = [pytest.mark.frameworks, pytest.mark.streams]


@pytest.fixture
def app(broker, bootstrap, tmp_path):
    """A fresh application id with its input and output topics; stops its instances afterwards."""
    prefix = f"eos-{uuid.uuid4().hex[:8]}"
    names = sa.topics(prefix)
    admin = LibrdkafkaAdmin(bootstrap)
    for role, name in names.items():
        admin.create_topic(name, sa.PARTITIONS, {"cleanup.policy": "compact"} if role == "customers" else None)
    instances: list[sa.StreamsInstance] = []

    class App:
        app_id = f"{prefix}-app"
        topics = names

        def start(self, name: str, state: str | None = None) -> sa.StreamsInstance:
            conf = sa.config(bootstrap, self.app_id, tmp_path / f"state-{state or name}")
            inst = sa.StreamsInstance(name, conf, names, tmp_path / f"{name}.log")
            instances.append(inst)
            return inst

    yield App()
    for inst in instances:
        inst.stop(timeout=20)
    if broker is not None and hasattr(broker, "log_text"):  # for a failure's post-mortem
        (tmp_path / "broker.log").write_text(broker.log_text())


def _committed_output(bootstrap, names) -> dict:
    return {role: sa.output_counters(read_all(bootstrap, names[role], sa.PARTITIONS))
            for role in ("enriched", "totals", "windows")}


def _assert_output(bootstrap, names, orders: int, context: str = "") -> None:
    got = _committed_output(bootstrap, names)
    want = sa.expected_output(orders)
    wrong = []
    for role in want:
        missing = want[role] - got[role]
        extra = got[role] - want[role]
        if missing or extra:
            wrong.append(f"{role}: {sum(missing.values())} results missing (e.g. {sorted(missing)[:8]}), "
                         f"{sum(extra.values())} extra or repeated (e.g. {sorted(extra)[:8]})")
    assert not wrong and not context, "\n".join([*wrong, context])


def _output_count(bootstrap, names) -> int:
    """Records in the output topic that has fewest: each of totals and windows gets one per order,
    each from its own subtopology (one repartition topic each), so one can lag behind the other."""
    return min(len(read_all(bootstrap, names[role], sa.PARTITIONS)) for role in ("totals", "windows"))


def _internal_topics(admin: LibrdkafkaAdmin, app_id: str) -> set[str]:
    return {t for t in admin.list_topics() if t.startswith(app_id + "-")}


def _input_then_running(bootstrap, app, orders: int, *names: str):
    """Produce the customers and the first `orders` orders, then start the instances `names` and
    wait until each runs: (the producer, the instances)."""
    p = sa.producer(bootstrap)
    sa.produce_customers(p, app.topics["customers"])
    sa.produce_orders(p, app.topics["orders"], 0, orders)
    instances = [app.start(name) for name in names]
    for instance in instances:
        instance.wait_running()
    return p, instances


def test_streams_eos_two_instances(bootstrap, app):
    """Two instances; the output equals the input's; internal topics as Streams asked for them; the
    repartition topics purged up to what was consumed."""
    orders = 900
    _, (a, b) = _input_then_running(bootstrap, app, orders, "a", "b")
    sa.wait_output(lambda: _output_count(bootstrap, app.topics), orders, timeout=120)

    admin = LibrdkafkaAdmin(bootstrap)
    internal = _internal_topics(admin, app.app_id)
    changelogs = {f"{app.app_id}-{s}-changelog" for s in ("customers-store", "totals-store", "window-counts")}
    repartitions = {t for t in internal if t.endswith("-repartition")}
    assert changelogs <= internal, internal
    assert len(repartitions) == 2, internal
    for t in internal:
        assert admin.describe_topics([t])[t]["partitions"] == list(range(sa.PARTITIONS)), t
    policy = {t: admin.describe_configs("topic", t)["cleanup.policy"] for t in internal}
    assert policy[f"{app.app_id}-customers-store-changelog"].value == "compact"
    assert policy[f"{app.app_id}-totals-store-changelog"].value == "compact"
    assert set(policy[f"{app.app_id}-window-counts-changelog"].value.split(",")) == {"compact", "delete"}
    for t in repartitions:
        assert policy[t].value == "delete"
        assert policy[t].source == "DYNAMIC_TOPIC_CONFIG"
        assert admin.describe_configs("topic", t)["retention.ms"].value == "-1"

    # Streams deletes repartition records once their offsets are committed (DeleteRecords):
    # the broker's log start offset moves up.
    deadline = time.monotonic() + 30
    while True:
        starts = {t: admin.list_offsets(t, range(sa.PARTITIONS), "earliest") for t in repartitions}
        if all(any(off > 0 for off, _ in s.values()) for s in starts.values()):
            break
        assert time.monotonic() < deadline, f"repartition topics not purged: {starts}"
        time.sleep(0.5)

    a.close()
    b.close()
    assert not a.errors() and not b.errors(), a.errors() + b.errors()
    _assert_output(bootstrap, app.topics, orders)


def _group_stable(admin: AdminClient, group: str, members: int) -> bool:
    desc = admin.describe_consumer_groups([group])[group].result(timeout=10)
    return desc.state == ConsumerGroupState.STABLE and len(desc.members) == members


@pytest.mark.parametrize("restart_state", ["same-state-dir", "new-state-dir"])
def test_streams_eos_kill_one_of_three(bootstrap, app, restart_state):
    """Two instances, then a third; one killed with SIGKILL while records flow, then restarted:
    the read_committed output is exactly the input's, and state is restored from changelogs.

    Restarted on its own state directory, the instance keeps its process id, so its new producer
    fences the killed one's open transaction at once; on a new directory (another machine) that
    transaction is left to the broker to abort when transaction.timeout.ms passes."""
    orders = 1800
    third = orders // 3
    p, (a, b) = _input_then_running(bootstrap, app, third, "a", "b")
    c = app.start("c")
    c.wait_running()

    feeder = threading.Thread(target=_feed, args=(p, app.topics["orders"], third, 2 * third), daemon=True)
    feeder.start()
    sa.wait_output(lambda: _output_count(bootstrap, app.topics), third + third // 3, timeout=120)
    marks = {i.name: len(i.events) for i in (a, c)}
    b.kill()
    killed_at = time.monotonic()
    group_admin = AdminClient({"bootstrap.servers": bootstrap})
    while not _group_stable(group_admin, app.app_id, 2):
        assert time.monotonic() - killed_at < 60, "group not stable with two members 60 s after the kill"
        time.sleep(0.1)
    stable_after = time.monotonic() - killed_at
    for i in (a, c):
        i.wait_running(timeout=60, after=marks[i.name])
    feeder.join(60)

    b2 = app.start("b-restarted", state="b" if restart_state == "same-state-dir" else None)
    b2.wait_running()
    sa.produce_orders(p, app.topics["orders"], 2 * third, orders)
    try:
        sa.wait_output(lambda: _output_count(bootstrap, app.topics), orders, timeout=120)
        stalled = ""
    except TimeoutError as e:
        stalled = f"{e}; offsets (high watermark, last stable offset, committed): {_offsets(bootstrap, app)}"
    for i in (a, c, b2):
        i.close()
    assert not any(i.errors() for i in (a, b, c, b2)), [i.errors() for i in (a, b, c, b2)]
    _assert_output(bootstrap, app.topics, orders, stalled)

    # The killed instance's tasks moved: their stores were rebuilt from the changelogs.
    restored = [e for i in (a, c, b2) for e in i.events
                if e.get("event") == "restored" and e["_at"] > killed_at and e["records"] > 0]
    assert restored, "no state store restored from its changelog after the kill"
    print(f"kill to stable group of two: {stable_after:.2f} s")


def _feed(p, topic: str, start: int, end: int) -> None:
    """Orders start..end in slices, so that the kill lands while records flow."""
    step = max(1, (end - start) // 20)
    for i in range(start, end, step):
        sa.produce_orders(p, topic, i, min(end, i + step))
        time.sleep(0.15)


def _offsets(bootstrap, app) -> dict:
    """topic -> partition -> (high watermark, last stable offset, the application's committed offset)."""
    admin = LibrdkafkaAdmin(bootstrap)
    topics = sorted(set(app.topics.values()) | _internal_topics(admin, app.app_id))
    res = AdminClient({"bootstrap.servers": bootstrap}).list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(app.app_id, [TopicPartition(t, p) for t in topics for p in range(sa.PARTITIONS)])])
    committed = {(tp.topic, tp.partition): tp.offset for tp in res[app.app_id].result(timeout=20).topic_partitions}
    out = {}
    for t in topics:
        high = admin.list_offsets(t, range(sa.PARTITIONS), "latest")
        stable = admin.list_offsets(t, range(sa.PARTITIONS), "latest", isolation="read_committed")
        out[t] = {p: (high[p][0], stable[p][0], committed.get((t, p))) for p in high}
    return out
