"""Admin APIs through the Java Admin client, confluent-kafka's AdminClient, franz-go (kadm) and sarama: CreateTopics (also
validate_only), DeleteTopics, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
CreatePartitions, ListOffsets (earliest, latest, by timestamp, max timestamp, read_committed),
DeleteRecords, DescribeCluster, DescribeTopicPartitions / Metadata with topic ids.

Written once against compat_tests.clients.admin.Admin; the fixture ``admin`` runs each test with
each client. Test data is produced with librdkafka (fixture ``admin_client``).
"""

from __future__ import annotations

import pytest

from compat_tests.clients.admin import BrokerError
from compat_tests.clients.base import Msg
from compat_tests.waiting import wait_until

pytestmark = [pytest.mark.admin, pytest.mark.timeout(120)]


@pytest.fixture(params=[pytest.param("java", marks=pytest.mark.java),
                        pytest.param("librdkafka", marks=pytest.mark.librdkafka),
                        pytest.param("franz", marks=pytest.mark.franz),
                        pytest.param("sarama", marks=pytest.mark.sarama)])
def admin(request, bootstrap):
    if request.param == "java":
        from compat_tests.clients.java import JavaAdmin

        return JavaAdmin(bootstrap)
    if request.param == "franz":
        from compat_tests.clients.franz import FranzAdmin

        return FranzAdmin(bootstrap)
    if request.param == "sarama":
        from compat_tests.clients.sarama import SaramaAdmin

        return SaramaAdmin(bootstrap)
    from compat_tests.clients.librdkafka import LibrdkafkaAdmin

    return LibrdkafkaAdmin(bootstrap)


def eventually(check, timeout=10.0):
    """Metadata may take a moment to reflect a change: wait until the assert-style `check` holds."""
    return wait_until(lambda: check() or True, timeout)


def test_create_describe_delete_topics(admin, topic_name):
    a, b = f"{topic_name}-a", f"{topic_name}-b"
    admin.create_topic(a, 3, {"retention.ms": "3600000"})
    admin.create_topic(b, 1)

    def created():
        assert {a, b} <= admin.list_topics()

    eventually(created)
    desc = admin.describe_topics([a, b])
    assert desc[a]["partitions"] == [0, 1, 2]
    assert desc[b]["partitions"] == [0]
    assert all(leader is not None and leader >= 0 for leader in desc[a]["leaders"])
    ids = {desc[a]["topic_id"], desc[b]["topic_id"]}
    assert None not in ids and "AAAAAAAAAAAAAAAAAAAAAA" not in ids and len(ids) == 2

    with pytest.raises(BrokerError) as e:
        admin.create_topic(a, 1)
    assert e.value.code == "TOPIC_ALREADY_EXISTS"

    admin.delete_topics([a, b])

    def deleted():
        assert not ({a, b} & admin.list_topics())

    eventually(deleted)
    with pytest.raises(BrokerError) as e:
        admin.delete_topics([a])
    assert e.value.code == "UNKNOWN_TOPIC_OR_PARTITION"


def test_create_topic_returns_partitions_and_configs(admin, topic_name):
    res = admin.create_topic(topic_name, 4, {"cleanup.policy": "compact"})
    if admin.name in ("java", "franz"):  # these clients expose the CreateTopics v5+ answer
        assert res["partitions"] == 4
        assert res["topic_id"] not in (None, "AAAAAAAAAAAAAAAAAAAAAA")
        assert res["configs"]["cleanup.policy"] == "compact"
    else:  # confluent-kafka's and sarama's CreateTopics calls return no answer: nothing to echo
        assert res["partitions"] is None
    # what the broker holds, for every client
    eventually(lambda: _assert_eq(admin.describe_topics([topic_name])[topic_name]["partitions"], [0, 1, 2, 3]))
    assert admin.describe_configs("topic", topic_name)["cleanup.policy"].value == "compact"


def test_create_topic_validate_only(admin, topic_name):
    admin.create_topic(topic_name, 2, validate_only=True)
    assert topic_name not in admin.list_topics()
    # a later real creation of the same name works
    admin.create_topic(topic_name, 2)
    eventually(lambda: topic_name in admin.list_topics() or (_ for _ in ()).throw(AssertionError()))


@pytest.mark.parametrize("partitions,configs,rf,code", [
    (0, {}, None, "INVALID_PARTITIONS"),
    (1, {"no.such.config": "1"}, None, "INVALID_CONFIG"),
    (1, {"cleanup.policy": "neither"}, None, "INVALID_CONFIG"),
    (1, {"retention.ms": "soon"}, None, "INVALID_CONFIG"),
    (1, {}, 3, "INVALID_REPLICATION_FACTOR"),  # one broker
])
def test_create_topic_rejects_invalid_requests(admin, topic_name, partitions, configs, rf, code):
    for validate_only in (True, False):
        with pytest.raises(BrokerError) as e:
            admin.create_topic(topic_name, partitions, configs, validate_only=validate_only, replication_factor=rf)
        assert e.value.code == code
    assert topic_name not in admin.list_topics()


@pytest.mark.parametrize("name", ["bad/name", "x" * 250, ".", ".."])
def test_create_topic_rejects_invalid_names(admin, name):
    with pytest.raises(BrokerError) as e:
        admin.create_topic(name, 1)
    assert e.value.code == "INVALID_TOPIC_EXCEPTION"


def test_alter_configs_of_unknown_topic(admin, topic_name):
    with pytest.raises(BrokerError) as e:
        admin.incremental_alter_configs("topic", topic_name + "-missing", [("SET", "retention.ms", "1000")])
    assert e.value.code == "UNKNOWN_TOPIC_OR_PARTITION"


def test_create_topic_with_broker_default_partitions(admin, topic_name):
    """numPartitions -1 (CreateTopics v4+) means the broker's num.partitions."""
    admin.create_topic(topic_name, None)
    default = admin.describe_configs("broker", str(admin.describe_cluster()["nodes"][0]["id"]))
    expected = int(default["num.partitions"].value) if "num.partitions" in default else 1
    assert len(admin.describe_topics([topic_name])[topic_name]["partitions"]) == expected


def test_describe_topic_configs(admin, create_topic, topic_name):
    create_topic(topic_name, configs={"retention.ms": "123456"})
    configs = admin.describe_configs("topic", topic_name)
    r = configs["retention.ms"]
    assert (r.value, r.source, r.is_default) == ("123456", "DYNAMIC_TOPIC_CONFIG", False)
    c = configs["cleanup.policy"]
    assert c.value == "delete" and c.is_default and c.source in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG")
    for name in ("max.message.bytes", "segment.bytes", "message.timestamp.type", "min.insync.replicas"):
        assert name in configs, f"topic config {name} missing from DescribeConfigs"


def test_describe_configs_of_unknown_topic(admin, topic_name):
    with pytest.raises(BrokerError) as e:
        admin.describe_configs("topic", topic_name)
    assert e.value.code == "UNKNOWN_TOPIC_OR_PARTITION"


def test_describe_broker_configs(admin):
    node = admin.describe_cluster()["nodes"][0]["id"]
    configs = admin.describe_configs("broker", str(node))
    for name in ("message.max.bytes", "num.partitions", "log.retention.hours", "auto.create.topics.enable"):
        assert name in configs, f"broker config {name} missing from DescribeConfigs"


def test_incremental_alter_configs(admin, create_topic, topic_name):
    create_topic(topic_name)
    admin.incremental_alter_configs("topic", topic_name, [("SET", "retention.ms", "7200000"),
                                                         ("SET", "max.message.bytes", "2097152")])
    configs = admin.describe_configs("topic", topic_name)
    assert configs["retention.ms"].value == "7200000"
    assert configs["retention.ms"].source == "DYNAMIC_TOPIC_CONFIG"
    assert configs["max.message.bytes"].value == "2097152"

    # validate_only changes nothing
    admin.incremental_alter_configs("topic", topic_name, [("SET", "retention.ms", "1000")], validate_only=True)
    assert admin.describe_configs("topic", topic_name)["retention.ms"].value == "7200000"

    # DELETE returns to the default; the other override stays
    admin.incremental_alter_configs("topic", topic_name, [("DELETE", "retention.ms", None)])
    configs = admin.describe_configs("topic", topic_name)
    assert configs["retention.ms"].is_default and configs["retention.ms"].value == "604800000"
    assert configs["max.message.bytes"].value == "2097152"

    # APPEND / SUBTRACT on a list config
    admin.incremental_alter_configs("topic", topic_name, [("APPEND", "cleanup.policy", "compact")])
    assert set(admin.describe_configs("topic", topic_name)["cleanup.policy"].value.split(",")) == {"delete", "compact"}
    admin.incremental_alter_configs("topic", topic_name, [("SUBTRACT", "cleanup.policy", "delete")])
    assert admin.describe_configs("topic", topic_name)["cleanup.policy"].value == "compact"


def test_incremental_alter_configs_rejects_bad_values(admin, create_topic, topic_name):
    create_topic(topic_name)
    with pytest.raises(BrokerError) as e:
        admin.incremental_alter_configs("topic", topic_name, [("SET", "retention.ms", "not a number")])
    assert e.value.code == "INVALID_CONFIG"
    with pytest.raises(BrokerError) as e:
        admin.incremental_alter_configs("topic", topic_name, [("SET", "no.such.config", "1")])
    assert e.value.code == "INVALID_CONFIG"


def test_alter_configs_replaces_the_whole_set(admin, create_topic, topic_name):
    """The legacy AlterConfigs sets exactly the given configs: others return to their defaults."""
    create_topic(topic_name, configs={"retention.ms": "3600000"})
    admin.alter_configs("topic", topic_name, {"segment.ms": "86400000"})
    configs = admin.describe_configs("topic", topic_name)
    assert configs["segment.ms"].value == "86400000"
    assert configs["retention.ms"].is_default


def test_create_partitions(admin, admin_client, create_topic, topic_name):
    create_topic(topic_name, partitions=1)
    admin.create_partitions(topic_name, 3)
    eventually(lambda: _assert_eq(admin.describe_topics([topic_name])[topic_name]["partitions"], [0, 1, 2]))
    res = admin_client.produce(topic_name, [Msg(key=b"k", value=b"to the new partition")], partition=2)
    assert (res[0].partition, res[0].offset) == (2, 0)

    admin.create_partitions(topic_name, 5, validate_only=True)
    assert admin.describe_topics([topic_name])[topic_name]["partitions"] == [0, 1, 2]

    with pytest.raises(BrokerError) as e:
        admin.create_partitions(topic_name, 2)
    assert e.value.code == "INVALID_PARTITIONS"
    with pytest.raises(BrokerError) as e:
        admin.create_partitions(f"{topic_name}-missing", 2)
    assert e.value.code == "UNKNOWN_TOPIC_OR_PARTITION"


def _assert_eq(a, b):
    assert a == b


BASE_TS = 1_700_000_000_000
# record i has timestamp BASE_TS + TS_STEPS[i] seconds; the maximum is in the middle (offset 6)
TS_STEPS = [0, 1, 2, 3, 4, 5, 50, 6, 7, 8]


@pytest.fixture
def timestamped_topic(admin_client, create_topic, topic_name):
    create_topic(topic_name, partitions=2)
    msgs = [Msg(key=b"k", value=f"v{i}".encode(), timestamp_ms=BASE_TS + 1000 * s) for i, s in enumerate(TS_STEPS)]
    admin_client.produce(topic_name, msgs, partition=0)  # one batch
    return topic_name


def test_list_offsets_earliest_latest(admin, timestamped_topic):
    assert admin.list_offsets(timestamped_topic, [0, 1], "earliest") == {0: (0, -1), 1: (0, -1)}
    latest = admin.list_offsets(timestamped_topic, [0, 1], "latest")
    assert {p: o for p, (o, _) in latest.items()} == {0: 10, 1: 0}
    committed = admin.list_offsets(timestamped_topic, [0], "latest", isolation="read_committed")
    assert committed[0][0] == 10  # no transactions: the last stable offset is the high watermark


def test_list_offsets_by_timestamp(admin, timestamped_topic):
    t = timestamped_topic
    # the first record whose timestamp is at or after the target
    assert admin.list_offsets(t, [0], BASE_TS + 3500) == {0: (4, BASE_TS + 4000)}
    assert admin.list_offsets(t, [0], BASE_TS) == {0: (0, BASE_TS)}
    assert admin.list_offsets(t, [0], BASE_TS - 1) == {0: (0, BASE_TS)}
    assert admin.list_offsets(t, [0], BASE_TS + 6500) == {0: (6, BASE_TS + 50_000)}
    # after the last timestamp: no offset
    assert admin.list_offsets(t, [0], BASE_TS + 60_000)[0][0] == -1
    assert admin.list_offsets(t, [1], BASE_TS)[1][0] == -1


def test_list_offsets_max_timestamp(admin, timestamped_topic):
    """MAX_TIMESTAMP (ListOffsets v7+) is the offset of the record with the largest timestamp."""
    assert admin.list_offsets(timestamped_topic, [0], "max_timestamp") == {0: (6, BASE_TS + 50_000)}


def test_list_offsets_across_batches(admin, admin_client, create_topic, topic_name):
    """Timestamp lookups across several batches (the time index), and a maximum timestamp that is
    not in the last batch."""
    create_topic(topic_name)
    steps = [[0, 1, 2, 3], [4, 5, 90, 6], [7, 8, 9, 10], [11, 12, 13, 14]]
    for batch in steps:
        admin_client.produce(topic_name, [Msg(key=b"k", value=str(s).encode(), timestamp_ms=BASE_TS + 1000 * s)
                                          for s in batch], partition=0)
    assert admin.list_offsets(topic_name, [0], BASE_TS + 8000) == {0: (6, BASE_TS + 90_000)}
    assert admin.list_offsets(topic_name, [0], BASE_TS + 10_500) == {0: (6, BASE_TS + 90_000)}
    assert admin.list_offsets(topic_name, [0], BASE_TS + 5000) == {0: (5, BASE_TS + 5000)}
    assert admin.list_offsets(topic_name, [0], BASE_TS + 91_000)[0][0] == -1
    assert admin.list_offsets(topic_name, [0], "max_timestamp") == {0: (6, BASE_TS + 90_000)}
    assert admin.list_offsets(topic_name, [0], "latest")[0][0] == 16


def test_list_offsets_of_unknown_topic(admin, topic_name):
    with pytest.raises(BrokerError) as e:
        admin.list_offsets(topic_name + "-missing", [0], "latest")
    # librdkafka answers from its metadata (the broker said the topic does not exist): _NOENT
    assert e.value.code in ("UNKNOWN_TOPIC_OR_PARTITION", "_NOENT")


def test_delete_records(admin, admin_client, create_topic, topic_name):
    create_topic(topic_name)
    admin_client.produce(topic_name, [Msg(key=b"k", value=f"v{i}".encode()) for i in range(10)], partition=0)
    assert admin.delete_records(topic_name, {0: 4}) == {0: 4}
    assert admin.list_offsets(topic_name, [0], "earliest")[0][0] == 4
    assert admin.list_offsets(topic_name, [0], "latest")[0][0] == 10
    got = admin_client.consume(topic_name, [0], 6)
    assert [m.offset for m in got] == list(range(4, 10))
    # deleting below the log start offset leaves it where it is
    assert admin.delete_records(topic_name, {0: 2}) == {0: 4}
    # past the high watermark: OFFSET_OUT_OF_RANGE
    with pytest.raises(BrokerError) as e:
        admin.delete_records(topic_name, {0: 11})
    assert e.value.code == "OFFSET_OUT_OF_RANGE"
    # up to the high watermark empties the partition; new records continue the offsets
    assert admin.delete_records(topic_name, {0: 10}) == {0: 10}
    res = admin_client.produce(topic_name, [Msg(key=b"k", value=b"after")], partition=0)
    assert res[0].offset == 10
    assert admin.list_offsets(topic_name, [0], "earliest")[0][0] == 10


def test_describe_cluster(admin, bootstrap):
    cluster = admin.describe_cluster()
    assert cluster["cluster_id"]
    assert cluster["nodes"], "no brokers"
    ids = {n["id"] for n in cluster["nodes"]}
    assert cluster["controller"] in ids
    host, port = bootstrap.rsplit(":", 1)
    assert any(n["port"] == int(port) for n in cluster["nodes"]), cluster


def test_describe_topics_with_topic_ids(admin, create_topic, topic_name):
    create_topic(topic_name, partitions=2)
    desc = admin.describe_topics([topic_name])[topic_name]
    topic_id = desc["topic_id"]
    assert topic_id and topic_id != "AAAAAAAAAAAAAAAAAAAAAA"
    # stable across calls
    assert admin.describe_topics([topic_name])[topic_name]["topic_id"] == topic_id
    by_id = admin.describe_topics_by_id([topic_id])
    assert list(by_id) == [topic_name]
    assert by_id[topic_name]["partitions"] == [0, 1]


def test_delete_topic_by_id(admin, create_topic, topic_name):
    create_topic(topic_name)
    topic_id = admin.describe_topics([topic_name])[topic_name]["topic_id"]
    admin.delete_topics_by_id([topic_id])
    eventually(lambda: _assert_eq(topic_name in admin.list_topics(), False))


def test_describe_unknown_topic(admin, topic_name):
    with pytest.raises(BrokerError) as e:
        admin.describe_topics([topic_name + "-missing"])
    assert e.value.code == "UNKNOWN_TOPIC_OR_PARTITION"


def test_recreated_topic_gets_a_new_id(admin, create_topic, topic_name):
    create_topic(topic_name)
    first = admin.describe_topics([topic_name])[topic_name]["topic_id"]
    admin.delete_topics([topic_name])
    eventually(lambda: _assert_eq(topic_name in admin.list_topics(), False))
    create_topic(topic_name)
    second = admin.describe_topics([topic_name])[topic_name]["topic_id"]
    assert first != second


def test_recreated_topic_starts_empty(admin, admin_client, create_topic, topic_name):
    create_topic(topic_name)
    admin_client.produce(topic_name, [Msg(key=b"k", value=f"old{i}".encode()) for i in range(5)], partition=0)
    admin.delete_topics([topic_name])
    eventually(lambda: _assert_eq(topic_name in admin.list_topics(), False))
    create_topic(topic_name)
    assert admin.list_offsets(topic_name, [0], "latest")[0][0] == 0
    res = admin_client.produce(topic_name, [Msg(key=b"k", value=b"new")], partition=0)
    assert res[0].offset == 0
    (got,) = admin_client.consume(topic_name, [0], 1)
    assert (got.offset, got.value) == (0, b"new")


@pytest.mark.java
def test_describe_log_dirs(bootstrap, admin_client, create_topic, topic_name):
    from compat_tests.clients.java import JavaClient

    create_topic(topic_name, partitions=2)
    admin_client.produce(topic_name, [Msg(key=b"k", value=b"x" * 1000) for _ in range(10)], partition=1)
    java = JavaClient(bootstrap)
    (cluster,) = java.admin({"op": "describeCluster"})
    node = cluster["nodes"][0]["id"]
    (dirs,) = java.admin({"op": "describeLogDirs", "brokers": [node]})
    replicas = {}
    for d in dirs[str(node)].values():
        assert d["error"] is None
        replicas.update(d["replicas"])
    assert f"{topic_name}-0" in replicas and f"{topic_name}-1" in replicas
    assert replicas[f"{topic_name}-1"]["size"] >= 10_000
    assert replicas[f"{topic_name}-0"]["size"] == 0


@pytest.mark.on_kafka_too
# the Java admin only: the others cannot name the cluster-default resource (NAMES_THE_DEFAULT)
@pytest.mark.parametrize("admin", [pytest.param("java", marks=pytest.mark.java)], indirect=True)
def test_topic_configs_name_the_dynamic_broker_configs_they_fall_back_to(admin, create_topic, topic_name):
    """DescribeConfigs of a topic without its own min.compaction.lag.ms: the value and source
    follow the broker's dynamic configs (Kafka's ConfigHelper: the broker's own set, then the
    cluster default, then server.properties, then Kafka's default), the synonyms in that order."""
    node = str(admin.describe_cluster()["nodes"][0]["id"])
    create_topic(topic_name)
    key = "log.cleaner.min.compaction.lag.ms"   # 1 or 2 ms: nothing any other test can notice

    def described(value: str, source: str):
        def check():
            entry = admin.describe_configs("topic", topic_name)["min.compaction.lag.ms"]
            assert (entry.value, entry.source) == (value, source)
        return check

    eventually(described("0", "DEFAULT_CONFIG"), timeout=60)
    try:
        admin.incremental_alter_configs("broker", "", [("SET", key, "1")])
        eventually(described("1", "DYNAMIC_DEFAULT_BROKER_CONFIG"), timeout=60)
        admin.incremental_alter_configs("broker", node, [("SET", key, "2")])
        eventually(described("2", "DYNAMIC_BROKER_CONFIG"), timeout=60)
        admin.incremental_alter_configs("broker", node, [("DELETE", key, None)])
        eventually(described("1", "DYNAMIC_DEFAULT_BROKER_CONFIG"), timeout=60)
    finally:
        admin.incremental_alter_configs("broker", node, [("DELETE", key, None)])
        admin.incremental_alter_configs("broker", "", [("DELETE", key, None)])
    eventually(described("0", "DEFAULT_CONFIG"), timeout=60)


# clients whose admin reaches the cluster-default broker resource (""): confluent-kafka refuses an
# empty ConfigResource name and the franz driver takes broker names as numbers; sarama's change of
# the default is not seen on Apache Kafka 4.4 (its IncrementalAlterConfig picks a broker by name)
NAMES_THE_DEFAULT = ("java",)


@pytest.mark.on_kafka_too
def test_dynamic_broker_configs(admin):
    """Per-broker and cluster-default dynamic broker configs (kafka-configs.sh --entity-type brokers
    [--entity-default]): set, described with their dynamic sources, deleted."""
    node = str(admin.describe_cluster()["nodes"][0]["id"])
    default = admin.name in NAMES_THE_DEFAULT
    # The cluster default goes first and is seen before the per-broker setting is made: Kafka's
    # DynamicConfigPublisher applies config records one at a time on one thread, and a new
    # log.cleaner.threads restarts the log cleaner there, which waits for the log being cleaned;
    # a default sent after it was still missing 60 s later in a full Kafka pass on three workers.
    if default:
        admin.incremental_alter_configs("broker", "", [("SET", "follower.replication.throttled.rate", "4096")])
    try:
        def default_described():
            rate = admin.describe_configs("broker", node)["follower.replication.throttled.rate"]
            assert (rate.value, rate.source) == ("4096", "DYNAMIC_DEFAULT_BROKER_CONFIG")
        if default:
            eventually(default_described, timeout=60)
        admin.incremental_alter_configs("broker", node, [("SET", "log.cleaner.threads", "2")])

        def described():
            configs = admin.describe_configs("broker", node)
            threads = configs["log.cleaner.threads"]
            assert (threads.value, threads.source, threads.read_only) == ("2", "DYNAMIC_BROKER_CONFIG", False)
        eventually(described, timeout=60)
        if default:
            default_described()
            assert admin.describe_configs("broker", "")["follower.replication.throttled.rate"].value == "4096"
        with pytest.raises(BrokerError) as e:
            admin.incremental_alter_configs("broker", node, [("SET", "num.partitions", "3")])
        assert e.value.code == "INVALID_REQUEST"
    finally:
        if default:
            admin.incremental_alter_configs("broker", "", [("DELETE", "follower.replication.throttled.rate", None)])
        admin.incremental_alter_configs("broker", node, [("DELETE", "log.cleaner.threads", None)])

    def deleted():
        assert admin.describe_configs("broker", node)["log.cleaner.threads"].source == "DEFAULT_CONFIG"
    eventually(deleted)
