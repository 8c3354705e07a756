"""Log compaction as Kafka's log cleaner does it, checked record by record on kafkalite and on
Apache Kafka 4.4 with the same produce sequence: keys with several versions, tombstones, keys
written again after their tombstone, segments rolled by size (1 MiB, the smallest segment.bytes
Kafka 4.x takes), a cleaner that runs every 300 ms and cleans at any dirty ratio above 0.01.

After the cleaner's passes each key keeps its latest record. A tombstone stays until its delete
horizon, set by the first pass that keeps it to that time plus delete.retention.ms (KIP-534), and
goes on a pass after it: with delete.retention.ms=0 the tombstones are gone once more segments
roll (a pass needs dirty data, so the test rolls segments until the result holds), with the
default (a day) they stay. kafkalite kept every tombstone for ever before.

The cleaner keeps Kafka's schedule, apart from retention: a pass every log.cleaner.backoff.ms
(15 s by default, on both brokers), so a compacted topic with a low dirty ratio is compacted
within about 20 s of its segment rolling, as client test suites expect; on kafkalite the
advance-clock control runs the pass too.

The lags, by record timestamps: min.compaction.lag.ms keeps the segments whose largest timestamp
is within it uncleaned, and max.compaction.lag.ms cleans a log whose dirty ratio is below
min.cleanable.dirty.ratio once a dirty segment's first batch is older than it (Kafka's
LogCleanerManager); on kafkalite the advance-clock control moves both.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from compat_tests import brokers
from compat_tests.waiting import wait_until
from kafkalite.tests import suite_brokers

pytestmark = [pytest.mark.produce_fetch, pytest.mark.on_kafka_too, pytest.mark.timeout(300)]

KEYS = 40
VALUE_BYTES = 6000  # about 170 records to a 1 MiB segment


def history() -> list[tuple[str, str | None]]:
    """(key, value) in produce order: five rounds of every key, tombstones for every 7th key and
    every 14th key written again after its tombstone."""
    out: list[tuple[str, str | None]] = []
    for rnd in range(5):
        out += [(f"k{k}", f"k{k}:{rnd}") for k in range(KEYS)]
        out += [(f"k{k}", None) for k in range(0, KEYS, 7)]
        out += [(f"k{k}", f"k{k}:again{rnd}") for k in range(0, KEYS, 14)]
    return out


def latest(records: list[tuple[str, str | None]], keep_tombstones: bool) -> list[tuple[str, str | None]]:
    last = {key: i for i, (key, _v) in enumerate(records)}
    return [(k, v) for i, (k, v) in enumerate(records) if last[k] == i and (v is not None or keep_tombstones)]


def read_all(bootstrap: str, topic: str) -> list[tuple[str, str | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-reader",
                         "enable.auto.commit": False})
    try:
        tp = TopicPartition(topic, 0, 0)
        consumer.assign([tp])
        _low, high = consumer.get_watermark_offsets(tp, timeout=10)
        out: list[tuple[str, str | None]] = []
        last = -1
        while last < high - 1:
            msg = consumer.poll(5)
            assert msg is not None, f"read stopped at offset {last} of {high}"
            if msg.error():
                continue
            last = msg.offset()
            value = msg.value()
            out.append((msg.key().decode(), None if value is None else value.decode().split("|", 1)[0]))
        return out
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def cleaning_broker(tmp_path_factory):
    brokers.requires_own_broker("a broker whose cleaner runs often")
    with brokers.start(tmp_path_factory.mktemp("compaction"), {"log.cleaner.backoff.ms": "300"}) as b:
        yield b


@pytest.mark.parametrize("delete_retention_ms", ["0", "86400000"])
def test_compaction_keeps_what_kafkas_cleaner_keeps(cleaning_broker, topic_name, delete_retention_ms):
    from confluent_kafka.admin import AdminClient, NewTopic

    bs = cleaning_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic_name, 1, 1, config={
        "cleanup.policy": "compact", "segment.bytes": "1048576", "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": delete_retention_ms})])[topic_name].result(30)
    # one record a request: the same batches, so the same segment rolls, on both brokers
    producer = Producer({"bootstrap.servers": bs, "linger.ms": 0, "max.in.flight": 1, "enable.idempotence": False})
    pad = "|" + "x" * VALUE_BYTES

    def send(key: str, value: str | None) -> None:
        producer.produce(topic_name, key=key.encode(), value=None if value is None else (value + pad).encode(),
                         partition=0)
        producer.flush(30)

    records = history()
    for key, value in records:
        send(key, value)
    fillers = iter(range(100_000))

    def roll() -> None:
        """A segment's worth of other keys: the history moves into cleaned segments, and each
        roll is dirty data that makes the cleaner pass over the whole log again."""
        for _ in range(180):
            i = next(fillers)
            send(f"filler{i % 50}", f"filler{i}")

    roll()
    roll()
    want = latest(records, keep_tombstones=delete_retention_ms != "0")

    def cleaned() -> bool:
        got = [(k, v) for k, v in read_all(bs, topic_name) if not k.startswith("filler")]
        if got != want:
            roll()  # a tombstone goes on a pass after its horizon: give the cleaner one more
        assert got == want, f"{len(got)} records of the history left, {len(want)} expected"
        return True

    wait_until(cleaned, timeout=120, interval=0.5, what="the cleaner's result")


SCHEDULE_TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.ms": "500", "segment.bytes": "1048576",
                         "min.cleanable.dirty.ratio": "0.01", "max.compaction.lag.ms": "100"}


def produce_schedule_scenario(bootstrap: str, topic: str) -> None:
    """40 keyed records (30 over 3 keys, 10 of their own key), then 20 records of 60 KB that roll
    the first segment (1 MiB)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=SCHEDULE_TOPIC_CONFIG)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "enable.idempotence": False})
    for i in range(30):
        producer.produce(topic, key=f"key{i % 3}".encode(), value=f"v{i}".encode(), partition=0)
    for i in range(10):
        producer.produce(topic, key=f"unique{i}".encode(), value=f"u{i}".encode(), partition=0)
    producer.flush(30)
    for i in range(20):
        producer.produce(topic, key=f"big{i}".encode(), value=b"x" * 60_000, partition=0)
        producer.flush(30)


def keyed_left(bootstrap: str, topic: str) -> int:
    return sum(1 for k, _v in read_all(bootstrap, topic) if not k.startswith("big"))


def test_compaction_on_the_cleaners_schedule(tmp_path_factory, topic_name):
    """A compacted topic whose dirty ratio is low (min.cleanable.dirty.ratio=0.01) is cleaned
    within about 20 s, by the cleaner's own pass every log.cleaner.backoff.ms (15 s, the default),
    not by the retention check (once a day in the suite): the 40 keyed records come down to one
    per key, 13."""
    brokers.requires_own_broker("a broker with the default cleaner schedule")
    with brokers.start(tmp_path_factory.mktemp("cleaner-schedule")) as b:
        produce_schedule_scenario(b.bootstrap, topic_name)
        # a pass at most 15 s away, then the pass itself and the read on a loaded machine
        wait_until(lambda: keyed_left(b.bootstrap, topic_name) == 13, timeout=30, interval=1,
                   what="the 40 keyed records compacted to 13")


def test_advance_clock_runs_the_cleaner():
    """kafkalite: a cleaner pass an hour away (log.cleaner.backoff.ms) runs at once when the
    broker's clock is advanced by that hour."""
    brokers.requires_kafkalite("the clock control is kafkalite's own")
    with suite_brokers.running(controls=0, config={"log.cleaner.backoff.ms": 3_600_000}) as b:
        produce_schedule_scenario(b.bootstrap, "advanced-cleaner")
        assert keyed_left(b.bootstrap, "advanced-cleaner") == 40
        b.controls.advance_clock(ms=3_600_000)
        wait_until(lambda: keyed_left(b.bootstrap, "advanced-cleaner") == 13, timeout=10, interval=0.2,
                   what="the 40 keyed records compacted to 13")


def test_no_compaction_with_the_cleaner_off():
    """log.cleaner.enable=false: a cleaner pass never comes, as on Kafka (advance-clock past it)."""
    brokers.requires_kafkalite("the clock control is kafkalite's own")
    with suite_brokers.running(controls=0, config={"log.cleaner.enable": False, "log.cleaner.backoff.ms": 1000}) as b:
        produce_schedule_scenario(b.bootstrap, "no-cleaner")
        b.controls.advance_clock(ms=60_000)
        b.controls.advance_clock(ms=60_000)
        assert keyed_left(b.bootstrap, "no-cleaner") == 40


HOUR_MS = 3_600_000


def produce_timed(bootstrap: str, topic: str, groups: list[tuple[str, int, int]]) -> None:
    """Each group is (key prefix, count, record timestamp): `count` records over three keys, all
    stamped with the group's timestamp, sent and acknowledged before the next group, so a group
    an hour or more from the one before it starts a new segment (segment.ms=60000 rolls by
    record timestamps, on both brokers)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "enable.idempotence": False})
    for prefix, count, timestamp in groups:
        for i in range(count):
            producer.produce(topic, key=f"{prefix}{i % 3}".encode(), value=f"{prefix}-v{i}".encode(), partition=0,
                             timestamp=timestamp)
        assert producer.flush(30) == 0


def create_compacted(bootstrap: str, topics: dict[str, dict[str, str]]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    base = {"cleanup.policy": "compact", "segment.ms": "60000", "segment.bytes": "1048576"}
    futures = admin.create_topics([NewTopic(name, 1, 1, config={**base, **cfg}) for name, cfg in topics.items()])
    for future in futures.values():
        future.result(30)


def keys_left(bootstrap: str, topic: str, prefix: str) -> int:
    return sum(1 for k, _v in read_all(bootstrap, topic) if k.startswith(prefix))


def test_min_compaction_lag_keeps_young_segments(cleaning_broker, topic_name):
    """min.compaction.lag.ms=1 h: a segment of records stamped two hours ago is compacted (30
    records over 3 keys to 3), the next one, stamped ten minutes ago, is not (its 30 stay, though
    its keys are the same): the first uncleanable offset is the base of the first segment whose
    largest timestamp is within the lag. A witness topic without the lag, written afterwards and
    compacted by a later cleaner pass, shows the young segment was left on purpose."""
    bs = cleaning_broker.bootstrap
    witness = topic_name + "-witness"
    create_compacted(bs, {topic_name: {"min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": str(HOUR_MS)},
                          witness: {"min.cleanable.dirty.ratio": "0.01"}})
    now = int(time.time() * 1000)
    produce_timed(bs, topic_name, [("key", 30, now - 2 * HOUR_MS), ("key", 30, now - 600_000), ("tail", 1, now)])
    wait_until(lambda: keys_left(bs, topic_name, "key") == 33, timeout=30, interval=0.5,
               what="the old segment compacted to 3 records and the young one's 30 kept")
    produce_timed(bs, witness, [("key", 30, now - 2 * HOUR_MS), ("tail", 1, now)])
    wait_until(lambda: keys_left(bs, witness, "key") == 3, timeout=30, interval=0.5, what="the witness compacted")
    assert keys_left(bs, topic_name, "key") == 33


def test_max_compaction_lag_cleans_below_the_dirty_ratio(cleaning_broker, topic_name):
    """min.cleanable.dirty.ratio=1 (a log is never dirty enough): a topic with
    max.compaction.lag.ms=1 h whose dirty segment's first batch is two hours old is compacted all
    the same (Kafka's "must clean" log), the same records on a topic without the lag are not. A
    second lagged topic, compacted by a later pass, is the witness that the first was not."""
    bs = cleaning_broker.bootstrap
    by_ratio, by_lag, witness = topic_name + "-ratio", topic_name + "-lag", topic_name + "-witness"
    never_by_ratio = {"min.cleanable.dirty.ratio": "1"}
    create_compacted(bs, {by_ratio: never_by_ratio, by_lag: {**never_by_ratio, "max.compaction.lag.ms": str(HOUR_MS)},
                          witness: {**never_by_ratio, "max.compaction.lag.ms": str(HOUR_MS)}})
    now = int(time.time() * 1000)
    for topic in (by_ratio, by_lag):
        produce_timed(bs, topic, [("key", 30, now - 2 * HOUR_MS), ("tail", 1, now)])
    wait_until(lambda: keys_left(bs, by_lag, "key") == 3, timeout=30, interval=0.5,
               what="the topic past max.compaction.lag.ms compacted to 3 records")
    produce_timed(bs, witness, [("key", 30, now - 2 * HOUR_MS), ("tail", 1, now)])
    wait_until(lambda: keys_left(bs, witness, "key") == 3, timeout=30, interval=0.5, what="the witness compacted")
    assert keys_left(bs, by_ratio, "key") == 30


def test_advance_clock_moves_the_compaction_lags():
    """kafkalite: both lags are read on the broker's clock. With the broker defaults
    log.cleaner.min.compaction.lag.ms and log.cleaner.max.compaction.lag.ms at an hour, records
    stamped now are held back by the one, and a log below its dirty ratio is not due by the
    other, until the clock is advanced by that hour."""
    brokers.requires_kafkalite("the clock control is kafkalite's own")
    config = {"log.cleaner.backoff.ms": 300, "log.cleaner.min.compaction.lag.ms": HOUR_MS,
              "log.cleaner.max.compaction.lag.ms": HOUR_MS}
    with suite_brokers.running(controls=0, config=config) as b:
        bs = b.bootstrap
        create_compacted(bs, {"held-back": {"min.cleanable.dirty.ratio": "0.01"},
                              "not-due": {"min.cleanable.dirty.ratio": "1", "min.compaction.lag.ms": "0"},
                              "witness": {"min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0"}})
        now = int(time.time() * 1000)
        for topic in ("held-back", "not-due", "witness"):
            produce_timed(bs, topic, [("key", 30, now - 120_000), ("tail", 1, now)])
        wait_until(lambda: keys_left(bs, "witness", "key") == 3, timeout=30, interval=0.5,
                   what="the witness compacted")
        assert keys_left(bs, "held-back", "key") == 30
        assert keys_left(bs, "not-due", "key") == 30
        b.controls.advance_clock(ms=HOUR_MS)
        wait_until(lambda: keys_left(bs, "held-back", "key") == 3 and keys_left(bs, "not-due", "key") == 3,
                   timeout=30, interval=0.5, what="both topics compacted an hour later")


def test_a_dynamic_max_compaction_lag_reaches_existing_topics(tmp_path_factory, topic_name):
    """log.cleaner.max.compaction.lag.ms set on the broker at run time (IncrementalAlterConfigs on
    its BROKER resource) applies to a compacted topic that exists already, as Kafka reconfigures
    every log: its two-hour-old segment, never dirty enough at min.cleanable.dirty.ratio=1, is
    compacted once the setting is made."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    brokers.requires_own_broker("a cluster default that every topic of the broker takes")
    with brokers.start(tmp_path_factory.mktemp("dynamic-lag"), {"log.cleaner.backoff.ms": "300"}) as b:
        bs = b.bootstrap
        witness = topic_name + "-witness"
        create_compacted(bs, {topic_name: {"min.cleanable.dirty.ratio": "1"},
                              witness: {"min.cleanable.dirty.ratio": "0.01"}})
        now = int(time.time() * 1000)
        produce_timed(bs, topic_name, [("key", 30, now - 2 * HOUR_MS), ("tail", 1, now)])
        produce_timed(bs, witness, [("key", 30, now - 2 * HOUR_MS), ("tail", 1, now)])
        wait_until(lambda: keys_left(bs, witness, "key") == 3, timeout=30, interval=0.5, what="the witness compacted")
        assert keys_left(bs, topic_name, "key") == 30
        admin = AdminClient({"bootstrap.servers": bs})
        node = str(min(admin.list_topics(timeout=10).brokers))
        broker = ConfigResource(ResourceType.BROKER, node, incremental_configs=[ConfigEntry(
            "log.cleaner.max.compaction.lag.ms", str(HOUR_MS), incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([broker])[broker].result(30)
        wait_until(lambda: keys_left(bs, topic_name, "key") == 3, timeout=30, interval=0.5,
                   what="the topic compacted under the new setting")
