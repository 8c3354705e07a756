"""Dynamic broker configs (broker.dynamic_configs): Kafka's validation and messages, and on the
wire a cluster default that reaches the topics, a per-broker value over it, the describe of both
resources, the legacy AlterConfigs replacing a broker's set, and the values surviving a restart.
compat_tests/differ (admin_conversations.py, "dynamic broker configs") holds the same requests
against Apache Kafka."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request
from kafkalite.broker.dynamic_configs import DynamicConfigError, validate
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers

BROKER, TOPIC = 4, 2
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.mark.parametrize("props,per_broker,message", [
    ({"num.partitions": "3"}, True, "Cannot update these configs dynamically: [num.partitions]"),
    ({"ssl.keystore.location": "/k"}, True,
     "These security configs can be dynamically updated only per-listener using the listener prefix: "
     "[ssl.keystore.location]"),
    ({"log.cleaner.threads": "many"}, True,
     "Invalid value many for configuration log.cleaner.threads: Not a number of type INT"),
    ({"listeners": "PLAINTEXT://:1"}, False,
     "Cannot update these configs at default cluster level, broker id must be specified: [listeners]"),
    ({"listener.name.sasl_plaintext.plain.sasl.jaas.config": "x"}, False,
     "Cannot update these configs at default cluster level, broker id must be specified: "
     "[listener.name.sasl_plaintext.plain.sasl.jaas.config]"),
])
def test_refusals(props, per_broker, message):
    with pytest.raises(DynamicConfigError) as exc:
        validate(props, per_broker)
    assert exc.value.message == message


def test_accepted():
    validate({"log.cleaner.threads": "2", "no.such.key": "x", "listeners": "PLAINTEXT://:1"}, True)
    validate({"leader.replication.throttled.rate": "1024", "log.retention.ms": "1000"}, False)


def incremental(wire, name, configs, validate_only=False):
    resp = wire.request(request(44, 1, validate_only=validate_only, resources=[
        {"resource_type": BROKER, "resource_name": name,
         "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in configs]}]))
    return [(r.error_code, r.error_message) for r in resp.responses]


def describe(wire, rtype, name, keys):
    resp = wire.request(request(32, 4, include_synonyms=True, include_documentation=False, resources=[
        {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}]))
    return {e.name: e for e in resp.results[0].configs}


def test_set_describe_apply_and_restart(tmp_path):
    topic = f"dyn-{uuid.uuid4().hex[:6]}"
    with suite_brokers.running(data_dir=tmp_path) as broker:
        with WireClient(broker.bootstrap) as wire:
            wire.request(request(19, 7, timeout=5000, validate_only=False, topics=[
                {"name": topic, "num_partitions": 1, "replication_factor": 1, "configs": []}]))
            assert incremental(wire, "", [("log.retention.ms", SET, "3600000"),
                                          ("follower.replication.throttled.rate", SET, "4096")]) == [
                (ErrorCode.none, None)]
            assert incremental(wire, "1", [("log.cleaner.threads", SET, "2"),
                                           ("follower.replication.throttled.rate", SET, "1024")]) == [
                (ErrorCode.none, None)]
            # the cluster default reaches the topic's effective retention
            assert describe(wire, TOPIC, topic, ["retention.ms"])["retention.ms"].value == "3600000"
            default = describe(wire, BROKER, "", None)
            assert {n: (e.value, e.config_source) for n, e in default.items()} == {
                "follower.replication.throttled.rate": ("4096", 3), "log.retention.ms": ("3600000", 3)}
            mine = describe(wire, BROKER, "1", ["log.cleaner.threads", "follower.replication.throttled.rate",
                                                "leader.replication.throttled.rate", "log.retention.ms"])
            assert "leader.replication.throttled.rate" not in mine  # listed only once set, as on Kafka
            rate = mine["follower.replication.throttled.rate"]
            assert (rate.value, rate.config_source, rate.read_only) == ("1024", 2, False)
            assert [(s.value, s.source) for s in rate.synonyms] == [("1024", 2), ("4096", 3)]
            threads = mine["log.cleaner.threads"]
            assert [(s.value, s.source) for s in threads.synonyms] == [("2", 2), ("1", 5)]
            assert incremental(wire, "1", [("log.cleaner.threads", APPEND, "3")]) == [
                (ErrorCode.invalid_config, "Config value append is not allowed for config key: log.cleaner.threads")]
            assert incremental(wire, "1", [("num.partitions", SET, "3")]) == [
                (ErrorCode.invalid_request, "Cannot update these configs dynamically: [num.partitions]")]
            assert incremental(wire, "1", [("log.cleaner.threads", SET, "4")], validate_only=True) == [
                (ErrorCode.none, None)]
            # the legacy AlterConfigs replaces the broker's whole set
            resp = wire.request(request(33, 2, validate_only=False, resources=[
                {"resource_type": BROKER, "resource_name": "1", "configs": [{"name": "log.cleaner.threads",
                                                                             "value": "3"}]}]))
            assert resp.responses[0].error_code == ErrorCode.none
    with suite_brokers.running(data_dir=tmp_path) as broker:
        with WireClient(broker.bootstrap) as wire:
            mine = describe(wire, BROKER, "1", ["log.cleaner.threads", "follower.replication.throttled.rate"])
            assert (mine["log.cleaner.threads"].value, mine["log.cleaner.threads"].config_source) == ("3", 2)
            assert mine["follower.replication.throttled.rate"].config_source == 3
            assert describe(wire, TOPIC, topic, ["retention.ms"])["retention.ms"].value == "3600000"
            incremental(wire, "", [("log.retention.ms", DELETE, None)])
            assert describe(wire, TOPIC, topic, ["retention.ms"])["retention.ms"].value == "604800000"


def test_list_increments_start_from_kafkas_default():
    """log.cleanup.policy APPEND compact on a broker with no dynamic value gives delete,compact and
    SUBTRACT compact gives delete again (Kafka's controller starts from the key's default, not from
    nothing); the cluster default is not where a broker's increment starts either. A topic created
    afterwards inherits delete, and DeleteRecords on it is taken."""
    topic = f"dyn-{uuid.uuid4().hex[:6]}"
    with suite_brokers.running() as broker, WireClient(broker.bootstrap) as wire:
        assert incremental(wire, "1", [("log.cleanup.policy", APPEND, "compact")]) == [(ErrorCode.none, None)]
        assert describe(wire, BROKER, "1", ["log.cleanup.policy"])["log.cleanup.policy"].value == "delete,compact"
        assert incremental(wire, "1", [("log.cleanup.policy", SUBTRACT, "compact")]) == [(ErrorCode.none, None)]
        assert describe(wire, BROKER, "1", ["log.cleanup.policy"])["log.cleanup.policy"].value == "delete"
        assert incremental(wire, "", [("log.cleanup.policy", APPEND, "compact")]) == [(ErrorCode.none, None)]
        assert incremental(wire, "1", [("log.cleanup.policy", DELETE, None)]) == [(ErrorCode.none, None)]
        assert incremental(wire, "1", [("log.cleanup.policy", SUBTRACT, "compact")]) == [(ErrorCode.none, None)]
        entry = describe(wire, BROKER, "1", ["log.cleanup.policy"])["log.cleanup.policy"]
        assert [(s.value, s.source) for s in entry.synonyms][:2] == [("delete", 2), ("delete,compact", 3)]
        wire.request(request(19, 7, timeout=5000, validate_only=False, topics=[
            {"name": topic, "num_partitions": 1, "replication_factor": 1, "configs": []}]))
        assert describe(wire, TOPIC, topic, ["cleanup.policy"])["cleanup.policy"].value == "delete"
        deleted = wire.request(request(21, 2, timeout=5000, topics=[
            {"name": topic, "partitions": [{"partition_index": 0, "offset": 0}]}]))
        assert deleted.topics[0].partitions[0].error_code == ErrorCode.none
