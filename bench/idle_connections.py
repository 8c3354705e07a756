"""Produce latency while thousands of idle connections are open, on kafkalite and Apache Kafka.

A broker on a developer's machine or a CI host collects connections: every test's clients, pools
that connect and wait, consumers parked between polls. What they must not cost is the latency of
the one client that is working. For each broker and each count of idle connections (10, 1 000 and
5 000 by default): that many TCP connections are opened to the broker, each sends one ApiVersions
request, reads its answer and then stays idle; then a confluent-kafka producer (acks=all,
linger.ms=0) produces one record at a time and waits for its acknowledgement, ``--records``
times after ``--warmup`` unmeasured ones (fault_tests/hostile.py's Producer), and the run's p50
and p99 round trip are taken. A sample of the idle connections is asked ApiVersions once more
after, so that a broker which dropped them does not pass for fast; the broker's RSS is read
with the connections open. Each run starts new connections on the same broker, the counts in
turn; medians over ``--runs`` runs. The target: the p99 with 5 000 idle connections within
1.5x of the p99 with 10, on each broker.

    python -m bench.idle_connections [--runs 3] [--counts 10,1000,5000] [--records 500]
                                     [--brokers kafkalite,kafka] [--json out.json]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Sequence

from bench import wire
from bench.peers import HOST, Peer, parse_brokers, process_rss_bytes, raise_descriptor_limit, running_in_order
from bench.stats import Report, Target, emit, failure
from fault_tests.hostile import Producer

COUNTS = (10, 1000, 5000)
SAMPLE = 50  # idle connections asked again after the measurement


def open_idle(bootstrap: str, count: int) -> list[wire.Connection]:
    """``count`` connections that each answered one ApiVersions and then wait."""
    host, port = bootstrap.rsplit(":", 1)
    idle: list[wire.Connection] = []
    try:
        for _ in range(count):
            conn = wire.Connection.open(host, int(port), timeout=30.0)
            idle.append(conn)
            conn.api_versions()
    except BaseException:
        for conn in idle:
            conn.close()
        raise
    return idle


def still_served(idle: Sequence[wire.Connection]) -> int:
    """How many of a sample of the idle connections still answer ApiVersions."""
    step = max(1, len(idle) // SAMPLE)
    answered = 0
    for conn in idle[::step]:
        try:
            conn.api_versions()
            answered += 1
        except (OSError, wire.WireError):
            pass
    return answered


def percentile(values: Sequence[float], pct: int) -> float:
    """The ``pct``-th percentile (statistics.quantiles, inclusive), for ``values`` of two or more."""
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


def row(peer: str, count: int) -> str:
    return f"{peer}, {count} idle"


def one_run(peer: Peer, count: int, records: int, warmup: int) -> tuple[float, float, int, str | None]:
    """(p50 ms, p99 ms, RSS bytes, why the idle connections fail the run or None)."""
    idle = open_idle(peer.bootstrap, count)
    try:
        producer = Producer(peer.bootstrap)
        try:
            for _ in range(warmup):
                producer.round_trip()
            took = [producer.round_trip() * 1000.0 for _ in range(records)]
        finally:
            producer.close()
        if producer.errors:
            return 0.0, 0.0, 0, f"produce: {producer.errors[0]}"
        rss = process_rss_bytes(peer.pid) if peer.pid else 0
        sample = len(idle[::max(1, len(idle) // SAMPLE)])
        answered = still_served(idle)
        why = None if answered == sample else f"{sample - answered} of {sample} idle connections sampled went unanswered"
        return percentile(took, 50), percentile(took, 99), rss, why
    finally:
        for conn in idle:
            conn.close()


def run(brokers: Sequence[str], runs: int, counts: Sequence[int], records: int, warmup: int) -> Report:
    import confluent_kafka

    report = Report("produce round trips (confluent-kafka, acks=all, one record at a time) beside idle connections",
                    settings={"runs": runs, "counts": ",".join(map(str, counts)), "records": records,
                              "warmup": warmup, "librdkafka": confluent_kafka.libversion()[0]})
    p50 = report.metric("idle_connections", "produce p50", "ms", higher_is_better=False)
    p99 = report.metric("idle_connections", "produce p99", "ms", higher_is_better=False)
    rss = report.metric("idle_connections", "broker RSS", "MiB", higher_is_better=False)
    with running_in_order(brokers, p50, p99, rss) as (peers, labels):
        for name in labels:
            if len(counts) > 1:
                p99.targets.append(Target("ratio_at_most", 1.5, broker=row(name, max(counts)),
                                          peer=row(name, min(counts))))
            for r in range(runs):
                for count in counts:
                    where = row(name, count)
                    try:
                        a, b, size, why = one_run(peers[name], count, records, warmup)
                    except (OSError, wire.WireError, RuntimeError) as exc:
                        for metric in (p50, p99, rss):
                            metric.fail(where, failure(f"run {r + 1}", exc))
                        continue
                    if why is not None:
                        for metric in (p50, p99, rss):
                            metric.fail(where, f"run {r + 1}: {why}")
                        continue
                    p50.add(where, a)
                    p99.add(where, b)
                    if size:
                        rss.add(where, size / 2**20)
    report.notes.append(f"idle connections: each answered one ApiVersions on {HOST} before the produce "
                        f"round trips began; {SAMPLE} of them sampled again after")
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(prog="python -m bench.idle_connections", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per broker and count (default 3)")
    parser.add_argument("--counts", default=",".join(map(str, COUNTS)),
                        help="idle connection counts (default %(default)s)")
    parser.add_argument("--records", type=int, default=500, help="measured round trips per run (default 500)")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured round trips first (default 50)")
    parser.add_argument("--brokers", default="kafkalite,kafka",
                        help="comma-separated: kafkalite, kafka (Apache Kafka), tansu, or NAME=HOST:PORT")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)
    counts = tuple(int(c) for c in args.counts.split(",") if c.strip())
    if not counts or min(counts) < 0 or args.records < 2:
        parser.error("--counts needs counts >= 0 and --records at least 2")
    raise_descriptor_limit(2 * max(counts) + 1024)
    report = run(parse_brokers(args.brokers), args.runs, counts, args.records, args.warmup)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
