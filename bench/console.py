"""What the web console costs: produce throughput on one busy partition with the console open
on that partition against the same broker with nobody looking.

One kafkalite broker started with ``--console 0`` serves every round; rounds alternate:

- ``console closed``: nobody is connected to the console;
- ``console open``: ``--viewers`` clients follow the partition's timeline stream
  (``/api/stream/partition``, what the partition page subscribes to) and one follows the topics
  stream, for the whole produce phase, reading every snapshot as a browser would (each in a
  process of its own, so their reading takes no CPU time from this process's producer).

and, in a second broker process started without ``--console`` (``kafkalite``, the reference
the ratios are taken against), the same produce, so the table also shows what a console nobody
looks at costs. Each round starts with another of the three. Each produce is bench.throughput's: confluent-kafka, one partition,
1 KiB values, acks=all, idempotent, linger.ms=5, timed from the first ``produce()`` until
``flush()`` returns. The viewers are raw sockets reading the event stream (the server's work
per viewer is the same as for a browser's page; the reading is cheaper).

Target: console open >= 0.95x console closed (records/s medians). On a busy machine the
records/s of single runs swing with what else runs; the broker's CPU per 1000 produced records
(psutil, the broker process's user+system time over the produce phase, the console's rendering
included since it is served from the broker process) is the steadier figure of the console's
cost: target console open <= 1.05x console closed.

    python -m bench.console [--records 1000000] [--runs 3] [--viewers 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import time
import uuid

from bench import peers
from bench.stats import Report, Target, emit
from bench.throughput import produce

CLOSED = "console closed"
OPEN = "console open"
NONE = "kafkalite"  # no --console at all


def _follow(host: str, port: int, path: str, stop, snapshots, errors) -> None:
    """Read one server-sent event stream until `stop` is set; count the snapshots."""
    try:
        with socket.create_connection((host, port), timeout=10) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode())
            s.settimeout(0.2)
            while not stop.is_set():
                try:
                    data = s.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    errors.put(f"{path}: the stream ended")
                    return
                with snapshots.get_lock():
                    snapshots.value += data.count(b"\ndata: ") + data.startswith(b"data: ")
    except OSError as exc:
        errors.put(f"{path}: {exc}")


class Viewer:
    """One console viewer in a process of its own (its reading must not take this process's GIL
    from the producer being measured)."""

    def __init__(self, host: str, port: int, path: str):
        ctx = multiprocessing.get_context("spawn")
        self.stop_flag = ctx.Event()
        self.count = ctx.Value("q", 0)
        self.errors = ctx.Queue()
        self.proc = ctx.Process(target=_follow, args=(host, port, path, self.stop_flag, self.count, self.errors),
                                daemon=True)

    def start(self) -> None:
        self.proc.start()

    def stop(self) -> None:
        self.stop_flag.set()
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()

    @property
    def snapshots(self) -> int:
        return self.count.value

    @property
    def error(self) -> str | None:
        try:
            return self.errors.get_nowait()
        except Exception:  # noqa: BLE001 - queue.Empty
            return None


def _create_topic(bootstrap: str) -> str:
    from kafkalite.admin import AdminConnection

    topic = f"bench-console-{uuid.uuid4().hex[:8]}"
    with AdminConnection(bootstrap) as admin:
        admin.create_topic(topic, 1)
        admin.wait_for_topic(topic, 1)
    return topic


def _drop_topic(bootstrap: str, topic: str) -> None:
    from kafkalite.admin import AdminConnection

    try:
        with AdminConnection(bootstrap) as admin:
            admin.delete_topic(topic)
    except Exception:  # noqa: BLE001 - freeing disk between rounds; irrelevant to the figures
        pass


def run(runs: int, records: int, value_size: int, viewers: int, warmup_records: int) -> Report:
    import kafkalite

    report = Report("console: produce throughput with the web console open vs closed",
                    settings={"records": records, "value_size": value_size, "runs": runs, "viewers": viewers,
                              "warmup_records": warmup_records, "acks": "all", "enable.idempotence": True,
                              "linger.ms": 5})
    rate = report.metric("console", "produce", "records/s", True,
                         [Target("ratio_at_least", 0.95, broker=OPEN, peer=CLOSED)])
    cpu = report.metric("console", "produce broker CPU", "s", False)
    per_k = report.metric("console", "broker CPU per 1000 records", "ms", False,
                          [Target("ratio_at_most", 1.05, broker=OPEN, peer=CLOSED)])
    seen = report.metric("console", "snapshots received by viewers", "per s", True)

    with kafkalite.running(console=0, extra_args=peers._config_args()) as with_console, \
            kafkalite.running(extra_args=peers._config_args()) as without:
        chost, cport = with_console.console_url.split("//", 1)[1].rstrip("/").rsplit(":", 1)
        targets = {CLOSED: with_console, OPEN: with_console, NONE: without}
        for broker in (with_console, without):  # unmeasured warm-up on each process
            topic = _create_topic(broker.bootstrap)
            produce(broker.bootstrap, topic, warmup_records, value_size, pid=broker.pid)
            _drop_topic(broker.bootstrap, topic)
        labels = [CLOSED, OPEN, NONE]
        for rnd in range(runs):
            # each round starts with another mode, so drift and warm-up favour none of them
            for label in labels[rnd % 3:] + labels[:rnd % 3]:
                broker = targets[label]
                topic = _create_topic(broker.bootstrap)
                watching: list[Viewer] = []
                if label == OPEN:
                    watching = [Viewer(chost, int(cport), f"/api/stream/partition?topic={topic}&partition=0")
                                for _ in range(viewers)]
                    watching.append(Viewer(chost, int(cport), "/api/stream/topics"))
                    for v in watching:
                        v.start()
                    deadline = time.monotonic() + 20
                    while any(v.snapshots == 0 for v in watching) and time.monotonic() < deadline:
                        time.sleep(0.05)  # connected and holding their first snapshot
                    before = [v.snapshots for v in watching]
                try:
                    phase = produce(broker.bootstrap, topic, records, value_size, pid=broker.pid)
                finally:
                    after = [v.snapshots for v in watching]
                    for v in watching:
                        v.stop()
                _drop_topic(broker.bootstrap, topic)
                if watching:
                    errors = [v.error for v in watching if v.error]
                    got = [a - b for a, b in zip(after[:viewers], before[:viewers])]
                    if errors:
                        rate.fail(label, f"a viewer failed: {errors[0]}")
                    elif min(got) == 0:
                        # a produce shorter than the stream's interval never met the console: the
                        # round would compare two closed consoles
                        rate.fail(label, f"a viewer received no snapshot in {phase.seconds:.2f} s: raise --records")
                    if errors or min(got) == 0:
                        continue
                    seen.add(label, sum(got) / len(got) / phase.seconds)
                rate.add(label, phase.records / phase.seconds)
                if phase.broker_cpu is not None:
                    cpu.add(label, phase.broker_cpu)
                    per_k.add(label, phase.broker_cpu * 1000.0 / phase.records * 1000.0)
    report.notes.append("ratios are the no-console broker's median over each row's; the target compares "
                        "'console open' with 'console closed' on the same broker process")
    return report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.console", description=__doc__.split("\n\n")[0])
    # ~3-10 s of produce: several of the stream's snapshots (one per 0.5 s) fall inside each round
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--viewers", type=int, default=2, help="clients following the partition's stream")
    p.add_argument("--warmup-records", type=int, default=10_000)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    emit(run(args.runs, args.records, args.value_size, args.viewers, args.warmup_records), args.json)


if __name__ == "__main__":
    main()
