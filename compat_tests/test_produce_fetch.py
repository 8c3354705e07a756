"""Produce and fetch with every client: keys, nulls, headers, timestamps, large records, keyed
partitioning, and where a consumer starts (latest, an offset inside a batch).

Topics are created explicitly (librdkafka's CreateTopics) so a broker's auto-creation settings do
not matter. Every test runs once per client adapter (fixture ``client``).
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from compat_tests.clients.base import Msg

pytestmark = [pytest.mark.produce_fetch, pytest.mark.timeout(180)]

MiB = 1024 * 1024


def view(msgs):
    """What a round trip must keep: key, value and headers, in order."""
    return [(m.key, m.value, tuple(m.headers)) for m in msgs]


def check_offsets(results, partition=0, first=0):
    assert [(r.partition, r.offset) for r in results] == [(partition, first + i) for i in range(len(results))]


def test_keys_and_values(client, create_topic, topic_name):
    create_topic(topic_name)
    msgs = [Msg(key=f"key-{i}".encode(), value=f"value-{i}".encode()) for i in range(10)]
    results = client.produce(topic_name, msgs)
    check_offsets(results)
    got = client.consume(topic_name, [0], len(msgs))
    assert view(got) == view(msgs)
    assert [(m.partition, m.offset) for m in got] == [(0, i) for i in range(len(msgs))]


def test_null_and_empty_keys_and_values(client, create_topic, topic_name):
    create_topic(topic_name)
    msgs = [
        Msg(key=None, value=b"value without key"),
        Msg(key=b"tombstone", value=None),
        Msg(key=b"empty value", value=b""),
        Msg(key=b"", value=b"empty key"),
        Msg(key=b"", value=b""),
        Msg(key=b"k", value=b"v"),
    ]
    check_offsets(client.produce(topic_name, msgs))
    got = client.consume(topic_name, [0], len(msgs))
    assert view(got) == view(msgs)


def test_record_without_key_and_value(client, create_topic, topic_name):
    create_topic(topic_name)
    msgs = [Msg(key=None, value=None), Msg(key=b"k", value=b"v")]
    check_offsets(client.produce(topic_name, msgs))
    assert view(client.consume(topic_name, [0], len(msgs))) == view(msgs)


def test_binary_keys_and_values(client, create_topic, topic_name):
    create_topic(topic_name)
    msgs = [Msg(key=bytes([i, 0, 255 - i]), value=bytes(range(256)) + bytes([i]) * i) for i in range(0, 256, 51)]
    check_offsets(client.produce(topic_name, msgs))
    assert view(client.consume(topic_name, [0], len(msgs))) == view(msgs)


def test_headers(client, create_topic, topic_name):
    create_topic(topic_name)
    msgs = [
        Msg(key=b"a", value=b"one header", headers=(("trace-id", b"abc123"),)),
        Msg(key=b"b", value=b"repeated names keep their order", headers=(("h", b"1"), ("h", b"2"), ("x", b"3"))),
        Msg(key=b"c", value=b"an empty header value", headers=(("empty", b""),)),
        Msg(key=b"d", value=b"no headers"),
    ]
    check_offsets(client.produce(topic_name, msgs))
    assert view(client.consume(topic_name, [0], len(msgs))) == view(msgs)


def test_null_header_value(client, create_topic, topic_name):
    create_topic(topic_name)
    msgs = [Msg(key=b"c", value=b"null header value", headers=(("null", None), ("after", b"x")))]
    check_offsets(client.produce(topic_name, msgs))
    assert view(client.consume(topic_name, [0], len(msgs))) == view(msgs)


def test_explicit_timestamps(client, create_topic, topic_name):
    create_topic(topic_name)
    base = 1_600_000_000_000
    msgs = [Msg(key=b"k", value=f"v{i}".encode(), timestamp_ms=base + 1000 * i) for i in range(5)]
    # out of order timestamps within a batch are allowed
    msgs.append(Msg(key=b"k", value=b"older", timestamp_ms=base - 86_400_000))
    check_offsets(client.produce(topic_name, msgs))
    got = client.consume(topic_name, [0], len(msgs))
    assert view(got) == view(msgs)
    assert [m.timestamp_ms for m in got] == [m.timestamp_ms for m in msgs]


def test_default_timestamp_is_create_time(client, create_topic, topic_name):
    create_topic(topic_name)
    before = int(time.time() * 1000)
    client.produce(topic_name, [Msg(key=b"k", value=b"now")])
    after = int(time.time() * 1000)
    (got,) = client.consume(topic_name, [0], 1)
    assert before - 5_000 <= got.timestamp_ms <= after + 5_000


def test_log_append_time(client, create_topic, topic_name):
    """With message.timestamp.type=LogAppendTime the broker stamps records with its own clock."""
    create_topic(topic_name, configs={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    client.produce(topic_name, [Msg(key=b"k", value=f"v{i}".encode(), timestamp_ms=1_500_000_000_000) for i in range(3)])
    after = int(time.time() * 1000)
    got = client.consume(topic_name, [0], 3)
    for m in got:
        assert before - 5_000 <= m.timestamp_ms <= after + 5_000, f"timestamp {m.timestamp_ms} is not the append time"


def test_one_mib_record(client, create_topic, topic_name):
    """A 1 MiB value needs a topic max.message.bytes above Kafka's default of 1048588 (the batch
    header and record framing come on top of the value)."""
    create_topic(topic_name, configs={"max.message.bytes": str(2 * MiB)})
    big = os.urandom(MiB)
    msgs = [Msg(key=b"big", value=big), Msg(key=b"after", value=b"small"), Msg(key=b"big2", value=big[::-1])]
    check_offsets(client.produce(topic_name, msgs))
    got = client.consume(topic_name, [0], len(msgs), timeout_s=60)
    assert [(m.key, len(m.value or b"")) for m in got] == [(m.key, len(m.value or b"")) for m in msgs]
    assert view(got) == view(msgs)


def test_keyed_records_share_a_partition(client, create_topic, topic_name):
    create_topic(topic_name, partitions=3)
    keys = [f"key-{i}".encode() for i in range(10)]
    msgs = [Msg(key=keys[i % len(keys)], value=f"{i}".encode()) for i in range(60)]
    results = client.produce(topic_name, msgs)
    partition_of_key: dict[bytes, set[int]] = {}
    for m, r in zip(msgs, results):
        partition_of_key.setdefault(m.key, set()).add(r.partition)
    assert all(len(ps) == 1 for ps in partition_of_key.values()), partition_of_key
    assert len({r.partition for r in results}) > 1, "10 keys all landed in one of 3 partitions"
    # offsets are dense per partition, in produce order
    per_partition: dict[int, list[int]] = {}
    for r in results:
        per_partition.setdefault(r.partition, []).append(r.offset)
    for p, offsets in per_partition.items():
        assert offsets == list(range(len(offsets))), (p, offsets)

    got = client.consume(topic_name, [0, 1, 2], len(msgs))
    where = {m.value: (r.partition, r.offset) for m, r in zip(msgs, results)}
    assert sorted(where[m.value] for m in got) == sorted(where.values())
    for m in got:
        assert (m.partition, m.offset) == where[m.value]
    for p in per_partition:
        in_p = [m for m in got if m.partition == p]
        assert [m.offset for m in in_p] == sorted(m.offset for m in in_p)
        assert [m.value for m in in_p] == [m.value for m, r in zip(msgs, results) if r.partition == p]


def test_explicit_partition(client, create_topic, topic_name):
    create_topic(topic_name, partitions=3)
    msgs = [Msg(key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(5)]
    check_offsets(client.produce(topic_name, msgs, partition=2), partition=2)
    got = client.consume(topic_name, [2], len(msgs))
    assert view(got) == view(msgs)
    assert {m.partition for m in got} == {2}


def test_consume_from_offset_inside_a_batch(client, create_topic, topic_name):
    """The broker returns whole batches; the client drops the records before its fetch offset."""
    create_topic(topic_name)
    msgs = [Msg(key=b"k", value=f"v{i}".encode()) for i in range(20)]
    check_offsets(client.produce(topic_name, msgs))  # one produce call: few batches, likely one
    got = client.consume(topic_name, [0], 13, start=7)
    assert [m.offset for m in got] == list(range(7, 20))
    assert view(got) == view(msgs[7:])


def test_consume_from_latest(client, create_topic, topic_name):
    """A consumer starting at "latest" sees only records produced after it started."""
    create_topic(topic_name)
    client.produce(topic_name, [Msg(key=b"old", value=f"old-{i}".encode()) for i in range(5)])
    result: dict = {}

    def consume():
        try:
            result["msgs"] = client.consume(topic_name, [0], 3, start="latest", timeout_s=60)
        except BaseException as e:  # reported below
            result["error"] = e

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    deadline = time.monotonic() + 60
    i = 0
    while t.is_alive() and time.monotonic() < deadline:
        client.produce(topic_name, [Msg(key=b"new", value=f"new-{i}".encode())])
        i += 1
        t.join(0.3)
    t.join(10)
    if "error" in result:
        raise result["error"]
    got = result["msgs"]
    assert all(m.key == b"new" for m in got), view(got)
    first = int(got[0].value.split(b"-")[1])
    assert [m.value for m in got] == [f"new-{first + j}".encode() for j in range(3)]
    assert [m.offset for m in got] == [5 + first + j for j in range(3)]


def test_many_batches_in_order(client, create_topic, topic_name):
    create_topic(topic_name)
    msgs = [Msg(key=None, value=(f"{i:06d}-" + "x" * 200).encode()) for i in range(3000)]
    check_offsets(client.produce(topic_name, msgs))
    got = client.consume(topic_name, [0], len(msgs), timeout_s=60)
    assert [m.offset for m in got] == list(range(len(msgs)))
    assert [m.value for m in got] == [m.value for m in msgs]


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(client, create_topic, topic_name, acks):
    """acks=0 gets no response (offsets unknown to the producer); 1 and all are acknowledged."""
    create_topic(topic_name)
    msgs = [Msg(key=b"k", value=f"acks={acks} {i}".encode()) for i in range(20)]
    results = client.produce(topic_name, msgs, acks=acks)
    if acks != "0":
        check_offsets(results)
    got = client.consume(topic_name, [0], len(msgs))
    assert view(got) == view(msgs)
    assert [m.offset for m in got] == list(range(len(msgs)))


def test_read_committed_without_transactions(client, create_topic, topic_name):
    """With no transactions the last stable offset is the high watermark."""
    create_topic(topic_name)
    msgs = [Msg(key=b"k", value=f"v{i}".encode()) for i in range(10)]
    client.produce(topic_name, msgs)
    got = client.consume(topic_name, [0], len(msgs), isolation="read_committed")
    assert view(got) == view(msgs)


def test_produce_to_an_auto_created_topic(client, topic_name):
    """Metadata for an unknown topic creates it (auto.create.topics.enable, on by default)."""
    msgs = [Msg(key=b"k", value=b"auto-created")]
    results = client.produce(topic_name, msgs, partition=0)
    assert (results[0].partition, results[0].offset) == (0, 0)
    assert view(client.consume(topic_name, [0], 1)) == view(msgs)


@pytest.mark.parametrize("adapter", [pytest.param("java", marks=pytest.mark.java),
                                     pytest.param("librdkafka", marks=pytest.mark.librdkafka)])
def test_record_above_max_message_bytes_is_rejected(adapter, bootstrap, create_topic, topic_name):
    """Kafka's default max.message.bytes (1048588) is below a batch holding a 1 MiB value:
    MESSAGE_TOO_LARGE, reported by the client, and nothing is appended."""
    from compat_tests.clients import load_adapter

    create_topic(topic_name)
    client = load_adapter(adapter)(bootstrap)
    with pytest.raises(Exception) as info:
        client.produce(topic_name, [Msg(key=b"big", value=os.urandom(MiB))],
                       config={"retries": 0} if adapter == "java" else {"message.send.max.retries": 0})
    assert getattr(info.value, "code", None) == "MESSAGE_TOO_LARGE", info.value
    client.produce(topic_name, [Msg(key=b"small", value=b"fits")])
    (got,) = client.consume(topic_name, [0], 1)
    assert (got.offset, got.value) == (0, b"fits")


JAVA_AND_LIBRDKAFKA = [pytest.param("java", marks=pytest.mark.java),
                       pytest.param("librdkafka", marks=pytest.mark.librdkafka)]
NO_RETRIES = {"java": {"retries": 0}, "librdkafka": {"message.send.max.retries": 0}}


@pytest.mark.parametrize("adapter", JAVA_AND_LIBRDKAFKA)
def test_keyless_record_on_compacted_topic_is_rejected(adapter, bootstrap, create_topic, topic_name):
    """Compaction needs keys: Kafka answers INVALID_RECORD and appends nothing."""
    from compat_tests.clients import load_adapter

    create_topic(topic_name, configs={"cleanup.policy": "compact"})
    client = load_adapter(adapter)(bootstrap)
    with pytest.raises(Exception) as info:
        client.produce(topic_name, [Msg(key=None, value=b"no key")], config=NO_RETRIES[adapter])
    assert getattr(info.value, "code", None) == "INVALID_RECORD", info.value
    client.produce(topic_name, [Msg(key=b"k", value=b"keyed")], config=NO_RETRIES[adapter])
    (got,) = client.consume(topic_name, [0], 1)
    assert (got.offset, got.value) == (0, b"keyed")


@pytest.mark.parametrize("adapter", JAVA_AND_LIBRDKAFKA)
@pytest.mark.parametrize("config,offset_ms", [
    ("message.timestamp.after.max.ms", 3_600_000),
    ("message.timestamp.before.max.ms", -3_600_000),
])
def test_timestamp_outside_the_allowed_range_is_rejected(adapter, bootstrap, create_topic, topic_name, config,
                                                         offset_ms):
    """KIP-937: a CreateTime too far in the future or past gets INVALID_TIMESTAMP."""
    from compat_tests.clients import load_adapter

    create_topic(topic_name, configs={config: "60000"})
    client = load_adapter(adapter)(bootstrap)
    now = int(time.time() * 1000)
    with pytest.raises(Exception) as info:
        client.produce(topic_name, [Msg(key=b"k", value=b"off", timestamp_ms=now + offset_ms)],
                       config=NO_RETRIES[adapter])
    assert getattr(info.value, "code", None) == "INVALID_TIMESTAMP", info.value
    res = client.produce(topic_name, [Msg(key=b"k", value=b"in range", timestamp_ms=now)])
    assert res[0].offset == 0


@pytest.mark.parametrize("adapter", JAVA_AND_LIBRDKAFKA)
def test_fetch_out_of_range_resets_to_earliest(adapter, bootstrap, create_topic, topic_name):
    """A fetch offset past the log end, or below the log start after DeleteRecords, gets
    OFFSET_OUT_OF_RANGE; the consumer resets (auto.offset.reset=earliest) to the log start."""
    from compat_tests.clients import load_adapter
    from compat_tests.clients.librdkafka import LibrdkafkaAdmin

    create_topic(topic_name)
    client = load_adapter(adapter)(bootstrap)
    msgs = [Msg(key=b"k", value=f"v{i}".encode()) for i in range(10)]
    client.produce(topic_name, msgs)
    reset = {"auto.offset.reset": "earliest"}
    got = client.consume(topic_name, [0], 10, start=50, config=reset)
    assert [m.offset for m in got] == list(range(10))
    LibrdkafkaAdmin(bootstrap).delete_records(topic_name, {0: 5})
    got = client.consume(topic_name, [0], 5, start=2, config=reset)
    assert [m.offset for m in got] == list(range(5, 10))
    assert [m.value for m in got] == [m.value for m in msgs[5:]]


def test_many_partitions(client, create_topic, topic_name):
    create_topic(topic_name, partitions=24)
    msgs = [Msg(key=f"key-{i}".encode(), value=f"v{i}".encode()) for i in range(240)]
    results = client.produce(topic_name, msgs)
    assert len({r.partition for r in results}) > 12
    got = client.consume(topic_name, list(range(24)), len(msgs))
    assert sorted((m.partition, m.offset, m.value) for m in got) == \
        sorted((r.partition, r.offset, m.value) for m, r in zip(msgs, results))


@pytest.mark.parametrize("adapter", JAVA_AND_LIBRDKAFKA)
def test_fetch_min_bytes_waits_at_most_max_wait(adapter, bootstrap, create_topic, topic_name):
    """A fetch whose min bytes are not reached is answered when max wait passes, with what there is."""
    from compat_tests.clients import load_adapter

    create_topic(topic_name)
    client = load_adapter(adapter)(bootstrap)
    client.produce(topic_name, [Msg(key=b"k", value=b"small")])
    config = {"java": {"fetch.min.bytes": 1_000_000, "fetch.max.wait.ms": 300},
              "librdkafka": {"fetch.min.bytes": 1_000_000, "fetch.wait.max.ms": 300}}[adapter]
    started = time.monotonic()
    (got,) = client.consume(topic_name, [0], 1, config=config, timeout_s=20)
    assert got.value == b"small"
    assert time.monotonic() - started < 15
