"""Wall time of a whole pytest session that starts a broker through a fixture and runs one
produce/consume test.

A throwaway project in a temp dir holds one test, ``test_roundtrip(kafka_bootstrap)``: create a
one-partition topic (confluent-kafka AdminClient), produce one record, flush, consume it back
with an assigned consumer. The figure is ``Popen([python, -m, pytest, -q, ...])`` to the exit of
that process (exit code 0 required): interpreter and pytest start, plugin loading, broker start,
the test, broker teardown.

* kafkalite: the ``kafka_bootstrap`` fixture of kafkalite's own pytest plugin (``pytest11``
  entry point), as a user gets it after ``pip install .`` in a kafkalite checkout.
* tansu: the same test, with a ``conftest.py`` whose session fixture starts the Tansu binary on a
  free port and waits until it accepts connections (what a user would write for Tansu);
  kafkalite's plugin is disabled (``-p no:kafkalite``).
* no broker: the same session with one test that only imports confluent_kafka, plugin disabled:
  the fixed cost of Python, pytest, its plugins and the client library on this machine.

Target: kafkalite session under 1.5 s (a Kafka container takes 4-12 s to start).

    python -m bench.pytest_session [--runs 5] [--brokers kafkalite,tansu] [--json FILE]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from bench import peers
from bench.stats import Report, Target, alternate, apply_common_arguments, common_parser, emit

BASELINE = "no broker"

TEST_FILE = textwrap.dedent('''
    import uuid

    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic


    def test_roundtrip(kafka_bootstrap):
        topic = "roundtrip-" + uuid.uuid4().hex[:8]
        admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(10)
        producer = Producer({"bootstrap.servers": kafka_bootstrap})
        producer.produce(topic, b"hello", key=b"k", partition=0)
        assert producer.flush(10) == 0
        consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "roundtrip",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, 0)])
        msg = None
        for _ in range(200):
            msg = consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                break
        consumer.close()
        assert msg is not None and msg.error() is None and msg.value() == b"hello"
''')

BASELINE_TEST = textwrap.dedent('''
    import confluent_kafka


    def test_nothing():
        assert confluent_kafka.version()
''')

TANSU_CONFTEST = textwrap.dedent('''
    import os
    import socket
    import subprocess
    import time

    import pytest


    @pytest.fixture(scope="session")
    def kafka_bootstrap():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        url = f"tcp://127.0.0.1:{port}"
        proc = subprocess.Popen(
            [os.environ["BENCH_TANSU_BIN"], "broker", "--listener-url", url,
             "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.005)
        yield f"127.0.0.1:{port}"
        proc.terminate()
        proc.wait(10)
''')


def make_project(name: str) -> tuple[Path, list[str], dict[str, str]]:
    """A temp project for ``name``; returns its dir, the pytest command and the environment."""
    root = Path(tempfile.mkdtemp(prefix=f"bench-pytest-{name}-"))
    (root / "test_roundtrip.py").write_text(BASELINE_TEST if name == BASELINE else TEST_FILE)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root)]
    env = dict(os.environ)
    env.pop("KAFKA_BOOTSTRAP", None)
    if name == "kafkalite":
        reason = peers.kafkalite_available()
        if reason:
            raise peers.PeerUnavailable(reason)
        if peers.KAFKALITE_CONFIG:
            (root / "pytest.ini").write_text("[pytest]\nkafkalite_config =\n" + "".join(
                f"    {k}={v}\n" for k, v in peers.KAFKALITE_CONFIG.items()))
        # make sure the plugin and the broker come from this checkout
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(peers.REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    elif name == BASELINE:
        cmd[3:3] = ["-p", "no:kafkalite"]
    elif name == "tansu":
        (root / "conftest.py").write_text(TANSU_CONFTEST)
        env["BENCH_TANSU_BIN"] = peers.tansu_binary()
        cmd[3:3] = ["-p", "no:kafkalite"]
    else:
        raise peers.PeerUnavailable("pytest_session only runs brokers it starts through a fixture")
    return root, cmd, env


def measure_once(name: str, timeout: float = 120.0) -> float:
    root, cmd, env = make_project(name)
    try:
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
        t1 = time.monotonic()
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-12:]
            raise RuntimeError(f"pytest exited {proc.returncode}: " + " | ".join(tail))
        return t1 - t0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(brokers: list[str], runs: int, warmup: bool = True, baseline: bool = True) -> Report:
    report = Report("pytest_session: one produce/consume test with a broker fixture, whole session",
                    settings={"runs": runs, "warmup": warmup})
    if baseline:
        brokers = [*brokers, BASELINE]
    metric = report.metric("pytest_session", "pytest session wall time", "ms", False,
                           [Target("at_most", 1500.0)])
    usable = []
    for b in brokers:
        try:
            if warmup:
                measure_once(b)
            else:
                shutil.rmtree(make_project(b)[0], ignore_errors=True)
            usable.append(b)
        except (peers.PeerUnavailable, RuntimeError, subprocess.TimeoutExpired) as exc:
            metric.fail(b, str(exc)[:600])
    for _, b in alternate(usable, runs):
        try:
            metric.add(b, measure_once(b) * 1000.0)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            metric.fail(b, str(exc)[:600])
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = common_parser(__doc__, runs=5)
    parser.add_argument("--no-warmup", action="store_true", help="skip the unmeasured first run")
    parser.add_argument("--no-baseline", action="store_true",
                        help=f"skip the '{BASELINE}' row (a session whose one test only imports confluent_kafka)")
    args = parser.parse_args(argv)
    apply_common_arguments(args)
    report = run(peers.parse_brokers(args.brokers), args.runs, warmup=not args.no_warmup,
                 baseline=not args.no_baseline)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
