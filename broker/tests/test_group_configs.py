"""Group configs (broker.group_configs): Kafka 4.4's keys, validation messages, defaults from the
broker settings and the synonym chain DescribeConfigs reports. The same requests are compared with
Apache Kafka in compat_tests/differ (admin_conversations.py, "consumer group configs")."""

from __future__ import annotations

import pytest

from kafkalite.broker.settings.broker_keys import BROKER_KEYS
from kafkalite.broker.group_configs import GroupConfigs
from kafkalite.broker.settings.group_keys import GroupConfigError
from kafkalite.broker.settings.values import ConfigSource


@pytest.fixture
def configs(tmp_path):
    return GroupConfigs(tmp_path, {k: v.default for k, v in BROKER_KEYS.items()})


@pytest.mark.parametrize("changes,message", [
    ([("consumer.session.timeout.ms", "1000")], "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
    ([("consumer.heartbeat.interval.ms", "20000")],
     "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."),
    ([("consumer.session.timeout.ms", "soon")],
     "Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT"),
    ([("consumer.assignment.interval.ms", "-1")],
     "Invalid value -1 for configuration consumer.assignment.interval.ms: Value must be at least 0"),
    ([("consumer.no.such.key", "1")], "Unknown group config name: consumer.no.such.key"),
    ([("streams.num.standby.replicas", "3")], "streams.num.standby.replicas must be less than or equal to 2"),
    ([("share.isolation.level", "sometimes")], "Invalid value sometimes for configuration share.isolation.level: "
                                               "String must be one of: read_committed, read_uncommitted"),
])
def test_refusals(configs, changes, message):
    with pytest.raises(GroupConfigError) as exc:
        configs.alter("g", changes, validate_only=False)
    assert str(exc.value) == message
    assert configs.values == {}


def test_set_describe_delete(configs, tmp_path):
    configs.alter("g", [("consumer.session.timeout.ms", "50000"), ("share.auto.offset.reset", "earliest")],
                  validate_only=False)
    entries = {e.name: e for e in configs.describe_entries("g", None)}
    session = entries["consumer.session.timeout.ms"]
    assert (session.value, session.source) == ("50000", ConfigSource.GROUP_CONFIG)
    assert session.synonyms == [("consumer.session.timeout.ms", "50000", ConfigSource.GROUP_CONFIG),
                                ("group.consumer.session.timeout.ms", "45000", ConfigSource.DEFAULT_CONFIG)]
    heartbeat = entries["consumer.heartbeat.interval.ms"]
    assert (heartbeat.value, heartbeat.source) == ("5000", ConfigSource.DEFAULT_CONFIG)
    assert GroupConfigs(tmp_path, configs.broker_values).get("g", "share.auto.offset.reset") == "earliest"
    configs.alter("g", [("consumer.session.timeout.ms", None), ("share.auto.offset.reset", None)], validate_only=False)
    assert configs.values == {}
