"""Every compression codec with every client: the broker stores and serves compressed batches as
the producer sent them, a consumer starting inside a compressed batch gets the records from its
offset on, and another client (librdkafka) decompresses what this client produced."""

from __future__ import annotations

import pytest

from compat_tests.clients.base import Msg

pytestmark = [pytest.mark.compression, pytest.mark.timeout(180)]

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def records(n: int) -> list[Msg]:
    # compressible values, distinct keys, headers: what compression must keep (one header set for
    # all records, so that kcat sends them in one run)
    return [Msg(key=f"key-{i:05d}".encode(), value=(f"value {i:05d} " + "abcdefgh" * 16).encode(),
                headers=(("source", b"compat"), ("empty", b""))) for i in range(n)]


def view(msgs):
    return [(m.key, m.value, tuple(m.headers)) for m in msgs]


@pytest.mark.parametrize("codec", CODECS)
def test_compressed_round_trip(client, admin_client, create_topic, topic_name, codec):
    create_topic(topic_name)
    msgs = records(300)
    results = client.produce(topic_name, msgs, compression=codec)
    assert [(r.partition, r.offset) for r in results] == [(0, i) for i in range(len(msgs))]
    got = client.consume(topic_name, [0], len(msgs))
    assert [m.offset for m in got] == list(range(len(msgs)))
    assert view(got) == view(msgs)
    # a fetch offset inside a (compressed) batch
    got = client.consume(topic_name, [0], 150, start=150)
    assert [m.offset for m in got] == list(range(150, 300))
    assert view(got) == view(msgs[150:])
    # the same bytes read by another client
    if client.name != "librdkafka":
        assert view(admin_client.consume(topic_name, [0], len(msgs))) == view(msgs)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_consume_what_librdkafka_compressed(client, admin_client, create_topic, topic_name, codec):
    """The client under test decompresses batches another client compressed."""
    create_topic(topic_name)
    msgs = records(200)
    admin_client.produce(topic_name, msgs, compression=codec)
    got = client.consume(topic_name, [0], len(msgs))
    assert view(got) == view(msgs)


def test_mixed_codecs_in_one_partition(client, create_topic, topic_name):
    """Batches of different codecs follow each other in one log."""
    create_topic(topic_name)
    msgs = records(100)
    for i, codec in enumerate(CODECS):
        client.produce(topic_name, msgs[20 * i:20 * (i + 1)], compression=codec)
    got = client.consume(topic_name, [0], len(msgs))
    assert [m.offset for m in got] == list(range(len(msgs)))
    assert view(got) == view(msgs)
