"""Frameworks run unmodified against the broker: Kafka Streams with exactly_once_v2 (streams/) and
a Spring Boot application with Spring for Apache Kafka's transactions (spring/).

Each framework application is a small Java program compiled at test time with
``compat_tests.clients.java.build`` against its Maven jar set (scripts/maven/kafka-streams,
scripts/maven/spring-kafka), cached by a hash of the sources and jars. It runs as its own JVM
(``JvmApp``) and prints one JSON line per event on stdout; the tests drive it from Python and
check its output on the broker with a read_committed consumer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

from confluent_kafka import Consumer, TopicPartition

JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss1m", "-Xms64m", "-Xmx512m",
             "-Djava.net.preferIPv4Stack=true"]


class JvmApp:
    """One application JVM. Its stdout JSON lines are collected as events (each with the arrival
    time in "_at", time.monotonic()); its stderr goes to `log_path`. The application exits when its
    stdin closes, so a test process that dies takes its applications with it."""

    def __init__(self, name: str, classpath: str, main: str, args: list[str], log_path: Path,
                 jvm_flags: list[str] | None = None):
        self.name = name
        self.log_path = log_path
        self.events: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(["java", *JVM_FLAGS, *(jvm_flags or []), "-cp", classpath, main, *args],
                                     stdout=subprocess.PIPE, stderr=self._log, stdin=subprocess.PIPE)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            event["_at"] = time.monotonic()
            try:
                self._log.write(b"EVENT " + raw)  # beside the log lines, for a failure's post-mortem
                self._log.flush()
            except ValueError:  # closed by stop()
                pass
            with self.cond:
                self.events.append(event)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, pred: Callable[[dict[str, Any]], bool], timeout: float, after: int = 0) -> dict[str, Any]:
        """The first event from index `after` on that satisfies pred; raises TimeoutError with the
        log's tail if none comes in `timeout` seconds or the JVM exits."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for event in self.events[after:]:
                    if pred(event):
                        return event
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    break
                self.cond.wait(min(left, 0.5))
        raise TimeoutError(f"{self.name}: no expected event in {timeout}s (exit {self.proc.poll()}); "
                           f"events {[e.get('event') for e in self.events][-20:]}; log:\n{self.log_tail()}")

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind in the application."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._reader.join(10)
        self._close_stdin()

    def stop(self, timeout: float = 40.0) -> int:
        """SIGTERM (the application's shutdown hook closes it cleanly); SIGKILL after `timeout`."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(10)
        self._log.close()
        self._close_stdin()
        return self.proc.returncode

    def _close_stdin(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass


def read_all(bootstrap: str, topic: str, partitions: int, *, isolation: str = "read_committed",
             timeout: float = 60.0) -> list[tuple[int, str | None, str | None, list]]:
    """Every record of `topic` from the earliest offset up to each partition's end (the LSO for
    read_committed), as (partition, key, value, headers); fails if the end is not reached in time."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-all-{os.getpid()}",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    try:
        ends = {}
        for p in range(partitions):
            # For read_committed the LSO is where the consumer stops; get_watermark_offsets gives the
            # high watermark, which it reaches once every transaction below it is decided.
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)
            ends[p] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[tuple[int, str | None, str | None, list]] = []
        done = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + timeout
        while len(done) < partitions:
            if time.monotonic() > deadline:
                positions = {tp.partition: tp.offset for tp in consumer.position(
                    [TopicPartition(topic, p) for p in range(partitions)])}
                raise TimeoutError(f"{topic}: read {len(out)} records; positions {positions}, ends {ends}")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF
                    if consumer.position([TopicPartition(topic, msg.partition())])[0].offset >= ends[msg.partition()]:
                        done.add(msg.partition())
                    continue
                raise RuntimeError(f"{topic}: {msg.error()}")
            key = msg.key().decode() if msg.key() is not None else None
            value = msg.value().decode() if msg.value() is not None else None
            out.append((msg.partition(), key, value, msg.headers() or []))
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        return out
    finally:
        consumer.close()
