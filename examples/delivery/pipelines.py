"""One consume-transform-produce pipeline (orders in, invoices out), written three ways, to run under
seeded chaos and judge with the delivery audit (docs/delivery.md):

- `copy_exactly_once`: a transactional producer writes the invoices and commits the consumed
  offsets in the same transaction (`send_offsets_to_transaction`); the consumer reads
  read_committed. Nothing lost, nothing duplicated, whatever the broker does.
- `copy_at_least_once`: a producer without idempotence, a consumer that auto-commits. A lost
  acknowledgement (chaos `drop` on Produce: written, answer never sent) makes the producer send
  the record again, and the invoice is written twice.
- `copy_at_most_once`: the consumer commits each order's offset before it is processed, and a
  producer that does not retry writes the invoice. A Produce the broker refuses (chaos `error`:
  NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER; or a closed connection) fails
  the delivery for good, the application gives up on it, and the order, committed already, is
  never billed.

Each client has a fixed client.id, so that a chaos seed meets the same requests every run.
"""

from __future__ import annotations

import json

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

# a dropped response costs a client its request timeout: keep it short
TIMEOUTS = {"socket.timeout.ms": 5000}
ORDERS, INVOICES, GROUP = "orders", "invoices", "billing"


def place_orders(bootstrap: str, count: int) -> None:
    """`count` orders {"order_id", "amount"} keyed by their id, from an idempotent producer."""
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "shop", "enable.idempotence": True,
                         **TIMEOUTS})
    for i in range(count):
        order = {"order_id": f"o-{i}", "amount": 10 + i}
        producer.produce(ORDERS, json.dumps(order).encode(), key=order["order_id"].encode())
    assert producer.flush(60) == 0


def invoice(value: bytes) -> bytes:
    order = json.loads(value)
    return json.dumps({"order_id": order["order_id"], "total": order["amount"] * 1.2}).encode()


def _rewind(consumer: Consumer) -> None:
    """Back to the group's committed offsets: an aborted transaction's input is read again."""
    for tp in consumer.committed(consumer.assignment(), timeout=10):
        consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))


def copy_exactly_once(bootstrap: str, count: int) -> None:
    """Bill `count` orders: each batch's invoices and consumed offsets in one transaction."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": "billing", "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed", **TIMEOUTS})
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "billing-out",
                         "transactional.id": "billing-1", **TIMEOUTS})
    producer.init_transactions(60)
    consumer.subscribe([ORDERS])
    billed = 0
    while billed < count:
        batch = [m for m in consumer.consume(20, timeout=1) if m.error() is None]
        if not batch:
            continue
        producer.begin_transaction()
        try:
            for m in batch:
                producer.produce(INVOICES, invoice(m.value()), key=m.key())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 60)
            producer.commit_transaction(60)
            billed += len(batch)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(60)
            _rewind(consumer)
    consumer.close()


def copy_at_least_once(bootstrap: str, count: int) -> None:
    """Bill `count` orders, one Produce request each, without idempotence; the consumer commits
    its position on its own (auto commit) and on close."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": "billing", "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": True,
                         "auto.commit.interval.ms": 100, **TIMEOUTS})
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "billing-out", "enable.idempotence": False,
                         "acks": "all", **TIMEOUTS})
    consumer.subscribe([ORDERS])
    billed = 0
    while billed < count:
        m = consumer.poll(1)
        if m is None or m.error() is not None:
            continue
        producer.produce(INVOICES, invoice(m.value()), key=m.key())
        assert producer.flush(60) == 0
        billed += 1
    consumer.close()


# what a synchronous commit may fail with and then succeed on a retry (the coordinator moved, is
# loading, or the connection went)
_COMMIT_RETRIABLE = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                     KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.REQUEST_TIMED_OUT, KafkaError._TRANSPORT,
                     KafkaError._TIMED_OUT}


def _commit_before_processing(consumer: Consumer, message: Message) -> None:
    """Commit the offset after `message`, retrying until the broker has it."""
    for _ in range(20):
        try:
            consumer.commit(message=message, asynchronous=False)
            return
        except KafkaException as exc:
            if exc.args[0].code() not in _COMMIT_RETRIABLE and not exc.args[0].retriable():
                raise
    raise RuntimeError(f"could not commit offset {message.offset() + 1} of {message.topic()}-{message.partition()}")


def copy_at_most_once(bootstrap: str, count: int) -> list[str]:
    """Consume `count` orders, committing each one's offset before billing it, one Produce request
    per invoice from a producer without idempotence or retries; a delivery that fails is given up.
    Returns the order ids whose invoice was not delivered."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": "billing", "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, **TIMEOUTS})
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "billing-out", "enable.idempotence": False,
                         "acks": "all", "retries": 0, **TIMEOUTS})
    undelivered: list[str] = []

    def on_delivery(err: KafkaError | None, message: Message) -> None:
        if err is not None:  # the application gives up: the order's offset is committed already
            undelivered.append(json.loads(message.value())["order_id"])

    consumer.subscribe([ORDERS])
    consumed = 0
    while consumed < count:
        m = consumer.poll(1)
        if m is None or m.error() is not None:
            continue
        _commit_before_processing(consumer, m)
        consumed += 1
        producer.produce(INVOICES, invoice(m.value()), key=m.key(), on_delivery=on_delivery)
        producer.flush(60)
    consumer.close()
    return undelivered
