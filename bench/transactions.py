"""Transactional against idempotent produce throughput, and transaction commit latency.

confluent-kafka, one partition, 1 KiB values, acks=all, linger.ms=5. Each round, for each
broker in turn (kafkalite, tansu, kafkalite, tansu, ...), on a fresh topic:

1. **idempotent** produce of N records (as ``bench/throughput.py``: first ``produce()`` to
   ``flush()`` returned);
2. **transactional** produce of N records with a ``transactional.id``: ``begin_transaction()``,
   produce, and every ``--commit-interval-ms`` (default 100 ms) ``commit_transaction()`` then
   ``begin_transaction()``; timed from the first ``produce()`` to the return of the last commit.
   ``init_transactions()`` is done before the clock. The *txn/idempotent* row is the ratio of
   the two rates within each round (the same broker, back to back);
3. **commit latency**: ``--commits`` small transactions (10 records each). For each: the records
   are flushed first, then ``commit_transaction()`` is timed (the client's EndTxn round trip),
   and, separately, the time from the start of the commit until a ``read_committed`` ListOffsets
   (``get_watermark_offsets(cached=False)`` on an ``isolation.level=read_committed`` consumer)
   shows the last stable offset past the transaction's records (markers written). Each run
   reports the median over its commits.

Targets: transactional >= 0.8x idempotent throughput on kafkalite; commit latency
median < 5 ms.

    python -m bench.transactions [--records 100000] [--runs 3] [--commits 50] [--json FILE]
"""

from __future__ import annotations

import statistics
import time
import uuid

from bench import peers
from bench.stats import Report, Target, alternate, apply_common_arguments, common_parser, emit, failure
from bench.throughput import TIMEOUT, _drop_topic, produce, produce_waiting


def produce_transactional(bootstrap: str, topic: str, records: int, value_size: int,
                          commit_interval_ms: float, linger_ms: float = 5,
                          timeout: float = TIMEOUT) -> tuple[float, int]:
    """Seconds to produce ``records`` in transactions committed every interval; transactions."""
    from confluent_kafka import Producer

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": f"bench-txn-{uuid.uuid4().hex[:8]}",
        "acks": "all",
        "linger.ms": linger_ms,
        "queue.buffering.max.messages": max(100_000, records + 1000),
    })
    producer.init_transactions(30)
    producer.list_topics(topic, timeout=30)
    value = b"v" * value_size
    interval = commit_interval_ms / 1000.0
    deadline = time.monotonic() + timeout
    txns = 0
    t0 = time.perf_counter()
    producer.begin_transaction()
    txn_start = t0
    for i in range(records):
        produce_waiting(producer, topic, value, deadline)
        if i % 256 == 0:
            producer.poll(0)
            now = time.perf_counter()
            if now - txn_start >= interval:
                producer.commit_transaction(30)
                txns += 1
                producer.begin_transaction()
                txn_start = time.perf_counter()
    producer.commit_transaction(30)
    txns += 1
    return time.perf_counter() - t0, txns


def commit_latencies(bootstrap: str, topic: str, commits: int,
                     value_size: int) -> tuple[list[float], list[float]]:
    """Per transaction: commit_transaction() seconds, and seconds until the LSO passed it."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": f"bench-commit-{uuid.uuid4().hex[:8]}",
        "acks": "all",
        "linger.ms": 0,
    })
    producer.init_transactions(30)
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-commit-{uuid.uuid4().hex[:8]}",
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
    })
    tp = TopicPartition(topic, 0)
    value = b"v" * value_size
    call, visible = [], []
    try:
        for _ in range(commits):
            producer.begin_transaction()
            last = [-1]

            def on_delivery(err, msg, last=last) -> None:
                if err is None:
                    last[0] = max(last[0], msg.offset())

            for _ in range(10):
                producer.produce(topic, value, partition=0, on_delivery=on_delivery)
            producer.flush(30)
            t0 = time.perf_counter()
            producer.commit_transaction(30)
            t1 = time.perf_counter()
            call.append(t1 - t0)
            deadline = t0 + 10
            while True:
                _, lso = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
                if lso > last[0]:
                    visible.append(time.perf_counter() - t0)
                    break
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"LSO {lso} did not pass offset {last[0]} within 10 s")
    finally:
        consumer.close()
    return call, visible


def run(brokers: list[str], runs: int, records: int, value_size: int = 1024,
        commit_interval_ms: float = 100, commits: int = 50) -> Report:
    report = Report(
        "transactions: transactional vs idempotent produce, commit latency",
        settings={"records": records, "value_size": value_size, "runs": runs,
                  "commit_interval_ms": commit_interval_ms, "commits_per_run": commits},
    )
    idem = report.metric("transactions", "idempotent produce", "records/s", True)
    txn = report.metric("transactions", "transactional produce", "records/s", True)
    rel = report.metric("transactions", "transactional/idempotent", "x", True, [Target("at_least", 0.8)])
    ntx = report.metric("transactions", "transactions committed", "count", False)
    call = report.metric("transactions", "commit_transaction() call", "ms", False, [Target("at_most", 5.0)])
    vis = report.metric("transactions", "commit start to LSO past txn", "ms", False)
    with peers.running_in_order(brokers, idem) as (running, order):
        for rnd, name in alternate(order, runs):
            peer = running[name]
            topic = f"bench-txn-{rnd}-{uuid.uuid4().hex[:8]}"
            try:
                peers.create_topic(peer.bootstrap, topic, partitions=1)
                pi = produce(peer.bootstrap, topic, records, value_size)
                r_idem = pi.records / pi.seconds
                idem.add(name, r_idem)
                secs, n = produce_transactional(peer.bootstrap, topic, records, value_size,
                                                commit_interval_ms)
                r_txn = records / secs
                txn.add(name, r_txn)
                rel.add(name, r_txn / r_idem)
                ntx.add(name, n)
                c, v = commit_latencies(peer.bootstrap, topic, commits, value_size)
                call.add(name, statistics.median(c) * 1000.0)
                vis.add(name, statistics.median(v) * 1000.0)
            except Exception as exc:  # noqa: BLE001 - a failed run is reported, not fatal
                idem.fail(name, failure(f"round {rnd}", exc))
            finally:
                _drop_topic(peer.bootstrap, topic)
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = common_parser(__doc__, runs=3)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--value-size", type=int, default=1024)
    parser.add_argument("--commit-interval-ms", type=float, default=100)
    parser.add_argument("--commits", type=int, default=50, help="small transactions timed per run")
    args = parser.parse_args(argv)
    apply_common_arguments(args)
    report = run(peers.parse_brokers(args.brokers), args.runs, args.records, args.value_size,
                 args.commit_interval_ms, args.commits)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
