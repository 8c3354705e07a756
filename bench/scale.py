"""What partitions cost a broker as their count grows: create, stop, restart and memory at 1,
100, 1 000 and 10 000 partitions (50 000 with --huge).

For each size N and each broker, on a data dir of its own that the run keeps across a restart:

* **create**: the broker is started and answers Metadata; CreateTopics requests (v7) of at most
  5 000 partitions each name every topic (N/100 topics of 100 partitions, or one topic of N below
  100); the figure is the first request until the last answer, then until a Metadata lists every
  partition with a leader (Kafka answers CreateTopics before its controller has elected every
  leader).
* **stop**: SIGTERM until the process has exited.
* **restart**: ``Popen`` of the broker on the same data dir until the first answered Metadata
  (connect + ApiVersions + Metadata every 2 ms, bench/wire.py); a Metadata afterwards must list
  all N partitions, else the round fails.
* **RSS after restart**: the broker's RSS once every partition is listed with a leader and the
  process has gone idle (less than 5 % of a core over half a second, at most 30 s): what
  memory the partitions hold, whatever the broker opens in the background after it answers.

Brokers alternate per size (kafkalite, kafka, kafkalite, ...); kafkalite as ``kafkalite.start()``
runs it, Apache Kafka as compat_tests/reference.py runs it (log dir formatted before the first
start; its process start is on the clock of the restart, as kafkalite's is). ``--no-kafka``
leaves Kafka out.

Targets at 10 000 partitions (kafkalite): restart within 3x of one partition's restart in the same
run, stop <= 1 s, create <= 3 s, RSS <= 60 MB.

    python -m bench.scale [--runs 3] [--sizes 1,100,1000,10000] [--huge] [--no-kafka] [--json out.json]
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import kio.schema.create_topics.v7.request as ct7
import kio.schema.metadata.v12.request as md12
from bench import peers, wire
from bench.stats import Metric, Report, Target, emit, failure
from kafkalite.launcher import terminate
from kafkalite.protocol.client import WireClient

SIZES = (1, 100, 1000, 10_000)
HUGE = 50_000
PER_TOPIC = 100
PER_REQUEST = 5000   # partitions per CreateTopics request
TIMEOUT = 600.0      # one step of one round (a JVM creating 50 000 partitions on a loaded machine)
IDLE_CPU_SHARE = 0.05
IDLE_WINDOW = 0.5
IDLE_MAX_WAIT = 30.0


def topic_layout(n: int) -> list[tuple[str, int]]:
    """(topic name, partition count) for n partitions: topics of PER_TOPIC, or one smaller topic."""
    if n <= PER_TOPIC:
        return [("scale-0", n)]
    return [(f"scale-{i}", PER_TOPIC) for i in range(n // PER_TOPIC)]


class Node:
    """One broker process at a time over one data dir, started, stopped and started again."""

    def __init__(self, name: str):
        self.name = name
        self.workdir = Path(tempfile.mkdtemp(prefix=f"bench-scale-{name.replace('/', '_')}-"))
        self.port = peers.free_port()
        self.proc: subprocess.Popen | None = None
        self.log = self.workdir.parent / (self.workdir.name + ".log")
        self._kafka: Any = None
        if name == "kafka":
            self._kafka = peers._reference_broker(self.workdir)

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        if self._kafka is not None:
            return self._kafka.prepare(self.port), None     # formats the log dir only once
        return peers.launch_command(self.name, self.port, self.workdir)

    @property
    def bootstrap(self) -> str:
        return f"{peers.HOST}:{self.port}"

    def start(self) -> float:
        """Popen until the first answered Metadata, in seconds."""
        cmd, env = self.command()
        with open(self.log, "ab") as logf:
            t0 = time.monotonic()
            self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=logf,
                                         stdin=subprocess.DEVNULL)
        proc = self.proc
        try:
            t1 = wire.wait_for_metadata(peers.HOST, self.port, TIMEOUT, alive=lambda: proc.poll() is None)
        except wire.WireError as exc:
            raise RuntimeError(f"{exc}; log: {self.log_tail()}") from exc
        return t1 - t0

    def stop(self) -> float:
        """SIGTERM until the process exited, in seconds."""
        assert self.proc is not None
        t0 = time.monotonic()
        terminate(self.proc, TIMEOUT)
        secs = time.monotonic() - t0
        self.proc = None
        return secs

    def close(self) -> None:
        if self.proc is not None:
            terminate(self.proc)
            self.proc = None
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.log.unlink(missing_ok=True)

    def log_tail(self, n: int = 800) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def led_partitions(bootstrap: str) -> int:
    """Partitions of the scale-* topics that a Metadata lists with a leader."""
    with WireClient(bootstrap, timeout=TIMEOUT) as c:
        resp = c.request(md12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False))
    return sum(1 for t in resp.topics if str(t.name).startswith("scale-")
               for p in t.partitions if int(p.leader_id) >= 0)


def wait_led(bootstrap: str, n: int) -> None:
    deadline = time.monotonic() + TIMEOUT
    while (have := led_partitions(bootstrap)) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{have} of {n} partitions have a leader after {TIMEOUT:.0f} s")
        time.sleep(0.05)


def create(bootstrap: str, n: int) -> float:
    """CreateTopics requests of at most PER_REQUEST partitions each (Apache Kafka refuses a
    request of 10 000 with POLICY_VIOLATION), one after another on one connection, until every
    partition has a leader."""
    layout = topic_layout(n)
    per_request = max(1, PER_REQUEST // PER_TOPIC)
    t0 = time.monotonic()
    with WireClient(bootstrap, timeout=TIMEOUT) as c:
        for i in range(0, len(layout), per_request):
            resp = c.request(ct7.CreateTopicsRequest(
                topics=tuple(ct7.CreatableTopic(name=name, num_partitions=k, replication_factor=1, assignments=(),
                                                configs=()) for name, k in layout[i:i + per_request]),
                timeout=datetime.timedelta(seconds=TIMEOUT), validate_only=False))
            errors = {str(t.name): int(t.error_code) for t in resp.topics if int(t.error_code)}
            if errors:
                raise RuntimeError(f"CreateTopics errors: {dict(list(errors.items())[:3])} ({len(errors)} topics)")
    wait_led(bootstrap, n)
    return time.monotonic() - t0


def idle_rss(pid: int) -> int:
    """RSS once the process uses less than IDLE_CPU_SHARE of a core over IDLE_WINDOW seconds."""
    import psutil

    p = psutil.Process(pid)
    deadline = time.monotonic() + IDLE_MAX_WAIT
    while True:
        t = p.cpu_times()
        before = t.user + t.system
        time.sleep(IDLE_WINDOW)
        t = p.cpu_times()
        if t.user + t.system - before < IDLE_CPU_SHARE * IDLE_WINDOW or time.monotonic() > deadline:
            return p.memory_info().rss


def one_round(name: str, n: int) -> tuple[float, float, float, float]:
    """(create s, stop s, restart s, RSS MB) of n partitions on a fresh data dir."""
    node = Node(name)
    try:
        node.start()
        made = create(node.bootstrap, n)
        stopped = node.stop()
        restarted = node.start()
        if (have := led_partitions(node.bootstrap)) < n and name != "kafka":
            raise RuntimeError(f"the first Metadata after the restart lists {have} of {n} partitions")
        wait_led(node.bootstrap, n)
        assert node.proc is not None
        rss = idle_rss(node.proc.pid)
        return made, stopped, restarted, rss / 1e6
    except RuntimeError as exc:
        raise RuntimeError(f"{exc}; log: {node.log_tail()}") from exc
    finally:
        node.close()


def run(brokers: list[str], runs: int, sizes: tuple[int, ...] = SIZES) -> Report:
    report = Report("scale: create / stop / restart / RSS by partition count",
                    settings={"runs": runs, "sizes": ",".join(map(str, sizes)), "topic_size": PER_TOPIC})
    metrics: dict[tuple[str, int], Metric] = {}
    for n in sizes:
        top = n == 10_000
        metrics["create", n] = report.metric("scale", f"create {n} partitions", "s", False,
                                             [Target("at_most", 3.0)] if top else [])
        metrics["stop", n] = report.metric("scale", f"stop (SIGTERM to exit), {n}", "s", False,
                                           [Target("at_most", 1.0)] if top else [])
        metrics["restart", n] = report.metric("scale", f"restart to first Metadata, {n}", "s", False)
        metrics["rss", n] = report.metric("scale", f"RSS after restart, {n}", "MB", False,
                                          [Target("at_most", 60.0)] if top else [])
    for n in sizes:
        for _ in range(runs):
            for b in brokers:
                try:
                    made, stopped, restarted, rss = one_round(b, n)
                except (RuntimeError, peers.PeerUnavailable, OSError) as exc:
                    for kind in ("create", "stop", "restart", "rss"):
                        metrics[kind, n].fail(b, failure(f"{n} partitions", exc))
                    continue
                metrics["create", n].add(b, made)
                metrics["stop", n].add(b, stopped)
                metrics["restart", n].add(b, restarted)
                metrics["rss", n].add(b, rss)
    if 1 in sizes:
        one = metrics["restart", 1].medians()
        for n in sizes:
            if n == 1:
                continue
            m = report.metric("scale", f"restart {n} / restart 1", "x", False,
                              [Target("at_most", 3.0)] if n == 10_000 else [])
            for b, med in metrics["restart", n].medians().items():
                if med is not None and one.get(b):
                    m.add(b, med / one[b])
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds per broker and size (default 3)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="partition counts (default %(default)s)")
    parser.add_argument("--huge", action="store_true", help=f"also {HUGE} partitions")
    parser.add_argument("--brokers", default="kafkalite,kafka",
                        help="kafkalite, kafka, kafkalite@PATH (default %(default)s)")
    parser.add_argument("--no-kafka", action="store_true", help="leave Apache Kafka out")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",") if s.strip())
    if args.huge and HUGE not in sizes:
        sizes += (HUGE,)
    brokers = [b for b in peers.parse_brokers(args.brokers) if not (args.no_kafka and b == "kafka")]
    report = run(brokers, args.runs, sizes)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
