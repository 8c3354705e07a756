"""PySpark (local[2]) with Spark's own Kafka connector, reading and writing the ``kafka`` format.

The connector (spark-sql-kafka-0-10_2.13 with spark-token-provider-kafka-0-10_2.13, kafka-clients
and commons-pool2) is published only to Maven, so these tests take it from

* ``SPARK_KAFKA_JARS``: colon-separated paths of those jars (for the installed PySpark's version), or
* ``SPARK_KAFKA_PACKAGES``: Maven coordinates for ``spark.jars.packages``, where Maven Central is
  reachable, e.g. ``org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0`` (Spark resolves the rest),

and skip without either. test_connector_calls.py covers the connector's client calls in any case.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from spark_tests import other_client

pytestmark = [pytest.mark.timeout(600)]

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


def run_available_now(writer, timeout_s: float = 180.0):
    """Starts a streaming query with Trigger.AvailableNow and waits for it to finish."""
    query = writer.trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(timeout_s), f"query {query.name} did not finish in {timeout_s}s"
    finally:
        if query.isActive:
            query.stop()
    if query.exception() is not None:
        raise AssertionError(f"streaming query failed: {query.exception()}")
    return query


def _name(prefix: str) -> str:
    """A fresh name; underscores, since Spark 4 takes a memory sink's query name as a view name."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# ---- batch ----

@pytest.mark.produce_fetch
def test_batch_write_with_key_value_headers_partition_then_read(spark, bootstrap, topic):
    t = topic(2)
    data = [(f"k{i}", f"v{i}", i % 2, [("h", str(i).encode()), ("none", None)]) for i in range(10)]
    data.append((None, "no key", 1, []))
    df = spark.createDataFrame(data, "key string, value string, partition int, "
                                     "headers array<struct<key:string, value:binary>>")
    df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", t).save()

    back = reader(spark, bootstrap, subscribe=t, startingOffsets="earliest", endingOffsets="latest",
                  includeHeaders="true")
    got = back.selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "partition", "offset",
                          "headers", "topic", "timestampType").collect()
    assert len(got) == len(data)
    assert {r.topic for r in got} == {t} and {r.timestampType for r in got} == {0}  # CreateTime
    by_value = {r.value: r for r in got}
    for key, value, partition, headers in data:
        r = by_value[value]
        assert (r.key, r.partition) == (key, partition)
        assert [(h.key, None if h.value is None else bytes(h.value)) for h in (r.headers or [])] == headers
    for p in (0, 1):
        assert sorted(r.offset for r in got if r.partition == p) == list(range(sum(1 for d in data if d[2] == p)))


@pytest.mark.produce_fetch
def test_batch_read_earliest_latest_and_json_offsets(spark, bootstrap, topic):
    t = topic(2)
    other_client.produce(bootstrap, t, [(0, None, b"p0-%d" % i, None) for i in range(5)]
                         + [(1, None, b"p1-%d" % i, None) for i in range(3)])
    everything = rows(reader(spark, bootstrap, subscribe=t))  # defaults: earliest .. latest
    assert [(p, o, v) for p, o, _k, v in everything] == \
        [(0, i, b"p0-%d" % i) for i in range(5)] + [(1, i, b"p1-%d" % i) for i in range(3)]
    assert rows(reader(spark, bootstrap, subscribe=t, startingOffsets="earliest", endingOffsets="latest")) == everything

    part = reader(spark, bootstrap, subscribe=t,
                  startingOffsets=json.dumps({t: {"0": 2, "1": -2}}),   # -2: earliest
                  endingOffsets=json.dumps({t: {"0": 4, "1": -1}}))     # -1: latest
    assert values(part) == [b"p0-2", b"p0-3", b"p1-0", b"p1-1", b"p1-2"]


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


@pytest.mark.transactions
def test_read_committed_sees_committed_rows_only(spark, bootstrap, topic):
    t = topic(1)
    other_client.run_plan(bootstrap, t, [("commit", [b"c0", b"c1"]), ("abort", [b"a0", b"a1", b"a2"]),
                                         ("commit", [b"c2"]), ("abort", [b"a3"])])
    p = other_client.producer(bootstrap)
    p.begin_transaction()
    other_client.send(p, t, 0, [b"open0", b"open1"])  # an open transaction: the last stable offset stops before it
    try:
        committed = reader(spark, bootstrap, subscribe=t, **{"kafka.isolation.level": "read_committed"})
        assert rows(committed) == [(0, 0, b"c0", b"c0"), (0, 1, b"c1", b"c1"), (0, 7, b"c2", b"c2")]
        uncommitted = reader(spark, bootstrap, subscribe=t)
        assert values(uncommitted) == [b"c0", b"c1", b"a0", b"a1", b"a2", b"c2", b"a3", b"open0", b"open1"]

        q = _name("committed")
        run_available_now(stream(spark, bootstrap, subscribe=t, startingOffsets="earliest",
                                 **{"kafka.isolation.level": "read_committed"})
                          .writeStream.format("memory").queryName(q))
        assert sorted(values(spark.table(q))) == [b"c0", b"c1", b"c2"]
    finally:
        p.commit_transaction(30)
    committed = reader(spark, bootstrap, subscribe=t, **{"kafka.isolation.level": "read_committed"})
    assert values(committed) == [b"c0", b"c1", b"c2", b"open0", b"open1"]


# ---- structured streaming ----

@pytest.mark.produce_fetch
def test_available_now_into_memory_sink(spark, bootstrap, topic):
    t = topic(2)
    other_client.produce(bootstrap, t, [(i % 2, b"k%d" % i, b"v%d" % i, None) for i in range(6)])
    q = _name("avail")
    query = run_available_now(stream(spark, bootstrap, subscribe=t, startingOffsets="earliest")
                              .writeStream.format("memory").queryName(q))
    assert sorted(values(spark.table(q))) == sorted(b"v%d" % i for i in range(6))
    assert sum(prog["numInputRows"] for prog in query.recentProgress) == 6


@pytest.mark.produce_fetch
def test_max_offsets_per_trigger(spark, bootstrap, topic):
    t = topic(2)
    other_client.produce(bootstrap, t, [(i % 2, None, b"v%02d" % i, None) for i in range(12)])
    q = _name("maxoff")
    query = run_available_now(stream(spark, bootstrap, subscribe=t, startingOffsets="earliest",
                                     maxOffsetsPerTrigger="4")
                              .writeStream.format("memory").queryName(q))
    assert sorted(values(spark.table(q))) == [b"v%02d" % i for i in range(12)]
    sizes = [prog["numInputRows"] for prog in query.recentProgress if prog["numInputRows"]]
    assert sum(sizes) == 12 and max(sizes) <= 4 and len(sizes) >= 3, sizes


@pytest.mark.exactly_once
def test_streaming_write_resumes_from_checkpoint_without_duplicates(spark, bootstrap, topic, tmp_path):
    src = topic(2)
    sink = topic(1)
    checkpoint = str(tmp_path / "checkpoint")
    other_client.produce(bootstrap, src, [(i % 2, b"k%d" % i, b"first-%d" % i, None) for i in range(5)])

    def copy_available():
        return run_available_now(stream(spark, bootstrap, subscribe=src, startingOffsets="earliest")
                                 .selectExpr("key", "value")
                                 .writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                                 .option("topic", sink).option("checkpointLocation", checkpoint))

    copy_available()
    assert sorted(values(reader(spark, bootstrap, subscribe=sink))) == sorted(b"first-%d" % i for i in range(5))

    other_client.produce(bootstrap, src, [(i % 2, b"k%d" % i, b"second-%d" % i, None) for i in range(4)])
    query = copy_available()  # the same checkpoint: starts where the first run stopped
    assert sum(prog["numInputRows"] for prog in query.recentProgress) == 4
    copied = values(reader(spark, bootstrap, subscribe=sink))
    assert sorted(copied) == sorted([b"first-%d" % i for i in range(5)] + [b"second-%d" % i for i in range(4)])
    assert len(copied) == len(set(copied)) == 9

    copy_available()  # nothing new: nothing written
    assert len(values(reader(spark, bootstrap, subscribe=sink))) == 9
