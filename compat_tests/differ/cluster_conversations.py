"""The differ's conversations that need three nodes (compat_tests/cluster.py: Apache Kafka 4.4 with
three processes, kafkalite with --nodes 3): a reassignment that adds a replica is in progress until
the replica has caught up, one within the in-sync replicas completes at once.
test_cluster_conversations.py runs them."""

from __future__ import annotations

import time
from typing import Any

from kafkalite.protocol.records import Record, build_batch

from .admin_conversations import BROKER, DELETE, SET, TOPIC, incremental, reassign
from .conversations import Conv, produce
from .core import Conversation

CLUSTER_CONVERSATIONS: dict[str, Conv] = {}


def cluster_conversation(name: str, api_key: int, labels: tuple[str, ...] = ("t",)):
    def register(fn):
        CLUSTER_CONVERSATIONS[name] = Conv(name, api_key, labels, fn)
        return fn
    return register


def _listed(resp) -> dict[str, Any]:
    return {"error_code": int(resp.error_code), "partitions": sorted(
        [t.name, p.partition_index, list(p.replicas), list(p.adding_replicas), list(p.removing_replicas)]
        for t in resp.topics for p in t.partitions)}


def list_reassignments(c: Conversation, label: str, *, until=None) -> Any:
    """ListPartitionReassignments of the topic's partition, again until `until(answer)` (60 s at most)."""
    deadline = time.monotonic() + 60
    while True:
        resp = c.send(46, c.ver(46), record=False, timeout=10000,
                      topics=[{"name": c["t"], "partition_indexes": [0]}])
        if until is None or until(resp) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    c.record(label, _listed(resp))
    return resp


def replicas(c: Conversation, label: str) -> None:
    t = c.wait_for_leaders("t")["t"]
    c.record(label, [[p.partition_index, list(p.replica_nodes), sorted(p.isr_nodes)] for p in t.partitions])


@cluster_conversation("reassignment in progress", 46, labels=("t",))
def reassignment_in_progress(c: Conversation) -> None:
    c.send(19, c.ver(19), label="create on nodes 1 and 2", timeout_ms=30000, validate_only=False, topics=[
        {"name": c["t"], "num_partitions": -1, "replication_factor": -1, "configs": [],
         "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}]}])
    c.wait_for_leaders("t")
    # the ISR must hold both replicas before the move, or the move within it would wait for one
    c.until(3, 12, lambda r: sorted(r.topics[0].partitions[0].isr_nodes) == [1, 2], record=False,
            topics=[{"name": c["t"], "topic_id": None}], allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)
    # Kafka's new replica copies an empty partition in a moment: 3 MiB of records and a
    # replication throttle of 1 byte a second (after the first fetch of replica.fetch.max.bytes,
    # 1 MiB) keep it catching up until the throttle goes, as `kafka-reassign-partitions
    # --throttle` does; kafkalite's replicas catch up in reassignment.catch.up.ms whatever it says
    for i in range(30):
        produce(c, c.ver(0), "t", bytes(build_batch([Record(None, b"x" * 1000, (), 1000 + i)] * 100)),
                record=False)
    throttle = [("leader.replication.throttled.rate", "1"), ("follower.replication.throttled.rate", "1")]
    throttled = [("leader.replication.throttled.replicas", "*"), ("follower.replication.throttled.replicas", "*")]
    incremental(c, "throttle replication", [(BROKER, "", [(k, SET, v) for k, v in throttle]),
                                            (TOPIC, c["t"], [(k, SET, v) for k, v in throttled])])
    reassign(c, "move to nodes 3 and 1", [("t", 0, [3, 1])])
    list_reassignments(c, "listed right after: node 3 catching up")
    incremental(c, "throttle removed", [(BROKER, "", [(k, DELETE, None) for k, _ in throttle]),
                                        (TOPIC, c["t"], [(k, DELETE, None) for k, _ in throttled])])
    list_reassignments(c, "completed", until=lambda r: not r.topics)
    c.until(3, 12, lambda r: sorted(r.topics[0].partitions[0].isr_nodes) == [1, 3], record=False,
            topics=[{"name": c["t"], "topic_id": None}], allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)
    replicas(c, "after the move")
    reassign(c, "within the in-sync replicas: to node 1 alone", [("t", 0, [1])])
    list_reassignments(c, "nothing in progress")
    replicas(c, "after the second move")
