"""Client-specific behaviours that the shared feature tests do not cover.

kafka-python: the broker version it infers from ApiVersions, pinned ``api_version``s, its
offset lookups (beginning/end offsets, offsets_for_times), its admin client. aiokafka: the
ApiVersions table it reads, ``send_batch``, its offset lookups, its admin client. kafkajs: its own admin client (createTopics,
fetchTopicOffsets, fetchTopicOffsetsByTimestamp, deleteTopicRecords, createPartitions,
deleteTopics, describeConfigs), headers with repeated keys, a fetch that starts inside a
compressed batch.
"""

from __future__ import annotations

import asyncio
import base64
import time

import pytest

from compat_tests.clients.aiokafka_client import AiokafkaClient
from compat_tests.clients.base import Msg
from compat_tests.clients.kafka_python import KafkaPythonClient
from compat_tests.clients.kafkajs import KafkajsClient, KafkajsError, run_driver
from compat_tests.clients.librdkafka import LibrdkafkaClient

T0 = 1_700_000_000_000  # record timestamps used below: T0, T0 + 1000, T0 + 2000, ...


def _timed_msgs(n: int) -> list[Msg]:
    return [Msg(value=b"v%d" % i, key=b"k%d" % i, timestamp_ms=T0 + 1000 * i) for i in range(n)]


def _timed_topic(client, topic: str, partitions: int, counts: dict[int, int], configs=None, **produce_options):
    """Create `topic` through `client` and produce `counts[p]` timed records (_timed_msgs) to
    each partition p; the client."""
    client.create_topic(topic, partitions, configs)
    for partition, n in counts.items():
        client.produce(topic, _timed_msgs(n), partition=partition, **produce_options)
    return client


# ----------------------------------------------------------------------------- kafka-python


def _kafka_python_inferred_version(bootstrap) -> tuple[int, ...]:
    admin = KafkaPythonClient(bootstrap).admin_client()
    try:
        client = admin._client
        return tuple(client.check_version() if hasattr(client, "check_version") else admin.config["api_version"])
    finally:
        admin.close()


@pytest.mark.kafka_python
def test_kafka_python_infers_a_version_that_allows_zstd(bootstrap):
    """kafka-python maps the ApiVersions table to a broker release and refuses zstd below 2.1."""
    version = _kafka_python_inferred_version(bootstrap)
    assert version >= (2, 1), f"kafka-python inferred broker version {version}: zstd would be refused"


@pytest.mark.kafka_python
def test_kafka_python_infers_a_kafka_4_broker(bootstrap):
    """kafka-python 3 takes 4.0 from ListOffsets v10 and 4.2 from ListOffsets v11 in ApiVersions."""
    from compat_tests.clients.kafka_python import kafka_python_version

    if kafka_python_version() < (3,):
        pytest.fail("kafka-python 3 is needed (scripts/install-test-deps.sh installs it); 2.x knows no Kafka 4")
    version = _kafka_python_inferred_version(bootstrap)
    assert version >= (4, 0), f"kafka-python inferred broker version {version}, not a Kafka 4.x broker"


@pytest.mark.kafka_python
@pytest.mark.produce_fetch
@pytest.mark.parametrize("api_version", [(2, 1), (2, 8), (3, 9)], ids=lambda v: "api%d.%d" % v)
def test_kafka_python_pinned_api_version(bootstrap, topic_name, api_version):
    """A pinned api_version skips negotiation: kafka-python sends the request versions of that
    release (2.1: Produce v7, Fetch v10, ListOffsets v4, Metadata v7), all of which Kafka 4 serves."""
    c = KafkaPythonClient(bootstrap, api_version=api_version)
    c.create_topic(topic_name, 1)
    msgs = [Msg(value=b"pinned-%d" % i, key=b"k", headers=(("h", b"1"),)) for i in range(5)]
    res = c.produce(topic_name, msgs, partition=0, compression="zstd")
    assert [r.offset for r in res] == [0, 1, 2, 3, 4]
    got = c.consume(topic_name, [0], 5, timeout_s=10)
    assert [(m.offset, m.value, m.headers) for m in got] == [(i, m.value, m.headers) for i, m in enumerate(msgs)]


@pytest.mark.kafka_python
@pytest.mark.offsets
@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
def test_kafka_python_offset_lookups(bootstrap, topic_name, compression):
    """Each produce is one batch: a lookup by timestamp must find the record inside it, also when
    the batch is compressed."""
    c = _timed_topic(KafkaPythonClient(bootstrap), topic_name, 2, {0: 5, 1: 2}, compression=compression)
    from kafka import TopicPartition

    tp0, tp1 = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = c.consumer(isolation_level=isolation)
        try:
            assert consumer.beginning_offsets([tp0, tp1]) == {tp0: 0, tp1: 0}
            assert consumer.end_offsets([tp0, tp1]) == {tp0: 5, tp1: 2}
            found = consumer.offsets_for_times({tp0: T0 + 2500, tp1: T0 + 500})
            assert found[tp0].offset == 3 and found[tp0].timestamp == T0 + 3000
            assert found[tp1].offset == 1 and found[tp1].timestamp == T0 + 1000
            assert consumer.offsets_for_times({tp0: T0 + 10_000})[tp0] is None  # past the last record
            assert consumer.offsets_for_times({tp0: 0})[tp0].offset == 0
        finally:
            consumer.close()


@pytest.mark.kafka_python
@pytest.mark.admin
def test_kafka_python_admin(bootstrap, topic_name):
    """kafka-python 3's admin client: configs (incremental and legacy alter), partitions, records,
    offsets by spec (earliest, latest, max timestamp, timestamp), cluster, log dirs, delete."""
    from compat_tests.clients.kafka_python import kafka_python_version

    if kafka_python_version() < (3,):
        pytest.fail("kafka-python 3 is needed (scripts/install-test-deps.sh installs it): written against its admin API")
    from kafka import TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec

    c = _timed_topic(KafkaPythonClient(bootstrap), topic_name, 1, {0: 6}, {"retention.ms": "123456789"})
    tp = TopicPartition(topic_name, 0)
    admin = c.admin_client()
    try:

        def retention():
            res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name, ["retention.ms"])])
            return res["topic"][topic_name]["retention.ms"]["value"]

        assert retention() == "123456789"
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name, {"retention.ms": "1000000"})])
        assert retention() == "1000000"
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name, {"retention.ms": "2000000"})],
                            incremental=False)
        assert retention() == "2000000"

        admin.create_partitions({topic_name: 3})
        (described,) = admin.describe_topics([topic_name])
        assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2]

        deleted = admin.delete_records({tp: 2})
        assert deleted[tp]["low_watermark"] == 2

        def offset(spec):
            return admin.list_partition_offsets({tp: spec})[tp]

        assert offset(OffsetSpec.EARLIEST).offset == 2
        assert offset(OffsetSpec.LATEST).offset == 6
        assert (offset(OffsetSpec.MAX_TIMESTAMP).offset, offset(OffsetSpec.MAX_TIMESTAMP).timestamp) == (5, T0 + 5000)
        assert (offset(T0 + 3500).offset, offset(T0 + 3500).timestamp) == (4, T0 + 4000)

        cluster = admin.describe_cluster()
        assert cluster["cluster_id"] and len(cluster["brokers"]) >= 1
        assert cluster["controller_id"] in {b["broker_id"] for b in cluster["brokers"]}
        dirs = admin.describe_log_dirs()
        names = {t["name"] for d in dirs for ld in d["log_dirs"] for t in ld["topics"]}
        assert topic_name in names

        admin.delete_topics([topic_name])
        deadline = time.monotonic() + 10
        while topic_name in admin.list_topics() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert topic_name not in admin.list_topics()
    finally:
        admin.close()


@pytest.mark.kafka_python
@pytest.mark.produce_fetch
def test_kafka_python_incremental_fetch_session(bootstrap, topic_name):
    """kafka-python 3 keeps one incremental fetch session (KIP-227) per broker: partitions with
    nothing new drop out of the requests, pause/resume and seeks change the session's set, and
    the session lasts the whole test."""
    from kafka import TopicPartition

    c = KafkaPythonClient(bootstrap)
    c.create_topic(topic_name, 3)
    tps = [TopicPartition(topic_name, p) for p in range(3)]
    consumer = c.consumer(enable_incremental_fetch_sessions=True, fetch_max_wait_ms=50)

    def poll_until(n, timeout=10.0):
        out, deadline = [], time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            for recs in consumer.poll(timeout_ms=100).values():
                out.extend((r.partition, r.offset, r.value) for r in recs)
        time.sleep(0.2)  # a few more empty fetches: nothing else may arrive
        for recs in consumer.poll(timeout_ms=200).values():
            out.extend((r.partition, r.offset, r.value) for r in recs)
        return sorted(out)

    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        assert poll_until(0, timeout=0.5) == []
        for round_ in range(3):
            p = round_ % 3
            c.produce(topic_name, [Msg(value=b"r%d-%d" % (round_, i)) for i in range(2)], partition=p)
            base = 0
            assert poll_until(2) == [(p, base + i, b"r%d-%d" % (round_, i)) for i in range(2)], round_
        # pause partition 1: its records wait; resume: they arrive
        consumer.pause(tps[1])
        c.produce(topic_name, [Msg(value=b"paused")], partition=1)
        c.produce(topic_name, [Msg(value=b"live")], partition=2)
        assert poll_until(1) == [(2, 2, b"live")]
        consumer.resume(tps[1])
        assert poll_until(1) == [(1, 2, b"paused")]
        # seek back on one partition: the session must serve the old offset again
        consumer.seek(tps[0], 1)
        assert poll_until(1) == [(0, 1, b"r0-1")]
        # all of this on the session path: the broker kept the session the first fetch opened,
        # and the consumer is many incremental epochs into it (not falling back to full fetches)
        handlers = list(consumer._fetcher._session_handlers.values())
        assert handlers and all(h.next_metadata.session_id != 0 and h.next_metadata.epoch > 5 for h in handlers), \
            [(h.next_metadata.session_id, h.next_metadata.epoch) for h in handlers]
    finally:
        consumer.close()


# ----------------------------------------------------------------------------- aiokafka


@pytest.mark.aiokafka
def test_aiokafka_reads_the_api_versions_table(bootstrap):
    """aiokafka sends ApiVersions v0 on every connection, asserts min <= max for each key, and
    picks every request's version from the table."""
    from aiokafka import AIOKafkaClient

    async def versions():
        client = AIOKafkaClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
        try:
            await client.bootstrap()
            node = client.cluster.brokers().pop().nodeId
            conn = await client._get_conn(node)
            return dict(conn._versions)
        finally:
            await client.close()

    table = asyncio.run(asyncio.wait_for(versions(), 30))
    for key, (lo, hi) in table.items():
        assert 0 <= lo <= hi, f"api key {key}: min {lo} > max {hi}"
    # Produce, Fetch, ListOffsets, Metadata, ApiVersions, CreateTopics, InitProducerId
    for key in (0, 1, 2, 3, 18, 19, 22):
        assert key in table, f"api key {key} missing from ApiVersions"
    assert table[0][0] <= 3, "Produce v3 (magic v2 batches) must be served"
    assert table[1][0] <= 4, "Fetch v4 must be served"


@pytest.mark.aiokafka
@pytest.mark.produce_fetch
def test_aiokafka_send_batch(bootstrap, topic_name):
    """aiokafka's create_batch/send_batch builds one record batch itself and returns its base offset."""
    c = AiokafkaClient(bootstrap)
    c.create_topic(topic_name, 1)

    async def send():
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000, compression_type="lz4")
        try:
            await producer.start()
            offsets = []
            for round_ in range(2):
                batch = producer.create_batch()
                for i in range(10):
                    assert batch.append(key=None, value=b"b%d-%d" % (round_, i), timestamp=None, headers=[("r", b"%d" % round_)])
                batch.close()
                md = await (await producer.send_batch(batch, topic_name, partition=0))
                offsets.append(md.offset)
            return offsets
        finally:
            await producer.stop()

    assert asyncio.run(asyncio.wait_for(send(), 30)) == [0, 10]
    got = c.consume(topic_name, [0], 20, timeout_s=10)
    assert [m.value for m in got] == [b"b%d-%d" % (r, i) for r in range(2) for i in range(10)]
    assert [m.offset for m in got] == list(range(20))
    assert got[15].headers == (("r", b"1"),)


@pytest.mark.aiokafka
@pytest.mark.offsets
def test_aiokafka_offset_lookups(bootstrap, topic_name):
    c = _timed_topic(AiokafkaClient(bootstrap), topic_name, 1, {0: 4})

    async def lookups():
        from aiokafka import TopicPartition

        tp = TopicPartition(topic_name, 0)
        consumer = c.consumer(isolation_level="read_committed")
        try:
            await consumer.start()
            return (
                await consumer.beginning_offsets([tp]),
                await consumer.end_offsets([tp]),
                await consumer.offsets_for_times({tp: T0 + 1500}),
                await consumer.offsets_for_times({tp: T0 + 99_000}),
                tp,
            )
        finally:
            await consumer.stop()

    begin, end, by_time, none_found, tp = asyncio.run(asyncio.wait_for(lookups(), 30))
    assert begin == {tp: 0}
    assert end == {tp: 4}
    assert by_time[tp].offset == 2 and by_time[tp].timestamp == T0 + 2000
    assert none_found[tp] is None


@pytest.mark.aiokafka
@pytest.mark.admin
def test_aiokafka_admin(bootstrap, topic_name):
    """aiokafka's admin client sends old versions (AlterConfigs v1, CreatePartitions v1,
    DeleteTopics v3): configs, partitions, records, cluster, delete."""
    from aiokafka.admin import NewPartitions, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
    from aiokafka.structs import TopicPartition

    c = _timed_topic(AiokafkaClient(bootstrap), topic_name, 1, {0: 6}, {"retention.ms": "123456789"})
    tp = TopicPartition(topic_name, 0)

    def retention():
        (response,) = c.run(c.admin_call, "describe_configs",
                            [ConfigResource(ConfigResourceType.TOPIC, topic_name, {"retention.ms": None})])
        (resource,) = response.resources
        assert resource[0] == 0, resource  # error code
        entries = {e[0]: e[1] for e in resource[4]}  # config_entries: (name, value, ...)
        return entries["retention.ms"]

    assert retention() == "123456789"
    (altered,) = c.run(c.admin_call, "alter_configs",
                       [ConfigResource(ConfigResourceType.TOPIC, topic_name, {"retention.ms": "1000"})])
    assert [r[0] for r in altered.resources] == [0]
    assert retention() == "1000"

    created = c.run(c.admin_call, "create_partitions", {topic_name: NewPartitions(3)})
    assert [e[1] for e in created.topic_errors] == [0]
    (described,) = c.run(c.admin_call, "describe_topics", [topic_name])
    assert len(described["partitions"]) == 3

    assert c.run(c.admin_call, "delete_records", {tp: RecordsToDelete(3)}) == {tp: 3}
    got = c.consume(topic_name, [0], 3, timeout_s=10)
    assert [m.offset for m in got] == [3, 4, 5]

    cluster = c.run(c.admin_call, "describe_cluster")
    assert cluster["cluster_id"] and cluster["brokers"]

    deleted = c.run(c.admin_call, "delete_topics", [topic_name])
    assert [e[1] for e in deleted.topic_error_codes] == [0]
    deadline = time.monotonic() + 10
    while topic_name in c.run(c.admin_call, "list_topics") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert topic_name not in c.run(c.admin_call, "list_topics")


# ----------------------------------------------------------------------------- kafkajs


@pytest.mark.kafkajs
@pytest.mark.admin
def test_kafkajs_create_topics(bootstrap, topic_name):
    c = KafkajsClient(bootstrap)
    spec = {"topic": topic_name, "numPartitions": 3, "replicationFactor": 1}
    assert c.admin("createTopics", {"topics": [spec], "waitForLeaders": True}) is True
    # kafkajs answers false (not an error) when the topic exists
    assert c.admin("createTopics", {"topics": [spec], "waitForLeaders": True}) is False
    meta = c.admin("fetchTopicMetadata", {"topics": [topic_name]})
    (topic,) = meta["topics"]
    assert topic["name"] == topic_name
    assert sorted(p["partitionId"] for p in topic["partitions"]) == [0, 1, 2]
    assert all(p["leader"] >= 0 for p in topic["partitions"])
    assert topic_name in c.admin("listTopics")


@pytest.mark.kafkajs
@pytest.mark.admin
def test_kafkajs_create_topic_validate_only(bootstrap, topic_name):
    c = KafkajsClient(bootstrap)
    spec = {"topic": topic_name, "numPartitions": 1, "replicationFactor": 1}
    # waitForLeaders would look the (uncreated) topic up and fail with UNKNOWN_TOPIC_OR_PARTITION
    c.admin("createTopics", {"topics": [spec], "validateOnly": True, "waitForLeaders": False})
    assert topic_name not in c.admin("listTopics")


@pytest.mark.kafkajs
@pytest.mark.offsets
def test_kafkajs_fetch_topic_offsets(bootstrap, topic_name):
    c = _timed_topic(KafkajsClient(bootstrap), topic_name, 2, {0: 5})
    offsets = sorted(c.admin("fetchTopicOffsets", topic_name), key=lambda o: o["partition"])
    assert [(o["partition"], o["low"], o["high"], o["offset"]) for o in offsets] == [
        (0, "0", "5", "5"),
        (1, "0", "0", "0"),
    ]


@pytest.mark.kafkajs
@pytest.mark.offsets
def test_kafkajs_fetch_topic_offsets_by_timestamp(bootstrap, topic_name):
    c = _timed_topic(KafkajsClient(bootstrap), topic_name, 2, {0: 5, 1: 1})

    def at(ts):
        return {o["partition"]: o["offset"] for o in c.admin("fetchTopicOffsetsByTimestamp", topic_name, ts)}

    assert at(T0 + 2000) == {0: "2", 1: "1"}  # exact match on p0; p1 has nothing that late: its end
    assert at(T0 + 2001) == {0: "3", 1: "1"}
    assert at(T0 - 1) == {0: "0", 1: "0"}
    assert at(T0 + 60_000) == {0: "5", 1: "1"}


@pytest.mark.kafkajs
@pytest.mark.admin
def test_kafkajs_delete_topic_records(bootstrap, topic_name):
    c = _timed_topic(KafkajsClient(bootstrap), topic_name, 1, {0: 6})
    c.admin("deleteTopicRecords", {"topic": topic_name, "partitions": [{"partition": 0, "offset": "4"}]})
    (o,) = c.admin("fetchTopicOffsets", topic_name)
    assert (o["low"], o["high"]) == ("4", "6")
    got = c.consume(topic_name, [0], 2, start="earliest", timeout_s=10)
    assert [(m.offset, m.value) for m in got] == [(4, b"v4"), (5, b"v5")]
    # offset -1 deletes everything up to the high watermark
    c.admin("deleteTopicRecords", {"topic": topic_name, "partitions": [{"partition": 0, "offset": "-1"}]})
    (o,) = c.admin("fetchTopicOffsets", topic_name)
    assert (o["low"], o["high"]) == ("6", "6")


@pytest.mark.kafkajs
@pytest.mark.admin
def test_kafkajs_create_partitions_and_delete_topics(bootstrap, topic_name):
    c = KafkajsClient(bootstrap)
    c.create_topic(topic_name, 1)
    c.admin("createPartitions", {"topicPartitions": [{"topic": topic_name, "count": 3}]})
    meta = c.admin("fetchTopicMetadata", {"topics": [topic_name]})
    assert len(meta["topics"][0]["partitions"]) == 3
    res = c.produce(topic_name, [Msg(value=b"x")], partition=2)
    assert res[0].partition == 2 and res[0].offset == 0
    c.admin("deleteTopics", {"topics": [topic_name]})
    deadline = time.monotonic() + 10
    while topic_name in c.admin("listTopics") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert topic_name not in c.admin("listTopics")


@pytest.mark.kafkajs
@pytest.mark.admin
def test_kafkajs_describe_configs(bootstrap, topic_name):
    c = KafkajsClient(bootstrap)
    c.create_topic(topic_name, 1, configs={"retention.ms": "123456789"})
    TOPIC = 2  # kafkajs ConfigResourceTypes.TOPIC
    res = c.admin(
        "describeConfigs",
        {"resources": [{"type": TOPIC, "name": topic_name, "configNames": ["retention.ms"]}], "includeSynonyms": False},
    )
    (resource,) = res["resources"]
    assert resource["errorCode"] == 0
    entries = {e["configName"]: e["configValue"] for e in resource["configEntries"]}
    assert entries.get("retention.ms") == "123456789"


@pytest.mark.kafkajs
@pytest.mark.produce_fetch
def test_kafkajs_repeated_header_keys(bootstrap, topic_name):
    """kafkajs holds headers as an object; a repeated key becomes an array, sent in order."""
    c = KafkajsClient(bootstrap)
    c.create_topic(topic_name, 1)
    headers = (("trace", b"a"), ("trace", b"b"), ("other", b""))
    c.produce(topic_name, [Msg(value=b"v", headers=headers)], partition=0)
    (got,) = c.consume(topic_name, [0], 1, timeout_s=10)
    assert got.headers == headers
    # and what other clients see
    (seen,) = KafkaPythonClient(bootstrap).consume(topic_name, [0], 1, timeout_s=10)
    assert seen.headers == headers


@pytest.mark.kafkajs
@pytest.mark.produce_fetch
def test_kafkajs_reads_a_null_header_value(bootstrap, topic_name):
    """kafkajs cannot send a null header value (a documented limit), but reads one from the broker."""
    from compat_tests.clients.librdkafka import LibrdkafkaClient

    headers = (("h", None), ("k", b"v"))
    writer = LibrdkafkaClient(bootstrap)
    writer.create_topic(topic_name, 1)
    writer.produce(topic_name, [Msg(value=b"v", headers=headers)], partition=0)
    (got,) = KafkajsClient(bootstrap).consume(topic_name, [0], 1, timeout_s=10)
    assert got.headers == headers


@pytest.mark.kafkajs
@pytest.mark.produce_fetch
@pytest.mark.compression
@pytest.mark.parametrize("compression", ["none", "gzip", "lz4"])
def test_kafkajs_fetch_from_inside_a_batch(bootstrap, topic_name, compression):
    """A fetch at an offset inside a batch returns the whole batch; the records before the fetch
    offset are dropped by the client."""
    c = KafkajsClient(bootstrap)
    c.create_topic(topic_name, 1)
    msgs = [Msg(value=b"m%d" % i) for i in range(10)]
    KafkaPythonClient(bootstrap).produce(topic_name, msgs, partition=0, compression=compression)
    got = c.consume(topic_name, [0], 3, start=6, timeout_s=10)
    assert [(m.offset, m.value) for m in got] == [(6, b"m6"), (7, b"m7"), (8, b"m8")]


@pytest.mark.kafkajs
@pytest.mark.produce_fetch
def test_kafkajs_calls_are_fast(bootstrap, topic_name):
    """One node process per call: a produce or a consume of 100 records costs about what the
    simplest call does (a node process, a connection, Metadata), never a retry's backoff or a
    fetch that waits out kafkajs's 5 s maxWaitTimeInMs. The bound follows this machine's speed
    as measured in the same test (a listTopics call), so that a loaded machine meets it too."""
    c = KafkajsClient(bootstrap)
    c.create_topic(topic_name, 1)
    # not timed: Kafka's broker learns of the new topic a little after CreateTopics answers
    LibrdkafkaClient(bootstrap).wait_for_leaders(topic_name, 1)
    t = time.monotonic()
    c.admin("listTopics")
    simplest = time.monotonic() - t
    t = time.monotonic()
    c.produce(topic_name, [Msg(value=b"x" * 100) for _ in range(100)], partition=0)
    produced = time.monotonic() - t
    t = time.monotonic()
    assert len(c.consume(topic_name, [0], 100, timeout_s=10)) == 100
    consumed = time.monotonic() - t
    bound = 3 * simplest + 1
    assert produced < bound and consumed < bound, \
        f"produce {produced:.2f}s, consume {consumed:.2f}s, against listTopics' {simplest:.2f}s"


@pytest.mark.kafkajs
def test_kafkajs_errors_carry_the_kafka_error_type(bootstrap, topic_name):
    c = KafkajsClient(bootstrap)
    c.create_topic(topic_name, 1)
    with pytest.raises(KafkajsError) as info:
        c.admin("createPartitions", {"topicPartitions": [{"topic": topic_name, "count": 1}]})
    assert info.value.type == "INVALID_PARTITIONS", info.value.error


# ----------------------------------------------------------------------------- all three


def _read_with_tiny_fetch_limits(client_name: str, bootstrap: str, topic: str, n: int) -> list[tuple[int, int]]:
    """Read n records from partition 0 with max partition/fetch bytes of 1 KiB."""
    if client_name == "kafkajs":
        reply = run_driver({"cmd": "consume", "bootstrap": bootstrap, "topic": topic, "partitions": [0], "count": n,
                            "start": "earliest", "isolation": "read_uncommitted", "maxPartitionBytes": 1024,
                            "maxBytes": 1024}, 15)
        return [(r["offset"], len(base64.b64decode(r["value"]))) for r in reply]
    if client_name == "kafka_python":
        from kafka import TopicPartition

        consumer = KafkaPythonClient(bootstrap).consumer(max_partition_fetch_bytes=1024, fetch_max_bytes=1024)
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            out, deadline = [], time.monotonic() + 15
            while len(out) < n and time.monotonic() < deadline:
                for recs in consumer.poll(timeout_ms=200).values():
                    out.extend((r.offset, len(r.value)) for r in recs)
            return out
        finally:
            consumer.close()
    c = AiokafkaClient(bootstrap)

    async def read():
        from aiokafka import TopicPartition

        consumer = c.consumer(max_partition_fetch_bytes=1024, fetch_max_bytes=1024)
        try:
            await consumer.start()
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            out, deadline = [], time.monotonic() + 15
            while len(out) < n and time.monotonic() < deadline:
                for recs in (await consumer.getmany(tp, timeout_ms=200)).values():
                    out.extend((r.offset, len(r.value)) for r in recs)
            return out
        finally:
            await consumer.stop()

    return asyncio.run(asyncio.wait_for(read(), 30))


@pytest.mark.produce_fetch
@pytest.mark.parametrize("client_name", [
    pytest.param("kafka_python", marks=pytest.mark.kafka_python),
    pytest.param("aiokafka", marks=pytest.mark.aiokafka),
    pytest.param("kafkajs", marks=pytest.mark.kafkajs),
])
def test_batches_larger_than_the_fetch_limits(bootstrap, topic_name, client_name):
    """KIP-74: a fetch returns the first batch whole even when it is larger than the partition's
    and the request's max bytes, so a consumer with small limits still makes progress."""
    c = KafkaPythonClient(bootstrap)
    c.create_topic(topic_name, 1)
    for i in range(3):  # three batches of 8 KiB records
        c.produce(topic_name, [Msg(value=bytes([i]) * 8192)], partition=0)
    assert _read_with_tiny_fetch_limits(client_name, bootstrap, topic_name, 3) == [(0, 8192), (1, 8192), (2, 8192)]
