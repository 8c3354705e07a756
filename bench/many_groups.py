"""A thousand consumer groups joining and committing at once, on kafkalite and Apache Kafka.

A test suite that runs for a while leaves a broker with many groups: every test's consumer joins
a group of its own. For each broker: a topic of ``--partitions`` partitions with one record in
each; then ``--groups`` aiokafka consumers (classic protocol) in one asyncio loop, each in a group
of its own, all started at once. Each subscribes, waits for its assignment, reads every record,
commits and stays a member. The figures: the time from the first start until every group has
committed (the clients' own CPU included: they are the same on both brokers), each group's
start-to-commit p50 and p99, the broker's RSS with every group stable, and its RSS once the members
have left (the groups empty, their offsets kept). Then a check that every group's committed
offsets are there (OffsetFetch for each). Medians of ``--runs`` runs, each on new groups of the
same broker. Kafka runs as compat_tests/reference.py starts it (group.initial.rebalance.delay.ms=0,
as kafkalite's default).

    python -m bench.many_groups [--groups 1000] [--partitions 10] [--runs 3]
                                [--brokers kafkalite,kafka] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from typing import Sequence

from bench.peers import Peer, create_topic, parse_brokers, process_rss_bytes, raise_descriptor_limit, running_in_order
from bench.stats import Report, emit, failure

GROUPS = 1000
PARTITIONS = 10
DEADLINE_S = 300.0


def fill(bootstrap: str, topic: str, partitions: int) -> None:
    """The topic with one record in each partition."""
    from confluent_kafka import Producer

    create_topic(bootstrap, topic, partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for p in range(partitions):
        producer.produce(topic, b"v", partition=p)
    if producer.flush(30):
        raise RuntimeError(f"{topic}: records unacknowledged")


async def one_group(bootstrap: str, topic: str, group: str, partitions: int, started: float
                    ) -> tuple[float, object]:
    """A member of `group` that reads every record and commits; returns its start-to-commit time
    and the consumer, still a member."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                auto_offset_reset="earliest", session_timeout_ms=60000,
                                heartbeat_interval_ms=10000, request_timeout_ms=120000)
    await consumer.start()
    read = 0
    while read < partitions:
        batches = await consumer.getmany(timeout_ms=1000)
        read += sum(len(records) for records in batches.values())
    await consumer.commit()
    took = time.monotonic() - started
    return took, consumer


async def all_groups(bootstrap: str, topic: str, groups: Sequence[str], partitions: int,
                     rss: "RssProbe") -> tuple[float, list[float], float, float]:
    """(seconds until every group committed, each group's seconds, RSS MiB while they are members,
    RSS MiB after they left)."""
    started = time.monotonic()
    results = await asyncio.wait_for(
        asyncio.gather(*(one_group(bootstrap, topic, g, partitions, started) for g in groups)), DEADLINE_S)
    everything = time.monotonic() - started
    with_members = rss.mib()
    await asyncio.gather(*(consumer.stop() for _, consumer in results))  # type: ignore[attr-defined]
    return everything, [t for t, _ in results], with_members, rss.mib()


class RssProbe:
    def __init__(self, peer: Peer):
        self.pid = peer.pid

    def mib(self) -> float:
        return process_rss_bytes(self.pid) / 2**20 if self.pid else 0.0


def committed_everywhere(bootstrap: str, topic: str, groups: Sequence[str], partitions: int) -> int:
    """How many of `groups` have an offset committed on every partition (the admin's OffsetFetch)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    done = 0
    for group in groups:
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
        answer = admin.list_consumer_group_offsets([request])[group].result(30)
        done += all(tp.offset == 1 for tp in answer.topic_partitions)
    return done


def run(brokers: Sequence[str], groups: int, partitions: int, runs: int) -> Report:
    import aiokafka

    report = Report(f"{groups} consumer groups (aiokafka {aiokafka.__version__}, one member each) joining, "
                    f"reading {partitions} partitions and committing at once",
                    settings={"groups": groups, "partitions": partitions, "runs": runs})
    whole = report.metric("many_groups", "every group committed", "s", higher_is_better=False)
    p50 = report.metric("many_groups", "a group's start to commit, p50", "s", higher_is_better=False)
    p99 = report.metric("many_groups", "a group's start to commit, p99", "s", higher_is_better=False)
    members = report.metric("many_groups", "broker RSS, every group stable", "MiB", higher_is_better=False)
    empty = report.metric("many_groups", "broker RSS, the members gone", "MiB", higher_is_better=False)
    metrics = (whole, p50, p99, members, empty)
    with running_in_order(brokers, *metrics) as (peers, labels):
        for name in labels:
            peer = peers[name]
            for r in range(runs):
                topic = f"groups-{uuid.uuid4().hex[:8]}"
                names = [f"{topic}-g{i}" for i in range(groups)]
                try:
                    fill(peer.bootstrap, topic, partitions)
                    seconds, each, rss_members, rss_empty = asyncio.run(
                        all_groups(peer.bootstrap, topic, names, partitions, RssProbe(peer)))
                    kept = committed_everywhere(peer.bootstrap, topic, names, partitions)
                except Exception as exc:  # noqa: BLE001 - a failed run is a figure too
                    for metric in metrics:
                        metric.fail(name, failure(f"run {r + 1}", exc))
                    continue
                if kept != groups:
                    for metric in metrics:
                        metric.fail(name, f"run {r + 1}: {groups - kept} groups without their offsets")
                    continue
                whole.add(name, seconds)
                quantiles = statistics.quantiles(each, n=100, method="inclusive")
                p50.add(name, quantiles[49])
                p99.add(name, quantiles[98])
                if rss_members:
                    members.add(name, rss_members)
                    empty.add(name, rss_empty)
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(prog="python -m bench.many_groups", description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=GROUPS, help=f"groups at once (default {GROUPS})")
    parser.add_argument("--partitions", type=int, default=PARTITIONS,
                        help=f"partitions of the topic every group reads (default {PARTITIONS})")
    parser.add_argument("--runs", type=int, default=3, help="runs per broker (default 3)")
    parser.add_argument("--brokers", default="kafkalite,kafka", help="comma-separated: kafkalite, kafka, tansu")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)
    if args.groups < 2 or args.partitions < 1:
        parser.error("--groups needs at least 2 and --partitions at least 1")
    raise_descriptor_limit(4 * args.groups + 1024)  # each member: its coordinator and fetch connections
    report = run(parse_brokers(args.brokers), args.groups, args.partitions, args.runs)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
