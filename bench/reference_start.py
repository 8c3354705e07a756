"""What a start of the reference Apache Kafka costs the test suite, under each JVM setting.

The tests start Kafka (compat_tests/reference.py) dozens of times a run: once per worker for the
session, and for every test that needs a broker of its own or restarts one. Each start is a
``kafka-storage format`` JVM, then the broker's JVM until it answers Metadata, then its controlled
shutdown. Two settings, run alternately:

- ``tuned``: KAFKA_JVM_OPTS, Kafka's own (G1, full JIT), as benchmarks against Kafka run it;
- ``test``: TEST_JVM_OPTS (serial collector, JIT at C1) and Kafka's class-data-sharing archive,
  as the tests run it (the archive is written by an unmeasured first start when missing).

Per start: Popen of the broker to its first answered Metadata, the broker's CPU (user + system)
by then, and the CPU of the whole start (format, run, stop: the children's rusage), which is what
a start takes from the other tests on a two-core machine.

    python -m bench.reference_start [--runs 5] [--json out.json]
"""

from __future__ import annotations

import os
import resource
import time

from bench.stats import Report, alternate, main_with_runs


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _process_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_once(setting: str) -> tuple[float, float, float]:
    """(seconds to first Metadata, broker CPU seconds then, CPU seconds of format + run + stop)."""
    from compat_tests.reference import KAFKA_JVM_OPTS, ReferenceBroker

    before = _children_cpu()
    with ReferenceBroker(jvm_opts=KAFKA_JVM_OPTS if setting == "tuned" else None) as kafka:
        t0 = time.monotonic()
        kafka.start(timeout=180)
        secs = time.monotonic() - t0
        assert kafka.pid is not None
        cpu_then = _process_cpu(kafka.pid)
    return secs, cpu_then, _children_cpu() - before


def run(runs: int) -> Report:
    from compat_tests.reference import class_archive

    report = Report("reference_start: Apache Kafka started as the tests start it", settings={"runs": runs})
    t_metric = report.metric("reference_start", "start to first Metadata", "ms", higher_is_better=False)
    c_metric = report.metric("reference_start", "broker CPU until first Metadata", "ms", higher_is_better=False)
    w_metric = report.metric("reference_start", "CPU of format + run + stop", "ms", higher_is_better=False)
    if not class_archive().exists():
        measure_once("test")  # writes the archive
        report.notes.append(f"class archive written by an unmeasured start: {class_archive()}")
    for _, setting in alternate(["test", "tuned"], runs):
        secs, cpu_then, whole = measure_once(setting)
        t_metric.add(setting, secs * 1000.0)
        c_metric.add(setting, cpu_then * 1000.0)
        w_metric.add(setting, whole * 1000.0)
    return report


def main(argv: list[str] | None = None) -> Report:
    return main_with_runs(__doc__, run, argv, runs=5)


if __name__ == "__main__":
    main()
