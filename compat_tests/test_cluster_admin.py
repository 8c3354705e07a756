"""Features and the metadata quorum through the Java Admin client, on kafkalite and on Apache Kafka
(COMPAT_BROKER=kafka): describeFeatures lists Kafka 4.4's supported and finalized features,
updateFeatures downgrades transaction.version safely and upgrades it back (refusing an unmarked
downgrade), describeMetadataQuorum names a leader that is one of the voters; leader elections and
partition reassignments on one broker (both brokers) and on three nodes (kafkalite's --nodes)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaError

from compat_tests import brokers
from compat_tests.clients.java import JavaClient
from compat_tests.waiting import wait_until
from kafkalite.tests import suite_brokers

pytestmark = [pytest.mark.cluster_admin, pytest.mark.timeout(180)]


@pytest.fixture
def java(bootstrap):
    return JavaClient(bootstrap)


def _finalized(java) -> dict:
    (features,) = java.admin({"op": "describeFeatures"})
    return features["finalized"]


def test_describe_and_update_features(java):
    (features,) = java.admin({"op": "describeFeatures"})
    assert features["supported"]["metadata.version"] == [7, 33]
    assert features["supported"]["kraft.version"] == [0, 1]
    assert features["finalized"]["transaction.version"] == [2, 2]
    assert features["finalized"]["group.version"] == [1, 1]
    (refused,) = java.admin({"op": "updateFeatures", "updates": {"transaction.version": [1, "UPGRADE"]}},
                            raise_errors=False)
    assert refused.code == "INVALID_UPDATE_VERSION" and "Can't downgrade the version of this feature" in refused.message
    java.admin({"op": "updateFeatures", "updates": {"transaction.version": [1, "SAFE_DOWNGRADE"]}})
    try:
        wait_until(lambda: _finalized(java)["transaction.version"] == [1, 1], timeout=20,
                   what="transaction.version to be finalized at 1")
    finally:
        java.admin({"op": "updateFeatures", "updates": {"transaction.version": [2, "UPGRADE"]}})
    wait_until(lambda: _finalized(java)["transaction.version"] == [2, 2], timeout=20,
               what="transaction.version to be finalized at 2 again")


def test_describe_metadata_quorum(java):
    (quorum,) = java.admin({"op": "describeMetadataQuorum"})
    assert quorum["leader"] in quorum["voters"] and len(quorum["voters"]) == 1
    assert quorum["epoch"] > 0 and quorum["high_watermark"] > 0 and quorum["observers"] == []
    assert quorum["nodes"] == {str(quorum["leader"]): ["CONTROLLER"]}


def test_elections_and_reassignments_on_one_broker(java, bootstrap, create_topic):
    """What a single broker answers: nothing to elect, a reassignment to the replica a partition
    has completes at once, none is listed; confluent-kafka's elect_leaders sees the same."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient
    from confluent_kafka import ElectionType

    topic = create_topic(f"elect-{uuid.uuid4().hex[:6]}")
    (node,) = {n["id"] for n in java.admin({"op": "describeCluster"})[0]["nodes"]}
    (elected,) = java.admin({"op": "electLeaders", "type": "PREFERRED", "partitions": [[topic, 0]]})
    assert elected == {f"{topic}-0": "ELECTION_NOT_NEEDED"}
    (everything,) = java.admin({"op": "electLeaders", "type": "PREFERRED", "partitions": None})
    assert f"{topic}-0" not in everything  # a null list leaves out ELECTION_NOT_NEEDED
    java.admin({"op": "alterPartitionReassignments", "reassignments": [[topic, 0, [node]]]})
    assert java.admin({"op": "listPartitionReassignments"}) == [{}]
    (refused,) = java.admin({"op": "alterPartitionReassignments", "reassignments": [[topic, 0, None]]},
                            raise_errors=False)
    assert refused.code == "NO_REASSIGNMENT_IN_PROGRESS"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)]).result(timeout=30)
    (partition,) = result.values()
    assert partition.code() == KafkaError.ELECTION_NOT_NEEDED, partition


def test_reassignment_on_three_nodes():
    """kafkalite with --nodes 3 and the hold-reassignments control: the Java Admin reassigns a
    partition, lists it in progress with its adding and removing replicas, and after the release
    sees the new replicas; a preferred election brings the leadership back."""
    brokers.requires_kafkalite("three nodes and the hold-reassignments control are kafkalite's")
    with suite_brokers.running(config={"nodes": 3}, controls=0) as broker:
        java = JavaClient(broker.bootstrap)
        topic = f"reassign-{uuid.uuid4().hex[:6]}"
        java.admin({"op": "createTopics", "topics": [{"name": topic, "partitions": 1, "replication_factor": 2,
                                                      "configs": {}}]})
        (described,) = java.admin({"op": "describeTopics", "names": [topic]})
        before = described[topic]["partitions"][0]["replicas"]
        target = [n for n in (1, 2, 3) if n not in before] + [before[1]]
        broker.controls.call("hold-reassignments", held=True)
        java.admin({"op": "alterPartitionReassignments", "reassignments": [[topic, 0, target]]})
        (ongoing,) = java.admin({"op": "listPartitionReassignments"})
        assert ongoing == {f"{topic}-0": {"replicas": target + [before[0]], "adding": [target[0]],
                                          "removing": [before[0]]}}
        broker.controls.call("hold-reassignments", held=False)
        assert java.admin({"op": "listPartitionReassignments"}) == [{}]
        (described,) = java.admin({"op": "describeTopics", "names": [topic]})
        assert described[topic]["partitions"][0]["replicas"] == target
        broker.controls.call("move-leader", topic=topic, partition=0, node=target[1])
        (elected,) = java.admin({"op": "electLeaders", "type": "PREFERRED", "partitions": [[topic, 0]]})
        assert elected == {f"{topic}-0": "NONE"}
        (described,) = java.admin({"op": "describeTopics", "names": [topic]})
        assert described[topic]["partitions"][0]["leader"] == target[0]
