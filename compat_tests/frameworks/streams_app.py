"""The Kafka Streams exactly-once application (streams/EosTopology.java, kafka-streams 4.3.0) as
processes, its input, and the output it must produce.

The input is deterministic: CUSTOMERS customers (c00, c01, ...) in a table topic, then orders
o0, o1, ... for customer c{i % CUSTOMERS} with amount (7 i) % 100 + 1 and timestamp BASE_TS + 50 i.
`expected_output` computes, independently of Streams, every record the topology emits for them
(with caching off, one per update), so a run's output is compared to it as a multiset: a lost
result is missing, a repeated one is there twice or shifts every later running total.
"""

from __future__ import annotations

import collections
import time
from pathlib import Path

from confluent_kafka import Producer

from compat_tests.clients import java
from compat_tests.frameworks import JvmApp

SOURCES = Path(__file__).resolve().parent / "streams"
CUSTOMERS = 30
PARTITIONS = 3
WINDOW_MS = 10_000
# Event time: an hour before this process started, on a window boundary, fixed for the process so
# outputs do not depend on when records are processed. Not a fixed date: records older than
# retention.ms (7 days) would be deleted by the broker's time retention, as Kafka deletes them.
BASE_TS = (int(time.time() * 1000) - 3_600_000) // WINDOW_MS * WINDOW_MS


def classpath() -> str:
    return java.build(SOURCES, jars=java.jar_set("kafka-streams"), with_driver=False).classpath


def topics(prefix: str) -> dict[str, str]:
    return {name: f"{prefix}-{name}" for name in ("customers", "orders", "enriched", "totals", "windows")}


def order(i: int) -> tuple[str, str, int]:
    """(key, value, timestamp) of order i."""
    return f"c{i % CUSTOMERS:02d}", f"o{i}:{(7 * i) % 100 + 1}", BASE_TS + 50 * i


def expected_output(orders: int) -> dict[str, collections.Counter]:
    enriched: collections.Counter = collections.Counter()
    totals: collections.Counter = collections.Counter()
    windows: collections.Counter = collections.Counter()
    sums: dict[str, int] = collections.defaultdict(int)
    counts: dict[str, int] = collections.defaultdict(int)
    for i in range(orders):
        key, value, ts = order(i)
        enriched[(key, f"{value}@name-{key}")] += 1
        upper = key.upper()
        sums[upper] += int(value.split(":")[1])
        totals[(upper, str(sums[upper]))] += 1
        wkey = f"{upper}@{ts - ts % WINDOW_MS}"
        counts[wkey] += 1
        windows[(wkey, str(counts[wkey]))] += 1
    return {"enriched": enriched, "totals": totals, "windows": windows}


def producer(bootstrap: str) -> Producer:
    # murmur2, as the Java client partitions: orders and customers stay co-partitioned for the join
    return Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5,
                     "enable.idempotence": True})


def produce_customers(p: Producer, topic: str) -> None:
    for c in range(CUSTOMERS):
        key = f"c{c:02d}"
        p.produce(topic, key=key, value=f"name-{key}", timestamp=BASE_TS - 60_000)
    if p.flush(30) != 0:
        raise RuntimeError("customers not delivered")


def produce_orders(p: Producer, topic: str, start: int, end: int) -> None:
    for i in range(start, end):
        key, value, ts = order(i)
        p.produce(topic, key=key, value=value, timestamp=ts)
        p.poll(0)
    if p.flush(30) != 0:
        raise RuntimeError("orders not delivered")


def config(bootstrap: str, app_id: str, state_dir: Path, **extra: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "application.id": app_id,
        "state.dir": str(state_dir),
        "processing.guarantee": "exactly_once_v2",
        "commit.interval.ms": "100",
        # purge consumed repartition records soon after each commit (default 30 s)
        "repartition.purge.interval.ms": "500",
        # a killed instance is noticed after 6 s, not Streams' default 45 s
        "consumer.session.timeout.ms": "6000",
        "consumer.heartbeat.interval.ms": "1000",
        "consumer.group.protocol": "classic",
        **extra,
    }


class StreamsInstance(JvmApp):
    """One instance (its own JVM) of the application `app_id`, with its own state directory."""

    def __init__(self, name: str, conf: dict[str, str], topic_names: dict[str, str], log_path: Path):
        args = [f"topic.{k}={v}" for k, v in topic_names.items()] + [f"{k}={v}" for k, v in conf.items()]
        super().__init__(name, classpath(), "EosTopology", args, log_path)

    def wait_running(self, timeout: float = 90.0, after: int = 0) -> dict:
        return self.wait_for(lambda e: e.get("event") == "state" and e["new"] == "RUNNING", timeout, after)

    def close(self, timeout: float = 40.0) -> None:
        """SIGTERM: the shutdown hook closes KafkaStreams (committing) and prints "closed"."""
        self.stop(timeout)
        if not any(e.get("event") == "closed" for e in self.events):
            raise AssertionError(f"{self.name} did not close cleanly (exit {self.proc.returncode}):\n{self.log_tail()}")

    def errors(self) -> list[dict]:
        return [e for e in self.events if e.get("event") == "error"]


def output_counters(records) -> collections.Counter:
    return collections.Counter((k, v) for _, k, v, _ in records)


def wait_output(read, expected_total: int, timeout: float) -> None:
    """Polls `read()` (a record count) until it reaches expected_total."""
    deadline = time.monotonic() + timeout
    n = 0
    while time.monotonic() < deadline:
        n = read()
        if n >= expected_total:
            return
        time.sleep(0.5)
    raise TimeoutError(f"output reached {n} of {expected_total} records in {timeout}s")
