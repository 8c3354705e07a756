"""The Kafka client calls of Spark's Kafka connector, checked answer by answer, without Spark.

java/SparkConnectorCalls.java makes the calls the way the connector (Spark 4.x,
connector/kafka-0-10-sql) makes them: KafkaOffsetReaderAdmin's Admin.describeTopics / listTopics /
listOffsets (earliest, latest, forTimestamp; READ_COMMITTED when kafka.isolation.level says so),
KafkaDataConsumer's assign / seek / poll / position / seekToBeginning / seekToEnd per partition
with the executor's configs, KafkaWriteTask's idempotent producer. Each test checks exact offsets,
exact records, that no aborted record is visible under read_committed, and the last stable offset.
"""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka import TopicPartition

from compat_tests.clients.java import JavaError
from spark_tests import connector_calls as calls
from spark_tests import other_client

pytestmark = [pytest.mark.java, pytest.mark.timeout(180)]


def _values(records):
    return [(r["partition"], r["offset"], r["value"]) for r in records]


@pytest.mark.produce_fetch
@pytest.mark.idempotence
def test_write_task_rows_read_back_exactly(bootstrap, topic):
    t = topic(2)
    ts = int(time.time() * 1000) - 60_000
    rows = [
        {"key": b"k0", "value": b"v0", "partition": 0, "timestamp": ts,
         "headers": [("h1", b"a"), ("h2", None), ("h1", b"b")]},
        {"key": None, "value": b"v1", "partition": 1, "timestamp": ts + 1, "headers": None},
        {"key": b"k2", "value": None, "partition": 0, "timestamp": ts + 2, "headers": []},
        {"key": b"", "value": b"", "partition": 1, "timestamp": ts + 3, "headers": [("empty", b"")]},
    ]
    rows += [{"key": f"k{i}".encode(), "value": f"v{i}".encode() * (i % 7 + 1), "partition": i % 2,
              "timestamp": ts + i, "headers": [("i", str(i).encode())]} for i in range(4, 200)]
    before = int(time.time() * 1000)
    rows.append({"key": b"now", "value": b"no timestamp column", "partition": 0, "timestamp": None, "headers": None})
    written = calls.write(bootstrap, rows, topic=t)
    after = int(time.time() * 1000)

    # offsets: per partition 0, 1, 2, ... in row order
    expected_offset = {0: 0, 1: 0}
    for row, w in zip(rows, written):
        assert (w["topic"], w["partition"]) == (t, row["partition"])
        assert w["offset"] == expected_offset[row["partition"]]
        expected_offset[row["partition"]] += 1
    assert before - 1000 <= written[-1]["timestamp"] <= after + 1000

    parts, (earliest, latest) = calls.offsets(bootstrap, {"subscribe": [t]}, ["earliest", "latest"])
    assert parts == [f"{t}:0", f"{t}:1"]
    assert earliest == {f"{t}:0": 0, f"{t}:1": 0}
    assert latest == {f"{t}:0": expected_offset[0], f"{t}:1": expected_offset[1]}

    records, polls = calls.read(bootstrap, [(t, 0, 0, expected_offset[0]), (t, 1, 0, expected_offset[1])])
    got = {(r["partition"], r["offset"]): r for r in records}
    assert len(got) == len(records) == len(rows)
    for row, w in zip(rows, written):
        r = got[(w["partition"], w["offset"])]
        assert r["key"] == row["key"]
        assert r["value"] == row["value"]
        assert r["headers"] == list(row["headers"] or [])
        assert r["timestamp"] == (row["timestamp"] if row["timestamp"] is not None else w["timestamp"])
        assert r["timestamp_type"] == "CreateTime"
    for range_polls, p in zip(polls, (0, 1)):
        assert range_polls, "the reader polled"
        for poll in range_polls:
            assert (poll["earliest"], poll["latest"]) == (0, expected_offset[p])

    # the writer is an idempotent producer: one producer id per partition, sequences 0..n-1
    states = calls.producers(bootstrap, [f"{t}:0", f"{t}:1"])
    for p in (0, 1):
        (state,) = states[f"{t}:{p}"]
        assert state["producer_id"] >= 0 and state["producer_epoch"] >= 0
        assert state["last_sequence"] == expected_offset[p] - 1
        assert state["current_transaction_start_offset"] is None
    assert states[f"{t}:0"][0]["producer_id"] == states[f"{t}:1"][0]["producer_id"]


@pytest.mark.produce_fetch
@pytest.mark.offsets
def test_strategies_resolve_partitions_like_the_connector(bootstrap, topic):
    base = f"sparkstrat-{int(time.time() * 1000) % 10**8}"
    alpha = topic(2, name=f"{base}-alpha")
    beta = topic(1, name=f"{base}-beta")
    other = topic(1, name=f"x{base}-other")  # the pattern search finds it only unanchored
    calls.write(bootstrap, [{"topic": alpha, "partition": i % 2, "value": b"a%d" % i} for i in range(5)]
                + [{"topic": beta, "partition": 0, "value": b"b%d" % i} for i in range(2)]
                + [{"topic": other, "partition": 0, "value": b"o"}])

    parts, (earliest, latest) = calls.offsets(bootstrap, {"subscribePattern": f"^{re.escape(base)}-.*"},
                                              ["earliest", "latest"])
    assert parts == [f"{alpha}:0", f"{alpha}:1", f"{beta}:0"]
    assert earliest == {f"{alpha}:0": 0, f"{alpha}:1": 0, f"{beta}:0": 0}
    assert latest == {f"{alpha}:0": 3, f"{alpha}:1": 2, f"{beta}:0": 2}

    # Spark searches with the regex (Regex.findFirstIn), it does not match the whole name
    parts, _ = calls.offsets(bootstrap, {"subscribePattern": re.escape(base) + "-(beta|other)"}, [])
    assert parts == [f"{beta}:0", f"{other}:0"]

    parts, (latest,) = calls.offsets(bootstrap, {"assign": [f"{alpha}:1", f"{beta}:0"]}, ["latest"])
    assert parts == [f"{alpha}:1", f"{beta}:0"]
    assert latest == {f"{alpha}:1": 2, f"{beta}:0": 2}

    parts, (latest,) = calls.offsets(bootstrap, {"subscribe": [alpha]}, ["latest"])
    assert parts == [f"{alpha}:0", f"{alpha}:1"]

    # JSON offsets: a start in the middle of a partition
    records, _ = calls.read(bootstrap, [(alpha, 0, 1, 3), (alpha, 1, 0, 2), (beta, 0, 1, 2)])
    assert _values(records) == [(0, 1, b"a2"), (0, 2, b"a4"), (1, 0, b"a1"), (1, 1, b"a3"), (0, 1, b"b1")]


@pytest.mark.offsets
def test_offsets_for_timestamps(bootstrap, topic):
    t = topic(2)
    base = int(time.time() * 1000) - 3_600_000  # inside any retention
    p0 = [base + 1000, base + 2000, base + 3000, base + 4000]
    p1 = [base + 1500, base + 3500, base + 2500]  # not in order: the first offset with a timestamp >= wins
    calls.write(bootstrap, [{"partition": 0, "timestamp": x, "value": b"p0-%d" % i} for i, x in enumerate(p0)]
                + [{"partition": 1, "timestamp": x, "value": b"p1-%d" % i} for i, x in enumerate(p1)], topic=t)
    a, b = f"{t}:0", f"{t}:1"
    answers = calls.offsets_with_timestamps(bootstrap, {"subscribe": [t]}, [
        {"timestamp": base},             # before everything: the first offsets
        {"timestamp": base + 2000},      # exact hit in p0; p1's first >= is offset 1 (3500)
        {"timestamp": base + 2001},
        {"timestamp": base + 3600},      # p1 has none
        {"timestamp": base + 5000},      # none anywhere
        {"timestamps": {a: base + 4000, b: base + 1000}},  # startingOffsetsByTimestamp
    ])
    assert answers[0] == {a: (0, base + 1000), b: (0, base + 1500)}
    assert answers[1] == {a: (1, base + 2000), b: (1, base + 3500)}
    assert answers[2] == {a: (2, base + 3000), b: (1, base + 3500)}
    assert answers[3] == {a: (3, base + 4000), b: (-1, -1)}
    assert answers[4] == {a: (-1, -1), b: (-1, -1)}
    assert answers[5] == {a: (3, base + 4000), b: (0, base + 1500)}

    # the same under read_committed (Spark passes the consumer's isolation level to listOffsets)
    committed = calls.offsets_with_timestamps(bootstrap, {"subscribe": [t]}, [{"timestamp": base + 2000}, "latest"],
                                              isolation="read_committed")
    assert committed[0] == answers[1]
    assert {k: o for k, (o, _ts) in committed[1].items()} == {a: 4, b: 3}

    # reading from a timestamp's offset
    records, _ = calls.read(bootstrap, [(t, 0, 2, 4), (t, 1, 1, 3)])
    assert [(r["partition"], r["offset"], r["timestamp"]) for r in records] == \
        [(0, 2, base + 3000), (0, 3, base + 4000), (1, 1, base + 3500), (1, 2, base + 2500)]


@pytest.mark.transactions
def test_read_committed_skips_aborted_data_and_control_batches(bootstrap, topic):
    t = topic(1)
    other_client.run_plan(bootstrap, t, [
        ("commit", [b"c0", b"c1"]),        # 0, 1; commit marker 2
        ("abort", [b"a0", b"a1", b"a2"]),  # 3, 4, 5; abort marker 6
        ("commit", [b"c2"]),               # 7; commit marker 8
        ("abort", [b"a3"]),                # 9; abort marker 10
    ])
    (w,) = calls.write(bootstrap, [{"partition": 0, "value": b"n0"}], topic=t)  # idempotent, not transactional
    assert w["offset"] == 11
    tp = f"{t}:0"

    for isolation in ("read_committed", "read_uncommitted"):
        _, (earliest, latest) = calls.offsets(bootstrap, {"assign": [tp]}, ["earliest", "latest"], isolation)
        assert (earliest, latest) == ({tp: 0}, {tp: 12}), isolation

    records, polls = calls.read(bootstrap, [(t, 0, 0, 12)], "read_committed")
    assert _values(records) == [(0, 0, b"c0"), (0, 1, b"c1"), (0, 7, b"c2"), (0, 11, b"n0")]
    for poll in polls[0]:
        assert (poll["earliest"], poll["latest"]) == (0, 12)
        assert not set(poll["offsets"]) & {2, 3, 4, 5, 6, 8, 9, 10}

    records, _ = calls.read(bootstrap, [(t, 0, 0, 12)], "read_uncommitted")
    assert [r["offset"] for r in records] == [0, 1, 3, 4, 5, 7, 9, 11]
    assert [r["value"] for r in records] == [b"c0", b"c1", b"a0", b"a1", b"a2", b"c2", b"a3", b"n0"]

    # ranges that start or end inside aborted data or on a marker, as Spark's offset ranges may
    records, polls = calls.read(bootstrap, [(t, 0, 3, 7), (t, 0, 2, 3), (t, 0, 3, 8), (t, 0, 8, 12), (t, 0, 9, 11)],
                                "read_committed")
    assert _values(records) == [(0, 7, b"c2"), (0, 11, b"n0")]
    # (8, 12) is served from what the poll of (3, 8) fetched beyond c2, as Spark's fetched-data cache does
    assert [[poll["seek"] for poll in range_polls] for range_polls in polls] == [[3], [2], [3], [], [9]]
    for poll in (poll for range_polls in polls for poll in range_polls):
        assert set(poll["offsets"]) <= {7, 11} and poll["position_after_poll"] == 12


@pytest.mark.transactions
def test_open_transaction_holds_the_last_stable_offset(bootstrap, topic):
    t = topic(1)
    tp = f"{t}:0"
    calls.write(bootstrap, [{"partition": 0, "value": b"n0"}, {"partition": 0, "value": b"n1"}], topic=t)  # 0, 1
    p = other_client.producer(bootstrap)
    p.begin_transaction()
    other_client.send(p, t, 0, [b"t0", b"t1"])  # 2, 3: open
    (w,) = calls.write(bootstrap, [{"partition": 0, "value": b"n2"}], topic=t)  # 4, after the open transaction
    assert w["offset"] == 4
    try:
        _, (committed_latest,) = calls.offsets(bootstrap, {"assign": [tp]}, ["latest"], "read_committed")
        _, (uncommitted_latest,) = calls.offsets(bootstrap, {"assign": [tp]}, ["latest"], "read_uncommitted")
        assert committed_latest == {tp: 2}, "LATEST under read_committed is the last stable offset"
        assert uncommitted_latest == {tp: 5}, "LATEST under read_uncommitted is the high watermark"

        records, polls = calls.read(bootstrap, [(t, 0, 0, 2)], "read_committed")
        assert _values(records) == [(0, 0, b"n0"), (0, 1, b"n1")]
        for poll in polls[0]:
            assert poll["latest"] == 2, "seekToEnd under read_committed stops at the last stable offset"
            assert max(poll["offsets"], default=-1) < 2

        states = calls.producers(bootstrap, [tp])[tp]
        assert sorted(s["current_transaction_start_offset"] for s in states if
                      s["current_transaction_start_offset"] is not None) == [2]
    finally:
        p.commit_transaction(30)  # marker at 5

    _, (committed_latest,) = calls.offsets(bootstrap, {"assign": [tp]}, ["latest"], "read_committed")
    assert committed_latest == {tp: 6}
    records, _ = calls.read(bootstrap, [(t, 0, 2, 6)], "read_committed")
    assert _values(records) == [(0, 2, b"t0"), (0, 3, b"t1"), (0, 4, b"n2")]


@pytest.mark.offsets
def test_deleted_records_move_earliest_and_fail_a_read_below_it(bootstrap, topic):
    t = topic(1)
    tp = f"{t}:0"
    calls.write(bootstrap, [{"partition": 0, "value": b"r%d" % i} for i in range(6)], topic=t)
    admin = AdminClient({"bootstrap.servers": bootstrap, "broker.address.family": "v4"})
    (fut,) = admin.delete_records([TopicPartition(t, 0, 3)], request_timeout=30).values()
    assert fut.result(30).low_watermark == 3

    _, (earliest, latest) = calls.offsets(bootstrap, {"assign": [tp]}, ["earliest", "latest"])
    assert (earliest, latest) == ({tp: 3}, {tp: 6})
    records, polls = calls.read(bootstrap, [(t, 0, 3, 6)])
    assert _values(records) == [(0, 3, b"r3"), (0, 4, b"r4"), (0, 5, b"r5")]
    assert all(poll["earliest"] == 3 for poll in polls[0])

    # with auto.offset.reset=none the consumer reports OFFSET_OUT_OF_RANGE; Spark calls it data loss
    with pytest.raises(JavaError) as err:
        calls.read(bootstrap, [(t, 0, 0, 6)])
    assert "data loss" in str(err.value.message)
