"""The cost of test isolation: reset, snapshot/restore, the request log, and a broker per test.

* reset: the reset control on an empty broker (controls on a free port), 30 times: the broker's
  own figure (`took_ms` of the answer) and the HTTP round trip from `kafkalite.Controls`.
  Targets: <= 5 ms in the broker, <= 25 ms round trip.
* restore: 10 topics x 4 partitions x 1 000 records (100-byte values, produced with
  confluent-kafka), one `snapshot`, then `restore` several times, a Metadata and a produce
  between restores, as a test would; `took_ms` and the round trip. Target: <= 100 ms in the broker.
* request log: 20 000 one-record Produce requests (acks=1, one connection, raw protocol client)
  with the log off and on; microseconds per request. The log is off unless asked for, so "off"
  is what the produce path costs everyone.
* fixtures: a throwaway pytest project (run as `python -m pytest`, kafkalite's plugin) with ten
  tests of each kind: a no-op test, `kafka_clean`, `kafkalite_fresh`, and a plain
  `with kafkalite.running():` per test; each test's setup + call + teardown (from pytest's
  reports), median per kind, minus the no-op median. Targets: kafka_clean <= 30 ms,
  kafkalite_fresh <= 60 ms over a no-op test.

    python -m bench.isolation [--runs 3] [--json FILE]

Each figure is the median over all runs of all samples; the per-run medians are listed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from bench import peers
from bench.stats import Report, Target, emit

OURS = "kafkalite"

# the throwaway project: ten tests of each kind, and a conftest that writes each test's
# setup + call + teardown to a JSON file
PROJECT_TESTS = textwrap.dedent('''
    import pytest

    import kafkalite

    N = range(10)


    @pytest.mark.parametrize("i", N)
    def test_noop(i):
        pass


    @pytest.mark.parametrize("i", N)
    def test_clean(i, kafka_clean):
        assert kafka_clean


    @pytest.mark.parametrize("i", N)
    def test_fresh(i, kafkalite_fresh):
        assert kafkalite_fresh.bootstrap


    @pytest.mark.parametrize("i", N)
    def test_running(i):
        with kafkalite.running() as broker:
            assert broker.bootstrap
''')

PROJECT_CONFTEST = textwrap.dedent('''
    import json
    import os

    DURATIONS = {}


    def pytest_runtest_logreport(report):
        DURATIONS[report.nodeid] = DURATIONS.get(report.nodeid, 0.0) + report.duration


    def pytest_sessionfinish(session):
        with open(os.environ["ISOLATION_DURATIONS"], "w") as f:
            json.dump(DURATIONS, f)
''')

KINDS = {"noop": "no-op test", "clean": "kafka_clean", "fresh": "kafkalite_fresh",
         "running": "kafkalite.running() per test"}


def write_project(root: Path) -> None:
    (root / "test_isolation.py").write_text(PROJECT_TESTS)
    (root / "conftest.py").write_text(PROJECT_CONFTEST)


def fixture_durations(timeout: float = 300.0) -> dict[str, list[float]]:
    """One pytest session of the throwaway project: milliseconds per test, by kind."""
    with tempfile.TemporaryDirectory(prefix="bench-isolation-") as tmp:
        root = Path(tmp)
        write_project(root)
        out = root / "durations.json"
        env = dict(os.environ, ISOLATION_DURATIONS=str(out))
        env.pop("KAFKA_BOOTSTRAP", None)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(peers.REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-p", "no:hypothesispytest", str(root)], cwd=root, env=env, capture_output=True,
                              text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"the throwaway project failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
        durations = json.loads(out.read_text())
    by_kind: dict[str, list[float]] = {k: [] for k in KINDS}
    for nodeid, seconds in durations.items():
        kind = nodeid.split("::test_", 1)[1].split("[", 1)[0]
        by_kind[kind].append(seconds * 1000)
    return by_kind


def measure_reset(broker, n: int = 30) -> tuple[list[float], list[float]]:
    controls = broker.controls
    controls.reset()
    in_broker, round_trip = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        result = controls.reset()
        round_trip.append((time.perf_counter() - t0) * 1000)
        in_broker.append(result["took_ms"])
    return in_broker, round_trip


def fill(broker, topics: int = 10, partitions: int = 4, records: int = 1000) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    names = [f"bulk-{i}" for i in range(topics)]
    for fut in admin.create_topics([NewTopic(t, partitions, 1) for t in names]).values():
        fut.result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    value = b"v" * 100
    for t in names:
        for p in range(partitions):
            for _ in range(records):
                producer.produce(t, value=value, partition=p)
    if producer.flush(60) != 0:
        raise RuntimeError("records not delivered")


def measure_restore(broker, n: int = 5) -> tuple[list[float], list[float]]:
    from confluent_kafka import Producer

    controls = broker.controls
    controls.reset()
    fill(broker)
    controls.snapshot(name="bench")
    in_broker, round_trip = [], []
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for _ in range(n):
        t0 = time.perf_counter()
        result = controls.restore(name="bench")
        round_trip.append((time.perf_counter() - t0) * 1000)
        in_broker.append(result["took_ms"])
        # what a test does between restores
        producer.produce("bulk-0", value=b"x", partition=0)
        producer.flush(10)
    controls.drop_snapshot(name="bench")
    return in_broker, round_trip


def measure_request_log(broker, requests: int = 20_000) -> dict[str, float]:
    from kafkalite.admin import AdminConnection
    from kafkalite.protocol.client import WireClient
    from kafkalite.protocol.records import Record, build_batch
    from compat_tests.differ.core import request

    with AdminConnection(broker.bootstrap) as admin:
        admin.create_topic("log-cost", 1, {})
        admin.wait_for_topic("log-cost", 1)
    batch = bytes(build_batch([Record(value=b"v" * 100)]))
    req = request(0, 9, transactional_id=None, acks=1, timeout=5000,
                  topic_data=[{"name": "log-cost", "partition_data": [{"index": 0, "records": batch}]}])
    out = {}
    for label, enabled in (("off", False), ("on", True), ("off again", False)):
        broker.controls.record_requests(enabled=enabled)
        with WireClient(broker.bootstrap) as wire:
            for _ in range(500):
                wire.request(req)
            t0 = time.perf_counter()
            for _ in range(requests):
                wire.request(req)
            out[label] = (time.perf_counter() - t0) / requests * 1e6
    broker.controls.record_requests(enabled=False)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.isolation", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3, help="runs of each measurement (default 3)")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    p.add_argument("--skip-fixtures", action="store_true", help="leave out the pytest project")
    args = p.parse_args(argv)
    import kafkalite

    report = Report("isolation: reset, restore, request log, a broker per test")
    reset_broker = report.metric("reset", "empty reset, in the broker", "ms", False, [Target("at_most", 5)])
    reset_http = report.metric("reset", "empty reset, HTTP round trip", "ms", False, [Target("at_most", 25)])
    restore_broker = report.metric("restore", "restore 10x4x1000, in the broker", "ms", False,
                                   [Target("at_most", 100)])
    restore_http = report.metric("restore", "restore 10x4x1000, HTTP round trip", "ms", False)
    log_cost = report.metric("request log", "Produce request round trip (acks=1)", "us", False)
    for _ in range(args.runs):
        with kafkalite.running(controls=0) as broker:
            a, b = measure_reset(broker)
            reset_broker.add(OURS, statistics.median(a))
            reset_http.add(OURS, statistics.median(b))
            a, b = measure_restore(broker)
            restore_broker.add(OURS, statistics.median(a))
            restore_http.add(OURS, statistics.median(b))
            for label, us in measure_request_log(broker).items():
                log_cost.add(f"log {label}", us)
    if not args.skip_fixtures:
        per_test = report.metric("fixtures", "setup+call+teardown per test", "ms", False)
        over_clean = report.metric("fixtures", "kafka_clean over a no-op test", "ms", False,
                                   [Target("at_most", 30)])
        over_fresh = report.metric("fixtures", "kafkalite_fresh over a no-op test", "ms", False,
                                   [Target("at_most", 60)])
        over_running = report.metric("fixtures", "kafkalite.running() per test over a no-op test", "ms", False)
        for _ in range(args.runs):
            by_kind = fixture_durations()
            meds = {k: statistics.median(v) for k, v in by_kind.items()}
            for kind, label in KINDS.items():
                per_test.add(label, meds[kind])
            over_clean.add(OURS, meds["clean"] - meds["noop"])
            over_fresh.add(OURS, meds["fresh"] - meds["noop"])
            over_running.add(OURS, meds["running"] - meds["noop"])
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
