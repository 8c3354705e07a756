"""One worker of the consume-transform-produce workload with librdkafka (confluent-kafka): the same
line protocol and steps as java/CtpWorker.java (see there), run as
``python -m compat_tests.jepsen.rdkafka_ctp_worker``. Offsets go with
send_offsets_to_transaction(offsets, consumer.consumer_group_metadata()) (KIP-447)."""

from __future__ import annotations

import json
import sys
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

OFFSET_BEGINNING = -2
TIMEOUT_S = 10.0


def emit(event: dict[str, Any]) -> None:
    print(json.dumps(event), flush=True)


class CtpWorker:
    def __init__(self, setup: dict[str, Any]):
        self.setup = setup
        self.consumer = Consumer({"bootstrap.servers": setup["bootstrap"], "group.id": setup["group"],
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", **setup.get("consumer", {})})
        self.consumer.subscribe([setup["input"]])
        self.producer = self._producer()

    def _producer(self) -> Producer:
        p = Producer({"bootstrap.servers": self.setup["bootstrap"], "transactional.id": self.setup["transactional_id"],
                      **self.setup.get("producer", {})})
        p.init_transactions(30)
        return p

    def _restart_producer(self) -> None:
        self.producer.flush(0)
        self.producer = self._producer()

    def _rewind(self) -> None:
        """Back to the group's committed offsets (OffsetFetch with require_stable), so an aborted
        batch is read again and nothing after it is skipped."""
        assigned = self.consumer.assignment()
        if not assigned:
            return
        for tp in self.consumer.committed(assigned, TIMEOUT_S):
            self.consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))

    def step(self, n: int, batch: list[Message]) -> None:
        offsets: dict[int, int] = {}
        try:
            self.producer.begin_transaction()
            reports: list[Any] = [None] * len(batch)  # delivery reports come per partition, not in order
            for i, m in enumerate(batch):
                value = m.value() or b""
                self.producer.produce(self.setup["output"], f"{m.partition()}:{m.offset()}:{value.decode()}".encode(),
                                      key=value, partition=m.partition(),
                                      on_delivery=lambda err, msg, i=i: reports.__setitem__(i, (err, msg)))
                offsets[m.partition()] = m.offset() + 1
            if self.producer.flush(TIMEOUT_S) or None in reports:
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "no delivery report in time"))
            done = []
            for m, (err, out) in zip(batch, reports):
                if err is not None:
                    raise KafkaException(err)
                done.append([m.partition(), m.offset(), int(m.value()), out.offset()])
            emit({"event": "open", "txn": n, "records": done})
            await_go()
            tps = [TopicPartition(self.setup["input"], p, o) for p, o in sorted(offsets.items())]
            self.producer.send_offsets_to_transaction(tps, self.consumer.consumer_group_metadata(), TIMEOUT_S)
            emit({"event": "offsets", "txn": n, "offsets": {str(p): o for p, o in offsets.items()}})
            await_go()
        except KafkaException as e:
            err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
            if err is not None and err.fatal():
                self._restart_producer()
            else:
                try:
                    self.producer.abort_transaction(TIMEOUT_S)
                except KafkaException:
                    self._restart_producer()
            emit({"event": "aborted", "txn": n, "error": repr(e)})
            self._rewind()
            return
        try:
            self.producer.commit_transaction(TIMEOUT_S)
            emit({"event": "committed", "txn": n})
        except KafkaException as e:
            emit({"event": "unknown", "txn": n, "error": repr(e)})
            self._restart_producer()
            self._rewind()


def await_go() -> None:
    """Blocks until the runner says go (it kills the process instead when a kill is due here)."""
    if not sys.stdin.readline():
        sys.exit(0)


def main() -> int:
    worker = CtpWorker(json.loads(sys.stdin.readline()))
    emit({"event": "ready"})
    n = 0
    while True:
        msgs = worker.consumer.consume(num_messages=int(worker.setup["batch"]), timeout=0.2)
        batch = []
        for m in msgs:
            if m.error():
                if m.error().fatal():
                    raise KafkaException(m.error())
                print(f"consume: {m.error()}", file=sys.stderr, flush=True)  # retriable: librdkafka goes on
                continue
            batch.append(m)
        if batch:
            n += 1
            worker.step(n, batch)


if __name__ == "__main__":
    sys.exit(main())
