"""DeleteRecords (key 21) v0-v2, OffsetForLeaderEpoch (23) v2-v4.

DeleteRecords (Kafka's ReplicaManager.deleteRecords / Partition.deleteRecordsOnLeader)
- Moves the log start offset up to the requested offset; -1 means the high watermark. An offset
  beyond the high watermark, or below -1, is OFFSET_OUT_OF_RANGE. An offset at or below the
  current log start changes nothing. low_watermark is the log start offset afterwards (-1 on
  error).
- Internal topics are INVALID_TOPIC_EXCEPTION; a partition this node does not lead
  NOT_LEADER_OR_FOLLOWER; a topic whose cleanup.policy lacks "delete" is POLICY_VIOLATION;
  unknown partitions UNKNOWN_TOPIC_OR_PARTITION.

OffsetForLeaderEpoch (Kafka's LeaderEpochFileCache.endOffsetFor)
- Epoch 0 began at the log start offset; every leader change since the broker started (a
  topology control) began a new epoch at the log end offset of that moment. For the current
  epoch the answer is (epoch, log end offset); for an older one, (the largest known epoch at or
  below it, the start offset of the epoch after that); below every known epoch, (that epoch,
  the log start offset); for -1 or an epoch newer than the current one, (-1, -1).
- current_leader_epoch (when not -1) fences: older is FENCED_LEADER_EPOCH, newer
  UNKNOWN_LEADER_EPOCH; a partition this node does not lead is NOT_LEADER_OR_FOLLOWER.
  Unknown partitions are UNKNOWN_TOPIC_OR_PARTITION.

With an authorizer: DeleteRecords needs DELETE per topic, OffsetForLeaderEpoch CLUSTER_ACTION on
the cluster or DESCRIBE per topic (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..authorizer import AclOperation, ResourceType, allowed_cluster, allowed_names
from . import api
from .common import response_module
from .leadership import partition_error

log = logging.getLogger("kafkalite.admin")

HIGH_WATERMARK = -1
UNDEFINED_EPOCH = -1


def _deletes_allowed(ctx: RequestContext, topic) -> bool:
    policy = ctx.cluster.effective_configs(topic).get("cleanup.policy", "delete")
    if not isinstance(policy, str):
        policy = ",".join(policy)
    return "delete" in [p.strip() for p in policy.split(",")]


def delete_records(ctx: RequestContext, topic_name: str, index: int, offset: int) -> tuple[ErrorCode, int]:
    """(error, low watermark) for one partition."""
    cluster = ctx.cluster
    part = cluster.partition(topic_name, index)
    if part is None:
        return ErrorCode.unknown_topic_or_partition, -1
    if part.topic.internal:
        return ErrorCode.invalid_topic_exception, -1
    refused = partition_error(ctx, part)
    if refused is not None:
        return refused, -1
    if not _deletes_allowed(ctx, part.topic):
        return ErrorCode.policy_violation, -1
    hwm = part.high_watermark
    target = hwm if offset == HIGH_WATERMARK else offset
    if target < 0 or target > hwm:
        return ErrorCode.offset_out_of_range, -1
    if target > part.log_start_offset:
        part.delete_records_before(target)
        log.info("log start offset of %s-%d moved to %d", topic_name, index, part.log_start_offset)
    return ErrorCode.none, part.log_start_offset


@api(21, 0, 2)
async def handle_delete_records(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    topics = []
    deletable = allowed_names(ctx, AclOperation.DELETE, ResourceType.TOPIC, (t.name for t in request.topics))
    for t in request.topics:
        parts = []
        for p in t.partitions:
            if deletable is not None and t.name not in deletable:
                parts.append(make(mod.DeleteRecordsPartitionResult, partition_index=p.partition_index,
                                  low_watermark=-1, error_code=ErrorCode.topic_authorization_failed))
                continue
            try:
                err, low = delete_records(ctx, t.name, p.partition_index, p.offset)
            except OSError as exc:
                log.error("DeleteRecords on %s-%d failed: %s", t.name, p.partition_index, exc)
                err, low = ErrorCode.kafka_storage_error, -1
            parts.append(make(mod.DeleteRecordsPartitionResult, partition_index=p.partition_index,
                              low_watermark=low, error_code=err))
        topics.append(make(mod.DeleteRecordsTopicResult, name=t.name, partitions=tuple(parts)))
    return make(mod.DeleteRecordsResponse, throttle_time=0, topics=tuple(topics))


def end_offset_for_epoch(ctx: RequestContext, part, current_leader_epoch: int, requested: int) -> tuple[ErrorCode, int, int]:
    """(error, leader epoch, end offset) for one partition."""
    epoch = part.leader_epoch
    refused = partition_error(ctx, part, current_leader_epoch)
    if refused is not None:
        return refused, -1, -1
    if requested == UNDEFINED_EPOCH or requested > epoch:
        return ErrorCode.none, UNDEFINED_EPOCH, -1
    if requested == epoch:
        return ErrorCode.none, epoch, part.high_watermark
    # Kafka's LeaderEpochFileCache.endOffsetFor: the largest epoch at or below the requested one,
    # ending where the epoch after it starts; below every epoch, the requested one, ending where
    # the first starts
    history = [(0, part.log_start_offset), *part.epoch_starts]
    floor = None
    for i, (e, _start) in enumerate(history):
        if e > requested:
            break
        floor = i
    if floor is None:
        return ErrorCode.none, requested, history[0][1]
    end = history[floor + 1][1] if floor + 1 < len(history) else part.high_watermark
    return ErrorCode.none, history[floor][0], end


@api(23, 2, 4)
async def handle_offset_for_leader_epoch(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    topics = []
    described = None if allowed_cluster(ctx, AclOperation.CLUSTER_ACTION) else allowed_names(
        ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.topic for t in request.topics))
    for t in request.topics:
        parts = []
        for p in t.partitions:
            part = ctx.cluster.partition(t.topic, p.partition)
            if described is not None and t.topic not in described:
                err, epoch, end = ErrorCode.topic_authorization_failed, -1, -1
            elif part is None:
                err, epoch, end = ErrorCode.unknown_topic_or_partition, -1, -1
            else:
                err, epoch, end = end_offset_for_epoch(ctx, part, p.current_leader_epoch, p.leader_epoch)
            parts.append(make(mod.EpochEndOffset, error_code=err, partition=p.partition, leader_epoch=epoch,
                              end_offset=end))
        topics.append(make(mod.OffsetForLeaderTopicResult, topic=t.topic, partitions=tuple(parts)))
    return make(mod.OffsetForLeaderEpochResponse, throttle_time=0, topics=tuple(topics))
