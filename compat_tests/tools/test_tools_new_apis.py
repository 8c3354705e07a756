"""Kafka's tools on the cluster administration APIs (see compat_tests/tools/test_tools.py for
the rest): client and user quotas through kafka-configs (DescribeClientQuotas/AlterClientQuotas),
GROUP configs with their synonyms and the consumer-group keys, dynamic broker configs (per broker
and cluster default), kafka-features upgrade and downgrade (UpdateFeatures), kafka-metadata-quorum
(DescribeQuorum), kafka-client-metrics (CLIENT_METRICS resources, ListConfigResources), and
preferred leader election (ElectLeaders) and a partition reassignment (AlterPartitionReassignments,
ListPartitionReassignments) on three nodes. Each case passes on kafkalite and on Apache Kafka 4.4
(``COMPAT_BROKER=kafka``).
"""

from __future__ import annotations

import json
import re
import uuid

import pytest

from compat_tests import tools
from compat_tests.cluster import Cluster
from compat_tests.waiting import wait_until

pytestmark = [pytest.mark.tools, pytest.mark.timeout(240)]


def feature_levels(kt) -> dict[str, str]:
    out = kt("kafka-features", "describe").lines()
    return {m[1]: m[2] for line in out if (m := re.match(r"Feature: (\S+)\s.*FinalizedVersionLevel: (\S+)", line))}


def test_configs_client_and_user_quotas(kt):
    client, user = f"c-{uuid.uuid4().hex[:6]}", f"u-{uuid.uuid4().hex[:6]}"
    r = kt("kafka-configs", "--alter", "--entity-type", "clients", "--entity-name", client,
           "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    assert r.lines() == [f"Completed updating config for client {client}."]
    assert kt("kafka-configs", "--describe", "--entity-type", "clients", "--entity-name", client).lines() == [
        f"Quota configs for client-id '{client}' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0"]
    kt("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
       "--entity-name", client, "--add-config", "request_percentage=50")
    assert kt("kafka-configs", "--describe", "--entity-type", "users", "--entity-name", user, "--entity-type",
              "clients", "--entity-name", client).lines() == [
        f"Quota configs for user-principal '{user}', client-id '{client}' are request_percentage=50.0"]
    kt("kafka-configs", "--alter", "--entity-type", "clients", "--entity-name", client,
       "--delete-config", "consumer_byte_rate")
    assert kt("kafka-configs", "--describe", "--entity-type", "clients", "--entity-name", client).lines() == [
        f"Quota configs for client-id '{client}' are producer_byte_rate=1024.0"]
    bad = kt("kafka-configs", "--alter", "--entity-type", "clients", "--entity-name", client,
             "--add-config", "bogus_rate=1", expect=1)
    assert bad.tool_stderr() == ("Only quota configs can be added for 'clients' using --bootstrap-server. "
                                  "Unexpected config names: bogus_rate")


def test_configs_default_user_quota_and_scram_described(kt):
    user = f"alice-{uuid.uuid4().hex[:6]}"
    kt("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", user,
       "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")
    kt("kafka-configs", "--alter", "--entity-type", "users", "--entity-default",
       "--add-config", "controller_mutation_rate=10")
    try:
        assert kt("kafka-configs", "--describe", "--entity-type", "users", "--entity-name", user).lines() == [
            f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations=8192"]
        every = kt("kafka-configs", "--describe", "--entity-type", "users").lines()
        assert "Quota configs for the default user-principal are controller_mutation_rate=10.0" in every
    finally:
        kt("kafka-configs", "--alter", "--entity-type", "users", "--entity-default",
           "--delete-config", "controller_mutation_rate")


def test_configs_group_consumer_keys_with_synonyms(kt, group):
    kt("kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", group,
       "--add-config", "consumer.session.timeout.ms=50000,share.auto.offset.reset=earliest")
    every = kt("kafka-configs", "--describe", "--all", "--entity-type", "groups", "--entity-name", group).lines()
    assert every[0] == f"All configs for group {group} are:"
    assert ("consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.session."
            "timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}") in every
    assert ("consumer.heartbeat.interval.ms=5000 sensitive=false synonyms={DEFAULT_CONFIG:group.consumer.heartbeat."
            "interval.ms=5000}") in every
    assert ("share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset."
            "reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}") in every
    names = [line.split("=", 1)[0] for line in every[1:]]
    assert {"consumer.assignment.interval.ms", "share.record.lock.duration.ms", "streams.session.timeout.ms",
            "streams.num.standby.replicas"} <= set(names)
    bad = kt("kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", group,
             "--add-config", "consumer.session.timeout.ms=10", expect=1)
    assert "consumer.session.timeout.ms" in bad.stderr


def test_configs_dynamic_broker_and_cluster_default(kt):
    kt("kafka-configs", "--alter", "--entity-type", "brokers", "--entity-default",
       "--add-config", "log.cleaner.threads=2")
    try:
        # as for a broker's own configs below, Kafka's brokers apply the default a moment after the
        # controller took it; other tests' cluster defaults may be listed beside it
        line = "log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2}"

        def described_default() -> list[str] | None:
            lines = kt("kafka-configs", "--describe", "--entity-type", "brokers", "--entity-default").lines()
            return lines if line in lines else None

        default = wait_until(described_default, what="the cluster default")
        assert default[0] == "Default configs for brokers in the cluster are:"
        r = kt("kafka-configs", "--alter", "--entity-type", "brokers", "--entity-name", "1",
               "--add-config", "log.cleaner.threads=3")
        assert r.lines() == ["Completed updating config for broker 1."]
        # the broker applies the change a moment after the controller took it
        wait_until(lambda: kt("kafka-configs", "--describe", "--entity-type", "brokers", "--entity-name",
                              "1").lines() == [
            "Dynamic configs for broker 1 are:",
            "log.cleaner.threads=3 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=3, "
            "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}"],
            what="the broker's dynamic config")
    finally:
        kt("kafka-configs", "--alter", "--entity-type", "brokers", "--entity-name", "1",
           "--delete-config", "log.cleaner.threads")
        kt("kafka-configs", "--alter", "--entity-type", "brokers", "--entity-default",
           "--delete-config", "log.cleaner.threads")
    wait_until(lambda: kt("kafka-configs", "--describe", "--entity-type", "brokers", "--entity-name",
                          "1").lines() == ["Dynamic configs for broker 1 are:"], what="no dynamic config left")


def test_features_describe_downgrade_upgrade(kt):
    levels = feature_levels(kt)
    assert levels["metadata.version"] == "4.4-IV2" and levels["kraft.version"] == "0"
    assert {k: levels[k] for k in ("transaction.version", "group.version", "share.version", "streams.version",
                                   "eligible.leader.replicas.version")} == {
        "transaction.version": "2", "group.version": "1", "share.version": "2", "streams.version": "1",
        "eligible.leader.replicas.version": "1"}
    dry = kt("kafka-features", "downgrade", "--feature", "transaction.version=1", "--dry-run")
    assert dry.lines() == ["transaction.version can be downgraded to 1."]
    assert feature_levels(kt)["transaction.version"] == "2"
    try:
        assert kt("kafka-features", "downgrade", "--feature", "transaction.version=1").lines() == [
            "transaction.version was downgraded to 1."]
        wait_until(lambda: feature_levels(kt)["transaction.version"] == "1", what="transaction.version 1")
    finally:
        assert kt("kafka-features", "upgrade", "--feature", "transaction.version=2").lines() == [
            "transaction.version was upgraded to 2."]
    wait_until(lambda: feature_levels(kt)["transaction.version"] == "2", what="transaction.version 2")
    too_far = kt("kafka-features", "upgrade", "--feature", "transaction.version=9", expect=1)
    assert too_far.lines() == [
        "Could not upgrade transaction.version to 9. The update failed for all features since the following "
        "feature had an error: Invalid update version 9 for feature transaction.version. Local controller 1 only "
        "supports versions 0-2"]
    assert too_far.tool_stderr() == "1 out of 1 operation(s) failed.", too_far.stderr


def test_metadata_quorum_describe(kt):
    status = dict(line.split(":", 1) for line in kt("kafka-metadata-quorum", "describe", "--status").lines())
    status = {k.strip(): v.strip() for k, v in status.items()}
    assert status["LeaderId"] == "1" and int(status["LeaderEpoch"]) >= 1 and int(status["HighWatermark"]) > 0
    assert status["MaxFollowerLag"] == "0" and status["CurrentObservers"] == "[]"
    voters = json.loads(status["CurrentVoters"])
    assert [v["id"] for v in voters] == [1]
    replication = kt("kafka-metadata-quorum", "describe", "--replication").lines()
    assert replication[0].split() == ["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                                      "LastCaughtUpTimestamp", "Status"]
    leader = replication[1].split()
    assert leader[0] == "1" and leader[3] == "0" and leader[-1] == "Leader"


def test_client_metrics(kt):
    name = f"m-{uuid.uuid4().hex[:6]}"
    r = kt("kafka-client-metrics", "--alter", "--name", name, "--metrics", "org.apache.kafka.producer.",
           "--interval", "1000", "--match", "client_software_name=apache-kafka-java")
    assert r.lines() == [f"Altered client metrics config for {name}."]
    assert kt("kafka-client-metrics", "--describe", "--name", name).lines() == [
        f"Client metrics configs for {name} are:", "interval.ms=1000", "match=client_software_name=apache-kafka-java",
        "metrics=org.apache.kafka.producer."]
    assert name in kt("kafka-client-metrics", "--list").lines()
    assert kt("kafka-client-metrics", "--delete", "--name", name).lines() == [
        f"Deleted client metrics config for {name}."]
    assert name not in kt("kafka-client-metrics", "--list").lines()


@pytest.fixture(scope="module")
def three_nodes(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("tools-cluster"))
    yield c
    c.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_reassign_partitions_and_preferred_leader_election(three_nodes, tmp_path):
    bs = three_nodes.bootstrap

    def kt3(tool: str, *args: str, **kw) -> tools.ToolResult:
        return tools.run(tool, "--bootstrap-server", bs, *args, **kw)

    topic = f"moved-{uuid.uuid4().hex[:6]}"
    kt3("kafka-topics", "--create", "--topic", topic, "--replica-assignment", "1:2,2:3")
    moves = tmp_path / "moves.json"
    moves.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [3, 1], "log_dirs": ["any", "any"]},
        {"topic": topic, "partition": 1, "replicas": [2, 1], "log_dirs": ["any", "any"]}]}))
    r = kt3("kafka-reassign-partitions", "--reassignment-json-file", str(moves), "--execute")
    assert r.lines()[0] == "Current partition replica assignment"
    assert "Successfully started partition reassignments for " in r.stdout

    def verified() -> bool:
        out = kt3("kafka-reassign-partitions", "--reassignment-json-file", str(moves), "--verify").lines()
        return (f"Reassignment of partition {topic}-0 is completed." in out
                and f"Reassignment of partition {topic}-1 is completed." in out)

    wait_until(verified, timeout=60, interval=1, what="the reassignment completed")
    replicas = {line.split("\t")[1].strip(): line.split("\t")[3].strip()
                for line in kt3("kafka-topics", "--describe", "--topic", topic).lines()[1:]}
    assert replicas == {"Partition: 0": "Replicas: 3,1", "Partition: 1": "Replicas: 2,1"}
    # partition 0's preferred leader is now 3; elect it
    r = kt3("kafka-leader-election", "--election-type", "preferred", "--topic", topic, "--partition", "0")
    assert r.lines() in ([f"Successfully completed leader election (PREFERRED) for partitions {topic}-0"],
                         [f"Valid replica already elected for partitions {topic}-0"])

    def leaders() -> dict[str, str]:
        return {line.split("\t")[1].strip(): line.split("\t")[2].strip()
                for line in kt3("kafka-topics", "--describe", "--topic", topic).lines()[1:]}

    wait_until(lambda: leaders()["Partition: 0"] == "Leader: 3", timeout=30, what="node 3 leads partition 0")
    again = kt3("kafka-leader-election", "--election-type", "preferred", "--topic", topic, "--partition", "0")
    assert again.lines() == [f"Valid replica already elected for partitions {topic}-0"]
