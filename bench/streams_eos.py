"""Kafka Streams exactly-once: records per second through the topology of
compat_tests/frameworks/streams/EosTopology.java (kafka-streams 4.3.0, exactly_once_v2: a table
join, a repartition, an aggregation and a windowed count; three output records per order), and the
time from an instance's SIGKILL until its group is stable again.

Throughput, per run: a fresh application id and topics (3 partitions); the customers and N orders
are produced first; one instance (one stream thread) starts, and the clock runs from its RUNNING
state until a read_committed consumer of the totals topic has seen N records (the last result of
the last order). Records/s is N divided by that.

Kill to stable, per run: two instances of the application are RUNNING, one is killed with SIGKILL;
the clock runs until DescribeGroups says Stable with one member. The killed member is only noticed
when its session times out (consumer.session.timeout.ms=6000 here, as in the tests), so that sets
most of the figure on any broker.

Brokers: ``kafkalite``, ``kafka`` (Apache Kafka, compat_tests/reference.py; needs the jars of
``maven_jars kafka-broker``), ``tansu``, or NAME=HOST:PORT, alternating.

    python -m bench.streams_eos [--runs 3] [--records 3000] [--brokers kafkalite,kafka] [--json FILE]
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import peers
from bench.stats import Report, alternate, failure, main_with_records

if str(peers.REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(peers.REPO_ROOT))


def _setup(bootstrap: str, orders: int) -> tuple[str, dict[str, str]]:
    from compat_tests.clients.librdkafka import LibrdkafkaAdmin
    from compat_tests.frameworks import streams_app as sa

    prefix = f"bench-eos-{uuid.uuid4().hex[:8]}"
    names = sa.topics(prefix)
    admin = LibrdkafkaAdmin(bootstrap)
    for role, name in names.items():
        admin.create_topic(name, sa.PARTITIONS, {"cleanup.policy": "compact"} if role == "customers" else None)
    p = sa.producer(bootstrap)
    sa.produce_customers(p, names["customers"])
    sa.produce_orders(p, names["orders"], 0, orders)
    return f"{prefix}-app", names


def throughput_once(bootstrap: str, orders: int, workdir: Path) -> float:
    from confluent_kafka import Consumer, TopicPartition

    from compat_tests.frameworks import streams_app as sa

    app_id, names = _setup(bootstrap, orders)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{app_id}-reader", "isolation.level": "read_committed",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(names["totals"], p, 0) for p in range(sa.PARTITIONS)])
    inst = sa.StreamsInstance("bench", sa.config(bootstrap, app_id, workdir / app_id), names, workdir / f"{app_id}.log")
    try:
        running = inst.wait_running(timeout=120)["_at"]
        seen = 0
        deadline = time.monotonic() + 600
        while seen < orders:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{seen} of {orders} results in 600 s")
            for msg in consumer.consume(1000, 0.2):
                if msg.error() is None:
                    seen += 1
        return orders / (time.monotonic() - running)
    finally:
        consumer.close()
        inst.stop(timeout=30)


def kill_to_stable_once(bootstrap: str, workdir: Path) -> float:
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    from compat_tests.frameworks import streams_app as sa

    app_id, names = _setup(bootstrap, 300)
    a = sa.StreamsInstance("a", sa.config(bootstrap, app_id, workdir / f"{app_id}-a"), names, workdir / f"{app_id}-a.log")
    b = sa.StreamsInstance("b", sa.config(bootstrap, app_id, workdir / f"{app_id}-b"), names, workdir / f"{app_id}-b.log")
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def stable(members: int) -> bool:
        d = admin.describe_consumer_groups([app_id])[app_id].result(timeout=10)
        return d.state == ConsumerGroupState.STABLE and len(d.members) == members

    try:
        a.wait_running(timeout=120)
        b.wait_running(timeout=120)
        deadline = time.monotonic() + 120
        while not stable(2):
            if time.monotonic() > deadline:
                raise TimeoutError("two instances never formed a stable group")
            time.sleep(0.1)
        b.kill()
        killed = time.monotonic()
        while not stable(1):
            if time.monotonic() - killed > 120:
                raise TimeoutError("group not stable 120 s after the kill")
            time.sleep(0.05)
        return time.monotonic() - killed
    finally:
        a.stop(timeout=30)
        b.kill()


def run(brokers: list[str], runs: int, orders: int) -> Report:
    report = Report(f"streams_eos: Kafka Streams 4.3.0 exactly_once_v2 topology, {orders} orders",
                    settings={"runs": runs, "orders": orders, "partitions": 3, "commit.interval.ms": 100,
                              "consumer.session.timeout.ms": 6000})
    rate = report.metric("streams_eos", "orders through the topology (RUNNING to last result)", "rec/s", True)
    stable = report.metric("streams_eos", "SIGKILL of 1 of 2 instances to group Stable", "ms", False)
    with peers.running_in_order(brokers, rate) as (running, order), \
            tempfile.TemporaryDirectory(prefix="bench-streams-") as tmp:
        for rnd, name in alternate(order, runs):
            try:
                rate.add(name, throughput_once(running[name].bootstrap, orders, Path(tmp)))
            except Exception as exc:  # noqa: BLE001
                rate.fail(name, failure(f"round {rnd}", exc))
            try:
                stable.add(name, kill_to_stable_once(running[name].bootstrap, Path(tmp)) * 1000.0)
            except Exception as exc:  # noqa: BLE001
                stable.fail(name, failure(f"round {rnd}", exc))
    return report


def main(argv: list[str] | None = None) -> Report:
    return main_with_records(__doc__, run, argv, 3000, "orders per run (default 3000)")


if __name__ == "__main__":
    main()
