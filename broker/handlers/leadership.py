"""Which node answers for a partition or a coordinator key (several nodes, `--nodes N`).

- A partition request (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords,
  DescribeProducers) on a node that is not a replica of the partition is
  NOT_LEADER_OR_FOLLOWER (DescribeProducers is answered by any replica); on a replica, a `current_leader_epoch` older than the partition's is
  FENCED_LEADER_EPOCH and a newer one UNKNOWN_LEADER_EPOCH (Kafka's
  Partition.localLogWithEpochOrThrow checks the epoch before leadership); then a follower
  answers NOT_LEADER_OR_FOLLOWER, except to a consumer's Fetch v11+: since KIP-392 a request
  that carries client metadata (v11+) may read from any replica (Kafka's
  FetchParams.fetchOnlyLeader), which here holds the leader's data. A leaderless partition (-1)
  is NOT_LEADER_OR_FOLLOWER on every node, except for such a Fetch on one of its replicas.
- KIP-951: with NOT_LEADER_OR_FOLLOWER (Produce v10+; Fetch v16+ also with
  FENCED_LEADER_EPOCH) Kafka answers the partition's current leader id and epoch, and the
  endpoint of that leader when it is alive (`node_endpoints`).
- The group coordinator of a group id and the transaction coordinator of a transactional id
  are the leaders of the key's partition of __consumer_offsets / __transaction_state; a
  group or transaction request on any other node is NOT_COORDINATOR. While that internal
  topic cannot be created (a full or failing disk) there is no coordinator:
  COORDINATOR_NOT_AVAILABLE, as Kafka answers until its internal topic exists, and the
  client asks again.
With one node every check passes: the node leads everything.
"""

from __future__ import annotations

import logging

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext

UNDEFINED_EPOCH = -1

log = logging.getLogger("kafkalite.coordinators")


def partition_error(ctx: RequestContext, part, current_leader_epoch: int = UNDEFINED_EPOCH, *,
                    follower_reads: bool = False) -> ErrorCode | None:
    """The error a partition request gets on this node, or None when the node leads it (or, with
    `follower_reads`, is one of its replicas)."""
    node = ctx.node_id
    if part.leader == node and (current_leader_epoch < 0 or current_leader_epoch == part.leader_epoch):
        return None
    if node not in part.replicas:
        return ErrorCode.not_leader_or_follower
    if current_leader_epoch >= 0 and current_leader_epoch != part.leader_epoch:
        return (ErrorCode.fenced_leader_epoch if current_leader_epoch < part.leader_epoch
                else ErrorCode.unknown_leader_epoch)
    return None if follower_reads else ErrorCode.not_leader_or_follower


def current_leader(ctx: RequestContext, mod, part, endpoints: dict):
    """KIP-951's LeaderIdAndEpoch for a partition, adding the leader's endpoint to `endpoints`
    (node id -> NodeEndpoint) when the leader is alive."""
    leader = part.leader
    cluster = ctx.cluster
    if leader >= 0 and cluster.alive(leader) and hasattr(mod, "NodeEndpoint"):
        adv = ctx.broker.address_of(leader, ctx.listener.name)
        endpoints[leader] = make(mod.NodeEndpoint, node_id=leader, host=adv.host, port=adv.port, rack=None)
    return make(mod.LeaderIdAndEpoch, leader_id=leader, leader_epoch=part.leader_epoch)


def node_endpoints(endpoints: dict) -> tuple:
    return tuple(endpoints[n] for n in sorted(endpoints))


def group_partition(ctx: RequestContext, group_id: str):
    """The __consumer_offsets partition of a group (created on first use; OSError when it cannot be)."""
    return ctx.broker.services.groups.offsets_partition(group_id)


def transaction_partition(ctx: RequestContext, transactional_id: str):
    """The __transaction_state partition of a transactional id (created on first use; OSError when it cannot be)."""
    return ctx.broker.services.transactions.store.partition_of(transactional_id)


def coordinator_partition(ctx: RequestContext, transactional: bool, key: str):
    """The internal topic partition whose leader coordinates `key`, or None while that topic
    cannot be created."""
    try:
        return transaction_partition(ctx, key) if transactional else group_partition(ctx, key)
    except OSError as exc:
        log.warning("no coordinator for %s %r: its internal topic cannot be created: %s",
                    "transactional id" if transactional else "group", key, exc)
        return None


def _coordinator_error(ctx: RequestContext, transactional: bool, key: str | None) -> ErrorCode | None:
    if key is None:
        return None
    part = coordinator_partition(ctx, transactional, key)
    if part is None:
        return ErrorCode.coordinator_not_available
    return None if part.leader == ctx.node_id else ErrorCode.not_coordinator


def group_coordinator_error(ctx: RequestContext, group_id: str | None) -> ErrorCode | None:
    """NOT_COORDINATOR when this node does not lead the group's partition, COORDINATOR_NOT_AVAILABLE
    while there is none, else None."""
    return _coordinator_error(ctx, False, group_id)


def transaction_coordinator_error(ctx: RequestContext, transactional_id: str | None) -> ErrorCode | None:
    return _coordinator_error(ctx, True, transactional_id)
