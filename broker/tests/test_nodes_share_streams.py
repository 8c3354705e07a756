"""Share and streams groups on several nodes: their group APIs answer NOT_COORDINATOR off the
group's coordinator, and ShareFetch / ShareAcknowledge are served by the partition's leader only
(NOT_LEADER_OR_FOLLOWER elsewhere, with the leader named), as on a multi-broker Kafka."""

from __future__ import annotations

import uuid
from datetime import timedelta

import kio.schema.find_coordinator.v4.request as fc4
import pytest
import trio
from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request as req  # requests from plain values

from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers

from .test_nodes import address, ask, cluster_of, create_request, produce_request


async def coordinator_of(broker, group: str) -> tuple[int, int]:
    """The group's coordinator and another node."""
    found = await ask(broker, 1, fc4.FindCoordinatorRequest(key_type=0, coordinator_keys=(group,)))
    node = found.coordinators[0].node_id
    return node, next(n for n in (1, 2, 3) if n != node)


def share_heartbeat(group, member, topic):
    return req(76, 1, group_id=group, member_id=member, member_epoch=0, rack_id=None,
               subscribed_topic_names=[topic])


def share_fetch(group, member, tid, epoch, acks=()):
    return req(78, 2, group_id=group, member_id=member, share_session_epoch=epoch,
               max_wait=timedelta(milliseconds=100), min_bytes=1, max_bytes=1 << 20, max_records=10,
               batch_size=10, share_acquire_mode=0, is_renew_ack=False,
               topics=[{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                   {"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in acks]}]}],
               forgotten_topics_data=[])


def share_acknowledge(group, member, tid, epoch, acks):
    return req(79, 2, group_id=group, member_id=member, share_session_epoch=epoch, is_renew_ack=False,
               topics=[{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                   {"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in acks]}]}])


def streams_heartbeat(group, member, topic):
    return req(88, 0, group_id=group, member_id=member, member_epoch=0, endpoint_information_epoch=0,
               instance_id=None, rack_id=None, rebalance_timeout=30_000, process_id=f"proc-{member}",
               topology={"epoch": 1, "subtopologies": [{"subtopology_id": "0", "source_topics": [topic]}]},
               active_tasks=[], standby_tasks=[], warmup_tasks=[], user_endpoint=None, client_tags=[],
               task_offsets=[], task_end_offsets=[], shutdown_application=False)


def test_share_and_streams_group_apis_off_the_coordinator_are_not_coordinator(tmp_path):
    async def main():
        async with cluster_of(tmp_path) as broker:
            await ask(broker, 1, create_request("t", 1, 3))
            share_group, streams_group = f"sg-{uuid.uuid4().hex[:6]}", f"st-{uuid.uuid4().hex[:6]}"

            coord, other = await coordinator_of(broker, share_group)
            refused = await ask(broker, other, share_heartbeat(share_group, "m1", "t"))
            assert (refused.error_code, refused.member_epoch) == (ErrorCode.not_coordinator, 0)
            assert broker.services.share.groups.get(share_group) is None  # nothing joined
            # a request Kafka finds invalid is INVALID_REQUEST on every node, before the routing
            invalid = await ask(broker, other, req(76, 1, group_id=share_group, member_id="m1", member_epoch=0,
                                                   rack_id=None, subscribed_topic_names=None))
            assert invalid.error_code == ErrorCode.invalid_request
            joined = await ask(broker, coord, share_heartbeat(share_group, "m1", "t"))
            assert joined.error_code == ErrorCode.none and joined.member_epoch > 0
            described = await ask(broker, other, req(77, 1, group_ids=[share_group],
                                                     include_authorized_operations=False))
            assert described.groups[0].error_code == ErrorCode.not_coordinator
            described = await ask(broker, coord, req(77, 1, group_ids=[share_group],
                                                     include_authorized_operations=False))
            assert [m.member_id for m in described.groups[0].members] == ["m1"]
            offsets = req(90, 1, groups=[{"group_id": share_group, "topics": None}])
            assert (await ask(broker, other, offsets)).groups[0].error_code == ErrorCode.not_coordinator
            assert (await ask(broker, coord, offsets)).groups[0].error_code == ErrorCode.none
            alter = req(91, 0, group_id=share_group, topics=[
                {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 0}]}])
            assert (await ask(broker, other, alter)).error_code == ErrorCode.not_coordinator
            assert (await ask(broker, coord, alter)).error_code == ErrorCode.non_empty_group
            delete = req(92, 0, group_id=share_group, topics=[{"topic_name": "t"}])
            assert (await ask(broker, other, delete)).error_code == ErrorCode.not_coordinator
            assert (await ask(broker, coord, delete)).error_code == ErrorCode.non_empty_group

            coord, other = await coordinator_of(broker, streams_group)
            refused = await ask(broker, other, streams_heartbeat(streams_group, "s1", "t"))
            assert (refused.error_code, refused.member_id, refused.member_epoch) == (
                ErrorCode.not_coordinator, "", 0)
            # a request Kafka finds invalid is INVALID_REQUEST on every node, before the routing
            invalid = await ask(broker, other, req(88, 0, group_id=streams_group, member_id="", member_epoch=0,
                                                  endpoint_information_epoch=0, rebalance_timeout=-1))
            assert invalid.error_code == ErrorCode.invalid_request
            joined = await ask(broker, coord, streams_heartbeat(streams_group, "s1", "t"))
            assert joined.error_code == ErrorCode.none and joined.member_epoch > 0
            describe = req(89, 0, group_ids=[streams_group], include_authorized_operations=False)
            assert (await ask(broker, other, describe)).groups[0].error_code == ErrorCode.not_coordinator
            described = (await ask(broker, coord, describe)).groups[0]
            assert (described.error_code, [m.member_id for m in described.members]) == (ErrorCode.none, ["s1"])

    trio.run(main)


def test_share_fetch_and_acknowledge_are_served_by_the_partition_leader(tmp_path):
    async def main():
        async with cluster_of(tmp_path) as broker:
            created = await ask(broker, 1, create_request("t", -1, -1, [[2, 3]]))  # leader 2, follower 3
            tid = created.topics[0].topic_id
            assert (await ask(broker, 2, produce_request("t", n=3))).responses[0].partition_responses[0].error_code \
                == ErrorCode.none
            group = f"sg-{uuid.uuid4().hex[:6]}"
            configs = req(44, 1, validate_only=False, resources=[{"resource_type": 32, "resource_name": group,
                          "configs": [{"name": "share.auto.offset.reset", "config_operation": 0,
                                       "value": "earliest"}]}])
            assert (await ask(broker, 1, configs)).responses[0].error_code == ErrorCode.none
            coord, _ = await coordinator_of(broker, group)
            assert (await ask(broker, coord, share_heartbeat(group, "m1", "t"))).error_code == ErrorCode.none
            leader_port = broker.address_of(2, "PLAINTEXT").port
            # a share session lives as long as the connection that opened it: one connection per node
            conns = {n: await trio.to_thread.run_sync(WireClient, address(broker, n)) for n in (1, 2, 3)}
            try:
                await _leader_serves(broker, conns, group, tid, leader_port)
            finally:
                for c in conns.values():
                    c.close()

    trio.run(main)


async def _leader_serves(broker, conns, group, tid, leader_port):
    """ShareFetch and ShareAcknowledge to leader 2, follower 3 and non-replica 1 of the partition."""
    async def ask(_broker, node, request):
        return await trio.to_thread.run_sync(conns[node].request, request)

    for node in (1, 3):  # not a replica; a follower
        resp = await ask(broker, node, share_fetch(group, "m1", tid, 0))
        assert resp.error_code == ErrorCode.none
        (part,) = resp.responses[0].partitions
        assert (part.error_code, part.acquired_records) == (ErrorCode.not_leader_or_follower, ())
        assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (2, 0)
        assert [(e.node_id, e.port) for e in resp.node_endpoints] == [(2, leader_port)]

    resp = await ask(broker, 2, share_fetch(group, "m1", tid, 0))
    (part,) = resp.responses[0].partitions
    assert part.error_code == ErrorCode.none and resp.node_endpoints == ()
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records] == [(0, 2, 1)]

    # an acknowledgement sent to a follower is refused and not applied; closing the member's share
    # session there (epoch -1) leaves its session on the leader, and what it holds, alone
    ack = await ask(broker, 3, share_acknowledge(group, "m1", tid, -1, [(0, 2, 1)]))
    assert ack.error_code == ErrorCode.none, ack
    (part,) = ack.responses[0].partitions
    assert (part.error_code, part.current_leader.leader_id) == (ErrorCode.not_leader_or_follower, 2)
    assert [(e.node_id, e.port) for e in ack.node_endpoints] == [(2, leader_port)]
    sp = broker.services.share.group_partitions(group)[(tid, 0)]
    assert (sp.start_offset, sp.delivery_complete_count(), sp.acquired_count()) == (0, 0, 3)
    # each node keeps its own share session of the member: the leader's is at its epoch 1
    ack = await ask(broker, 2, share_acknowledge(group, "m1", tid, 1, [(0, 2, 1)]))
    assert ack.responses[0].partitions[0].error_code == ErrorCode.none
    assert sp.start_offset == 3  # all three acknowledged
    assert (await ask(broker, 1, share_fetch(group, "m1", tid, 1))).error_code == ErrorCode.none


@pytest.mark.java
@pytest.mark.share_groups
def test_a_java_share_consumer_reads_partitions_led_by_three_nodes():
    """KafkaShareConsumer fetches from each partition's leader, in one share session per node:
    every record of partitions led by nodes 1, 2 and 3 is delivered once."""
    from confluent_kafka import Producer

    from compat_tests.share.members import ShareConsumer
    from compat_tests.waiting import wait_until
    from kafkalite.protocol.client import WireClient as Wire

    with suite_brokers.running(nodes=3) as broker:
        topic, group = f"t-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
        with Wire(broker.bootstrap) as w:
            created = w.request(create_request(topic, 3, 1))
            assert created.topics[0].error_code == ErrorCode.none
            r = w.request(req(44, 1, validate_only=False, resources=[
                {"resource_type": 32, "resource_name": group, "configs": [
                    {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}]))
            assert r.responses[0].error_code == ErrorCode.none
            md = w.request(req(3, 12, topics=[{"name": topic}], allow_auto_topic_creation=False))
            assert sorted(p.leader_id for p in md.topics[0].partitions) == [1, 2, 3]
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        values = [f"v{i}" for i in range(30)]
        for i, v in enumerate(values):
            producer.produce(topic, value=v.encode(), partition=i % 3)
        assert producer.flush(15) == 0
        consumer = ShareConsumer(broker.bootstrap, group, topic, ack_mode="implicit", client_id="three-nodes")
        try:
            wait_until(lambda: len(consumer.values()) >= len(values), timeout=60, what="every record delivered")
            assert sorted(consumer.values()) == sorted(values)
            assert all(r["delivery_count"] == 1 for r in consumer.records())
        finally:
            consumer.kill()
