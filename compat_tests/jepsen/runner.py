"""One seeded run of the queue workload: client processes run random operations against a
broker while the fault schedule runs, every invocation and completion goes to the history, then
final reads and the checker.

Processes: each slot is one real client process (java/JepsenWorker.java with kafka-clients, or
rdkafka_worker.py with confluent-kafka) with a transactional producer and a consumer. A process
whose operation did not complete ``ok`` is reset (new clients, same transactional.id, so the new
producer fences the old one) and continues under a new process number, as Jepsen does after a
crash; one that does not answer in time is killed and replaced.

Operations, drawn from the slot's seeded generator: transactions of one to four sends and polls
(some aborted on purpose, some committing the consumer's positions with
sendOffsetsToTransaction when it is subscribed), polls outside transactions, and assign or
subscribe changes. A slot reads ``read_committed`` unless it is every fourth one
(``read_uncommitted``). Values are unique integers.

The seed fixes the operations and the fault schedule; the interleaving is the machine's.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kafkalite
from compat_tests import brokers

from . import checker
from .faults import FAULTS, Nemesis, Targets, schedule
from .history import Recorder, write_history

REPO = Path(__file__).resolve().parents[2]
JAVA_SOURCES = Path(__file__).resolve().parent / "java"

# Short timeouts so a fault turns into a failed or indeterminate operation within seconds.
JAVA_PRODUCER = {"linger.ms": 0, "request.timeout.ms": 4000, "delivery.timeout.ms": 8000, "max.block.ms": 8000,
                 "transaction.timeout.ms": 8000, "retry.backoff.ms": 100, "reconnect.backoff.max.ms": 500}
JAVA_CONSUMER = {"request.timeout.ms": 4000, "default.api.timeout.ms": 8000, "session.timeout.ms": 6000,
                 "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 10000, "reconnect.backoff.max.ms": 500}
RDKAFKA_PRODUCER = {"linger.ms": 0, "message.timeout.ms": 6000, "transaction.timeout.ms": 8000,
                    "socket.timeout.ms": 4000, "reconnect.backoff.max.ms": 500}
RDKAFKA_CONSUMER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 10000,
                    "socket.timeout.ms": 4000, "reconnect.backoff.max.ms": 500}
# Broker settings of a run: timed-out transactions (those of killed clients) are aborted soon.
BROKER_CONFIG = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"}


class ControlledKafkalite(brokers.KafkaliteBroker):
    """kafkalite with its test controls served (the control-driven fault kinds need them) and
    NODES nodes (the leader and coordinator moves need them), on every start: the first and
    each restart after a kill, on the same ports (clients keep the nodes' addresses)."""

    def __init__(self, data_dir: Path, config: dict[str, str], timeout: float = 60.0):
        self._config, self._timeout = dict(config), timeout
        for attempt in range(3):
            # the ports were free when probed; another process may take one before the broker
            # listens, and then new ones are probed (only here: a restart keeps its ports)
            try:
                self._b = kafkalite.start(data_dir=data_dir, port=_free_ports(NODES), config=self._config,
                                          timeout=timeout, controls=0, nodes=NODES)
                break
            except RuntimeError as e:
                if "address already in use" not in str(e) or attempt == 2:
                    raise
        self.data_dir = self._b.data_dir

    def restart(self) -> str:
        self._b.stop()
        self._b = kafkalite.start(data_dir=self.data_dir, port=self.port, config=self._config,
                                  timeout=self._timeout, controls=0, nodes=NODES)
        return self.bootstrap

    @property
    def nodes(self) -> dict[int, str]:
        return self._b.nodes

    @property
    def controls_url(self) -> str | None:
        return self._b.controls_url

    @property
    def controls(self) -> Any:
        return self._b.controls


NODES = 3  # kafkalite's nodes in a run: every partition and coordinator can move


def _free_ports(n: int) -> int:
    """The first of n consecutive loopback ports free now (the nodes take the port and the next
    ones up, and take them again after a restart)."""
    import socket

    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = s.getsockname()[1]
        if first + n > 65535:
            continue
        held = []
        try:
            for port in range(first, first + n):
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise RuntimeError(f"no {n} consecutive free ports")


def start_broker(data_dir: Path, config: dict[str, str] = BROKER_CONFIG) -> Any:
    """A broker of the suite's kind for a run: Apache Kafka (compat_tests.brokers) or kafkalite
    with its controls, both with ``config`` (BROKER_CONFIG unless a workload needs more)."""
    if brokers.on_kafka():
        return brokers.start(data_dir, config)
    return ControlledKafkalite(data_dir, config)


@dataclass
class RunConfig:
    seed: int
    seconds: float = 20.0
    clients: tuple[str, ...] = ("java", "rdkafka", "java", "rdkafka")
    topics: int = 2
    partitions: int = 3
    faults: tuple[str, ...] = tuple(FAULTS)  # the kinds the broker supports
    op_timeout: float = 15.0
    recovery: float = 8.0  # operations go on this long after the last fault ended
    final_timeout: float = 60.0

    @property
    def keys(self) -> list[int]:
        return list(range(self.topics * self.partitions))


@dataclass
class RunResult:
    config: Any  # RunConfig, or ctp.CtpConfig: a seed and the run's settings
    history: list[dict[str, Any]]
    result: checker.Result
    path: Path | None
    faults: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    chaos_injected: int = 0  # the faults the chaos windows injected

    def report(self) -> str:
        text = checker.report(self.history, self.result, seed=self.config.seed)
        where = f"\n  history: {self.path}" if self.path else ""
        errors = ("\n  run errors: " + "; ".join(self.errors)) if self.errors else ""
        return f"{text}\n  faults: {', '.join(self.faults) or 'none'}{where}{errors}"


class WorkerProcess:
    """One client process speaking the worker line protocol: the setup as its first stdin line,
    then JSON lines each way; the first line back says it is ready."""

    def __init__(self, kind: str, setup: dict[str, Any]):
        self.kind = kind
        cmd, setup = self.command(kind, setup)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=REPO, env=env, text=True, bufsize=1)
        self.lines: queue.Queue = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=50)
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()
        self._send(setup)
        ready = self._next(60.0)
        if not ready or not (ready.get("ready") or ready.get("event") == "ready"):
            self.kill()
            raise RuntimeError(f"{kind} worker did not start: {ready}; stderr: {self.stderr_text()}")

    def command(self, kind: str, setup: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
        """The worker's command line and its setup with the client's settings."""
        if kind == "java":
            return _java_command("JepsenWorker"), {**setup, "producer": JAVA_PRODUCER, "consumer": JAVA_CONSUMER}
        if kind == "rdkafka":
            return ([sys.executable, "-m", "compat_tests.jepsen.rdkafka_worker"],
                    {**setup, "producer": RDKAFKA_PRODUCER, "consumer": RDKAFKA_CONSUMER, "timeout_s": 5})
        raise ValueError(f"unknown client {kind!r}; known: java, rdkafka")

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                self.stderr.append("stdout: " + line.rstrip())
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if not line.startswith("SLF4J"):
                self.stderr.append(line.rstrip())

    def stderr_text(self) -> str:
        return "\n".join(self.stderr)[-2000:]

    def _send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def _next(self, timeout: float) -> dict[str, Any] | None:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None

    def call(self, op: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The completion, None if the process died; TimeoutError if it did not answer in time."""
        try:
            self._send(op)
        except (BrokenPipeError, OSError):
            return None
        return self._next(timeout)

    def close(self) -> None:
        try:
            self._send({"f": "close"})
            self.proc.wait(10)
        except Exception:  # noqa: BLE001 - a worker that does not close in time is killed
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _java_command(main_class: str) -> list[str]:
    """A JVM running ``main_class`` of java/ (built once per source hash, with its CDS archive)."""
    from compat_tests.clients import java

    b = java.build(JAVA_SOURCES)
    cmd = ["java", *java.JVM_FLAGS]
    if b.archive is not None:
        cmd.append(f"-XX:SharedArchiveFile={b.archive}")
    return [*cmd, "-cp", b.classpath, main_class]


class Generator:
    """The seeded operations of one slot."""

    def __init__(self, seed: int, slot: int, keys: list[int], values: "Values"):
        self.rng = random.Random(seed * 1009 + slot)
        self.keys, self.values = keys, values
        self.needs_assignment = True

    def _keys(self) -> list[int]:
        return sorted(self.rng.sample(self.keys, self.rng.randint(1, len(self.keys))))

    def next(self) -> dict[str, Any]:
        r = self.rng.random()
        if self.needs_assignment or r < 0.08:
            self.needs_assignment = False
            if self.rng.random() < 0.5:
                return {"f": "assign", "value": self._keys(), "seek_to_beginning": self.rng.random() < 0.2}
            return {"f": "subscribe", "value": self._keys()}
        if r < 0.3:
            return {"f": "poll", "value": [["poll"]]}
        mops: list[list[Any]] = []
        for _ in range(self.rng.randint(1, 4)):
            if self.rng.random() < 0.65:
                mops.append(["send", self.rng.choice(self.keys), self.values.next()])
            else:
                mops.append(["poll"])
        return {"f": "txn", "value": mops, "abort": self.rng.random() < 0.1,
                "commit_offsets": self.rng.random() < 0.5}


class Values:
    def __init__(self) -> None:
        self._n = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._n += 1
            return self._n


def _complete_value(invoked: dict[str, Any], value: Any) -> list[Any]:
    """A completion's micro-operations: those the worker reports, then every send it did not get
    to (offset unknown), so each value sent keeps its writer."""
    done = list(value or []) if isinstance(value, list) else []
    sent = {m[2][1] for m in done if m and m[0] == "send" and isinstance(m[2], list)}
    for m in invoked["value"]:
        if m[0] == "send" and m[2] not in sent:
            done.append(["send", m[1], [None, m[2]]])
    return done


def _create_topics(bootstrap: str, prefix: str, cfg: RunConfig) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(f"{prefix}-{t}", cfg.partitions, 1) for t in range(cfg.topics)],
                                  operation_timeout=30, request_timeout=30)
    for f in futures.values():
        f.result(60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=10)
        if all(f"{prefix}-{t}" in md.topics and len(md.topics[f"{prefix}-{t}"].partitions) == cfg.partitions
               for t in range(cfg.topics)):
            return
        time.sleep(0.2)
    raise TimeoutError(f"topics {prefix}-* not visible in metadata")


def _warm_up(bootstrap: str, prefix: str) -> None:
    """One committed transaction with an offset commit on a topic of its own, so that the
    transaction and group coordinators are loaded before the clock starts (a fresh Apache Kafka
    creates __transaction_state and __consumer_offsets on first use, which takes seconds)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = f"{prefix}-warmup"
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{prefix}-warmup"})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}-warmup"})
    try:
        p.init_transactions(90)
        p.begin_transaction()
        p.produce(topic, b"warm-up")
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 1)], c.consumer_group_metadata(), 90)
        p.commit_transaction(90)
    finally:
        c.close()


def wait_stable(admin: Any, tps: list[Any], deadline: float) -> str | None:
    """Waits until no transaction is open on ``tps`` any more (read_committed end offset == high
    watermark on each); the partitions still open when ``deadline`` passes, as a text, else None."""
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec

    while True:
        try:
            spec = {tp: OffsetSpec.latest() for tp in tps}
            lso = {tp: f.result(10).offset
                   for tp, f in admin.list_offsets(spec, isolation_level=IsolationLevel.READ_COMMITTED).items()}
            hw = {tp: f.result(10).offset
                  for tp, f in admin.list_offsets(spec, isolation_level=IsolationLevel.READ_UNCOMMITTED).items()}
            if all(lso[tp] == hw[tp] for tp in lso):
                return None
            pending: Any = {f"{tp.topic}/{tp.partition}": (lso[tp], hw[tp]) for tp in lso if lso[tp] != hw[tp]}
        except Exception as e:  # noqa: BLE001 - the broker may still be coming back
            pending = {"error": repr(e)}
        if time.monotonic() > deadline:
            return f"open transactions never ended: {pending}"
        time.sleep(0.5)


def read_partitions(bootstrap: str, group: str, tps: list[Any], deadline: float) -> dict[tuple[str, int], list[Any]] | str:
    """Every record of ``tps`` from the beginning, read_committed: (topic, partition) -> its
    messages in offset order; a text if the end of some partition was not reached by ``deadline``."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
                  "enable.auto.commit": False, "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(tp.topic, tp.partition, -2) for tp in tps])
        out: dict[tuple[str, int], list[Any]] = {(tp.topic, tp.partition): [] for tp in tps}
        eof: set[tuple[str, int]] = set()
        while len(eof) < len(tps):
            if time.monotonic() > deadline:
                return f"final reads did not reach the end of {len(tps) - len(eof)} partitions"
            for m in c.consume(num_messages=1000, timeout=0.5):
                if m.error():
                    if m.error().code() == -191:  # _PARTITION_EOF
                        eof.add((m.topic(), m.partition()))
                        continue
                    raise RuntimeError(f"final read: {m.error()}")
                out[(m.topic(), m.partition())].append(m)
        return out
    finally:
        c.close()


def final_reads(bootstrap: str, prefix: str, cfg: RunConfig, rec: Recorder) -> str | None:
    """Jepsen's final polls: once no transaction is open any more, read every key from the
    beginning with read_committed. Recorded as one poll of the process "final". Returns an error
    text if it could not finish."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    tps = [TopicPartition(f"{prefix}-{k // cfg.partitions}", k % cfg.partitions) for k in cfg.keys]
    deadline = time.monotonic() + cfg.final_timeout
    rec.record(process="final", type="invoke", f="poll", value=[["poll"]], isolation="read_committed")
    read = wait_stable(AdminClient({"bootstrap.servers": bootstrap}), tps, deadline) \
        or read_partitions(bootstrap, f"{prefix}-final", tps, deadline)
    if isinstance(read, str):
        rec.record(process="final", type="fail", f="poll", value=[["poll"]], isolation="read_committed")
        return read
    polled: dict[str, list[list[int]]] = {}
    for (topic, partition), msgs in read.items():
        k = int(topic.rsplit("-", 1)[1]) * cfg.partitions + partition
        if msgs:
            polled[str(k)] = [[m.offset(), int(m.value())] for m in msgs]
    rec.record(process="final", type="ok", f="poll", value=[["poll", polled]], isolation="read_committed")
    return None


def run(broker: Any, cfg: RunConfig, out_dir: str | Path | None = None) -> RunResult:
    """One run against ``broker`` (a compat_tests.brokers broker, started with BROKER_CONFIG)."""
    prefix = f"jepsen-{cfg.seed}-{uuid.uuid4().hex[:6]}"
    path = Path(out_dir) / f"history-{cfg.seed}.jsonl" if out_dir is not None else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    rec = Recorder(path)
    errors: list[str] = []
    _create_topics(broker.bootstrap, prefix, cfg)
    _warm_up(broker.bootstrap, prefix)

    def setup(slot: int) -> dict[str, Any]:
        return {"bootstrap": broker.bootstrap, "transactional_id": f"{prefix}-tx-{slot}", "group": f"{prefix}-group",
                "isolation": "read_uncommitted" if slot % 4 == 3 else "read_committed", "prefix": prefix,
                "partitions": cfg.partitions, "poll_ms": 200}

    workers: list[WorkerProcess] = []
    try:
        for slot, kind in enumerate(cfg.clients):
            workers.append(WorkerProcess(kind, setup(slot)))
        return _run_workers(broker, cfg, prefix, path, rec, workers, setup, errors)
    finally:
        for w in workers:
            w.kill()  # a no-op for those that closed; the rest must not outlive the run
        rec.close()


def _run_workers(broker: Any, cfg: RunConfig, prefix: str, path: Path | None, rec: Recorder,
                 workers: list[WorkerProcess], setup: Any, errors: list[str]) -> RunResult:
    values = Values()
    next_process = [len(cfg.clients)]
    plock = threading.Lock()

    def new_process() -> int:
        with plock:
            next_process[0] += 1
            return next_process[0] - 1

    rng = random.Random(cfg.seed)
    plan = schedule(rng, cfg.seconds - 2.0, tuple(k for k in cfg.faults if FAULTS[k].supports(broker)))
    start = time.monotonic()
    deadline = start + cfg.seconds
    targets = Targets([f"{prefix}-{t}" for t in range(cfg.topics)], cfg.partitions, [f"{prefix}-group"],
                      [setup(slot)["transactional_id"] for slot in range(len(cfg.clients))],
                      random.Random(f"{cfg.seed}-targets"))
    nemesis = Nemesis(broker, plan, rec.record, start, targets)

    healed: list[float] = []  # when the last fault ended

    def running() -> bool:
        """Until the deadline, and on for cfg.recovery seconds once the faults are over (a
        restart of Apache Kafka can take longer than the run)."""
        now = time.monotonic()
        if now < deadline:
            return True
        if nemesis.is_alive():
            return True
        if not healed:
            healed.append(now)
        return now < healed[0] + cfg.recovery

    def slot_loop(slot: int) -> None:
        kind = cfg.clients[slot]
        process = slot
        isolation = setup(slot)["isolation"]
        gen = Generator(cfg.seed, slot, cfg.keys, values)
        while running():
            op = gen.next()
            extra = {k: op[k] for k in ("abort", "commit_offsets", "seek_to_beginning") if k in op}
            rec.record(process=process, type="invoke", f=op["f"], value=op["value"], isolation=isolation,
                       client=kind, **extra)
            try:
                done = workers[slot].call(op, cfg.op_timeout)
            except TimeoutError:
                done = None
            if done is None:  # no answer: the process is gone, its operation indeterminate
                rec.record(process=process, type="info", f=op["f"], isolation=isolation, client=kind,
                           value=_complete_value(op, None) if op["f"] == "txn" else op["value"],
                           error=f"no answer in {cfg.op_timeout}s; {workers[slot].stderr_text()[-300:]}", **extra)
                workers[slot].kill()
                try:
                    workers[slot] = WorkerProcess(kind, setup(slot))
                except Exception as e:  # noqa: BLE001
                    errors.append(f"slot {slot}: {e}")
                    return
                process, gen.needs_assignment = new_process(), True
                continue
            value = _complete_value(op, done.get("value")) if op["f"] == "txn" else done.get("value", op["value"])
            more = {k: done[k] for k in ("error", "rebalance_log") if k in done}
            rec.record(process=process, type=done["type"], f=op["f"], value=value, isolation=isolation, client=kind,
                       **extra, **more)
            if done["type"] != "ok":
                workers[slot].call({"f": "reset"}, cfg.op_timeout)
                process, gen.needs_assignment = new_process(), True

    threads = [threading.Thread(target=slot_loop, args=(i,), daemon=True) for i in range(len(cfg.clients))]
    nemesis.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(cfg.seconds + 3 * cfg.op_timeout + 300)
    nemesis.stopping.set()
    nemesis.join(180)
    errors += nemesis.errors
    closing = [threading.Thread(target=w.close, daemon=True) for w in workers]
    for t in closing:
        t.start()
    for t in closing:
        t.join(30)
    err = final_reads(broker.bootstrap, prefix, cfg, rec)
    if err:
        errors.append(err)
    rec.close()
    history = rec.ops
    if path is not None:
        write_history(path, history)
    return RunResult(cfg, history, checker.check(history), path, nemesis.labels(), errors, nemesis.injected())
