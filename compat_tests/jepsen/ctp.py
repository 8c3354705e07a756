"""One seeded run of the consume-transform-produce workload: worker processes in one consumer
group (classic or KIP-848 ``group.protocol=consumer``, drawn from the seed) read an input topic
and write each record to the same partition of an output topic in transactions that commit the
group's offsets with sendOffsetsToTransaction and the consumer's group metadata (KIP-447: the
generation in TxnOffsetCommit fences a zombie), while a feeder writes the input, the broker's
fault schedule runs (kafkalite's chaos engine among its kinds) and workers are killed -9 in the
middle of a transaction and started again with the same transactional.id, or stopped (SIGSTOP)
past their session timeout there and let go on as zombies of an older generation. Then the group drains
the input, and checker.check_ctp proves each input record is in the committed output exactly
once, in order, with the group's offsets matching the output.

Workers: java/CtpWorker.java (kafka-clients), rdkafka_ctp_worker.py (confluent-kafka), and
franz-go's GroupTransactSession (compat_tests/go/ctp_worker.go); one group may hold all three
(a classic group uses the range assignor, which all of them have). A worker stops at its pause
points ("open": the transaction's records are written; "offsets": its offsets are sent, which
franz-go does inside its commit) until the runner says go; a worker fault is armed by a seeded
schedule and fired at the armed slot's next pause point, so it always lands mid-transaction.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import checker
from .faults import FAULTS, Nemesis, Targets, schedule
from .history import Recorder, write_history
from .runner import (BROKER_CONFIG, RunConfig, RunResult, WorkerProcess, _create_topics, _java_command, _warm_up,
                     read_partitions, wait_stable)

# Sessions short enough that a killed worker's partitions move on within seconds (Kafka's
# smallest allowed session timeouts are 6 s classic and 45 s KIP-848 by default).
BROKER_CTP_CONFIG = {**BROKER_CONFIG, "group.min.session.timeout.ms": "1000",
                     "group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "3000",
                     "group.consumer.min.heartbeat.interval.ms": "100", "group.consumer.heartbeat.interval.ms": "500"}
SESSION_MS, HEARTBEAT_MS, TXN_TIMEOUT_MS = 3000, 500, 10000
CLIENTS = ("java", "rdkafka", "franz")
PROTOCOLS = ("classic", "consumer")
PAUSE_POINTS = {"java": ("open", "offsets"), "rdkafka": ("open", "offsets"), "franz": ("open",)}
STALL_S = SESSION_MS / 1000 + 1.5  # a stalled worker's session has expired when it goes on


@dataclass
class CtpConfig:
    seed: int
    seconds: float = 12.0  # the feeder, the broker's faults and the worker faults last this long
    clients: tuple[str, ...] = CLIENTS  # one worker each, all in one group
    protocol: str | None = None  # classic or consumer; None: drawn from the seed
    faults: tuple[str, ...] = tuple(FAULTS)  # the kinds the broker supports
    partitions: int = 4
    rate: float = 100.0  # input records a second
    batch: int = 10  # records a transaction takes at most
    fault_gap: tuple[float, float] = (1.0, 3.0)  # seconds between two worker faults
    step_timeout: float = 30.0  # a worker that takes longer for a transaction's next step is hung
    final_timeout: float = 90.0  # the group drains the input and open transactions end within this

    def group_protocol(self) -> str:
        return self.protocol or random.Random(f"{self.seed}-protocol").choice(PROTOCOLS)


class CtpProcess(WorkerProcess):
    """A worker of this workload (events out, "go" in)."""

    def command(self, kind: str, setup: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
        classic = setup["protocol"] == "classic"
        name = setup["client_id"]
        if kind == "java":
            consumer: dict[str, Any] = {"group.protocol": setup["protocol"], "client.id": f"{name}-c",
                                        "max.poll.interval.ms": 20000, "request.timeout.ms": 4000,
                                        "default.api.timeout.ms": 15000, "reconnect.backoff.max.ms": 500}
            if classic:
                consumer.update({"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
                                 "partition.assignment.strategy":
                                     "org.apache.kafka.clients.consumer.RangeAssignor"})
            producer = {"client.id": f"{name}-p", "linger.ms": 0, "request.timeout.ms": 4000,
                        "delivery.timeout.ms": 10000, "max.block.ms": 15000, "transaction.timeout.ms": TXN_TIMEOUT_MS,
                        "retry.backoff.ms": 100, "reconnect.backoff.max.ms": 500}
            return _java_command("CtpWorker"), {**setup, "consumer": consumer, "producer": producer}
        if kind == "rdkafka":
            consumer = {"group.protocol": setup["protocol"], "client.id": f"{name}-c", "max.poll.interval.ms": 20000,
                        "socket.timeout.ms": 4000, "reconnect.backoff.max.ms": 500}
            if classic:
                consumer.update({"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
                                 "partition.assignment.strategy": "range"})
            producer = {"client.id": f"{name}-p", "linger.ms": 0, "message.timeout.ms": 8000,
                        "transaction.timeout.ms": TXN_TIMEOUT_MS, "socket.timeout.ms": 4000,
                        "reconnect.backoff.max.ms": 500}
            return ([sys.executable, "-m", "compat_tests.jepsen.rdkafka_ctp_worker"],
                    {**setup, "consumer": consumer, "producer": producer})
        if kind == "franz":
            from compat_tests.clients import golang

            return ([str(golang.build()), "franz", "ctp-worker"],
                    {**setup, "session_timeout_ms": SESSION_MS, "heartbeat_interval_ms": HEARTBEAT_MS,
                     "transaction_timeout_ms": TXN_TIMEOUT_MS})
        raise ValueError(f"unknown client {kind!r}; known: {', '.join(CLIENTS)}")

    def next_event(self, timeout: float) -> dict[str, Any] | None:
        """The worker's next event, None once it has exited; TimeoutError if none came in time."""
        return self._next(timeout)

    def stall(self, seconds: float) -> None:
        """SIGSTOP, and SIGCONT ``seconds`` later (the fault's length: every thread of the client
        stands still, its heartbeats too)."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        time.sleep(seconds)
        os.kill(self.proc.pid, signal.SIGCONT)

    def go(self) -> None:
        try:
            self._send({"go": True})
        except (BrokenPipeError, OSError):
            pass  # it died; its end of stdout says so next


class Feeder(threading.Thread):
    """Writes the input: values 1, 2, ... round the partitions, RATE a second, with an
    idempotent producer (acks=all), until told to stop; then flushes."""

    def __init__(self, bootstrap: str, topic: str, cfg: CtpConfig, client_id: str):
        super().__init__(name="feeder", daemon=True)
        from confluent_kafka import Producer

        self.topic, self.cfg = topic, cfg
        # a lost Produce response costs socket.timeout.ms before the retry: short, so that the
        # retry comes well within message.timeout.ms; its reconnections while the broker is
        # killed are expected (log_level 0)
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                                  "client.id": client_id, "socket.timeout.ms": 4000, "message.timeout.ms": 30000,
                                  "log_level": 0})
        self.stopping = threading.Event()
        self.sent = self.acked = self.failed = 0
        self.errors: list[str] = []

    def _delivered(self, err: Any, _msg: Any) -> None:
        # an input record not delivered is not an anomaly: the final read of the input is what
        # the check holds the output to
        if err is None:
            self.acked += 1
        else:
            self.failed += 1

    def run(self) -> None:
        # the pace of the input, not a synchronisation: one record each 1/rate seconds
        while not self.stopping.wait(1.0 / self.cfg.rate):
            self.sent += 1
            self.producer.produce(self.topic, str(self.sent).encode(), partition=self.sent % self.cfg.partitions,
                                  on_delivery=self._delivered)
            self.producer.poll(0)
        left = self.producer.flush(90)
        if left:
            self.errors.append(f"{left} input records not delivered in 90 s")


class WorkerFaults(threading.Thread):
    """The seeded worker-fault schedule: every fault_gap seconds it arms one slot, one of that
    worker's pause points and an action; the slot's loop fires it when the worker next stops
    there. ``kill``: kill -9, then a new process with the same transactional.id. ``stall``:
    SIGSTOP for STALL_S (longer than the session timeout, so the group moves the worker's
    partitions to the others), then SIGCONT and go: the worker is a zombie of an older
    generation, whose offsets the group coordinator must refuse (KIP-447) unless they were sent
    before it stopped (then the others wait for its transaction: require_stable)."""

    ACTIONS = ("kill", "stall")

    def __init__(self, cfg: CtpConfig, record: Any, t0: float):
        super().__init__(name="worker-faults", daemon=True)
        self.cfg, self.record, self.t0 = cfg, record, t0
        self.rng = random.Random(f"{cfg.seed}-worker-faults")
        self.armed: dict[int, tuple[str, str]] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.done: list[str] = []

    def run(self) -> None:
        while not self.stopping.wait(self.rng.uniform(*self.cfg.fault_gap)):
            slot = self.rng.randrange(len(self.cfg.clients))
            point = self.rng.choice(PAUSE_POINTS[self.cfg.clients[slot]])
            action = self.rng.choice(self.ACTIONS)
            with self.lock:
                self.armed[slot] = (point, action)
            self.record(process="nemesis", type="invoke", f="fault",
                        value={"kind": f"{action}-worker", "slot": slot, "point": point})

    def take(self, slot: int, point: str) -> str | None:
        """The action armed for this slot at this pause point, if any (and disarms it)."""
        with self.lock:
            if self.stopping.is_set() or self.armed.get(slot, ("", ""))[0] != point:
                return None
            action = self.armed.pop(slot)[1]
        self.done.append(f"{action}-worker@{time.monotonic() - self.t0:.1f}s slot {slot} at {point}")
        self.record(process="nemesis", type="ok", f="fault", value={"kind": f"{action}-worker", "slot": slot,
                                                                   "point": point})
        return action

    def count(self, action: str) -> int:
        return sum(d.startswith(f"{action}-worker@") for d in self.done)


def run(broker: Any, cfg: CtpConfig, out_dir: str | Path | None = None) -> RunResult:
    """One run against ``broker`` (started with BROKER_CTP_CONFIG)."""
    prefix = f"ctp-{cfg.seed}-{uuid.uuid4().hex[:6]}"
    path = Path(out_dir) / f"history-ctp-{cfg.seed}.jsonl" if out_dir is not None else None
    rec = Recorder(path)
    try:
        return _run(broker, cfg, prefix, path, rec)
    finally:
        rec.close()


def _run(broker: Any, cfg: CtpConfig, prefix: str, path: Path | None, rec: Recorder) -> RunResult:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    _create_topics(broker.bootstrap, prefix, RunConfig(seed=cfg.seed, topics=2, partitions=cfg.partitions))
    _warm_up(broker.bootstrap, prefix)
    source, sink, group = f"{prefix}-0", f"{prefix}-1", f"{prefix}-group"
    protocol = cfg.group_protocol()
    errors: list[str] = []

    def setup(slot: int) -> dict[str, Any]:
        return {"bootstrap": broker.bootstrap, "group": group, "input": source, "output": sink, "batch": cfg.batch,
                "transactional_id": f"{prefix}-tx-{slot}", "client_id": f"ctp-{slot}", "protocol": protocol}

    workers: list[CtpProcess] = []
    try:
        for slot, kind in enumerate(cfg.clients):
            workers.append(CtpProcess(kind, setup(slot)))
        start = time.monotonic()
        # Until the end of the run (the group drains the input on a healthy broker after it):
        # a chaos window (x3) from 1 s fits a run of 6 s.
        plan = schedule(random.Random(cfg.seed), cfg.seconds,
                        tuple(k for k in cfg.faults if FAULTS[k].supports(broker)), lead=("chaos",), first=1.0,
                        length=(0.5, 1.5))
        targets = Targets([source, sink], cfg.partitions, [group],
                          [setup(slot)["transactional_id"] for slot in range(len(cfg.clients))],
                          random.Random(f"{cfg.seed}-targets"))
        nemesis = Nemesis(broker, plan, rec.record, start, targets)
        worker_faults = WorkerFaults(cfg, rec.record, start)
        feeder = Feeder(broker.bootstrap, source, cfg, f"{prefix}-feeder")
        finished = threading.Event()
        processes = [len(cfg.clients)]
        restarts = [0]
        plock = threading.Lock()

        def restart(slot: int) -> int | None:
            """A new process for the slot (same transactional.id): its process number, None if it
            could not start."""
            workers[slot].kill()
            with plock:
                process, processes[0], restarts[0] = processes[0], processes[0] + 1, restarts[0] + 1
            try:
                workers[slot] = CtpProcess(cfg.clients[slot], setup(slot))
            except Exception as e:  # noqa: BLE001 - reported with the run
                errors.append(f"slot {slot}: {e}")
                return None
            return process

        def slot_loop(slot: int) -> None:
            kind, process = cfg.clients[slot], slot
            invoked: dict[str, Any] | None = None  # the open transaction's invocation
            since = time.monotonic()

            def complete(type_: str, **more: Any) -> None:
                nonlocal invoked
                value = invoked["value"] if invoked is not None else []
                rec.record(process=process, type=type_, f="ctp", value=value, client=kind, **more)
                invoked = None

            while not finished.is_set():
                worker = workers[slot]
                try:
                    ev = worker.next_event(0.5)
                except TimeoutError:
                    if invoked is not None and time.monotonic() - since > cfg.step_timeout:
                        complete("info", error=f"no step in {cfg.step_timeout}s; {worker.stderr_text()[-300:]}")
                        if (p := restart(slot)) is None:
                            return
                        process = p
                    continue
                since = time.monotonic()
                if ev is None:  # it died by itself: whatever it had open may have been asked to commit
                    if invoked is not None:
                        complete("info", error=f"worker exited; {worker.stderr_text()[-300:]}")
                    else:
                        rec.record(process=process, type="info", f="exit", value=None, client=kind,
                                   error=worker.stderr_text()[-300:])
                    if (p := restart(slot)) is None:
                        return
                    process = p
                    continue
                event = ev.get("event")
                if event == "open":
                    invoked = rec.record(process=process, type="invoke", f="ctp", value=ev["records"], client=kind,
                                         txn=ev["txn"])
                if event in ("open", "offsets"):
                    action = worker_faults.take(slot, event)
                    if action == "stall":
                        worker.stall(STALL_S)
                    elif action == "kill":
                        worker.kill()
                        complete("fail", error=f"killed -9 at {event!r}, before the commit was asked")
                        if (p := restart(slot)) is None:
                            return
                        process = p
                        continue
                    worker.go()
                elif event in ("committed", "aborted", "unknown"):
                    more = {"error": ev["error"]} if "error" in ev else {}
                    complete({"committed": "ok", "aborted": "fail", "unknown": "info"}[event], **more)
            if invoked is not None:  # a zombie's, still trying when the group had drained the input
                complete("info", error=f"still open when the run ended; {workers[slot].stderr_text()[-600:]}")

        threads = [threading.Thread(target=slot_loop, args=(i,), daemon=True) for i in range(len(cfg.clients))]
        for t in threads:
            t.start()
        nemesis.start()
        worker_faults.start()
        feeder.start()
        while time.monotonic() < start + cfg.seconds:
            if finished.wait(0.2):
                break
        worker_faults.stopping.set()
        feeder.stopping.set()
        feeder.join(120)
        nemesis.stopping.set()
        nemesis.join(180)
        errors += nemesis.errors + feeder.errors
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        inputs = [TopicPartition(source, p) for p in range(cfg.partitions)]
        outputs = [TopicPartition(sink, p) for p in range(cfg.partitions)]
        deadline = time.monotonic() + cfg.final_timeout
        drained = _drain(admin, group, inputs, deadline)
        finished.set()
        for t in threads:
            t.join(60)
        for w in workers:
            w.kill()
        if drained:
            errors.append(drained)
        _final(rec, broker.bootstrap, admin, prefix, group, inputs, outputs, deadline, errors)
    finally:
        for w in workers:
            w.kill()
    history = rec.ops
    if path is not None:
        write_history(path, history)
    result = checker.check_ctp(history)
    result.stats.update(protocol=protocol, fed=feeder.acked, feed_failed=feeder.failed,
                        worker_kills=worker_faults.count("kill"), worker_stalls=worker_faults.count("stall"), restarts=restarts[0],
                        faults=len(nemesis.done), chaos_injected=nemesis.injected())
    return RunResult(cfg, history, result, path, nemesis.labels() + worker_faults.done, errors, nemesis.injected())


def _committed(admin: Any, group: str, tps: list[Any]) -> dict[int, int]:
    """The group's committed offsets (require_stable: pending transactional offsets are waited for)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    f = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)], require_stable=True)
    # a partition with no commit yet (OFFSET_INVALID) starts at 0: auto.offset.reset is earliest
    return {tp.partition: max(tp.offset, 0) for tp in f[group].result(10).topic_partitions}


def _ends(admin: Any, tps: list[Any]) -> dict[int, int]:
    from confluent_kafka.admin import OffsetSpec

    return {tp.partition: f.result(10).offset for tp, f in admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}).items()}


def _drain(admin: Any, group: str, inputs: list[Any], deadline: float) -> str | None:
    """Waits until the group's committed offsets reach the input's end on every partition (the
    workers have done all of it); a text saying where they stopped if not by ``deadline``."""
    while True:
        try:
            ends, committed = _ends(admin, inputs), _committed(admin, group, inputs)
            behind = {p: (committed.get(p), end) for p, end in ends.items() if committed.get(p) != end}
            if not behind:
                return None
        except Exception as e:  # noqa: BLE001 - a broker that is still coming back
            behind = {"error": repr(e)}
        if time.monotonic() > deadline:
            return f"the group did not drain the input: (committed, end) {behind}"
        time.sleep(0.5)


def _final(rec: Recorder, bootstrap: str, admin: Any, prefix: str, group: str, inputs: list[Any],
           outputs: list[Any], deadline: float, errors: list[str]) -> None:
    """The final reads, as operations of the process "final": the input, the committed output
    (once no transaction is open on it) and the group's committed offsets."""
    read = read_partitions(bootstrap, f"{prefix}-final-in", inputs, deadline)
    if isinstance(read, str):
        errors.append(read)
        return
    rec.record(process="final", type="ok", f="input",
               value={str(p): [[m.offset(), int(m.value())] for m in ms] for (_, p), ms in read.items()})
    stable = wait_stable(admin, outputs, deadline)
    out = stable or read_partitions(bootstrap, f"{prefix}-final-out", outputs, deadline)
    if isinstance(out, str):
        errors.append(out)
        return
    rows: dict[str, list[list[int]]] = {}
    for (_, p), ms in out.items():
        rows[str(p)] = [[m.offset(), *map(int, m.value().split(b":"))] for m in ms]
    rec.record(process="final", type="ok", f="output", value=rows)
    try:
        offsets = _committed(admin, group, inputs)
    except Exception as e:  # noqa: BLE001
        errors.append(f"committed offsets: {e!r}")
        return
    rec.record(process="final", type="ok", f="offsets", value={str(p): o for p, o in offsets.items()})
