"""A long run of a test broker's everyday churn, sampled for growth: what a broker kept on a
developer's machine or a CI host for hours must not accumulate.

One kafkalite broker (its own data dir, the metrics endpoint on) meets, all at once and until the
time is up, with confluent-kafka clients:

* steady produce: ``--rate`` records a second to a 3-partition topic (acks=all);
* steady consume: one group member reading that topic, committing every second;
* group churn: every ``--churn-s`` seconds a member joins one of ``GROUP_POOL`` groups on that
  topic, waits for its assignment, commits and leaves (the groups rebalance, their offsets stay);
* transactions: every ``--churn-s`` seconds a transactional producer of one of ``TXN_POOL`` ids
  starts, commits one transaction of 5 records and closes;
* topic churn: every ``--churn-s`` seconds a new 3-partition topic is created, written 30 records
  and deleted.

Every ``--sample-s`` seconds (and once more when the clients have stopped) the broker's RSS and open files (/proc; its sockets left out), threads, and its
event loop's tasks and open connections (the metrics endpoint) are sampled with the counts of
operations and errors so far. At the end the steady consumer must have read every record
acknowledged, and the verdict compares the last sample with the one at ``--settle-min`` minutes:
RSS and open files within 5 % of it (and no error) is flat.

    python -m bench.soak [--minutes 60] [--sample-s 60] [--settle-min 10] [--rate 200] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
import urllib.request
import uuid
from dataclasses import asdict, dataclass, field
from typing import Callable

import kafkalite
from bench.peers import process_rss_bytes

GROUP_POOL = 20
TXN_POOL = 10
STEADY_PARTITIONS = 3
GROWTH_LIMIT = 0.05


@dataclass
class Counts:
    """Operations done and errors met by each workload, under one lock."""

    ops: dict[str, int] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def done(self, what: str, n: int = 1) -> None:
        with self.lock:
            self.ops[what] = self.ops.get(what, 0) + n

    def failed(self, what: str, why: object) -> None:
        with self.lock:
            self.errors.setdefault(what, []).append(str(why)[:300])

    def snapshot(self) -> tuple[dict[str, int], int]:
        with self.lock:
            return dict(self.ops), sum(len(e) for e in self.errors.values())


@dataclass
class Sample:
    minute: float
    rss_mib: float
    open_files: int
    threads: int
    tasks: int | None
    connections: int | None
    ops: dict[str, int]
    errors: int


def scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    return {name: float(value) for name, _, value in
            (line.rpartition(" ") for line in text.splitlines() if line and not line.startswith("#"))}


def open_files(pid: int) -> int:
    """The process's descriptors of files (segments, indexes, checkpoints, logs): its sockets,
    pipes and event descriptors left out, since connections are sampled on their own."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        count += target.startswith("/")
    return count


def sample(broker: kafkalite.Broker, started: float, counts: Counts) -> Sample:
    pid = broker.process.pid
    threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
    try:
        metrics = scrape(broker.metrics_url or "")
        tasks: int | None = int(metrics["kafkalite_tasks"])
        connections: int | None = int(metrics["kafkalite_connections"])
    except (OSError, KeyError, ValueError):
        tasks = connections = None
    ops, errors = counts.snapshot()
    return Sample(round((time.monotonic() - started) / 60, 2), round(process_rss_bytes(pid) / 2**20, 2),
                  open_files(pid), threads, tasks, connections, ops, errors)


def every(stop: threading.Event, seconds: float, what: str, counts: Counts, step: Callable[[], None]) -> None:
    """``step`` every ``seconds`` until ``stop``; an exception is counted as ``what``'s error."""
    while not stop.wait(seconds):
        try:
            step()
            counts.done(what)
        except Exception as exc:  # noqa: BLE001 - every failure is a figure of the run
            counts.failed(what, f"{type(exc).__name__}: {exc}")


class Workloads:
    def __init__(self, bootstrap: str, rate: int, churn_s: float, counts: Counts):
        from confluent_kafka.admin import AdminClient, NewTopic

        self.bootstrap, self.rate, self.churn_s, self.counts = bootstrap, rate, churn_s, counts
        self.stop = threading.Event()
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.steady = f"soak-steady-{uuid.uuid4().hex[:6]}"
        self.admin.create_topics([NewTopic(self.steady, STEADY_PARTITIONS, 1)])[self.steady].result(30)
        self.acked = 0
        self.consumed = 0
        self.churn_round = 0
        self.threads = [threading.Thread(target=t, daemon=True, name=t.__name__) for t in
                        (self.produce, self.consume, self.group_churn, self.transactions, self.topic_churn)]

    def config(self, **extra: object) -> dict[str, object]:
        return {"bootstrap.servers": self.bootstrap, "broker.address.family": "v4", **extra}

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(self.config(acks="all", **{"linger.ms": 5}))

        def delivered(err: object, _msg: object) -> None:
            if err is None:
                self.acked += 1
            else:
                self.counts.failed("produce", err)

        per_tick, n = max(1, self.rate // 10), 0
        while not self.stop.wait(0.1):
            for _ in range(per_tick):
                producer.produce(self.steady, f"r-{n}".encode(), on_delivery=delivered)
                n += 1
            producer.poll(0)
            self.counts.done("produce", per_tick)
        if producer.flush(30):
            self.counts.failed("produce", "records still unacknowledged at the end")

    def consume(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(self.config(**{"group.id": f"{self.steady}-readers", "auto.offset.reset": "earliest",
                                           "enable.auto.commit": False}))
        consumer.subscribe([self.steady])
        last_commit = time.monotonic()
        # after the stop, read on until every acknowledged record has arrived (or 60 s)
        deadline: float | None = None
        while deadline is None or (self.consumed < self.expected() and time.monotonic() < deadline):
            if deadline is None and self.stop.is_set():
                deadline = time.monotonic() + 60
            msg = consumer.poll(0.2)
            if msg is not None:
                if msg.error():
                    self.counts.failed("consume", msg.error())
                else:
                    self.consumed += 1
            if time.monotonic() - last_commit >= 1.0 and self.consumed:
                consumer.commit(asynchronous=False)
                self.counts.done("commit")
                last_commit = time.monotonic()
        consumer.close()

    def group_churn(self) -> None:
        from confluent_kafka import Consumer

        def one_member() -> None:
            self.churn_round += 1
            group = f"{self.steady}-churn-{self.churn_round % GROUP_POOL}"
            assigned = threading.Event()
            member = Consumer(self.config(**{"group.id": group, "auto.offset.reset": "earliest",
                                             "enable.auto.commit": False}))
            member.subscribe([self.steady], on_assign=lambda c, parts: assigned.set())
            deadline = time.monotonic() + 30
            while not assigned.is_set() or member.poll(0.1) is None:
                if time.monotonic() > deadline:
                    member.close()
                    raise TimeoutError(f"{group}: no assignment and record within 30 s")
                member.poll(0.1)
            member.commit(asynchronous=False)
            member.close()

        every(self.stop, self.churn_s, "group_churn", self.counts, one_member)

    def transactions(self) -> None:
        from confluent_kafka import Producer

        rounds = [0]

        def one_transaction() -> None:
            rounds[0] += 1
            producer = Producer(self.config(**{"transactional.id": f"{self.steady}-txn-{rounds[0] % TXN_POOL}"}))
            producer.init_transactions(30)
            producer.begin_transaction()
            for i in range(5):
                producer.produce(self.steady, f"t-{rounds[0]}-{i}".encode())
            producer.commit_transaction(30)

        every(self.stop, self.churn_s, "transactions", self.counts, one_transaction)

    def topic_churn(self) -> None:
        from confluent_kafka import Producer
        from confluent_kafka.admin import NewTopic

        def one_topic() -> None:
            name = f"soak-tmp-{uuid.uuid4().hex[:8]}"
            self.admin.create_topics([NewTopic(name, 3, 1)])[name].result(30)
            producer = Producer(self.config(acks="all"))
            for i in range(30):
                producer.produce(name, f"x-{i}".encode())
            if producer.flush(30):
                raise TimeoutError(f"{name}: records unacknowledged")
            self.admin.delete_topics([name])[name].result(30)

        every(self.stop, self.churn_s, "topic_churn", self.counts, one_topic)

    def expected(self) -> int:
        """Records the steady consumer must read: those acknowledged, and the 5 of each committed
        transaction (written to the same topic)."""
        return self.acked + 5 * self.counts.snapshot()[0].get("transactions", 0)

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(120)
            if t.is_alive():
                self.counts.failed(t.name, "did not end within 120 s of the stop")
        if self.consumed < self.expected():
            self.counts.failed("consume", f"{self.consumed} records read of {self.expected()} written")


def growth(samples: list[Sample], settle_min: float, key: str) -> float | None:
    """The last sample's ``key`` over the first one at or after ``settle_min`` minutes, less one."""
    base = next((s for s in samples if s.minute >= settle_min), None)
    if base is None or base is samples[-1]:
        return None
    first, last = getattr(base, key), getattr(samples[-1], key)
    return None if not first else last / first - 1


def run(minutes: float, sample_s: float, settle_min: float, rate: int, churn_s: float) -> dict:
    counts = Counts()
    samples: list[Sample] = []
    with kafkalite.running(metrics_port=0) as broker:
        started = time.monotonic()
        loads = Workloads(broker.bootstrap, rate, churn_s, counts)
        loads.start()
        samples.append(sample(broker, started, counts))
        print(json.dumps(asdict(samples[-1])), flush=True)
        end = started + minutes * 60
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(sample_s, left))
            samples.append(sample(broker, started, counts))
            print(json.dumps(asdict(samples[-1])), flush=True)
        loads.finish()
        after_stop = sample(broker, started, counts)  # the clients gone: what the broker keeps
    rss, files = growth(samples, settle_min, "rss_mib"), growth(samples, settle_min, "open_files")
    errors = {k: (len(v), v[:3]) for k, v in counts.errors.items()}
    flat = (rss is not None and rss <= GROWTH_LIMIT and files is not None and files <= GROWTH_LIMIT
            and not errors)
    return {"minutes": minutes, "rate": rate, "churn_s": churn_s, "settle_min": settle_min,
            "samples": [asdict(s) for s in samples], "after_stop": asdict(after_stop), "rss_growth": rss, "open_files_growth": files,
            "acked": loads.acked, "consumed": loads.consumed, "ops": counts.ops, "errors": errors, "flat": flat}


def render(result: dict) -> str:
    lines = ["== soak: one broker under steady produce/consume, group, transaction and topic churn =="]
    lines.append(f"{result['minutes']} min, {result['rate']} records/s, churn every {result['churn_s']} s; "
                 f"growth measured from minute {result['settle_min']}")
    lines.append(f"{'minute':>7} {'RSS MiB':>8} {'files':>6} {'threads':>7} {'tasks':>6} {'conns':>6} {'errors':>6}")
    for s in [*result["samples"], {**result["after_stop"], "minute": "stopped"}]:
        lines.append(f"{s['minute']:>7} {s['rss_mib']:>8} {s['open_files']:>6} {s['threads']:>7} "
                     f"{s['tasks'] if s['tasks'] is not None else '-':>6} "
                     f"{s['connections'] if s['connections'] is not None else '-':>6} {s['errors']:>6}")

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x * 100:+.1f} %"

    lines.append(f"RSS growth {pct(result['rss_growth'])}, open files growth {pct(result['open_files_growth'])} "
                 f"(limit +{GROWTH_LIMIT * 100:.0f} %); records acknowledged {result['acked']}, read "
                 f"{result['consumed']}; operations {result['ops']}")
    lines.append(f"errors: {result['errors'] or 'none'}")
    lines.append(f"verdict: {'flat' if result['flat'] else 'NOT flat'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="how long (default 60)")
    parser.add_argument("--sample-s", type=float, default=60.0, help="seconds between samples (default 60)")
    parser.add_argument("--settle-min", type=float, default=10.0,
                        help="growth is measured from the first sample at or after this minute (default 10)")
    parser.add_argument("--rate", type=int, default=200, help="steady records a second (default 200)")
    parser.add_argument("--churn-s", type=float, default=5.0,
                        help="seconds between group, transaction and topic churn rounds (default 5)")
    parser.add_argument("--json", metavar="FILE", help="also write the samples and verdict as JSON to FILE")
    args = parser.parse_args(argv)
    result = run(args.minutes, args.sample_s, args.settle_min, args.rate, args.churn_s)
    print(render(result), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    main()
