"""Topology controls: move a partition's leader or a coordinator, take a node down and up,
shrink and restore a partition's in-sync replicas (a broker started with `--nodes N`).

What each does is what Kafka's controller does to the same cluster (broker.cluster holds the
rules): a leader change bumps the leader epoch; a node that goes down leaves every ISR and
hands the partitions it led to another in-sync replica, or leaves them leaderless (Metadata:
leader -1, LEADER_NOT_AVAILABLE); its ports refuse connections and its open connections
close. A node that comes up rejoins the ISRs and leads the partitions that had no leader. With
an ISR below min.insync.replicas, acks=all produces get NOT_ENOUGH_REPLICAS. Every control
answers the new state: for partitions {"topic", "partition", "leader", "leader_epoch",
"replicas", "isr"}."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import ControlError, control, is_int

if TYPE_CHECKING:
    from ..cluster import Cluster
    from ..partition import Partition
    from ..state import Broker


def describe(part: "Partition") -> dict[str, Any]:
    return {"topic": part.topic.name, "partition": part.index, "leader": part.leader,
            "leader_epoch": part.leader_epoch, "replicas": list(part.replicas), "isr": list(part.isr)}


def _partition(cluster: "Cluster", topic: Any, partition: Any) -> "Partition":
    if not isinstance(topic, str) or topic not in cluster.topics:
        raise ControlError(f"no topic {topic!r}")
    if not is_int(partition):
        raise ControlError(f"partition must be a number, not {partition!r}")
    part = cluster.partition(topic, partition)
    if part is None:
        raise ControlError(f"topic {topic!r} has no partition {partition}")
    return part


def _node(cluster: "Cluster", node: Any, *, up: bool = False) -> int:
    """`node` checked to be one of the cluster's (and, with `up`, not down)."""
    if not is_int(node) or node not in cluster.node_ids:
        raise ControlError(f"no node {node!r}; the nodes are {cluster.node_ids}")
    if up and node in cluster.down:
        raise ControlError(f"node {node} is down")
    return node


def _nodes_state(cluster: "Cluster") -> dict[str, Any]:
    return {"nodes": list(cluster.node_ids), "down": sorted(cluster.down)}


@control("move-leader")
async def move_leader(broker: "Broker", *, topic: str, partition: int, node: int) -> dict[str, Any]:
    """Make `node` the leader of topic-partition, with a new leader epoch (a node that is not a
    replica takes the current leader's place among the replicas)."""
    cluster = broker.cluster
    part = _partition(cluster, topic, partition)
    cluster.move_leader(part, _node(cluster, node, up=True))
    return describe(part)


@control("move-coordinator")
async def move_coordinator(broker: "Broker", *, node: int, group: str | None = None,
                           transactional_id: str | None = None) -> dict[str, Any]:
    """Move the coordinator of a group or of a transactional id to `node`: the leader of the key's
    __consumer_offsets / __transaction_state partition moves (with every other key on it). The
    group coordinator unloads that partition's groups, answering members waiting in JoinGroup
    or SyncGroup NOT_COORDINATOR, and loads them from its log (broker.groups.persistence); the
    transactions' markers carry the new coordinator epoch (broker.transactions.log)."""
    cluster = broker.cluster
    target = _node(cluster, node, up=True)
    if (group is None) == (transactional_id is None):
        raise ControlError("move-coordinator needs exactly one of group or transactional_id")
    if group is not None:
        if not isinstance(group, str):
            raise ControlError(f"group must be a string, not {group!r}")
        part = broker.services.groups.offsets_partition(group)
    else:
        if not isinstance(transactional_id, str):
            raise ControlError(f"transactional_id must be a string, not {transactional_id!r}")
        part = broker.services.transactions.store.partition_of(transactional_id)
    cluster.move_leader(part, target)
    return describe(part)


@control("node-down")
async def node_down(broker: "Broker", *, node: int) -> dict[str, Any]:
    """Take a node down: its ports refuse connections, its connections close, the partitions it
    led move to another in-sync replica or go leaderless."""
    cluster = broker.cluster
    _node(cluster, node)
    moved = [] if node in cluster.down else cluster.take_node_down(node)
    await broker.node_down(node)
    return {**_nodes_state(cluster), "moved": [describe(p) for p in moved]}


@control("node-up")
async def node_up(broker: "Broker", *, node: int) -> dict[str, Any]:
    """Bring a node back: its ports accept connections again (the same ports), it rejoins the
    ISRs and leads the partitions that had no leader."""
    cluster = broker.cluster
    _node(cluster, node)
    if node not in cluster.down:
        return {**_nodes_state(cluster), "moved": []}
    try:
        await broker.node_up(node)
    except OSError as exc:  # its port was taken meanwhile: the node stays down
        raise ControlError(f"node {node} cannot listen on its ports again: {exc.strerror or exc}") from None
    moved = cluster.bring_node_up(node)
    return {**_nodes_state(cluster), "moved": [describe(p) for p in moved]}


@control("shrink-isr")
async def shrink_isr(broker: "Broker", *, topic: str, partition: int, replicas: list[int]) -> dict[str, Any]:
    """Set topic-partition's in-sync replicas to `replicas` (replicas of the partition, the
    leader among them): acks=all then fails with NOT_ENOUGH_REPLICAS while the ISR is smaller
    than min.insync.replicas."""
    cluster = broker.cluster
    part = _partition(cluster, topic, partition)
    if not isinstance(replicas, list) or not replicas:
        raise ControlError("replicas must be a non-empty list of node ids")
    unknown = [n for n in replicas if n not in part.replicas]
    if unknown:
        raise ControlError(f"{unknown} are not replicas of {topic}-{partition} (replicas: {part.replicas})")
    if part.leader >= 0 and part.leader not in replicas:
        raise ControlError(f"the ISR must keep the leader, node {part.leader}")
    part.isr = [n for n in part.replicas if n in replicas]
    return describe(part)


@control("restore-isr")
async def restore_isr(broker: "Broker", *, topic: str, partition: int) -> dict[str, Any]:
    """Put every replica of topic-partition that is up back into its ISR."""
    cluster = broker.cluster
    part = _partition(cluster, topic, partition)
    part.isr = [n for n in part.replicas if cluster.alive(n) or n in part.isr]
    return describe(part)
