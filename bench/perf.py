"""Produce and consume with load generators that are not the ceiling, kafkalite against Apache Kafka and Tansu.

Two clients (``--client``):

- ``rdkafka`` (the default): bench/rdkperf (our rdkperf.c on librdkafka 2.16, the library
  confluent-kafka bundles), several producers as threads of one process, each with its own
  rd_kafka_t, and one consumer that assign()s every partition from the start. It spends about a
  tenth of the JVMs' CPU per MB, so the broker's own speed shows; it is the default for that
  reason. Its batches are librdkafka's own default (``batch.size`` 1 000 000 bytes) unless
  ``--batch-bytes`` says otherwise: at the Java client's 16 KiB, librdkafka's broker threads spin
  in poll() while their requests are in flight (2.3 s of CPU per 100 MB against kafkalite, 4.3 s
  against Tansu) and it is the ceiling again. It still spins while a full batch waits for
  an answer, so its CPU row grows when a broker answers slowly.
- ``java``: Kafka's ``ProducerPerformance`` and ``ConsumerPerformance`` (kafka-tools 4.3.1, jar
  set ``kafka-perf``: ``maven_jars kafka-perf`` in scripts/install-test-deps.sh) as separate
  JVMs, several producers at once. On two shared cores the producer JVMs use about 10 s of CPU
  per 200 MB whichever the broker, so they set the rate for every broker alike.

Each scenario, for each broker in turn (kafkalite, kafka, tansu, kafkalite, ...):

1. create a fresh topic with P partitions (not timed);
2. start ``--producers`` ProducerPerformance processes at once, each sending ``--records``
   records of S bytes (``--throughput -1``, acks=all, enable.idempotence=true, linger.ms=5;
   ``txn`` scenarios also set a transactional id per producer and ``--transaction-duration-ms
   100``, a commit every 100 ms). Each tool prints its records/s, MB/s and latency percentiles
   over its own run; the figure is the sum of the producers' MB/s, and the median of their p50
   and the largest of their p99 latencies.
   With ``rdkafka``, one rdkperf process runs the ``--producers`` producers (same settings;
   ``txn``: transactional.id per producer, a commit when the transaction is 100 ms old); the
   figure is all records' value bytes over the time from the first send to the last delivery
   report, and p50/p99 over every record's enqueue-to-delivery-report latency;
3. one ConsumerPerformance reads every record back from the start (a new group); the figure is
   its ``fetch.MB.sec`` (data over the time after the group's first assignment, so the JVM
   start and the group join are not counted). With ``rdkafka``: value bytes over the time from
   assign() to the last record (isolation.level read_committed for ``txn``, read_uncommitted
   otherwise, as the Java consumer).
4. delete the topic (not timed), so that rounds of a GB each do not pile up on disk and in
   Tansu's memory.

Beside each phase, the broker process's own CPU seconds (user + system, psutil) during it,
and the producer and consumer clients' CPU seconds (getrusage of the finished tools): the
tools and the broker share the machine's cores, so the MB/s rows show the clients' speed as
much as the broker's, and the CPU rows separate the broker's cost from the clients'.

MB is 10^6 bytes of record values (the tools' own unit is 2^20 bytes: converted). Each tool
runs at most ``--timeout`` seconds; a failed or timed-out run is reported, never counted.

Scenarios (``--scenarios``, comma-separated ``pP-SIZE-MODE``): default
``p1-1024-idem,p6-1024-idem,p6-100-idem,p6-1024-txn``.

    python -m bench.perf [--client rdkafka|java] [--brokers kafkalite,kafka,tansu] [--runs 3]
                         [--producers 2] [--records 20000] [--batch-bytes N] [--scenarios ...]
                         [--json FILE] [--profile DIR]

``--profile DIR``: after the measured rounds of each scenario, one extra kafkalite round runs
under py-spy (bench/profile.py), one recording for the produce phase and one for the consume
phase (``DIR/kafkalite-p6-1024-idem-produce.txt``, ...), and a summary of where the broker's time
went (top functions by self and inclusive samples) is printed with the figures.

Targets: produce and consume MB/s >= 1.0x Apache Kafka and >= 1.5x Tansu;
transactional produce >= 0.9x idempotent (compare the txn and idem rows of the same size and
partitions) and >= 1.0x Apache Kafka.
"""

from __future__ import annotations

import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench import peers, rdkperf
from bench.stats import Report, Target, alternate, apply_common_arguments, common_parser, emit, failure
from bench.throughput import _cpu, _drop_topic

JARS = peers.REPO_ROOT / ".deps" / "maven" / "kafka-perf"
MIB = 1 << 20
_PRODUCER_LINE = re.compile(
    r"(?P<records>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mibs>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th")


@dataclass(frozen=True)
class Scenario:
    partitions: int
    size: int
    mode: str            # idem | txn

    @classmethod
    def parse(cls, text: str) -> "Scenario":
        m = re.fullmatch(r"p(\d+)-(\d+)-(idem|txn)", text.strip())
        if not m:
            raise SystemExit(f"scenario {text!r}: expected pPARTITIONS-SIZE-(idem|txn), e.g. p6-1024-txn")
        return cls(int(m.group(1)), int(m.group(2)), m.group(3))

    @property
    def name(self) -> str:
        return f"{self.partitions}p {self.size} B {'transactional' if self.mode == 'txn' else 'idempotent'}"


def _java() -> list[str]:
    if not JARS.is_dir() or not any(JARS.glob("kafka-tools-*.jar")):
        raise SystemExit(f"{JARS} has no kafka-tools jar: run bash scripts/install-test-deps.sh (maven_jars kafka-perf)")
    java = shutil.which("java")
    if java is None:
        raise SystemExit("no java on PATH")
    return [java, "-Xmx512m", "-cp", f"{JARS}/*"]


def _producer_cmd(bootstrap: str, topic: str, records: int, size: int, txn_id: str | None) -> list[str]:
    props = [f"bootstrap.servers={bootstrap}", "acks=all", "enable.idempotence=true", "linger.ms=5",
             "client.id=perf"]
    cmd = _java() + ["org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                     "--num-records", str(records), "--record-size", str(size), "--throughput", "-1",
                     "--producer-props", *props]
    if txn_id is not None:
        cmd += ["--transactional-id", txn_id, "--transaction-duration-ms", "100"]
    return cmd


def _consumer_cmd(bootstrap: str, topic: str, records: int, timeout_s: float) -> list[str]:
    return _java() + ["org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap,
                      "--topic", topic, "--messages", str(records), "--group", f"perf-{uuid.uuid4().hex[:8]}",
                      "--timeout", str(int(timeout_s * 1000))]


def _run_all(cmds: list[list[str]], timeout_s: float) -> list[str]:
    """Run the commands at once; their stdout, or RuntimeError for any failure or timeout."""
    with tempfile.TemporaryDirectory(prefix="kafkalite-perf-") as tmp:
        procs = []
        for i, cmd in enumerate(cmds):
            out = open(Path(tmp) / f"{i}.out", "w+")
            procs.append((subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL), out))
        deadline = time.monotonic() + timeout_s
        outputs = []
        failed = None
        for proc, out in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                failed = failed or f"timed out after {timeout_s:.0f} s"
            out.seek(0)
            text = out.read()
            out.close()
            if proc.returncode != 0 and failed is None:
                failed = f"exit {proc.returncode}: {text.strip()[-300:]}"
            outputs.append(text)
        if failed:
            raise RuntimeError(failed)
        return outputs


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the tools once waited for; brokers
    still running are not counted)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@dataclass
class ProduceResult:
    mb_per_s: float
    p50_ms: float
    p99_ms: float


def produce(bootstrap: str, topic: str, scenario: Scenario, producers: int, records: int,
            timeout_s: float, client: str = "java", batch_bytes: int | None = None) -> ProduceResult:
    run_id = uuid.uuid4().hex[:8]
    if client == "rdkafka":
        res = rdkperf.run(rdkperf.produce_cmd(
            bootstrap, topic, records, scenario.size, producers, linger_ms=5, batch_bytes=batch_bytes,
            transactional_id=f"perf-{run_id}" if scenario.mode == "txn" else None, commit_ms=100,
            timeout_s=timeout_s), timeout_s + 30)
        if res["records"] != records * producers:
            raise RuntimeError(f"rdkperf sent {res['records']} of {records * producers} records")
        return ProduceResult(mb_per_s=res["mb_per_s"], p50_ms=res["p50_ms"], p99_ms=res["p99_ms"])
    cmds = [_producer_cmd(bootstrap, topic, records, scenario.size,
                          f"perf-{run_id}-{i}" if scenario.mode == "txn" else None) for i in range(producers)]
    outs = _run_all(cmds, timeout_s)
    finals = []
    for text in outs:
        lines = [m for m in (_PRODUCER_LINE.search(line) for line in text.splitlines()) if m]
        if not lines or int(lines[-1]["records"]) != records:
            raise RuntimeError(f"no final ProducerPerformance line: {text.strip()[-300:]}")
        finals.append(lines[-1])
    return ProduceResult(
        mb_per_s=sum(float(m["mibs"]) * MIB / 1e6 for m in finals),
        p50_ms=statistics.median(float(m["p50"]) for m in finals),
        p99_ms=max(float(m["p99"]) for m in finals),
    )


def consume(bootstrap: str, topic: str, records: int, timeout_s: float, client: str = "java",
            transactional: bool = False) -> float:
    """MB/s (10^6 bytes of values) of one consumer reading `records` records: ConsumerPerformance's
    fetch.MB.sec, or rdkperf's."""
    if client == "rdkafka":
        res = rdkperf.run(rdkperf.consume_cmd(
            bootstrap, topic, records, timeout_s,
            isolation_level="read_committed" if transactional else "read_uncommitted"), timeout_s + 30)
        if res["records"] < records:
            raise RuntimeError(f"consumed {res['records']} of {records} records")
        return res["mb_per_s"]
    (text,) = _run_all([_consumer_cmd(bootstrap, topic, records, timeout_s)], timeout_s + 30)
    lines = [line for line in text.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith("start.time"):
            header = [h.strip() for h in line.split(",")]
            values = [v.strip() for v in lines[i + 1].split(",")]
            row = dict(zip(header, values))
            if int(row["data.consumed.in.nMsg"]) < records:
                raise RuntimeError(f"consumed {row['data.consumed.in.nMsg']} of {records} records")
            return float(row["fetch.MB.sec"]) * MIB / 1e6
    raise RuntimeError(f"no ConsumerPerformance figures: {text.strip()[-300:]}")


def run(brokers: list[str], runs: int, scenarios: list[Scenario], producers: int, records: int,
        timeout_s: float, profile_dir: str | None = None, client: str = "rdkafka",
        batch_bytes: int | None = None) -> Report:
    settings: dict = {
        "client": client, "runs": runs, "producers": producers, "records_per_producer": records, "linger_ms": 5,
        "acks": "all", "enable.idempotence": True, "transaction_duration_ms (txn)": 100,
    }
    if client == "rdkafka":
        title = "perf: rdkperf (librdkafka), acks=all"
        settings["batch.size"] = batch_bytes or "librdkafka's default (1000000)"
        settings["rdkperf"] = rdkperf.binary().name
    else:
        title = "perf: Kafka's ProducerPerformance / ConsumerPerformance, acks=all"
        settings["kafka-tools"] = next((p.name for p in JARS.glob("kafka-tools-*.jar")), "missing")
    report = Report(title, settings=settings)
    targets = [Target("ratio_at_least", 1.0, peer="kafka"), Target("ratio_at_least", 1.5, peer="tansu")]
    metrics = {}
    for sc in scenarios:
        metrics[sc] = (
            report.metric(sc.name, "produce", "MB/s", True, targets),
            report.metric(sc.name, "produce p50 latency", "ms", False),
            report.metric(sc.name, "produce p99 latency", "ms", False),
            report.metric(sc.name, "consume", "MB/s", True, targets),
            report.metric(sc.name, "produce broker CPU", "s", False),
            report.metric(sc.name, "consume broker CPU", "s", False),
            report.metric(sc.name, "producer JVMs' CPU" if client == "java" else "rdkperf producers' CPU", "s",
                          False),
            report.metric(sc.name, "consumer JVM's CPU" if client == "java" else "rdkperf consumer's CPU", "s",
                          False),
        )
    with peers.running_in_order(brokers, *(metrics[sc][0] for sc in scenarios)) as (running, order):
        for sc in scenarios:
            p_mb, p50, p99, c_mb, p_cpu, c_cpu, tools_cpu, consumer_cpu = metrics[sc]
            for rnd, name in alternate(order, runs):
                peer = running[name]
                topic = f"bench-perf-{rnd}-{uuid.uuid4().hex[:8]}"
                try:
                    peers.create_topic(peer.bootstrap, topic, partitions=sc.partitions)
                    cpu0 = _cpu(peer.pid)
                    tools0 = _children_cpu()
                    pr = produce(peer.bootstrap, topic, sc, producers, records, timeout_s, client, batch_bytes)
                    cpu1 = _cpu(peer.pid)
                    tools_cpu.add(name, _children_cpu() - tools0)
                    p_mb.add(name, pr.mb_per_s)
                    p50.add(name, pr.p50_ms)
                    p99.add(name, pr.p99_ms)
                    tools1 = _children_cpu()
                    c_mb.add(name, consume(peer.bootstrap, topic, records * producers, timeout_s, client,
                                           sc.mode == "txn"))
                    consumer_cpu.add(name, _children_cpu() - tools1)
                    cpu2 = _cpu(peer.pid)
                    if cpu0 is not None and cpu1 is not None and cpu2 is not None:
                        p_cpu.add(name, cpu1 - cpu0)
                        c_cpu.add(name, cpu2 - cpu1)
                except Exception as exc:  # noqa: BLE001 - a failed run is reported, not fatal
                    p_mb.fail(name, failure(f"round {rnd}", exc)[:200])
                finally:
                    _drop_topic(peer.bootstrap, topic)  # a GB per round would pile up on disk and in Tansu's memory
            if profile_dir and "kafkalite" in running:
                report.notes.extend(profile_round(running["kafkalite"], Path(profile_dir), sc, producers, records,
                                                  timeout_s, client, batch_bytes))
    return report


def profile_round(peer: peers.Peer, out: Path, sc: Scenario, producers: int, records: int,
                  timeout_s: float, client: str = "java", batch_bytes: int | None = None) -> list[str]:
    """One extra, unmeasured produce + consume of scenario `sc` on `peer` under py-spy; returns
    printable summaries."""
    from bench import profile

    out.mkdir(parents=True, exist_ok=True)
    topic = f"bench-perf-profile-{uuid.uuid4().hex[:8]}"
    peers.create_topic(peer.bootstrap, topic, partitions=sc.partitions)
    tag = f"{peer.name}-p{sc.partitions}-{sc.size}-{sc.mode}"
    with profile.record(peer.pid, out / f"{tag}-produce.txt") as prod_file:
        pr = produce(peer.bootstrap, topic, sc, producers, records, timeout_s, client, batch_bytes)
    with profile.record(peer.pid, out / f"{tag}-consume.txt") as cons_file:
        mb = consume(peer.bootstrap, topic, records * producers, timeout_s, client, sc.mode == "txn")
    return [profile.summarize(prod_file).render(20, title=f"py-spy {tag} produce: {pr.mb_per_s:.1f} MB/s under "
                                                         f"the profiler; {prod_file}"),
            profile.summarize(cons_file).render(20, title=f"py-spy {tag} consume: {mb:.1f} MB/s under "
                                                         f"the profiler; {cons_file}")]


def main(argv: list[str] | None = None) -> Report:
    parser = common_parser(__doc__, runs=3, brokers="kafkalite,kafka,tansu")
    parser.add_argument("--scenarios", default="p1-1024-idem,p6-1024-idem,p6-100-idem,p6-1024-txn")
    parser.add_argument("--client", choices=("rdkafka", "java"), default="rdkafka",
                        help="rdkafka: bench/rdkperf on librdkafka (default); java: Kafka's perf tools")
    parser.add_argument("--producers", type=int, default=2,
                        help="producers at once: ProducerPerformance processes or rdkperf threads (default 2)")
    parser.add_argument("--batch-bytes", type=int, default=None,
                        help="rdkafka only: batch.size (default librdkafka's 1000000)")
    parser.add_argument("--records", type=int, default=20_000, help="records per producer (default 20000)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a tool may run (default 120)")
    parser.add_argument("--profile", metavar="DIR", help="profile one extra kafkalite round per scenario with py-spy")
    args = parser.parse_args(argv)
    apply_common_arguments(args)
    scenarios = [Scenario.parse(s) for s in args.scenarios.split(",") if s.strip()]
    report = run(peers.parse_brokers(args.brokers), args.runs, scenarios, args.producers, args.records,
                 args.timeout, args.profile, args.client, args.batch_bytes)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
