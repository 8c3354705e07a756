"""One consumer-group member as its own process, for the group tests.

    python py_member.py '<json config>'

Config: client (confluent|kafka-python|aiokafka), bootstrap, group, topic, protocol
(classic|consumer), instance_id, session_timeout_ms, heartbeat_interval_ms, assignor, client_id.

Prints JSON lines on stdout: {"event": "assigned", "partitions": [...]} whenever the assignment
changes (the whole current assignment), {"event": "record", "partition", "offset", "value"} per
record, {"event": "committed"} after a commit, {"event": "closed"} and {"event": "error"}.
Reads commands on stdin, one per line: "commit" (commit the consumed positions synchronously),
"close" (leave the group and exit). Killing the process is a member that dies.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time

OUT_LOCK = threading.Lock()


def emit(**kw) -> None:
    with OUT_LOCK:
        sys.stdout.write(json.dumps(kw) + "\n")
        sys.stdout.flush()


def stdin_commands() -> "queue.Queue[str]":
    q: queue.Queue[str] = queue.Queue()

    def reader():
        for line in sys.stdin:
            q.put(line.strip())
        q.put("close")

    threading.Thread(target=reader, daemon=True).start()
    return q


def next_command(commands: "queue.Queue[str]") -> str | None:
    try:
        return commands.get_nowait()
    except queue.Empty:
        return None


DONE_EVENTS = {"commit": "committed", "close": "closed"}


def report_done(cmd: str) -> bool:
    """Say that `cmd` was carried out; True when it was "close" (the member is gone)."""
    if cmd in DONE_EVENTS:
        emit(event=DONE_EVENTS[cmd])
    return cmd == "close"


def carry_out(cmd: str | None, commit, close) -> bool:
    """Carry out a command of a synchronous client (`commit()`, `close()`) and say so; True when
    the member is closed."""
    if cmd == "commit":
        commit()
    elif cmd == "close":
        close()
    return cmd is not None and report_done(cmd)


def emit_batches(batches) -> None:
    """The records of a kafka-python or aiokafka poll, {TopicPartition: [record, ...]}."""
    for tp, recs in batches.items():
        for r in recs:
            emit(event="record", partition=tp.partition, offset=r.offset,
                 value=(r.value or b"").decode(errors="replace"))


def python_client_options(cfg) -> dict:
    """The consumer keyword arguments kafka-python and aiokafka share."""
    kw = dict(bootstrap_servers=cfg["bootstrap"], group_id=cfg["group"], client_id=cfg.get("client_id", "group-member"),
              auto_offset_reset="earliest", enable_auto_commit=False,
              session_timeout_ms=cfg.get("session_timeout_ms", 6000),
              heartbeat_interval_ms=cfg.get("heartbeat_interval_ms", 500), metadata_max_age_ms=1000)
    if cfg.get("instance_id"):
        kw["group_instance_id"] = cfg["instance_id"]
    return kw


class Assignment:
    def __init__(self):
        self.parts: set[int] = set()

    def add(self, ps):
        self.parts |= set(ps)
        emit(event="assigned", partitions=sorted(self.parts))

    def remove(self, ps):
        self.parts -= set(ps)
        emit(event="assigned", partitions=sorted(self.parts))

    def set(self, ps):
        self.parts = set(ps)
        emit(event="assigned", partitions=sorted(self.parts))


def run_confluent(cfg, commands):
    from confluent_kafka import Consumer

    conf = {
        "bootstrap.servers": cfg["bootstrap"],
        "group.id": cfg["group"],
        "client.id": cfg.get("client_id", "group-member"),
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    if cfg.get("protocol") == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf["session.timeout.ms"] = cfg.get("session_timeout_ms", 6000)
        conf["heartbeat.interval.ms"] = cfg.get("heartbeat_interval_ms", 500)
        if cfg.get("assignor"):
            conf["partition.assignment.strategy"] = cfg["assignor"]
    if cfg.get("instance_id"):
        conf["group.instance.id"] = cfg["instance_id"]
    c = Consumer(conf)
    a = Assignment()

    def commit() -> None:
        try:
            c.commit(asynchronous=False)
        except Exception as exc:  # nothing consumed yet is not an error for us
            if "NO_OFFSET" not in str(exc):
                emit(event="error", message=str(exc))

    c.subscribe([cfg["topic"]], on_assign=lambda _c, tps: a.add(tp.partition for tp in tps),
                on_revoke=lambda _c, tps: a.remove(tp.partition for tp in tps),
                on_lost=lambda _c, tps: a.remove(tp.partition for tp in tps))
    while True:
        msg = c.poll(0.05)
        if msg is not None:
            if msg.error():
                if msg.error().fatal():
                    emit(event="error", message=str(msg.error()))
                    return
            else:
                emit(event="record", partition=msg.partition(), offset=msg.offset(),
                     value=(msg.value() or b"").decode(errors="replace"))
        if carry_out(next_command(commands), commit, c.close):
            return


def run_kafka_python(cfg, commands):
    from kafka import KafkaConsumer
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    a = Assignment()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            a.remove(tp.partition for tp in revoked)

        def on_partitions_assigned(self, assigned):
            a.add(tp.partition for tp in assigned)

    c = KafkaConsumer(**python_client_options(cfg))
    c.subscribe([cfg["topic"]], listener=Listener())
    while True:
        # a longer poll: kafka-python 3.0 can lose a join-sync cycle cut short by a poll timeout
        emit_batches(c.poll(timeout_ms=500))
        if carry_out(next_command(commands), c.commit, c.close):
            return


def run_aiokafka(cfg, commands):
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from aiokafka.abc import ConsumerRebalanceListener

    a = Assignment()

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            a.remove(tp.partition for tp in revoked)

        async def on_partitions_assigned(self, assigned):
            a.set(tp.partition for tp in assigned)

    async def main():
        c = AIOKafkaConsumer(**python_client_options(cfg))
        c.subscribe([cfg["topic"]], listener=Listener())
        await c.start()
        while True:
            emit_batches(await c.getmany(timeout_ms=50))
            cmd = next_command(commands)
            if cmd == "commit":
                await c.commit()
            elif cmd == "close":
                await c.stop()
            if cmd is not None and report_done(cmd):
                return

    asyncio.run(main())


def main() -> None:
    cfg = json.loads(sys.argv[1])
    import logging
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("kafka.cluster").setLevel(logging.WARNING)
    if os.environ.get("KL_MEMBER_DEBUG"):
        logging.getLogger("kafka").setLevel(logging.DEBUG)
    commands = stdin_commands()
    runner = {"confluent": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}[cfg["client"]]
    try:
        runner(cfg, commands)
    except Exception as exc:  # noqa: BLE001
        emit(event="error", message=f"{type(exc).__name__}: {exc}")
        raise
    time.sleep(0.05)


if __name__ == "__main__":
    main()
