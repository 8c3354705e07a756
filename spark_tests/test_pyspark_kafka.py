"""PySpark (local[2]) with Spark's own Kafka connector, reading and writing the ``kafka`` format the
way a Spark job does: batch reads and writes, Structured Streaming sources and sinks, checkpoints
and restarts, transactions seen through ``kafka.isolation.level``.

Every result is checked against the records actually in the topics, written or read back with
confluent-kafka (other_client.py), never only through Spark itself.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark.errors import StreamingQueryException

from compat_tests.waiting import wait_until
from spark_tests import other_client

pytestmark = [pytest.mark.timeout(300)]


def reader(spark, bootstrap, **options):
    r = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def stream(spark, bootstrap, **options):
    r = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def rows(df):
    """(partition, offset, key, value) of a kafka DataFrame, sorted."""
    return sorted((r.partition, r.offset, None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value))
                  for r in df.select("partition", "offset", "key", "value").collect())


def values(df) -> list[bytes]:
    return [v for _p, _o, _k, v in rows(df)]


def in_topic(bootstrap, topic, isolation="read_uncommitted"):
    """(partition, offset, key, value) of every record in the topic, read with confluent-kafka."""
    return [(m.partition, m.offset, m.key, m.value) for m in other_client.read_all(bootstrap, topic, isolation)]


def run_available_now(writer, timeout_s: float = 120.0):
    """Starts a streaming query with Trigger.AvailableNow and waits for it to finish."""
    query = writer.trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(timeout_s), f"query {query.name} did not finish in {timeout_s}s"
    finally:
        if query.isActive:
            query.stop()
    return query


def batch_ranges(query, topic):
    """[(start, end)] offset ranges of partition 0 of each micro-batch that read something; the
    start of a query's very first micro-batch is None (its startingOffsets)."""
    def offset(o):  # a JSON object, or its text
        o = json.loads(o) if isinstance(o, str) else o
        return None if o is None else o[topic]["0"]

    out = []
    for prog in query.recentProgress:
        (src,) = prog["sources"]
        if prog["numInputRows"] or src["startOffset"] != src["endOffset"]:
            out.append((offset(src["startOffset"]), offset(src["endOffset"])))
    return out


class Collect:
    """A foreachBatch sink keeping (partition, offset, key, value) of every row on the driver: a
    memory sink cannot be restarted from a checkpoint."""

    def __init__(self):
        self.rows: list[tuple[int, int, bytes | None, bytes | None]] = []

    def __call__(self, df, batch_id: int) -> None:
        self.rows += rows(df)

    def sorted(self):
        return sorted(self.rows)


def _name(prefix: str) -> str:
    """A fresh name; underscores, since Spark 4 takes a memory sink's query name as a view name."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# ---- batch ----

@pytest.mark.produce_fetch
def test_batch_write_topic_column_key_value_headers_partition(spark, bootstrap, topic):
    a, b = topic(2), topic(1)
    data = [(a if i < 8 else b, f"k{i}", f"v{i}", i % 2 if i < 8 else 0,
             [("h", str(i).encode()), ("none", None), ("h", b"again")]) for i in range(10)]
    data.append((a, None, "no key", 1, []))
    df = spark.createDataFrame(data, "topic string, key string, value string, partition int, "
                                     "headers array<struct<key:string, value:binary>>")
    df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).save()  # the topic column routes

    written = {}
    for t in (a, b):
        for m in other_client.read_all(bootstrap, t):
            written[m.value.decode()] = (t, m.partition, m.offset, None if m.key is None else m.key.decode(),
                                         list(m.headers), m.timestamp_ms)
    assert len(written) == len(data)
    for t, key, value, partition, headers in data:
        assert written[value][:2] == (t, partition) and written[value][3] == key
        assert written[value][4] == headers
    for t, n in ((a, 2), (b, 1)):
        for p in range(n):
            offsets = sorted(w[2] for w in written.values() if w[:2] == (t, p))
            assert offsets == list(range(len(offsets)))

    back = reader(spark, bootstrap, subscribe=f"{a},{b}", includeHeaders="true")
    got = back.selectExpr("topic", "partition", "offset", "CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value",
                          "headers", "CAST(unix_millis(timestamp) AS LONG) AS ms", "timestampType").collect()
    assert {r.timestampType for r in got} == {0}  # CreateTime
    assert {r.value: (r.topic, r.partition, r.offset, r.key,
                      [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers or []], r.ms)
            for r in got} == written


@pytest.mark.produce_fetch
def test_batch_read_earliest_latest_json_offsets_and_min_partitions(spark, bootstrap, topic):
    t = topic(2)
    other_client.produce(bootstrap, t, [(0, None, b"p0-%d" % i, None) for i in range(5)]
                         + [(1, None, b"p1-%d" % i, None) for i in range(3)])
    everything = rows(reader(spark, bootstrap, subscribe=t))  # defaults: earliest .. latest
    assert everything == in_topic(bootstrap, t)
    assert [(p, o, v) for p, o, _k, v in everything] == \
        [(0, i, b"p0-%d" % i) for i in range(5)] + [(1, i, b"p1-%d" % i) for i in range(3)]
    assert rows(reader(spark, bootstrap, subscribe=t, startingOffsets="earliest", endingOffsets="latest")) == everything

    part = reader(spark, bootstrap, subscribe=t,
                  startingOffsets=json.dumps({t: {"0": 2, "1": -2}}),   # -2: earliest
                  endingOffsets=json.dumps({t: {"0": 4, "1": -1}}))     # -1: latest
    assert values(part) == [b"p0-2", b"p0-3", b"p1-0", b"p1-1", b"p1-2"]

    split = reader(spark, bootstrap, subscribe=t, minPartitions="5")  # offset ranges split into >= 5 tasks
    assert split.rdd.getNumPartitions() >= 5
    assert rows(split) == everything


@pytest.mark.produce_fetch
def test_subscribe_pattern_and_assign(spark, bootstrap, topic):
    base = _name("sparkpat")
    a = topic(2, name=f"{base}-a")
    b = topic(1, name=f"{base}-b")
    other = topic(1, name=_name("unrelated"))
    other_client.produce(bootstrap, a, [(0, None, b"a0", None), (1, None, b"a1", None)])
    other_client.produce(bootstrap, b, [(0, None, b"b0", None)])
    other_client.produce(bootstrap, other, [(0, None, b"o0", None)])

    pattern = reader(spark, bootstrap, subscribePattern=f"{base}-.*")
    assert sorted(values(pattern)) == [b"a0", b"a1", b"b0"]
    assigned = reader(spark, bootstrap, assign=json.dumps({a: [1], b: [0]}))
    assert sorted(values(assigned)) == [b"a1", b"b0"]


@pytest.mark.offsets
def test_starting_and_ending_offsets_by_timestamp(spark, bootstrap, topic):
    t = topic(2)
    base = int(time.time() * 1000) - 3_600_000
    p0 = [base + 1000, base + 2000, base + 3000, base + 4000]
    p1 = [base + 1500, base + 3500, base + 2500]
    other_client.produce(bootstrap, t, [(0, None, b"p0-%d" % i, ts) for i, ts in enumerate(p0)]
                         + [(1, None, b"p1-%d" % i, ts) for i, ts in enumerate(p1)])

    def offsets(**options):
        return [(p, o) for p, o, _k, _v in rows(reader(spark, bootstrap, subscribe=t, **options))]

    # the first offset whose timestamp is >= the given one, per partition
    assert offsets(startingTimestamp=str(base + 2000)) == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2)]
    assert offsets(startingOffsetsByTimestamp=json.dumps({t: {"0": base + 4000, "1": base + 1000}})) == \
        [(0, 3), (1, 0), (1, 1), (1, 2)]
    assert offsets(startingOffsets="earliest",
                   endingOffsetsByTimestamp=json.dumps({t: {"0": base + 3000, "1": base + 3500}})) == \
        [(0, 0), (0, 1), (1, 0)]
    # no offset for the timestamp in partition 1: "latest" instead of an error when asked
    assert offsets(startingTimestamp=str(base + 3600), startingOffsetsByTimestampStrategy="latest") == [(0, 3)]
    ts = reader(spark, bootstrap, subscribe=t).selectExpr("partition", "offset",
                                                          "CAST(unix_millis(timestamp) AS LONG) AS ms").collect()
    assert sorted((r.partition, r.offset, r.ms) for r in ts) == \
        [(0, i, x) for i, x in enumerate(p0)] + [(1, i, x) for i, x in enumerate(p1)]


@pytest.mark.offsets
def test_fail_on_data_loss_after_delete_records(spark, bootstrap, topic, tmp_path):
    t = topic(1)
    other_client.produce(bootstrap, t, [(0, None, b"v%d" % i, None) for i in range(10)])
    checkpoint = str(tmp_path / "checkpoint")
    before = Collect()
    run_available_now(stream(spark, bootstrap, subscribe=t, startingOffsets="earliest")
                      .writeStream.foreachBatch(before).option("checkpointLocation", checkpoint))
    assert before.sorted() == in_topic(bootstrap, t)

    other_client.produce(bootstrap, t, [(0, None, b"v%d" % i, None) for i in range(10, 20)])
    assert other_client.admin(bootstrap).delete_records(t, {0: 15}) == {0: 15}
    assert in_topic(bootstrap, t)[0][1] == 15

    assert values(reader(spark, bootstrap, subscribe=t)) == [b"v%d" % i for i in range(15, 20)]  # earliest moved
    from_deleted = json.dumps({t: {"0": 4}})
    with pytest.raises(Exception, match=r"(?is)data loss|data may have been lost|not available"):
        reader(spark, bootstrap, subscribe=t, startingOffsets=from_deleted).collect()
    assert values(reader(spark, bootstrap, subscribe=t, startingOffsets=from_deleted, failOnDataLoss="false")) == \
        [b"v%d" % i for i in range(15, 20)]

    # a streaming query whose checkpoint points below the log start: fails, or skips ahead when allowed
    copy = str(tmp_path / "checkpoint-copy")
    shutil.copytree(checkpoint, copy)
    strict = Collect()
    with pytest.raises(StreamingQueryException, match=r"(?is)data loss|data may have been lost|changed from"):
        run_available_now(stream(spark, bootstrap, subscribe=t)
                          .writeStream.foreachBatch(strict).option("checkpointLocation", copy))
    assert strict.rows == []
    lenient = Collect()
    run_available_now(stream(spark, bootstrap, subscribe=t, failOnDataLoss="false")
                      .writeStream.foreachBatch(lenient).option("checkpointLocation", checkpoint))
    assert lenient.sorted() == in_topic(bootstrap, t)


# ---- transactions ----

@pytest.mark.transactions
def test_read_committed_across_committed_aborted_and_open_transactions(spark, bootstrap, topic, tmp_path):
    t = topic(1)
    # offsets: c0 0, marker 1, a0 a1 2-3, marker 4, c1 5, marker 6, a2 7, marker 8, c2 9, marker 10
    other_client.run_plan(bootstrap, t, [("commit", [b"c0"]), ("abort", [b"a0", b"a1"]), ("commit", [b"c1"]),
                                         ("abort", [b"a2"]), ("commit", [b"c2"])])
    p = other_client.producer(bootstrap)
    p.begin_transaction()
    other_client.send(p, t, 0, [b"open0", b"open1"])  # offsets 11, 12: the last stable offset stays at 11
    committed_only = [(0, 0, b"c0", b"c0"), (0, 5, b"c1", b"c1"), (0, 9, b"c2", b"c2")]
    checkpoint = str(tmp_path / "checkpoint")
    try:
        assert in_topic(bootstrap, t, "read_committed") == committed_only
        assert rows(reader(spark, bootstrap, subscribe=t, **{"kafka.isolation.level": "read_committed"})) == \
            committed_only
        assert values(reader(spark, bootstrap, subscribe=t)) == \
            [b"c0", b"a0", b"a1", b"c1", b"a2", b"c2", b"open0", b"open1"]

        # micro-batches of 6 offsets: [0, 6) holds an aborted transaction between two committed
        # records, [6, 11) an aborted one between markers and c2; the open transaction is not read
        first = Collect()
        query = run_available_now(stream(spark, bootstrap, subscribe=t, startingOffsets="earliest",
                                         maxOffsetsPerTrigger="6", **{"kafka.isolation.level": "read_committed"})
                                  .writeStream.foreachBatch(first).option("checkpointLocation", checkpoint))
        assert batch_ranges(query, t) == [(None, 6), (6, 11)]  # from earliest, 0
        assert first.sorted() == committed_only
    finally:
        p.commit_transaction(30)
    assert values(reader(spark, bootstrap, subscribe=t, **{"kafka.isolation.level": "read_committed"})) == \
        [b"c0", b"c1", b"c2", b"open0", b"open1"]

    resumed = Collect()  # the same checkpoint: only the now committed records, once
    query = run_available_now(stream(spark, bootstrap, subscribe=t, **{"kafka.isolation.level": "read_committed"})
                              .writeStream.foreachBatch(resumed).option("checkpointLocation", checkpoint))
    assert resumed.sorted() == [(0, 11, b"open0", b"open0"), (0, 12, b"open1", b"open1")]
    assert batch_ranges(query, t) == [(11, 14)]


# ---- structured streaming ----

@pytest.mark.produce_fetch
def test_available_now_with_max_offsets_per_trigger(spark, bootstrap, topic):
    t = topic(2)
    other_client.produce(bootstrap, t, [(i % 2, b"k%d" % i, b"v%02d" % i, None) for i in range(12)])
    q = _name("maxoff")
    query = run_available_now(stream(spark, bootstrap, subscribe=t, startingOffsets="earliest",
                                     maxOffsetsPerTrigger="4")
                              .writeStream.format("memory").queryName(q))
    assert rows(spark.table(q)) == in_topic(bootstrap, t)
    sizes = [prog["numInputRows"] for prog in query.recentProgress if prog["numInputRows"]]
    assert sum(sizes) == 12 and max(sizes) <= 4 and len(sizes) >= 3, sizes


@pytest.mark.exactly_once
def test_checkpoint_survives_a_restart_into_a_file_sink(spark, bootstrap, topic, tmp_path):
    t = topic(2)
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    other_client.produce(bootstrap, t, [(i % 2, None, b"first-%02d" % i, None) for i in range(40)])

    def sink_rows():
        return sorted((r.partition, r.offset, bytes(r.value)) for r in spark.read.parquet(out).collect())

    def query(**options):
        return (stream(spark, bootstrap, subscribe=t, startingOffsets="earliest", **options)
                .select("partition", "offset", "value")
                .writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint))

    first = query(maxOffsetsPerTrigger="4").trigger(processingTime="200 milliseconds").start()
    try:  # stopped in the middle of the backlog
        wait_until(lambda: first.lastProgress and first.lastProgress["batchId"] >= 1, 60, 0.3, "two micro-batches")
    finally:
        first.stop()
    before = sink_rows()
    assert 0 < len(before) < 40 and len(set(before)) == len(before)

    other_client.produce(bootstrap, t, [(i % 2, None, b"second-%02d" % i, None) for i in range(10)])
    resumed = run_available_now(query(maxOffsetsPerTrigger="20"))
    expected = [(p, o, v) for p, o, _k, v in in_topic(bootstrap, t)]
    assert sink_rows() == expected  # nothing lost, nothing twice
    read = sum(prog["numInputRows"] for prog in resumed.recentProgress)
    # it starts where the first run's last committed micro-batch ended: at most that one batch
    # (whose files the sink already has) is read again
    assert 50 - len(before) <= read <= 50 - len(before) + 4, (read, len(before))


@pytest.mark.produce_fetch
def test_topic_gains_partitions_while_the_query_runs(spark, bootstrap, topic):
    t = topic(1)
    other_client.produce(bootstrap, t, [(0, None, b"p0-%d" % i, None) for i in range(3)])
    q = _name("grow")
    query = (stream(spark, bootstrap, subscribe=t, startingOffsets="earliest")
             .writeStream.format("memory").queryName(q).trigger(processingTime="300 milliseconds").start())
    try:
        wait_until(lambda: spark.table(q).count() == 3, 60, 0.3, "the first records")
        other_client.admin(bootstrap).create_partitions(t, 3)
        other_client.produce(bootstrap, t, [(p, None, b"p%d-%d" % (p, i), None) for p in (1, 2, 0) for i in range(2)])
        wait_until(lambda: spark.table(q).count() >= 9, 60, 0.3, "records of the new partitions")
        # every offset the source has seen processed: a record read twice would be in the table now
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    assert rows(spark.table(q)) == in_topic(bootstrap, t)
    assert {p for p, _o, _k, _v in rows(spark.table(q))} == {0, 1, 2}


@pytest.mark.exactly_once
def test_streaming_write_to_a_topic_resumes_from_its_checkpoint(spark, bootstrap, topic, tmp_path):
    src = topic(2)
    sink = topic(1)
    checkpoint = str(tmp_path / "checkpoint")
    other_client.produce(bootstrap, src, [(i % 2, b"k%d" % i, b"first-%d" % i, None) for i in range(5)])

    def copy_available():
        return run_available_now(stream(spark, bootstrap, subscribe=src, startingOffsets="earliest")
                                 .selectExpr("key", "value")
                                 .writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                                 .option("topic", sink).option("checkpointLocation", checkpoint))

    def copied():
        return sorted((k, v) for _p, _o, k, v in in_topic(bootstrap, sink))

    copy_available()
    assert copied() == sorted((b"k%d" % i, b"first-%d" % i) for i in range(5))

    other_client.produce(bootstrap, src, [(i % 2, b"k%d" % i, b"second-%d" % i, None) for i in range(4)])
    query = copy_available()  # the same checkpoint: starts where the first run stopped
    assert sum(prog["numInputRows"] for prog in query.recentProgress) == 4
    assert copied() == sorted([(b"k%d" % i, b"first-%d" % i) for i in range(5)]
                              + [(b"k%d" % i, b"second-%d" % i) for i in range(4)])

    copy_available()  # nothing new: nothing written
    assert len(copied()) == 9


class TransactionalWriter:
    """A foreachBatch function that writes each micro-batch to a topic in one Kafka transaction,
    exactly once across query restarts: the transaction also commits, for a consumer group, the
    source offsets the batch covers (TxnOffsetCommit), and a batch that Spark runs again after a
    restart drops the rows below those committed offsets. transactional.id is the query's name
    and the batch id, so a new attempt at a batch fences and aborts an earlier attempt's open
    transaction. `fail` injects failures: batch id -> "before_commit" | "after_commit"."""

    def __init__(self, bootstrap: str, source: str, sink: str, name: str):
        self.bootstrap, self.source, self.sink, self.name = bootstrap, source, sink, name
        self.fail: dict[int, str] = {}

    def committed(self, consumer: Consumer, partitions: list[int]) -> dict[int, int]:
        tps = consumer.committed([TopicPartition(self.source, p) for p in partitions], timeout=20)
        return {tp.partition: tp.offset for tp in tps}

    def __call__(self, df, batch_id: int) -> None:
        batch = df.select("partition", "offset", "key", "value").collect()
        p = other_client.producer(self.bootstrap, f"{self.name}-{batch_id}")
        group = Consumer({"bootstrap.servers": self.bootstrap, "broker.address.family": "v4", "group.id": self.name,
                          "enable.auto.commit": False, "isolation.level": "read_committed"})
        try:
            done = self.committed(group, sorted({r.partition for r in batch}))
            todo = [r for r in batch if r.offset >= done.get(r.partition, -1)]
            if not todo:
                return
            p.begin_transaction()
            for r in todo:
                p.produce(self.sink, key=r.key, value=r.value)
            ends: dict[int, int] = {}
            for r in todo:
                ends[r.partition] = max(ends.get(r.partition, 0), r.offset + 1)
            p.send_offsets_to_transaction([TopicPartition(self.source, q, o) for q, o in ends.items()],
                                          group.consumer_group_metadata(), 30)
            if self.fail.get(batch_id) == "before_commit":
                del self.fail[batch_id]
                assert p.flush(30) == 0
                raise RuntimeError(f"injected failure in batch {batch_id} before its commit")
            p.commit_transaction(30)
            if self.fail.get(batch_id) == "after_commit":
                del self.fail[batch_id]
                raise RuntimeError(f"injected failure in batch {batch_id} after its commit")
        finally:
            group.close()


@pytest.mark.exactly_once
@pytest.mark.transactions
def test_foreach_batch_with_a_transactional_producer_is_exactly_once(spark, bootstrap, topic, tmp_path):
    src, sink = topic(2), topic(1)
    sent = [b"v%02d" % i for i in range(12)]
    other_client.produce(bootstrap, src, [(i % 2, b"k%02d" % i, v, None) for i, v in enumerate(sent)])
    writer = TransactionalWriter(bootstrap, src, sink, _name("txn_copy"))
    writer.fail = {1: "before_commit", 2: "after_commit"}
    checkpoint = str(tmp_path / "checkpoint")

    def run():
        return run_available_now(stream(spark, bootstrap, subscribe=src, startingOffsets="earliest",
                                        maxOffsetsPerTrigger="4")
                                 .writeStream.foreachBatch(writer).option("checkpointLocation", checkpoint))

    for injected in ("before its commit", "after its commit"):
        with pytest.raises(StreamingQueryException, match=f"injected failure in batch . {injected}"):
            run()
    run()
    assert writer.fail == {}
    assert sorted(v for _p, _o, _k, v in in_topic(bootstrap, sink, "read_committed")) == sent
    # the aborted first attempt of batch 1 is in the log, invisible under read_committed
    uncommitted = [v for _p, _o, _k, v in in_topic(bootstrap, sink)]
    assert len(uncommitted) > len(sent) and set(uncommitted) == set(sent)
