"""One process of the queue workload with librdkafka (confluent-kafka): the same line protocol
as java/JepsenWorker.java (see there), run as ``python -m compat_tests.jepsen.rdkafka_worker``."""

from __future__ import annotations

import json
import sys
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


class Worker:
    def __init__(self, setup: dict[str, Any]):
        self.setup = setup
        self.partitions = int(setup["partitions"])
        self.prefix = setup["prefix"]
        self.producer: Producer | None = None
        self.consumer: Consumer | None = None
        self.subscribed = False
        self.rebalance_log: list[dict[str, Any]] = []

    def tp(self, key: int) -> tuple[str, int]:
        return f"{self.prefix}-{key // self.partitions}", key % self.partitions

    def key(self, topic: str, partition: int) -> int:
        return int(topic[len(self.prefix) + 1:]) * self.partitions + partition

    def _producer(self) -> Producer:
        if self.producer is None:
            p = Producer({"bootstrap.servers": self.setup["bootstrap"],
                          "transactional.id": self.setup["transactional_id"], **self.setup.get("producer", {})})
            p.init_transactions(self.setup.get("timeout_s", 10))
            self.producer = p
        return self.producer

    def _consumer(self) -> Consumer:
        if self.consumer is None:
            self.consumer = Consumer({"bootstrap.servers": self.setup["bootstrap"], "group.id": self.setup["group"],
                                      "isolation.level": self.setup["isolation"], "enable.auto.commit": False,
                                      "auto.offset.reset": "earliest", **self.setup.get("consumer", {})})
        return self.consumer

    def _log(self, tps: list[TopicPartition], event: str) -> None:
        if tps:
            self.rebalance_log.append({"keys": [self.key(t.topic, t.partition) for t in tps], "event": event})

    def poll(self) -> dict[str, list[list[int]]]:
        out: dict[str, list[list[int]]] = {}
        msgs = self._consumer().consume(num_messages=500, timeout=self.setup.get("poll_ms", 200) / 1000)
        for m in msgs:
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF: not a record
                    continue
                raise KafkaException(m.error())
            out.setdefault(str(self.key(m.topic(), m.partition())), []).append([m.offset(), int(m.value())])
        return out

    def txn(self, op: dict[str, Any]) -> dict[str, Any]:
        done: list[Any] = []
        timeout = self.setup.get("timeout_s", 10)
        try:
            p = self._producer()
            p.begin_transaction()
            for mop in op["value"]:
                if mop[0] == "send":
                    k, v = mop[1], mop[2]
                    topic, partition = self.tp(k)
                    got: list[Any] = []
                    p.produce(topic, str(v).encode(), partition=partition, on_delivery=lambda e, m, got=got: got.append((e, m)))
                    p.flush(timeout)
                    if not got:
                        raise KafkaException("no delivery report in time")
                    err, msg = got[0]
                    if err is not None:
                        raise KafkaException(err)
                    done.append(["send", k, [msg.offset(), v]])
                else:
                    done.append(["poll", self.poll()])
            c = self._consumer()
            if op.get("commit_offsets") and self.subscribed and c.assignment():
                positions = c.position(c.assignment())
                p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), timeout)
        except Exception as e:  # noqa: BLE001 - any error before the commit is a definite abort
            self._abort_quietly()
            return {"type": "fail", "value": done, "error": repr(e)}
        assert self.producer is not None
        if op.get("abort"):
            try:
                self.producer.abort_transaction(timeout)
                return {"type": "ok", "value": done}
            except Exception as e:  # noqa: BLE001
                return {"type": "fail", "value": done, "error": repr(e)}
        try:
            self.producer.commit_transaction(timeout)
            return {"type": "ok", "value": done}
        except Exception as e:  # noqa: BLE001 - the commit may or may not have happened
            return {"type": "info", "value": done, "error": repr(e)}

    def _abort_quietly(self) -> None:
        try:
            if self.producer is not None:
                self.producer.abort_transaction(self.setup.get("timeout_s", 10))
        except Exception:  # noqa: BLE001 - the runner resets a failed process anyway
            pass

    def handle(self, op: dict[str, Any]) -> dict[str, Any]:
        f = op["f"]
        if f == "txn":
            return self.txn(op)
        if f == "poll":
            try:
                polled = self.poll()
                if self.subscribed and polled:
                    self._consumer().commit(asynchronous=False)
                return {"type": "ok", "value": [["poll", polled]]}
            except Exception as e:  # noqa: BLE001
                return {"type": "fail", "value": [["poll"]], "error": repr(e)}
        if f == "assign":
            try:
                c = self._consumer()
                wanted = [TopicPartition(*self.tp(k)) for k in op["value"]]
                if self.subscribed:
                    self._log(c.assignment(), "revoked")
                    c.unsubscribe()
                    self.subscribed = False
                    c.assign([TopicPartition(t.topic, t.partition, -2 if op.get("seek_to_beginning") else -1001)
                              for t in wanted])
                elif op.get("seek_to_beginning"):
                    c.unassign()
                    c.assign([TopicPartition(t.topic, t.partition, -2) for t in wanted])  # OFFSET_BEGINNING
                else:
                    have = {(t.topic, t.partition) for t in c.assignment()}
                    keep = {(t.topic, t.partition) for t in wanted}
                    gone = [TopicPartition(t, p) for t, p in have - keep]
                    if gone:
                        c.incremental_unassign(gone)
                    new = [t for t in wanted if (t.topic, t.partition) not in have]
                    if new:
                        c.incremental_assign(new)
                return {"type": "ok", "value": op["value"]}
            except Exception as e:  # noqa: BLE001
                return {"type": "fail", "value": op["value"], "error": repr(e)}
        if f == "subscribe":
            try:
                c = self._consumer()
                if not self.subscribed and c.assignment():
                    self._log(c.assignment(), "revoked")
                    c.unassign()
                topics = sorted({self.tp(k)[0] for k in op["value"]})
                c.subscribe(topics, on_assign=lambda _c, tps: self._log(tps, "assigned"),
                            on_revoke=lambda _c, tps: self._log(tps, "revoked"),
                            on_lost=lambda _c, tps: self._log(tps, "lost"))
                self.subscribed = True
                return {"type": "ok", "value": op["value"]}
            except Exception as e:  # noqa: BLE001
                return {"type": "fail", "value": op["value"], "error": repr(e)}
        if f == "reset":
            self.close(0)
            return {"type": "ok", "value": None}
        raise ValueError(f"unknown operation {f}")

    def close(self, timeout: float) -> None:
        if self.producer is not None:
            self.producer.flush(timeout)
        if self.consumer is not None:
            self.consumer.close()
        self.producer = self.consumer = None
        self.subscribed = False


def main() -> int:
    worker = Worker(json.loads(sys.stdin.readline()))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        op = json.loads(line)
        if op["f"] == "close":
            break
        worker.rebalance_log = []
        try:
            result = worker.handle(op)
        except Exception as e:  # noqa: BLE001 - reported as an indeterminate operation
            result = {"type": "info", "value": None, "error": repr(e)}
        if worker.rebalance_log:
            result["rebalance_log"] = worker.rebalance_log
        print(json.dumps(result), flush=True)
    worker.close(2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
