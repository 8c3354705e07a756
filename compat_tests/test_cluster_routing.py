"""A cluster of three nodes, kafkalite's (``--nodes 3``) or Apache Kafka's, asked the same raw
requests on every node: who leads, who follows, who coordinates, and what each node answers for
partitions and groups it does not own (NOT_LEADER_OR_FOLLOWER with KIP-951's leader hint,
follower fetches from v11 as KIP-392 allows, NOT_COORDINATOR). The assertions hold on both; the
three-JVM Kafka cluster is slow to start, so this module starts one cluster for all its tests."""

from __future__ import annotations

import datetime
import time

import kio.schema.create_topics.v7.request as ct7
import kio.schema.delete_records.v2.request as dr2
import kio.schema.describe_cluster.v1.request as dc1
import kio.schema.describe_producers.v0.request as dp0
import kio.schema.fetch.v10.request as f10
import kio.schema.fetch.v12.request as f12
import kio.schema.find_coordinator.v4.request as fc4
import kio.schema.join_group.v9.request as jg9
import kio.schema.list_offsets.v7.request as lo7
import kio.schema.metadata.v12.request as md12
import kio.schema.offset_for_leader_epoch.v4.request as ol4
import kio.schema.produce.v11.request as p11
import pytest
from kio.schema.errors import ErrorCode

from compat_tests.brokers import requires_own_broker
from compat_tests.cluster import Cluster
from compat_tests.waiting import wait_until
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import Record, build_batch

pytestmark = [pytest.mark.admin, pytest.mark.timeout(600)]
MS = datetime.timedelta(milliseconds=1)
E = ErrorCode


def call(addr: str, req):
    with WireClient(addr, timeout=30) as c:
        return c.request(req)


def metadata(addr: str, *names: str):
    return call(addr, md12.MetadataRequest(
        topics=tuple(md12.MetadataRequestTopic(topic_id=None, name=n) for n in names) if names else None,
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))


def create(addr: str, name: str, partitions: int, rf: int, assignment=()):
    return call(addr, ct7.CreateTopicsRequest(topics=(ct7.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf, configs=(), assignments=tuple(
            ct7.CreatableReplicaAssignment(partition_index=i, broker_ids=tuple(b)) for i, b in enumerate(assignment))),),
        timeout=30_000 * MS, validate_only=False)).topics[0]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    requires_own_broker("a cluster of three nodes")
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        wait_until(lambda: len(metadata(c.bootstrap).brokers) == 3, 120, 0.1, "three registered brokers")
        assert create(c.bootstrap, "spread", 3, 3).error_code == E.none
        assert create(c.bootstrap, "single", -1, -1, [[1]]).error_code == E.none

        def known_everywhere():
            for addr in c.nodes.values():
                topics = metadata(addr, "spread", "single").topics
                if any(t.error_code != E.none or any(p.leader_id < 0 for p in t.partitions) for t in topics):
                    return False
            return True

        wait_until(known_everywhere, 60, 0.1, "both topics led on every node")
        yield c
    finally:
        c.close()


def produce(addr: str, topic: str):
    batch = build_batch([Record(key=b"k", value=b"v", headers=(), timestamp_ms=int(time.time() * 1000))])
    resp = call(addr, p11.ProduceRequest(transactional_id=None, acks=-1, timeout=10_000 * MS, topic_data=(
        p11.TopicProduceData(name=topic, partition_data=(p11.PartitionProduceData(index=0, records=bytes(batch)),)),)))
    return resp, resp.responses[0].partition_responses[0]


def fetch(addr: str, topic: str, version: int = 12):
    if version == 10:
        req = f10.FetchRequest(replica_id=-1, max_wait=0 * MS, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                               session_id=0, session_epoch=-1, forgotten_topics_data=(), topics=(f10.FetchTopic(
                                   topic=topic, partitions=(f10.FetchPartition(
                                       partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                       partition_max_bytes=1 << 20),)),))
    else:
        req = f12.FetchRequest(max_wait=0 * MS, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                               session_epoch=-1, forgotten_topics_data=(), rack_id="", topics=(f12.FetchTopic(
                                   topic=topic, partitions=(f12.FetchPartition(
                                       partition=0, current_leader_epoch=-1, fetch_offset=0,
                                       partition_max_bytes=1 << 20),)),))
    return call(addr, req).responses[0].partitions[0]


def test_every_node_reports_the_same_brokers_leaders_and_replicas(cluster):
    for addr in cluster.nodes.values():
        md = metadata(addr, "spread")
        assert sorted(b.node_id for b in md.brokers) == [1, 2, 3]
        parts = md.topics[0].partitions
        assert len({p.leader_id for p in parts}) == 3  # one leader per node
        for p in parts:
            assert sorted(p.replica_nodes) == [1, 2, 3] and sorted(p.isr_nodes) == [1, 2, 3]
            assert p.leader_id == p.replica_nodes[0] and p.leader_epoch == 0  # the preferred leader
    described = call(cluster.bootstrap, dc1.DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                                   endpoint_type=1))
    assert sorted(b.broker_id for b in described.brokers) == [1, 2, 3]
    assert described.controller_id in (1, 2, 3)
    too_many = create(cluster.bootstrap, "four-replicas", 1, 4)
    assert too_many.error_code == E.invalid_replication_factor
    assert "only 3 broker(s) are registered" in too_many.error_message


def test_a_follower_refuses_writes_and_names_the_leader(cluster):
    part = metadata(cluster.bootstrap, "spread").topics[0].partitions[0]
    leader, follower = part.leader_id, next(n for n in part.replica_nodes if n != part.leader_id)
    _, ok = produce(cluster.nodes[leader], "spread")
    assert ok.error_code == E.none
    resp, refused = produce(cluster.nodes[follower], "spread")
    assert refused.error_code == E.not_leader_or_follower
    # KIP-951: the current leader, its epoch and its endpoint come with the error
    assert (refused.current_leader.leader_id, refused.current_leader.leader_epoch) == (leader, 0)
    host, port = cluster.nodes[leader].rsplit(":", 1)
    assert [(e.node_id, e.port) for e in resp.node_endpoints] == [(leader, int(port))]
    wait_until(lambda: fetch(cluster.nodes[follower], "spread").high_watermark >= 1, 30, 0.1, "the follower's HW")
    # KIP-392: from v11 a follower serves a consumer's fetch; before, only the leader does
    served = fetch(cluster.nodes[follower], "spread")
    assert (served.error_code, served.preferred_read_replica) == (E.none, -1) and served.records
    assert fetch(cluster.nodes[follower], "spread", version=10).error_code == E.not_leader_or_follower
    offsets = call(cluster.nodes[follower], lo7.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
        lo7.ListOffsetsTopic(name="spread", partitions=(
            lo7.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1),)),)))
    assert offsets.topics[0].partitions[0].error_code == E.not_leader_or_follower
    epochs = call(cluster.nodes[follower], ol4.OffsetForLeaderEpochRequest(replica_id=-1, topics=(
        ol4.OffsetForLeaderTopic(topic="spread", partitions=(
            ol4.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0),)),)))
    assert epochs.topics[0].partitions[0].error_code == E.not_leader_or_follower
    deleted = call(cluster.nodes[follower], dr2.DeleteRecordsRequest(timeout=5000 * MS, topics=(
        dr2.DeleteRecordsTopic(name="spread", partitions=(dr2.DeleteRecordsPartition(partition_index=0, offset=0),)),)))
    assert deleted.topics[0].partitions[0].error_code == E.not_leader_or_follower
    producers = call(cluster.nodes[follower], dp0.DescribeProducersRequest(topics=(
        dp0.TopicRequest(name="spread", partition_indexes=(0,)),)))
    assert producers.topics[0].partitions[0].error_code == E.none  # any replica answers


def test_a_node_that_holds_no_replica_refuses_reads_and_writes(cluster):
    stranger = cluster.nodes[2]  # "single" lives on node 1 only
    resp, refused = produce(stranger, "single")
    assert refused.error_code == E.not_leader_or_follower
    assert (refused.current_leader.leader_id, [e.node_id for e in resp.node_endpoints]) == (1, [1])
    assert fetch(stranger, "single").error_code == E.not_leader_or_follower
    producers = call(stranger, dp0.DescribeProducersRequest(topics=(
        dp0.TopicRequest(name="single", partition_indexes=(0,)),)))
    assert producers.topics[0].partitions[0].error_code == E.not_leader_or_follower


def test_every_node_names_the_same_coordinators_and_the_others_refuse(cluster):
    keys = tuple(f"group-{i}" for i in range(6))

    def coordinators(addr):
        found = call(addr, fc4.FindCoordinatorRequest(key_type=0, coordinator_keys=keys)).coordinators
        return [(c.node_id, c.error_code) for c in found]

    # Kafka answers COORDINATOR_NOT_AVAILABLE while it creates __consumer_offsets
    wait_until(lambda: all(e == E.none for _, e in coordinators(cluster.bootstrap)), 120, 0.2, "coordinators")
    answers = [coordinators(addr) for addr in cluster.nodes.values()]
    assert answers[0] == answers[1] == answers[2]
    offsets_topic = metadata(cluster.bootstrap, "__consumer_offsets").topics[0].partitions
    assert {len(p.replica_nodes) for p in offsets_topic} == {3}
    coordinator = answers[0][0][0]
    join = jg9.JoinGroupRequest(group_id=keys[0], session_timeout=10_000 * MS, rebalance_timeout=10_000 * MS,
                                member_id="", group_instance_id=None, protocol_type="consumer", reason=None,
                                protocols=(jg9.JoinGroupRequestProtocol(name="range", metadata=b""),))
    for node, addr in cluster.nodes.items():
        if node != coordinator:
            assert call(addr, join).error_code == E.not_coordinator
    wait_until(lambda: call(cluster.nodes[coordinator], join).error_code == E.member_id_required, 60, 0.2,
               "the coordinator takes the member")
