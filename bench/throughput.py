"""confluent-kafka produce and consume throughput, one partition, kafkalite against Tansu.

Each round, for each broker in turn (kafkalite, tansu, kafkalite, tansu, ...):

1. create a fresh one-partition topic with the admin client (not timed);
2. **produce** N records with 1 KiB values (acks=all, enable.idempotence=true, linger.ms=5,
   otherwise librdkafka defaults), timed from the first ``produce()`` to the return of
   ``flush()``, i.e. until every record is acknowledged; the producer has already fetched
   metadata before the clock starts;
3. **consume** them: a new consumer ``assign``s partition 0 from the earliest offset and reads
   until it holds all N records (batched ``consume()``), timed from ``assign()`` on (it has
   fetched metadata before the clock starts); the time to the first record is shown too.

Before the runs, each broker gets one unmeasured warm-up round (``--warmup-records``).
Both brokers run for the whole benchmark; the client runs in this process on the same machine,
so its CPU use is part of every figure (same client, same work for each broker). MB/s counts
value bytes, 10^6 bytes per MB. Broker CPU is the broker process's user+system CPU time
during the phase (psutil).

Targets: kafkalite produce >= 0.7x Tansu, consume >= 0.5x Tansu (records/s medians).

    python -m bench.throughput [--records 200000] [--runs 3] [--value-size 1024]
                               [--brokers kafkalite,tansu] [--json FILE] [--profile DIR]

``--profile DIR``: after the measured rounds, one extra kafkalite round runs under py-spy
(``bench/profile.py``); the raw samples go to DIR and a summary of where the broker spends its
time is printed. That round is not part of the figures.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench import peers
from bench.stats import Report, Target, alternate, apply_common_arguments, common_parser, emit, failure

TIMEOUT = 300.0


@dataclass
class Phase:
    seconds: float
    records: int
    value_bytes: int
    broker_cpu: float | None  # seconds of broker CPU during the phase
    first_record: float | None = None  # consume: seconds from assign() to the first record


def _cpu(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        import psutil

        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    except Exception:  # noqa: BLE001 - psutil missing or process gone
        return None


def _cpu_delta(before: float | None, pid: int | None) -> float | None:
    after = _cpu(pid)
    return None if before is None or after is None else after - before


def producer_config(bootstrap: str, records: int, linger_ms: float) -> dict:
    return {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": linger_ms,
        "queue.buffering.max.messages": max(100_000, records + 1000),
    }


def produce_waiting(producer, topic: str, value: bytes, deadline: float, **kw) -> None:
    """Produce one record to partition 0, polling while librdkafka's queue is full (BufferError)
    until `deadline` (time.monotonic())."""
    while True:
        try:
            producer.produce(topic, value, partition=0, **kw)
            return
        except BufferError:
            producer.poll(0.01)
            if time.monotonic() > deadline:
                raise TimeoutError("producer queue full until timeout") from None


def produce(bootstrap: str, topic: str, records: int, value_size: int, linger_ms: float = 5,
            pid: int | None = None, timeout: float = TIMEOUT, client_config: dict | None = None) -> Phase:
    from confluent_kafka import Producer

    errors: list = []

    def on_delivery(err, _msg) -> None:
        if err is not None:
            errors.append(err)

    # client_config: more librdkafka settings (security.protocol, sasl.*, ssl.* for bench.security)
    producer = Producer({**producer_config(bootstrap, records, linger_ms), **(client_config or {})})
    producer.list_topics(topic, timeout=30)  # connect and learn the leader before timing
    value = b"v" * value_size
    deadline = time.monotonic() + timeout
    cpu0 = _cpu(pid)
    t0 = time.perf_counter()
    for i in range(records):
        produce_waiting(producer, topic, value, deadline, on_delivery=on_delivery)
        if i % 1000 == 0:
            producer.poll(0)
    left = producer.flush(max(1.0, deadline - time.monotonic()))
    t1 = time.perf_counter()
    cpu = _cpu_delta(cpu0, pid)
    if left:
        raise TimeoutError(f"{left} records not acknowledged within {timeout}s")
    if errors:
        raise RuntimeError(f"{len(errors)} delivery errors, first: {errors[0]}")
    return Phase(t1 - t0, records, records * value_size, cpu)


def consume(bootstrap: str, topic: str, records: int, pid: int | None = None,
            timeout: float = TIMEOUT, client_config: dict | None = None) -> Phase:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        **(client_config or {}),
    })
    try:
        consumer.list_topics(topic, timeout=30)  # connect and learn the leader before timing
        count = 0
        nbytes = 0
        first: float | None = None
        deadline = time.monotonic() + timeout
        cpu0 = _cpu(pid)
        t0 = time.perf_counter()
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        while count < records:
            batch = consumer.consume(num_messages=10_000, timeout=0.5)
            if batch and first is None:
                first = time.perf_counter() - t0
            for msg in batch:
                err = msg.error()
                if err is not None:
                    if err.fatal() or not err.retriable():
                        raise RuntimeError(f"consume error: {err}")
                    continue
                count += 1
                nbytes += len(msg.value())
            if time.monotonic() > deadline:
                raise TimeoutError(f"consumed {count}/{records} records within {timeout}s")
        t1 = time.perf_counter()
        cpu = _cpu_delta(cpu0, pid)
    finally:
        consumer.close()
    if count != records:
        raise RuntimeError(f"consumed {count} records, expected {records}")
    return Phase(t1 - t0, count, nbytes, cpu, first)


def _drop_topic(bootstrap: str, topic: str) -> None:
    """Free the broker's memory/disk between rounds; errors are irrelevant to the figures."""
    try:
        from confluent_kafka.admin import AdminClient

        fs = AdminClient({"bootstrap.servers": bootstrap}).delete_topics([topic], operation_timeout=10)
        for f in fs.values():
            f.result(15)
    except Exception:  # noqa: BLE001
        pass


def run(brokers: list[str], runs: int, records: int, value_size: int, linger_ms: float = 5,
        profile_dir: str | None = None, warmup_records: int = 20_000) -> Report:
    report = Report(
        "throughput: confluent-kafka, 1 partition, acks=all, idempotent",
        settings={"records": records, "value_size": value_size, "linger_ms": linger_ms,
                  "runs": runs, "warmup_records": warmup_records, "acks": "all",
                  "enable.idempotence": True},
    )
    p_rate = report.metric("throughput", "produce", "records/s", True,
                           [Target("ratio_at_least", 0.7, peer="tansu")])
    p_mb = report.metric("throughput", "produce", "MB/s", True)
    p_cpu = report.metric("throughput", "produce broker CPU", "s", False)
    c_rate = report.metric("throughput", "consume", "records/s", True,
                           [Target("ratio_at_least", 0.5, peer="tansu")])
    c_mb = report.metric("throughput", "consume", "MB/s", True)
    c_cpu = report.metric("throughput", "consume broker CPU", "s", False)
    c_first = report.metric("throughput", "consume first record", "ms", False)

    with peers.running_in_order(brokers, p_rate, c_rate) as (running, order):
        for name in order if warmup_records else ():
            # unmeasured: first connections, allocator and page-cache warm-up on each broker
            peer = running[name]
            topic = f"bench-throughput-warmup-{uuid.uuid4().hex[:8]}"
            try:
                peers.create_topic(peer.bootstrap, topic, partitions=1)
                produce(peer.bootstrap, topic, warmup_records, value_size, linger_ms)
                consume(peer.bootstrap, topic, warmup_records)
            except Exception as exc:  # noqa: BLE001
                p_rate.fail(name, failure("warm-up", exc))
            finally:
                _drop_topic(peer.bootstrap, topic)
        for rnd, name in alternate(order, runs):
            peer = running[name]
            topic = f"bench-throughput-{rnd}-{uuid.uuid4().hex[:8]}"
            try:
                peers.create_topic(peer.bootstrap, topic, partitions=1)
                pp = produce(peer.bootstrap, topic, records, value_size, linger_ms, pid=peer.pid)
                p_rate.add(name, pp.records / pp.seconds)
                p_mb.add(name, pp.value_bytes / pp.seconds / 1e6)
                if pp.broker_cpu is not None:
                    p_cpu.add(name, pp.broker_cpu)
                cp = consume(peer.bootstrap, topic, records, pid=peer.pid)
                c_rate.add(name, cp.records / cp.seconds)
                c_mb.add(name, cp.value_bytes / cp.seconds / 1e6)
                if cp.broker_cpu is not None:
                    c_cpu.add(name, cp.broker_cpu)
                if cp.first_record is not None:
                    c_first.add(name, cp.first_record * 1000.0)
            except Exception as exc:  # noqa: BLE001 - a failed run is reported, not fatal
                p_rate.fail(name, failure(f"round {rnd}", exc))
            finally:
                _drop_topic(peer.bootstrap, topic)
        if profile_dir and "kafkalite" in running:
            report.notes.extend(profile_round(running["kafkalite"], Path(profile_dir), records,
                                              value_size, linger_ms))
    return report


def profile_round(peer: peers.Peer, out: Path, records: int, value_size: int,
                  linger_ms: float) -> list[str]:
    """One extra produce + consume on ``peer`` under py-spy; returns printable summaries."""
    from bench import profile

    out.mkdir(parents=True, exist_ok=True)
    topic = f"bench-throughput-profile-{uuid.uuid4().hex[:8]}"
    peers.create_topic(peer.bootstrap, topic, partitions=1)
    notes = []
    with profile.record(peer.pid, out / f"{peer.name}-produce.txt") as prod_file:
        pp = produce(peer.bootstrap, topic, records, value_size, linger_ms, pid=peer.pid)
    with profile.record(peer.pid, out / f"{peer.name}-consume.txt") as cons_file:
        cp = consume(peer.bootstrap, topic, records, pid=peer.pid)
    for phase, f, ph in (("produce", prod_file, pp), ("consume", cons_file, cp)):
        title = (f"py-spy {peer.name} {phase}: {ph.records / ph.seconds:,.0f} records/s under the "
                 f"profiler, broker CPU {ph.broker_cpu or 0:.2f} s of {ph.seconds:.2f} s wall; {f}")
        notes.append(profile.summarize(f).render(20, title=title))
    _drop_topic(peer.bootstrap, topic)
    return notes


def main(argv: list[str] | None = None) -> Report:
    parser = common_parser(__doc__, runs=3)
    parser.add_argument("--records", type=int, default=200_000, help="records per run (default 200000)")
    parser.add_argument("--value-size", type=int, default=1024, help="bytes per value (default 1024)")
    parser.add_argument("--linger-ms", type=float, default=5, help="producer linger.ms (default 5)")
    parser.add_argument("--warmup-records", type=int, default=20_000,
                        help="unmeasured records per broker before the runs (default 20000; 0: none)")
    parser.add_argument("--profile", metavar="DIR", help="profile one extra kafkalite round with py-spy")
    args = parser.parse_args(argv)
    apply_common_arguments(args)
    report = run(peers.parse_brokers(args.brokers), args.runs, args.records, args.value_size,
                 args.linger_ms, args.profile, args.warmup_records)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
