"""One share consumer with confluent-kafka's ShareConsumer (librdkafka), speaking the line
protocol of compat_tests/share/members.py: JSON events on stdout ("record", "committed", "closed",
"error"), commands on stdin ("ack OFFSET TYPE", "commit", "close"). In explicit mode it polls
again only once every delivered record is acknowledged, as the ShareConsumer requires.

argv[1]: JSON {"bootstrap", "group", "topic", "client_id", "ack_mode", "config": {...}}."""

from __future__ import annotations

import json
import queue
import sys
import threading


def emit(event: dict) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    cfg = json.loads(sys.argv[1])
    explicit = cfg.get("ack_mode", "explicit") != "implicit"
    conf = {"bootstrap.servers": cfg["bootstrap"], "group.id": cfg["group"], "client.id": cfg["client_id"],
            "share.acknowledgement.mode": "explicit" if explicit else "implicit", **cfg.get("config", {})}
    commands: queue.Queue[str] = queue.Queue()

    def read_stdin() -> None:
        for line in sys.stdin:
            commands.put(line.strip())
        commands.put("close")
    threading.Thread(target=read_stdin, daemon=True).start()

    consumer = ShareConsumer(conf)
    pending: dict[int, object] = {}
    try:
        consumer.subscribe([cfg["topic"]])
        while True:
            try:
                cmd = commands.get(timeout=0.1) if pending else commands.get_nowait()
            except queue.Empty:
                cmd = None
            if cmd:
                parts = cmd.split()
                if parts[0] == "close":
                    break
                if parts[0] == "ack":
                    msg = pending.pop(int(parts[1]), None)
                    if msg is None:
                        emit({"event": "error", "message": f"no pending record at {parts[1]}"})
                        continue
                    consumer.acknowledge(msg, AcknowledgeType[parts[2]])
                elif parts[0] == "commit":
                    result = consumer.commit_sync(30)
                    emit({"event": "committed", "result": repr(result)})
                continue
            if pending:
                continue
            for msg in consumer.poll(0.2):
                if msg.error() is not None:
                    emit({"event": "error", "message": str(msg.error())})
                    continue
                if explicit:
                    pending[msg.offset()] = msg
                value = msg.value()
                key = msg.key()
                emit({"event": "record", "partition": msg.partition(), "offset": msg.offset(),
                      "key": key.decode() if key is not None else None,
                      "value": value.decode() if value is not None else None,
                      "delivery_count": msg.delivery_count()})
        consumer.close()
        emit({"event": "closed"})
    except Exception as exc:  # reported to the test, which fails with it
        emit({"event": "error", "message": f"{type(exc).__name__}: {exc}"})
        sys.exit(1)


if __name__ == "__main__":
    main()
