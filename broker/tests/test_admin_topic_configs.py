"""Topic config definitions: parsing, validation messages and how configs are described."""

from __future__ import annotations

import pytest

from kafkalite.broker.settings.broker_keys import BROKER_KEYS
from kafkalite.broker.settings.describe import describe_broker_configs, describe_topic_configs
from kafkalite.broker.settings.topic_keys import (
    TOPIC_CONFIGS, is_list_config, topic_config_default, validate_topic_configs,
)
from kafkalite.broker.settings.values import ConfigError, ConfigSource, ConfigType, parse_value, to_string


def error_of(configs, **kw) -> str:
    with pytest.raises(ConfigError) as info:
        validate_topic_configs(configs, **kw)
    return str(info.value)


def test_valid_overrides_come_back_as_kafka_prints_them():
    out = validate_topic_configs({
        "retention.ms": " 100 ", "cleanup.policy": "compact , delete", "preallocate": "TRUE",
        "min.cleanable.dirty.ratio": "1", "compression.type": "zstd", "retention.bytes": "-1",
        "leader.replication.throttled.replicas": "0:1,1:1", "follower.replication.throttled.replicas": "*",
    })
    assert out == {
        "retention.ms": "100", "cleanup.policy": "compact,delete", "preallocate": "true",
        "min.cleanable.dirty.ratio": "1.0", "compression.type": "zstd", "retention.bytes": "-1",
        "leader.replication.throttled.replicas": "0:1,1:1", "follower.replication.throttled.replicas": "*",
    }


def test_an_empty_cleanup_policy_is_allowed():
    assert validate_topic_configs({"cleanup.policy": ""}) == {"cleanup.policy": ""}


@pytest.mark.parametrize("configs, message", [
    ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
    ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ({"retention.ms": "1.5"}, "Invalid value 1.5 for configuration retention.ms: Not a number of type LONG"),
    ({"segment.bytes": "99999999999"},
     "Invalid value 99999999999 for configuration segment.bytes: Not a number of type INT"),
    ({"retention.ms": "-2"}, "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ({"segment.bytes": "1024"}, "Invalid value 1024 for configuration segment.bytes: Value must be at least 1048576"),
    ({"segment.ms": "0"}, "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
    ({"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ({"min.cleanable.dirty.ratio": "1.5"},
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"min.cleanable.dirty.ratio": "x"},
     "Invalid value x for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
    ({"cleanup.policy": "remove"},
     "Invalid value remove for configuration cleanup.policy: String must be one of: compact, delete"),
    ({"cleanup.policy": "delete,delete"}, "Configuration 'cleanup.policy' values must not be duplicated."),
    ({"cleanup.policy": "delete,,compact"}, "Configuration 'cleanup.policy' values must not be empty."),
    ({"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: String must be one "
                                     "of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ({"message.timestamp.type": "createtime"}, "Invalid value createtime for configuration message.timestamp.type: "
                                               "String must be one of: CreateTime, LogAppendTime"),
    ({"unclean.leader.election.enable": "yes"},
     "Invalid value yes for configuration unclean.leader.election.enable: Expected value to be either true or false"),
    ({"compression.gzip.level": "10"},
     "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ({"compression.lz4.level": "18"},
     "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17"),
    ({"compression.zstd.level": "-200000"},
     "Invalid value -200000 for configuration compression.zstd.level: Value must be at least -131072"),
    ({"leader.replication.throttled.replicas": "1-2"},
     "Invalid value [1-2] for configuration leader.replication.throttled.replicas: "
     "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: "
     "[partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
    ({"remote.storage.enable": "true"}, "Tiered Storage functionality is disabled in the broker. "
                                        "Topic cannot be configured with remote log storage."),
    ({"retention.ms": None, "segment.ms": None}, "Null value not supported for topic configs: retention.ms,segment.ms"),
])
def test_kafka_messages_for_bad_configs(configs, message):
    assert error_of(configs) == message


def test_first_error_in_kafka_definition_order():
    # segment.bytes is defined before retention.ms in LogConfig, so it is reported first
    assert "segment.bytes" in error_of({"retention.ms": "x", "segment.bytes": "x"})
    # unknown names are reported before any value
    assert error_of({"retention.ms": "x", "bogus": "1"}) == "Unknown topic config name: bogus"


def test_parse_integers_like_java():
    assert parse_value("x", ConfigType.INT, "+7") == 7
    assert parse_value("x", ConfigType.LONG, str(2**63 - 1)) == 2**63 - 1
    for bad in ("1_000", "0x10", "", " ", "1e3", str(2**63)):
        with pytest.raises(ConfigError):
            parse_value("x", ConfigType.LONG, bad)


def test_list_and_double_strings():
    assert to_string(ConfigType.LIST, ["a", "b"]) == "a,b"
    assert to_string(ConfigType.DOUBLE, 0.5) == "0.5"
    assert to_string(ConfigType.DOUBLE, 2.0) == "2.0"
    assert to_string(ConfigType.BOOLEAN, False) == "false"
    assert parse_value("x", ConfigType.LIST, "  ") == []


def test_every_definition_default_passes_its_own_validator():
    checked = set()
    for d in TOPIC_CONFIGS.values():
        if d.default is not None and d.validator is not None:
            d.validator(d.name, d.default)  # raises ConfigError on a bad default
            checked.add(d.name)
    # the loop is not vacuous: the validated configs include Kafka's ranged ones...
    assert {"segment.bytes", "retention.ms", "max.message.bytes", "min.cleanable.dirty.ratio", "cleanup.policy",
            "compression.type", "message.timestamp.type", "min.insync.replicas"} <= checked
    # ...and their validators reject what Kafka rejects
    for name, bad in [("segment.bytes", 1), ("max.message.bytes", -1), ("min.cleanable.dirty.ratio", 1.5),
                      ("cleanup.policy", ["nope"]), ("compression.type", "brotli"), ("min.insync.replicas", 0)]:
        with pytest.raises(ConfigError):
            TOPIC_CONFIGS[name].validator(name, bad)


def test_list_configs_and_static_defaults():
    assert is_list_config("cleanup.policy")
    assert not is_list_config("retention.ms")
    assert not is_list_config("no.such.config")
    assert topic_config_default("cleanup.policy") == "delete"
    assert topic_config_default("message.timestamp.after.max.ms") == "3600000"


def by_name(entries):
    return {e.name: e for e in entries}


def test_describe_defaults_overrides_and_broker_fallbacks():
    broker = {"log.retention.ms": 604_800_000, "log.segment.bytes": 1 << 20, "message.max.bytes": 1048588,
              "log.cleanup.policy": "delete"}
    entries = by_name(describe_topic_configs({"cleanup.policy": "compact"}, broker))
    assert "internal.segment.bytes" not in entries
    assert entries["cleanup.policy"].value == "compact"
    assert entries["cleanup.policy"].source == ConfigSource.TOPIC_CONFIG
    assert entries["cleanup.policy"].synonyms == [
        ("cleanup.policy", "compact", ConfigSource.TOPIC_CONFIG),
        ("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)]
    # a broker setting that differs from Kafka's default counts as set in server.properties
    assert entries["segment.bytes"].value == str(1 << 20)
    assert entries["segment.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["segment.bytes"].synonyms == [
        ("log.segment.bytes", str(1 << 20), ConfigSource.STATIC_BROKER_CONFIG),
        ("log.segment.bytes", str(1 << 30), ConfigSource.DEFAULT_CONFIG)]
    # retention.ms at its default: Kafka reports no synonyms (log.retention.ms has no default)
    assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG
    assert entries["retention.ms"].synonyms == []
    assert entries["max.message.bytes"].synonyms == [("message.max.bytes", "1048588", ConfigSource.DEFAULT_CONFIG)]
    assert entries["remote.storage.enable"].synonyms == []
    assert entries["min.cleanable.dirty.ratio"].type == ConfigType.DOUBLE
    assert all(not e.read_only and not e.sensitive and e.doc for e in entries.values())
    names = [e.name for e in describe_topic_configs({}, broker)]
    assert names == sorted(names)


def test_describe_broker_set_retention_chain():
    entries = by_name(describe_topic_configs({}, {"log.retention.ms": 1000}))
    assert entries["retention.ms"].value == "1000"
    assert entries["retention.ms"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["retention.ms"].synonyms == [
        ("log.retention.ms", "1000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)]


def test_describe_selected_names():
    entries = describe_topic_configs({}, {}, names=["retention.ms", "nope"])
    assert [e.name for e in entries] == ["retention.ms"]


def test_describe_broker_settings():
    values = {"num.partitions": 3, "auto.create.topics.enable": True, "log.retention.ms": 604_800_000,
              "node.id": 1, "fsync": "interval", "made.up.key": 5}
    entries = by_name(describe_broker_configs(values, BROKER_KEYS))
    assert entries["num.partitions"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["num.partitions"].synonyms == [("num.partitions", "3", ConfigSource.STATIC_BROKER_CONFIG),
                                                  ("num.partitions", "1", ConfigSource.DEFAULT_CONFIG)]
    assert entries["num.partitions"].doc == BROKER_KEYS["num.partitions"].doc
    assert entries["auto.create.topics.enable"].value == "true"
    assert entries["auto.create.topics.enable"].source == ConfigSource.DEFAULT_CONFIG
    assert entries["log.retention.ms"].source == ConfigSource.DEFAULT_CONFIG
    assert entries["log.retention.ms"].synonyms == []
    assert entries["node.id"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["fsync"].source == ConfigSource.DEFAULT_CONFIG
    assert entries["made.up.key"].type == ConfigType.INT
    assert all(e.read_only for e in entries.values())


def test_broker_lists_the_kafka_settings_behind_topic_defaults():
    entries = by_name(describe_broker_configs({"log.retention.ms": 1000}, BROKER_KEYS))
    hours = entries["log.retention.hours"]
    assert (hours.value, hours.source, hours.type) == ("168", ConfigSource.DEFAULT_CONFIG, ConfigType.INT)
    assert entries["log.retention.minutes"].value is None
    assert entries["log.cleaner.delete.retention.ms"].value == "86400000"
    assert entries["log.retention.ms"].source == ConfigSource.STATIC_BROKER_CONFIG
    names = list(entries)
    assert names == sorted(names)
    assert [e.name for e in describe_broker_configs({}, BROKER_KEYS, names=["log.roll.hours"])] == ["log.roll.hours"]
