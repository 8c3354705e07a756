"""Several nodes in one process: Kafka's replica placement, what each node answers for the
partitions and coordinators it does not own, and the topology controls (run in-process through
broker.controls.invoke, on the broker's own trio loop)."""

from __future__ import annotations

import datetime
import socket
from contextlib import asynccontextmanager

import kio.schema.create_topics.v7.request as ct7
import kio.schema.describe_cluster.v1.request as dc1
import kio.schema.fetch.v12.request as f12
import kio.schema.find_coordinator.v4.request as fc4
import kio.schema.join_group.v9.request as jg9
import kio.schema.metadata.v12.request as md12
import kio.schema.produce.v11.request as p11
import pytest
import trio
from kio.schema.errors import ErrorCode

from kafkalite.broker.settings.broker_config import BrokerConfig
from kafkalite.broker.settings.listeners import Listener
from kafkalite.broker.controls import ControlError, invoke
from kafkalite.broker.placement import PlacementError, assign_replicas
from kafkalite.broker.server import serve
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import Record, build_batch

MS = datetime.timedelta(milliseconds=1)


# --- placement --------------------------------------------------------------------------------

def test_placement_is_kafkas_rack_unaware_assignment():
    # Kafka's AdminTest.testReplicaAssignment: 5 brokers, 10 partitions, rf 3, fixed start index 0
    assert assign_replicas(10, 3, [0, 1, 2, 3, 4], start_index=0) == [
        [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
        [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2]]


def test_placement_refuses_more_replicas_than_nodes():
    with pytest.raises(PlacementError, match="only 3 broker"):
        assign_replicas(1, 4, [1, 2, 3], start_index=0)
    with pytest.raises(PlacementError, match="must be positive"):
        assign_replicas(1, 0, [1, 2, 3], start_index=0)


def test_added_partitions_keep_the_existing_ones_placement():
    assert assign_replicas(8, 2, [1, 2, 3], start_index=2)[:5] == assign_replicas(5, 2, [1, 2, 3], start_index=2)


# --- a 3-node broker in-process ------------------------------------------------------------------

@asynccontextmanager
async def cluster_of(tmp_path, nodes=3, **values):
    config = BrokerConfig(data_dir=tmp_path, listeners=[Listener("PLAINTEXT", "127.0.0.1", 0)],
                          values={"nodes": nodes, **values})
    async with trio.open_nursery() as nursery:
        broker = await nursery.start(serve, config)
        try:
            yield broker
        finally:
            nursery.cancel_scope.cancel()


def address(broker, node):
    return broker.address_of(node, "PLAINTEXT").address()


def call(addr, request):
    with WireClient(addr) as c:
        return c.request(request)


async def ask(broker, node, request):
    return await trio.to_thread.run_sync(call, address(broker, node), request)


def metadata_request(*names):
    return md12.MetadataRequest(topics=tuple(md12.MetadataRequestTopic(topic_id=None, name=n) for n in names),
                                allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def create_request(name, partitions, rf, assignments=()):
    return ct7.CreateTopicsRequest(topics=(ct7.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf, assignments=tuple(
            ct7.CreatableReplicaAssignment(partition_index=i, broker_ids=tuple(b)) for i, b in enumerate(assignments)),
        configs=()),), timeout=5000 * MS, validate_only=False)


def produce_request(topic, partition=0, acks=-1, n=1):
    batch = build_batch([Record(key=b"k", value=b"v%d" % i, headers=(), timestamp_ms=1_700_000_000_000 + i)
                         for i in range(n)])
    return p11.ProduceRequest(transactional_id=None, acks=acks, timeout=1000 * MS, topic_data=(
        p11.TopicProduceData(name=topic, partition_data=(
            p11.PartitionProduceData(index=partition, records=bytes(batch)),)),))


def fetch_request(topic, partition=0, epoch=-1):
    return f12.FetchRequest(max_wait=0 * MS, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                            session_epoch=-1, topics=(f12.FetchTopic(topic=topic, partitions=(
                                f12.FetchPartition(partition=partition, current_leader_epoch=epoch, fetch_offset=0,
                                                   partition_max_bytes=1 << 20),)),),
                            forgotten_topics_data=(), rack_id="")


def fetch_v10_request(topic, partition=0):
    import kio.schema.fetch.v10.request as f10

    return f10.FetchRequest(replica_id=-1, max_wait=0 * MS, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                            session_id=0, session_epoch=-1, topics=(f10.FetchTopic(topic=topic, partitions=(
                                f10.FetchPartition(partition=partition, current_leader_epoch=-1, fetch_offset=0,
                                                   log_start_offset=-1, partition_max_bytes=1 << 20),)),),
                            forgotten_topics_data=())


def produced(resp):
    return resp.responses[0].partition_responses[0]


def test_three_nodes_tell_the_truth_about_brokers_leaders_and_replicas(tmp_path):
    async def main():
        async with cluster_of(tmp_path) as broker:
            ports = {n: broker.address_of(n, "PLAINTEXT").port for n in (1, 2, 3)}
            assert len(set(ports.values())) == 3
            created = await ask(broker, 2, create_request("spread", 3, 3))
            assert created.topics[0].error_code == ErrorCode.none
            too_many = await ask(broker, 1, create_request("four", 1, 4))
            assert too_many.topics[0].error_code == ErrorCode.invalid_replication_factor
            assert "only 3 broker(s)" in too_many.topics[0].error_message
            manual = await ask(broker, 1, create_request("manual", -1, -1, [[3, 1], [2, 3]]))
            assert manual.topics[0].error_code == ErrorCode.none
            for node in (1, 2, 3):  # every node answers the same cluster
                md = await ask(broker, node, metadata_request("spread", "manual"))
                assert sorted((b.node_id, b.port) for b in md.brokers) == sorted(ports.items())
                by_name = {t.name: t for t in md.topics}
                spread = by_name["spread"].partitions
                assert sorted(p.leader_id for p in spread) == [1, 2, 3]  # leaders spread over the nodes
                for p in spread:
                    assert sorted(p.replica_nodes) == [1, 2, 3] and p.leader_id == p.replica_nodes[0]
                    assert sorted(p.isr_nodes) == [1, 2, 3] and p.leader_epoch == 0
                assert [(p.leader_id, list(p.replica_nodes)) for p in by_name["manual"].partitions] == [
                    (3, [3, 1]), (2, [2, 3])]
            dc = await ask(broker, 3, dc1.DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                                 endpoint_type=1))
            assert sorted(b.broker_id for b in dc.brokers) == [1, 2, 3]

    trio.run(main)


def test_partition_requests_to_a_follower_get_not_leader_with_the_leader_named(tmp_path):
    async def main():
        async with cluster_of(tmp_path) as broker:
            await ask(broker, 1, create_request("t", -1, -1, [[2, 3]]))
            on_leader = produced(await ask(broker, 2, produce_request("t")))
            assert on_leader.error_code == ErrorCode.none
            for node in (1, 3):  # 3 is a follower, 1 not a replica at all
                resp = await ask(broker, node, produce_request("t"))
                part = produced(resp)
                assert part.error_code == ErrorCode.not_leader_or_follower
                # KIP-951: the current leader and its endpoint come with the error
                assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (2, 0)
                assert [(e.node_id, e.port) for e in resp.node_endpoints] == [
                    (2, broker.address_of(2, "PLAINTEXT").port)]
            fetched = await ask(broker, 1, fetch_request("t"))
            assert fetched.responses[0].partitions[0].error_code == ErrorCode.not_leader_or_follower
            # KIP-392: a follower serves a consumer's fetch from v11, not before
            for node in (2, 3):
                fetched = (await ask(broker, node, fetch_request("t"))).responses[0].partitions[0]
                assert (fetched.error_code, fetched.high_watermark, fetched.preferred_read_replica) == (
                    ErrorCode.none, 1, -1)
            old = (await ask(broker, 3, fetch_v10_request("t"))).responses[0].partitions[0]
            assert old.error_code == ErrorCode.not_leader_or_follower

    trio.run(main)


def test_coordinators_are_the_leaders_of_the_internal_partitions(tmp_path):
    async def main():
        async with cluster_of(tmp_path, **{"offsets.topic.num.partitions": 6}) as broker:
            keys = [f"group-{i}" for i in range(12)]
            answers = [await ask(broker, n, fc4.FindCoordinatorRequest(key_type=0, coordinator_keys=tuple(keys)))
                       for n in (1, 2, 3)]
            nodes = [[c.node_id for c in a.coordinators] for a in answers]
            assert nodes[0] == nodes[1] == nodes[2]  # every node names the same coordinator
            assert len(set(nodes[0])) > 1  # spread over the nodes
            offsets = broker.cluster.topics["__consumer_offsets"]
            assert all(len(p.replicas) == 3 for p in offsets.partitions)  # min(nodes, 3)
            group, coordinator = keys[0], nodes[0][0]
            other = next(n for n in (1, 2, 3) if n != coordinator)
            join = jg9.JoinGroupRequest(group_id=group, session_timeout=10_000 * MS, rebalance_timeout=10_000 * MS,
                                        member_id="", group_instance_id=None, protocol_type="consumer",
                                        protocols=(jg9.JoinGroupRequestProtocol(name="range", metadata=b""),),
                                        reason=None)
            refused = await ask(broker, other, join)
            assert refused.error_code == ErrorCode.not_coordinator
            accepted = await ask(broker, coordinator, join)
            assert accepted.error_code == ErrorCode.member_id_required

    trio.run(main)


def test_move_leader_bumps_the_epoch_and_moves_where_requests_go(tmp_path):
    async def main():
        async with cluster_of(tmp_path) as broker:
            await ask(broker, 1, create_request("t", -1, -1, [[1, 2, 3]]))
            assert produced(await ask(broker, 1, produce_request("t"))).error_code == ErrorCode.none
            state = await invoke(broker, "move-leader", {"topic": "t", "partition": 0, "node": 3})
            assert state == {"topic": "t", "partition": 0, "leader": 3, "leader_epoch": 1, "replicas": [1, 2, 3],
                             "isr": [1, 2, 3]}
            old = produced(await ask(broker, 1, produce_request("t")))
            assert old.error_code == ErrorCode.not_leader_or_follower
            assert (old.current_leader.leader_id, old.current_leader.leader_epoch) == (3, 1)
            assert produced(await ask(broker, 3, produce_request("t"))).error_code == ErrorCode.none
            stale = await ask(broker, 3, fetch_request("t", epoch=0))
            assert stale.responses[0].partitions[0].error_code == ErrorCode.fenced_leader_epoch
            future = await ask(broker, 3, fetch_request("t", epoch=2))
            assert future.responses[0].partitions[0].error_code == ErrorCode.unknown_leader_epoch
            current = await ask(broker, 3, fetch_request("t", epoch=1))
            assert current.responses[0].partitions[0].high_watermark == 2
            with pytest.raises(ControlError):
                await invoke(broker, "move-leader", {"topic": "t", "partition": 0, "node": 4})
            with pytest.raises(ControlError):
                await invoke(broker, "move-leader", {"topic": "nope", "partition": 0, "node": 2})

    trio.run(main)


def connect_refused(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_node_down_moves_leaders_closes_its_port_and_node_up_returns(tmp_path):
    async def main():
        async with cluster_of(tmp_path) as broker:
            await ask(broker, 1, create_request("t", -1, -1, [[2, 3], [2, 1]]))
            await invoke(broker, "shrink-isr", {"topic": "t", "partition": 1, "replicas": [2]})
            held = await trio.to_thread.run_sync(WireClient, address(broker, 2))
            try:
                state = await invoke(broker, "node-down", {"node": 2})
                assert state["down"] == [2]
                assert sorted((m["partition"], m["leader"], m["leader_epoch"]) for m in state["moved"]
                              if m["topic"] == "t") == [(0, 3, 1), (1, -1, 1)]
                assert await trio.to_thread.run_sync(connect_refused, address(broker, 2))
                with pytest.raises((ConnectionError, OSError, EOFError)):  # its open connection closed
                    await trio.to_thread.run_sync(held.request, metadata_request("t"))
            finally:
                held.close()
            md = await ask(broker, 1, metadata_request("t"))
            assert sorted(b.node_id for b in md.brokers) == [1, 3]
            p0, p1 = md.topics[0].partitions
            assert (p0.leader_id, list(p0.isr_nodes), list(p0.offline_replicas)) == (3, [3], [2])
            assert (p1.error_code, p1.leader_id, list(p1.isr_nodes)) == (ErrorCode.leader_not_available, -1, [2])
            assert produced(await ask(broker, 3, produce_request("t"))).error_code == ErrorCode.none
            state = await invoke(broker, "node-up", {"node": 2})
            assert state["down"] == []
            assert [(m["partition"], m["leader"]) for m in state["moved"] if m["topic"] == "t"] == [(1, 2)]
            md = await ask(broker, 2, metadata_request("t"))
            p0, p1 = md.topics[0].partitions
            assert (p0.leader_id, sorted(p0.isr_nodes)) == (3, [2, 3])  # leadership stays where it moved
            assert (p1.leader_id, p1.leader_epoch) == (2, 2)

    trio.run(main)


def test_shrink_isr_fails_acks_all_below_min_insync_replicas(tmp_path):
    async def main():
        async with cluster_of(tmp_path) as broker:
            await ask(broker, 1, create_request("t", -1, -1, [[1, 2, 3]]))
            broker.cluster.alter_topic_configs(broker.cluster.topics["t"], {"min.insync.replicas": "2"})
            state = await invoke(broker, "shrink-isr", {"topic": "t", "partition": 0, "replicas": [1]})
            assert state["isr"] == [1]
            refused = produced(await ask(broker, 1, produce_request("t", acks=-1)))
            assert refused.error_code == ErrorCode.not_enough_replicas
            assert produced(await ask(broker, 1, produce_request("t", acks=1))).error_code == ErrorCode.none
            with pytest.raises(ControlError, match="leader"):
                await invoke(broker, "shrink-isr", {"topic": "t", "partition": 0, "replicas": [2]})
            state = await invoke(broker, "restore-isr", {"topic": "t", "partition": 0})
            assert state["isr"] == [1, 2, 3]
            assert produced(await ask(broker, 1, produce_request("t", acks=-1))).error_code == ErrorCode.none

    trio.run(main)


def test_move_coordinator_moves_the_group_to_the_node(tmp_path):
    async def main():
        async with cluster_of(tmp_path) as broker:
            find = fc4.FindCoordinatorRequest(key_type=0, coordinator_keys=("g",))
            before = (await ask(broker, 1, find)).coordinators[0].node_id
            target = next(n for n in (1, 2, 3) if n != before)
            state = await invoke(broker, "move-coordinator", {"group": "g", "node": target})
            assert state["topic"] == "__consumer_offsets" and state["leader"] == target
            after = (await ask(broker, 2, find)).coordinators[0]
            assert (after.node_id, after.port) == (target, broker.address_of(target, "PLAINTEXT").port)
            with pytest.raises(ControlError, match="exactly one"):
                await invoke(broker, "move-coordinator", {"node": 1})

    trio.run(main)


def epoch_end(broker, node, topic, epoch, current=-1):
    import kio.schema.offset_for_leader_epoch.v4.request as ol4

    resp = call(address(broker, node), ol4.OffsetForLeaderEpochRequest(replica_id=-1, topics=(
        ol4.OffsetForLeaderTopic(topic=topic, partitions=(
            ol4.OffsetForLeaderPartition(partition=0, current_leader_epoch=current, leader_epoch=epoch),)),)))
    p = resp.topics[0].partitions[0]
    return p.error_code, p.leader_epoch, p.end_offset


def test_epochs_end_where_the_next_leader_began_and_survive_a_restart(tmp_path):
    async def main():
        async with cluster_of(tmp_path) as broker:
            await ask(broker, 1, create_request("t", -1, -1, [[1, 2, 3]]))
            await ask(broker, 1, produce_request("t", n=3))          # epoch 0: offsets 0-2
            await invoke(broker, "move-leader", {"topic": "t", "partition": 0, "node": 2})
            await ask(broker, 2, produce_request("t", n=2))          # epoch 1: offsets 3-4
            await invoke(broker, "move-leader", {"topic": "t", "partition": 0, "node": 3})
            await ask(broker, 3, produce_request("t", n=1))          # epoch 2: offset 5
            ends = [await trio.to_thread.run_sync(epoch_end, broker, 3, "t", e) for e in (0, 1, 2, 3)]
            assert ends == [(ErrorCode.none, 0, 3), (ErrorCode.none, 1, 5), (ErrorCode.none, 2, 6),
                            (ErrorCode.none, -1, -1)]
            fenced = await trio.to_thread.run_sync(epoch_end, broker, 3, "t", 1, 1)
            assert fenced[0] == ErrorCode.fenced_leader_epoch
            assert (await trio.to_thread.run_sync(epoch_end, broker, 1, "t", 1))[0] == ErrorCode.not_leader_or_follower
        async with cluster_of(tmp_path) as broker:
            part = (await ask(broker, 1, metadata_request("t"))).topics[0].partitions[0]
            # the preferred leader again, at the epoch the log reached: never an older one
            assert (part.leader_id, part.leader_epoch) == (1, 2)

    trio.run(main)


def test_each_node_describes_its_own_broker_configs(tmp_path):
    import kio.schema.describe_configs.v4.request as dc4

    def describe(name):
        return dc4.DescribeConfigsRequest(resources=(dc4.DescribeConfigsResource(
            resource_type=4, resource_name=name, configuration_keys=("num.partitions",)),),
            include_synonyms=False, include_documentation=False)

    async def main():
        async with cluster_of(tmp_path) as broker:
            own = (await ask(broker, 2, describe("2"))).results[0]
            assert own.error_code == ErrorCode.none and [c.name for c in own.configs] == ["num.partitions"]
            other = (await ask(broker, 1, describe("2"))).results[0]
            assert other.error_code == ErrorCode.invalid_request  # the admin client sends it to node 2

    trio.run(main)
