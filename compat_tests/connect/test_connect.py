"""Kafka Connect and MirrorMaker 2 (jar set ``kafka-connect``: connect-runtime, connect-file and
connect-mirror 4.3.1, the newest connectors on Maven Central) against the suite's broker, on kafkalite and on Apache Kafka 4.4
(``COMPAT_BROKER=kafka``):

- a distributed worker (org.apache.kafka.connect.cli.ConnectDistributed, its config, offset and
  status topics on the broker) runs a FileStreamSource and a FileStreamSink through its REST API:
  lines written to a file reach the sink's file through a topic;
- the same with ``exactly.once.source.support=enabled``: the source task writes in transactions
  (read_committed sees the lines, ListTransactions the task's transactional id);
- MirrorMaker 2 in dedicated mode (org.apache.kafka.connect.mirror.MirrorMaker) replicates a topic
  from the suite's broker to a second one, as ``source.<topic>``.

The time from the worker's start to its connectors RUNNING is printed, with the broker's kind
(``-s`` shows it), and kept as the test's ``worker_start_to_running_s`` property.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from compat_tests import brokers
from compat_tests.clients.java import deps_dir, jar_set
from compat_tests.reference import _LOG4J2 as LOG4J2  # a log file per JVM, as the reference broker's
from compat_tests.waiting import wait_until

pytestmark = [pytest.mark.connect, pytest.mark.timeout(300)]



def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JavaProcess:
    """A Connect JVM (worker or MirrorMaker) with its properties file and its log."""

    def __init__(self, workdir: Path, main: str, props: dict[str, str], *args: str):
        workdir.mkdir(parents=True, exist_ok=True)
        jar_set("kafka-connect")  # a missing jar set is a failure with its reason
        self.log_path = workdir / "connect.log"
        log4j = workdir / "log4j2.properties"
        log4j.write_text(LOG4J2.format(path=self.log_path))
        config = workdir / "worker.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            ["java", "-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Djava.net.preferIPv4Stack=true", f"-Dlog4j2.configurationFile={log4j}",
             "-cp", str(deps_dir("kafka-connect") / "*"), main, str(config), *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def log_tail(self) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            text = ""
        errors = [line for line in text.splitlines() if " ERROR " in line or " WARN " in line]
        return "\n".join(errors[-30:])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Worker(JavaProcess):
    def __init__(self, workdir: Path, bootstrap: str, **extra: str):
        self._start_args = (workdir, bootstrap, extra)
        self.port = _free_port()
        tag = uuid.uuid4().hex[:8]
        props = {
            "bootstrap.servers": bootstrap, "group.id": f"connect-{tag}",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic": f"connect-configs-{tag}", "offset.storage.topic": f"connect-offsets-{tag}",
            "status.storage.topic": f"connect-status-{tag}", "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
            "offset.storage.partitions": "2", "status.storage.partitions": "1",
            "offset.flush.interval.ms": "500", "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1", "plugin.discovery": "service_load", **extra}
        self.group_id = props["group.id"]
        super().__init__(workdir, "org.apache.kafka.connect.cli.ConnectDistributed", props)

    def rest(self, method: str, path: str, body: dict | None = None):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            data = resp.read()
            return json.loads(data) if data else None

    def wait_ready(self, timeout: float = 120, port_retries: int = 2) -> None:
        def up() -> bool:
            if self.proc.poll() is not None and port_retries_left[0] > 0 and self._lost_its_port():
                # another process took the free port between _free_port() and the JVM's bind: a
                # new port, a new start (the worker had done nothing else yet)
                port_retries_left[0] -= 1
                workdir, bootstrap, extra = self._start_args
                Worker.__init__(self, workdir, bootstrap, **extra)
                return False
            assert self.proc.poll() is None, (f"the worker exited ({self.proc.returncode}): {self.log_tail()}\n"
                                              f"its log's last lines:\n{self._last_lines()}")
            try:
                return self.rest("GET", "/connectors") == []
            except (urllib.error.URLError, ConnectionError, OSError):
                return False
        port_retries_left = [port_retries]
        wait_until(up, timeout=timeout, interval=0.5, what=f"the Connect worker's REST API; log: {self.log_tail()}")

    def _last_lines(self, n: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def _lost_its_port(self) -> bool:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return False
        return "BindException" in text or "Address already in use" in text

    def create(self, name: str, config: dict[str, str]) -> None:
        # the worker answers 409 while it rebalances after start; a retry is what users do
        def created() -> bool:
            try:
                self.rest("POST", "/connectors", {"name": name, "config": config})
                return True
            except urllib.error.HTTPError as e:
                if e.code == 409:
                    return False
                raise AssertionError(f"creating {name}: {e.code} {e.read()!r}") from e
        wait_until(created, timeout=60, interval=0.5, what=f"connector {name} created")

    def wait_running(self, name: str, timeout: float = 90) -> None:
        def running() -> bool:
            try:
                status = self.rest("GET", f"/connectors/{name}/status")
            except urllib.error.HTTPError:
                return False
            tasks = status.get("tasks", [])
            failed = [t for t in tasks if t["state"] == "FAILED"] + (
                [status["connector"]] if status["connector"]["state"] == "FAILED" else [])
            assert not failed, f"{name} failed: {failed}"
            return status["connector"]["state"] == "RUNNING" and bool(tasks) and all(
                t["state"] == "RUNNING" for t in tasks)
        wait_until(running, timeout=timeout, interval=0.5, what=f"{name} RUNNING; log: {self.log_tail()}")


@pytest.fixture
def workdir():
    d = Path(tempfile.mkdtemp(prefix="connect-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _report(record_property, what: str, seconds: float) -> None:
    record_property("worker_start_to_running_s", round(seconds, 2))
    print(f"\n{what} on {brokers.kind()}: worker start -> RUNNING in {seconds:.1f} s")


def read_values(bootstrap: str, topic: str, n: int, isolation: str = "read_uncommitted") -> list[str]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                         "isolation.level": isolation, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        out: list[str] = []
        deadline = time.monotonic() + 30
        while len(out) < n and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                out.append(msg.value().decode())
        return out
    finally:
        consumer.close()


def _file_pipeline(worker: Worker, workdir: Path, bootstrap: str, topic: str, source_extra: dict[str, str]):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    source_file, sink_file = workdir / "in.txt", workdir / "out.txt"
    source_file.write_text("")
    worker.create(f"{topic}-source", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
        "file": str(source_file), "topic": topic, **source_extra})
    worker.create(f"{topic}-sink", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "file": str(sink_file), "topics": topic})
    worker.wait_running(f"{topic}-source")
    worker.wait_running(f"{topic}-sink")
    elapsed = time.monotonic() - worker.started
    lines = [f"line-{i}" for i in range(20)]
    with source_file.open("a") as f:
        f.write("".join(f"{line}\n" for line in lines))
    wait_until(lambda: sink_file.exists() and sink_file.read_text().splitlines() == lines, timeout=60,
               interval=0.5, what=f"the sink file to hold the lines; log: {worker.log_tail()}")
    return lines, elapsed


@pytest.mark.on_kafka_too
def test_distributed_worker_file_source_and_sink(bootstrap, workdir, record_property):
    worker = Worker(workdir / "worker", bootstrap)
    try:
        worker.wait_ready()
        topic = f"connect-{uuid.uuid4().hex[:6]}"
        lines, elapsed = _file_pipeline(worker, workdir, bootstrap, topic, {})
        _report(record_property, "FileStream source and sink", elapsed)
        assert read_values(bootstrap, topic, len(lines)) == lines
        # the worker's own topics, as Connect creates them: compacted config, offsets, status
        from confluent_kafka.admin import AdminClient, ConfigResource

        admin = AdminClient({"bootstrap.servers": bootstrap})
        configs = admin.describe_configs([ConfigResource("topic", f"connect-configs-{worker.group_id[8:]}")])
        (future,) = configs.values()
        assert future.result(30)["cleanup.policy"].value == "compact"
        worker.rest("DELETE", f"/connectors/{topic}-source")
        wait_until(lambda: f"{topic}-source" not in worker.rest("GET", "/connectors"), timeout=30,
                   what="the source connector deleted")
    finally:
        worker.close()


@pytest.mark.transactions  # also in scripts/test.sh's pass on Apache Kafka
def test_exactly_once_source(bootstrap, workdir, record_property):
    worker = Worker(workdir / "worker", bootstrap, **{"exactly.once.source.support": "enabled"})
    try:
        worker.wait_ready()
        topic = f"connect-eos-{uuid.uuid4().hex[:6]}"
        lines, elapsed = _file_pipeline(worker, workdir, bootstrap, topic,
                                        {"exactly.once.support": "required", "transaction.boundary": "poll"})
        _report(record_property, "exactly-once FileStream source", elapsed)
        assert read_values(bootstrap, topic, len(lines), "read_committed") == lines
        # the source task's producer is transactional: Kafka's kafka-transactions lists it
        from compat_tests import tools

        listed = tools.run("kafka-transactions", "--bootstrap-server", bootstrap, "list").lines()
        ids = {line.split()[0] for line in listed[1:]}
        assert f"{worker.group_id}-{topic}-source-0" in ids, listed
    finally:
        worker.close()


@pytest.mark.on_kafka_too
def test_mirror_maker_2_between_two_brokers(bootstrap, start_broker, workdir, record_property):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    target = start_broker()
    topic = f"mm-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    values = [f"m{i}" for i in range(30)]
    for v in values:
        producer.produce(topic, value=v.encode(), partition=0)
    producer.flush(30)
    props = {
        "clusters": "source,target", "source.bootstrap.servers": bootstrap,
        "target.bootstrap.servers": target.bootstrap, "source->target.enabled": "true",
        "source->target.topics": topic, "target->source.enabled": "false",
        "replication.factor": "1", "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1", "refresh.topics.interval.seconds": "2",
        "sync.topic.acls.enabled": "false", "emit.checkpoints.interval.seconds": "2",
    }
    mm2 = JavaProcess(workdir / "mm2", "org.apache.kafka.connect.mirror.MirrorMaker", props)
    try:
        mirrored = f"source.{topic}"

        def copied() -> bool:
            assert mm2.proc.poll() is None, f"MirrorMaker exited ({mm2.proc.returncode}): {mm2.log_tail()}"
            return read_values(target.bootstrap, mirrored, len(values)) == values

        wait_until(copied, timeout=180, interval=2, what=f"{mirrored} on the target; log: {mm2.log_tail()}")
        _report(record_property, "MirrorMaker 2 (first record mirrored)", time.monotonic() - mm2.started)
    finally:
        mm2.close()
        if os.environ.get("KEEP_CONNECT_LOGS"):
            print(mm2.log_path.read_text(errors="replace")[-5000:])
