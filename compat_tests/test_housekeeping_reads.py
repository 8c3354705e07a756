"""Consumers reading while retention and the log cleaner work under them, on kafkalite and on
Apache Kafka 4.4: no error reaches the clients but an out-of-range offset that they reset.

One producer writes for PRODUCE_SECONDS to a topic whose segments roll every 200 ms and are
deleted 500 ms after their last record (retention checked every 100 ms), and to a compacted topic
whose segments roll as often (the cleaner looks every 100 ms). Meanwhile a confluent-kafka
consumer on each topic reads slowly from the log start and jumps back to a log start it read a
moment ago (so its fetches land on segments being deleted or replaced), and the Java consumer
reads again and again from the earliest offset. Every record they get is whole and the one
produced at its offset; their error callbacks and poll errors see nothing but
OFFSET_OUT_OF_RANGE (librdkafka resets it itself: auto.offset.reset=earliest); the Java consumer,
which resets and logs, raises nothing. kafkalite answered such fetches with a closed connection
when a segment went between the fetch finding it and reading it.
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests import brokers
from compat_tests.clients.java import JavaClient
from compat_tests.waiting import wait_until

pytestmark = [pytest.mark.produce_fetch, pytest.mark.java, pytest.mark.librdkafka, pytest.mark.on_kafka_too,
              pytest.mark.timeout(240)]

PRODUCE_SECONDS = 10
KEYS = 20
# errors a consumer may see while housekeeping moves the log start under it: the offset it
# fetches from is gone, and it resets (librdkafka may also say that it reset)
RESET_ERRORS = {KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET}


@pytest.fixture(scope="module")
def busy_broker(tmp_path_factory):
    brokers.requires_own_broker("a broker whose retention and cleaner run every 100 ms")
    config = {"log.retention.check.interval.ms": "100", "log.cleaner.backoff.ms": "100"}
    if brokers.on_kafka():
        config["log.initial.task.delay.ms"] = "0"   # Kafka's first retention check waits 30 s otherwise
    with brokers.start(tmp_path_factory.mktemp("housekeeping"), config) as b:
        yield b


def seq_of(value: bytes) -> int:
    return int(value.split(b":", 1)[0])


class Reader(threading.Thread):
    """A confluent-kafka consumer that reads one partition slowly from the log start and jumps
    back to an older log start every second, checking what it gets."""

    def __init__(self, bootstrap: str, topic: str, stop: threading.Event):
        super().__init__(name=f"reader-{topic}")
        self.topic, self.stop = topic, stop
        self.errors: list[KafkaError] = []
        self.failures: list[str] = []
        self.records = 0
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "max.partition.fetch.bytes": 512,
            "fetch.wait.max.ms": 50, "error_cb": self.errors.append})

    def run(self) -> None:
        try:
            tp = TopicPartition(self.topic, 0, OFFSET_BEGINNING)
            self.consumer.assign([tp])
            last_jump = time.monotonic()
            stale_start = 0
            last_seq = -1
            last_offset = -1
            while not self.stop.is_set():
                msg = self.consumer.poll(0.2)
                if msg is not None:
                    if msg.error() is not None:
                        self.errors.append(msg.error())
                    else:
                        seq = seq_of(msg.value())
                        if msg.offset() > last_offset and seq <= last_seq:
                            self.failures.append(f"offset {msg.offset()} holds seq {seq} after {last_seq}")
                        last_seq, last_offset = seq, msg.offset()
                        self.records += 1
                if time.monotonic() - last_jump > 1.0:
                    # back to where the log started a second ago: retention or the cleaner has
                    # probably changed that segment since
                    self.consumer.seek(TopicPartition(self.topic, 0, stale_start))
                    last_seq = last_offset = -1
                    stale_start, _high = self.consumer.get_watermark_offsets(TopicPartition(self.topic, 0),
                                                                              timeout=5)
                    last_jump = time.monotonic()
        except Exception as e:  # reported by the test
            self.failures.append(repr(e))
        finally:
            self.consumer.close()


def test_consumers_see_no_error_but_a_reset_offset_while_retention_and_the_cleaner_run(busy_broker, topic_name):
    bs = busy_broker.bootstrap
    deleting, compacted = f"{topic_name}-delete", f"{topic_name}-compact"
    roll = {"segment.ms": "200", "segment.bytes": "1048576"}
    admin = AdminClient({"bootstrap.servers": bs})
    futures = admin.create_topics([
        NewTopic(deleting, 1, 1, config={**roll, "cleanup.policy": "delete", "retention.ms": "500"}),
        NewTopic(compacted, 1, 1, config={**roll, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}),
    ])
    for f in futures.values():
        f.result(30)

    stop = threading.Event()
    readers = [Reader(bs, deleting, stop), Reader(bs, compacted, stop)]
    java_failures: list[str] = []
    java_records = [0]

    def java_reader() -> None:
        java = JavaClient(bs)
        # each read asks for 50 records from the log start: it starts while the producer has
        # seconds left to write them
        while not stop.is_set() and time.monotonic() < deadline - 3:
            try:
                msgs = java.consume(deleting, [0], 50, start="earliest", timeout_s=20,
                                    config={"max.partition.fetch.bytes": 512, "fetch.max.bytes": 2048,
                                            "auto.offset.reset": "earliest"})
            except Exception as e:  # a Java exception, or fewer records than asked: reported below
                java_failures.append(repr(e))
                return
            seqs = [seq_of(m.value) for m in msgs]
            if seqs != sorted(seqs) or [m.offset for m in msgs] != sorted(m.offset for m in msgs):
                java_failures.append(f"out of order: {[(m.offset, s) for m, s in zip(msgs, seqs)]}")
            java_records[0] += len(msgs)

    JavaClient(bs).consume(deleting, [0], 0, timeout_s=30)    # the driver's JVM up before the clock runs
    producer = Producer({"bootstrap.servers": bs, "linger.ms": 2, "enable.idempotence": True})
    produced = 0
    for r in readers:
        r.start()
    java_thread = threading.Thread(target=java_reader, name="java-reader")
    deadline = time.monotonic() + PRODUCE_SECONDS
    try:
        while time.monotonic() < deadline:
            for _ in range(20):
                value = b"%d:%s" % (produced, b"x" * 100)
                producer.produce(deleting, value, key=b"k%d" % (produced % KEYS))
                producer.produce(compacted, value, key=b"k%d" % (produced % KEYS))
                produced += 1
            producer.poll(0)
            time.sleep(0.02)    # pace: about 1 000 records a second per topic
            if not java_thread.is_alive() and not java_thread.ident:
                java_thread.start()
        assert producer.flush(30) == 0
        # retention has deleted segments meanwhile (the log start moved)
        probe = Consumer({"bootstrap.servers": bs, "group.id": f"{topic_name}-probe"})
        try:
            wait_until(lambda: probe.get_watermark_offsets(TopicPartition(deleting, 0), timeout=5)[0] > 0,
                       timeout=30, what="retention to move the log start")
        finally:
            probe.close()
    finally:
        stop.set()
        for r in readers:
            r.join(60)
        java_thread.join(60)

    for r in readers:
        assert not r.failures, (r.topic, r.failures[:5])
        unexpected = [e for e in r.errors if e.code() not in RESET_ERRORS]
        assert not unexpected, (r.topic, unexpected[:5])
        assert r.records > 0, (r.topic, produced, r.errors[:5])
    assert not java_failures, java_failures[:3]
    assert java_records[0] > 0


def test_retention_empties_a_topic_nobody_writes_to(busy_broker, topic_name):
    # Kafka's retention deletes the active segment too once it is past retention.ms (it rolls an
    # empty one first): the log start reaches the log end, and the next record is read from there
    bs = busy_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic_name, 1, 1, config={"retention.ms": "500"})])[topic_name].result(30)
    producer = Producer({"bootstrap.servers": bs})
    for i in range(10):
        producer.produce(topic_name, b"%d" % i)
    assert producer.flush(30) == 0
    tp = TopicPartition(topic_name, 0)
    consumer = Consumer({"bootstrap.servers": bs, "group.id": f"{topic_name}-probe", "auto.offset.reset": "earliest"})
    try:
        assert wait_until(lambda: consumer.get_watermark_offsets(tp, timeout=5) == (10, 10), timeout=30,
                          what="retention to empty the log")
        producer.produce(topic_name, b"after")
        assert producer.flush(30) == 0
        consumer.assign([TopicPartition(topic_name, 0, OFFSET_BEGINNING)])
        msg = wait_until(lambda: consumer.poll(1), timeout=30, what="the record after retention")
        assert msg.error() is None and (msg.offset(), msg.value()) == (10, b"after")
    finally:
        consumer.close()
