"""ListOffsets (key 2), v1-v11.

EARLIEST (-2) and EARLIEST_LOCAL (-4) answer the log start offset; LATEST (-1) the high
watermark, or the last stable offset when the request is read_committed; MAX_TIMESTAMP (-3)
the record with the largest timestamp; a real timestamp the first offset whose timestamp is
at or after it. A lookup that lands at or past what the isolation level may read answers
offset -1, as Kafka does. LATEST_TIERED (-5) and EARLIEST_PENDING_UPLOAD (-6) have no tiered
storage behind them here and answer -1. A partition this node does not lead is NOT_LEADER_OR_FOLLOWER; a
current_leader_epoch other than the partition's is FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH.

With an authorizer: DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..authorizer import AclOperation, ResourceType, allowed_names
from . import api
from .common import response_module
from .leadership import partition_error

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
READ_COMMITTED = 1


def lookup(part, timestamp: int, read_committed: bool) -> tuple[ErrorCode, int, int]:
    """(error, offset, timestamp) for one partition."""
    last_fetchable = part.last_stable_offset if read_committed else part.high_watermark
    if timestamp == LATEST:
        return ErrorCode.none, last_fetchable, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return ErrorCode.none, part.log_start_offset, -1
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return ErrorCode.none, -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = part.max_timestamp_offset()
    elif timestamp < 0:
        return ErrorCode.invalid_request, -1, -1
    else:
        found = part.offset_for_timestamp(timestamp)
    if found is None or found[0] >= last_fetchable:
        return ErrorCode.none, -1, -1
    return ErrorCode.none, found[0], found[1]


@api(2, 1, 11)
async def handle(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    cluster = ctx.cluster
    read_committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    topics = []
    described = allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in request.topics))
    for t in request.topics:
        parts = []
        for p in t.partitions:
            part = cluster.partition(t.name, p.partition_index)
            epoch = getattr(p, "current_leader_epoch", -1)
            if described is not None and t.name not in described:
                err, offset, ts, part = ErrorCode.topic_authorization_failed, -1, -1, None
            elif part is None:
                err, offset, ts = ErrorCode.unknown_topic_or_partition, -1, -1
            elif (refused := partition_error(ctx, part, epoch)) is not None:
                err, offset, ts = refused, -1, -1
            else:
                err, offset, ts = lookup(part, p.timestamp, read_committed)
            parts.append(make(mod.ListOffsetsPartitionResponse, partition_index=p.partition_index, error_code=err,
                              timestamp=ts, offset=offset,
                              leader_epoch=part.leader_epoch if part is not None and offset >= 0 else -1))
        topics.append(make(mod.ListOffsetsTopicResponse, name=t.name, partitions=tuple(parts)))
    return make(mod.ListOffsetsResponse, throttle_time=0, topics=tuple(topics))
