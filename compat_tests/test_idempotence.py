"""The idempotent producer: InitProducerId, then many batches in flight at once (up to five per
partition), each with its producer id, epoch and sequence; every record arrives exactly once and in
order, and the log holds nothing else."""

from __future__ import annotations

import pytest

from compat_tests.clients.base import Msg

pytestmark = [pytest.mark.idempotence, pytest.mark.timeout(240)]

# Small batches so that many requests are in flight per partition.
IN_FLIGHT = {
    "java": {"batch.size": 2048, "linger.ms": 0, "max.in.flight.requests.per.connection": 5},
    "librdkafka": {"batch.num.messages": 20, "linger.ms": 0, "max.in.flight": 5},
    "kcat": {"batch.num.messages": 20, "linger.ms": 0, "max.in.flight": 5},
}


def produce_idempotent(client, topic, msgs, **kwargs):
    config = IN_FLIGHT.get(client.name)
    if config is not None:
        return client.produce(topic, msgs, idempotent=True, config=config, **kwargs)
    return client.produce(topic, msgs, idempotent=True, **kwargs)


def test_many_in_flight_exactly_once_in_order(client, admin_client, create_topic, topic_name):
    create_topic(topic_name)
    n = 5000
    msgs = [Msg(key=str(i % 7).encode(), value=f"{i:06d}".encode()) for i in range(n)]
    results = produce_idempotent(client, topic_name, msgs, partition=0)
    assert [(r.partition, r.offset) for r in results] == [(0, i) for i in range(n)]
    got = client.consume(topic_name, [0], n, timeout_s=90)
    assert [m.value for m in got] == [m.value for m in msgs]
    assert [m.offset for m in got] == list(range(n))
    assert admin_client.watermarks(topic_name, 0) == (0, n), "the log holds more than was produced"


def test_idempotent_keyed_over_partitions(client, admin_client, create_topic, topic_name):
    create_topic(topic_name, partitions=3)
    n = 3000
    msgs = [Msg(key=f"key-{i % 30}".encode(), value=f"{i:06d}".encode()) for i in range(n)]
    results = produce_idempotent(client, topic_name, msgs)
    per_partition: dict[int, list[bytes]] = {}
    for m, r in zip(msgs, results):
        per_partition.setdefault(r.partition, []).append(m.value)
    got = client.consume(topic_name, [0, 1, 2], n, timeout_s=90)
    for p, values in per_partition.items():
        assert [m.value for m in got if m.partition == p] == values
        assert admin_client.watermarks(topic_name, p) == (0, len(values))


def test_successive_idempotent_producers_append(client, admin_client, create_topic, topic_name):
    """Each producer gets its own producer id and starts at sequence 0."""
    create_topic(topic_name)
    first = [Msg(key=b"a", value=f"a{i}".encode()) for i in range(50)]
    second = [Msg(key=b"b", value=f"b{i}".encode()) for i in range(50)]
    produce_idempotent(client, topic_name, first, partition=0)
    results = produce_idempotent(client, topic_name, second, partition=0)
    assert [r.offset for r in results] == list(range(50, 100))
    got = client.consume(topic_name, [0], 100)
    assert [m.value for m in got] == [m.value for m in first + second]


@pytest.mark.compression
@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_idempotent_compressed(client, admin_client, create_topic, topic_name, codec):
    create_topic(topic_name)
    n = 2000
    msgs = [Msg(key=b"k", value=f"{i:06d} ".encode() * 8) for i in range(n)]
    results = produce_idempotent(client, topic_name, msgs, partition=0, compression=codec)
    assert [r.offset for r in results] == list(range(n))
    got = client.consume(topic_name, [0], n, timeout_s=90)
    assert [m.value for m in got] == [m.value for m in msgs]
    assert admin_client.watermarks(topic_name, 0) == (0, n)
