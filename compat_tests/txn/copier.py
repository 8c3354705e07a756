"""A transactional copier for the exactly-once tests, run as its own process so a test can
SIGKILL it: consume (read_committed, group), produce each value prefixed with ``copied:`` to
the same partition of the sink, send the consumer's offsets with its group metadata, commit.
Messages are polled one at a time and gathered into a transaction of at most BATCH; when a
rebalance happens while a batch is being gathered, the batch is dropped before anything is
produced (its partitions were revoked, or re-assigned and re-fetched from the committed
offsets), so that with several copiers in one group (KIP-447) no record is copied twice.
Runs until killed; any error ends the process with status 3 (the test starts a new one, whose
InitProducerId fences this one and aborts its open transaction). A watchdog ends it with
status 4 when one transaction takes longer than 12 s: after a broker restart librdkafka's
send_offsets_to_transaction can wait forever for the group coordinator, past its timeout
(confluentinc/librdkafka#5456, #5511); a real application restarts, and so does this one.

    python -m compat_tests.txn.copier BOOTSTRAP TRANSACTIONAL_ID GROUP SOURCE SINK [BATCH]
"""

from __future__ import annotations

import os
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer


def _watchdog(last: list, limit_s: float = 12.0) -> None:
    while True:
        time.sleep(1)
        if time.monotonic() - last[0] > limit_s:
            print("copier watchdog: a transaction is stuck; exiting", file=sys.stderr, flush=True)
            os._exit(4)


def main(bootstrap: str, transactional_id: str, group: str, source: str, sink: str, batch: str = "200") -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "broker.address.family": "v4", "group.id": group,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 3000,
                         "heartbeat.interval.ms": 500, "max.poll.interval.ms": 10000})
    producer = Producer({"bootstrap.servers": bootstrap, "broker.address.family": "v4",
                         "transactional.id": transactional_id, "linger.ms": 5,
                         "transaction.timeout.ms": 10000, "message.timeout.ms": 10000})
    last = [time.monotonic()]
    rebalanced = [False]

    def on_change(_consumer, _partitions):
        rebalanced[0] = True

    threading.Thread(target=_watchdog, args=(last,), daemon=True).start()
    try:
        producer.init_transactions(30)
        consumer.subscribe([source], on_assign=on_change, on_revoke=on_change, on_lost=on_change)
        while True:
            last[0] = time.monotonic()
            msgs = []
            deadline = time.monotonic() + 0.5
            while len(msgs) < int(batch) and time.monotonic() < deadline:
                m = consumer.poll(0.05 if msgs else 0.5)
                if rebalanced[0]:  # what was gathered before the rebalance is not ours to copy
                    rebalanced[0] = False
                    msgs = []
                if m is not None and m.error() is None:
                    msgs.append(m)
                elif m is None and msgs:
                    break
            if not msgs:
                continue
            producer.begin_transaction()
            for m in msgs:
                producer.produce(sink, value=b"copied:" + m.value(), key=m.key(), partition=m.partition())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            print("committed", len(msgs), flush=True)
    except KafkaException as exc:
        print("copier error:", exc, file=sys.stderr, flush=True)
        return 3


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:7]))
