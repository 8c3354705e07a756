"""Committed offsets, served by the group coordinator (broker.groups).

- OffsetCommit (8) v2-v10: validated as Kafka's OffsetMetadataManager does. Generation -1 from
  a client outside group management commits into an empty (or new, "simple") group; a member
  must match the group's generation (ILLEGAL_GENERATION), be known (UNKNOWN_MEMBER_ID), not be
  fenced (FENCED_INSTANCE_ID); REBALANCE_IN_PROGRESS while the group completes a rebalance.
  KIP-848 members commit with their member epoch (STALE_MEMBER_EPOCH, v9+), or an older one when
  they have held every partition of the commit since it (KIP-1251; else STALE_MEMBER_EPOCH for
  all the partitions of known topics). A group that does
  not exist with a generation >= 0 gets ILLEGAL_GENERATION (< v9) or GROUP_ID_NOT_FOUND (v9+).
  Unknown topics/partitions get UNKNOWN_TOPIC_OR_PARTITION (v10 names topics by id:
  UNKNOWN_TOPIC_ID); metadata over 4096 bytes gets OFFSET_METADATA_TOO_LARGE. The leader epoch
  (v6+) and metadata are stored and returned by OffsetFetch. v2-v4 retention_time sets an
  explicit expiry. The commit is in __consumer_offsets before the answer.
- OffsetFetch (9) v1-v10: v8+ batches groups; null topics means every committed offset of the
  group. require_stable (v7+) answers UNSTABLE_OFFSET_COMMIT for a partition with offsets of
  an open transaction (KIP-447). A partition without a commit answers offset -1, metadata "".
  v9+ members of KIP-848 groups are checked (STALE_MEMBER_EPOCH / UNKNOWN_MEMBER_ID).
- OffsetDelete (47) v0: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP for a non-empty group that is not
  a consumer group, GROUP_SUBSCRIBED_TO_TOPIC for topics the group's members consume; a
  partition the cluster does not have is UNKNOWN_TOPIC_OR_PARTITION, answered (as an unreadable
  topic is) even beside a group error.
- On a node that does not coordinate the group, all three answer NOT_COORDINATOR.

With an authorizer: OffsetCommit needs READ on the group (every partition
GROUP_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED); OffsetFetch DESCRIBE on
the group (the group's error; v1 puts it on each partition) and on each named topic (all-topics
answers leave the others out); OffsetDelete DELETE on the group and READ on each topic.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..authorizer import AclOperation, ResourceType, allowed, allowed_names
from . import api
from .common import response_module
from .leadership import group_coordinator_error

ZERO_UUID = uuid.UUID(int=0)


def _coordinator(ctx: RequestContext):
    return ctx.broker.services.groups


def _topic_name(ctx: RequestContext, t, by_id: bool):
    if by_id:
        topic = ctx.cluster.topics_by_id.get(t.topic_id)
        return topic.name if topic is not None else None
    return t.name


@api(8, 2, 10)
async def offset_commit(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    coord = _coordinator(ctx)
    by_id = ctx.api_version >= 10
    readable = None
    check = None  # KIP-1251: which partitions a member committing with an older epoch may commit
    if not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        group_err = ErrorCode.group_authorization_failed
    else:
        readable = allowed_names(ctx, AclOperation.READ, ResourceType.TOPIC,
                                 (n for t in request.topics if (n := _topic_name(ctx, t, by_id)) is not None))
        not_coordinator = group_coordinator_error(ctx, request.group_id)
        if not_coordinator is not None:
            group_err = not_coordinator
        else:
            group_err, check = coord.check_commit(
                request.group_id, request.generation_id_or_member_epoch, request.member_id or "",
                getattr(request, "group_instance_id", None), ctx.api_version)
    stale = False  # a partition to commit the member has not held since its (older) epoch
    results: list[tuple[object, str | None, list[tuple[int, ErrorCode | None]]]] = []
    to_commit: dict[tuple[str, int], tuple[int, int, str | None]] = {}
    for t in request.topics:
        name = _topic_name(ctx, t, by_id)
        topic = ctx.cluster.topics.get(name) if name is not None else None
        parts: list[tuple[int, ErrorCode | None]] = []
        for p in t.partitions:
            if group_err == ErrorCode.group_authorization_failed:
                parts.append((p.partition_index, group_err))
            elif readable is not None and name is not None and name not in readable:
                # Kafka checks the topic before the group's member and generation
                parts.append((p.partition_index, ErrorCode.topic_authorization_failed))
            elif group_err != ErrorCode.none:
                parts.append((p.partition_index, group_err))
            elif topic is None:
                parts.append((p.partition_index, ErrorCode.unknown_topic_id if by_id else ErrorCode.unknown_topic_or_partition))
            elif not 0 <= p.partition_index < len(topic.partitions):
                parts.append((p.partition_index, ErrorCode.unknown_topic_or_partition))
            else:
                stale = stale or (check is not None and not check(topic.topic_id, p.partition_index))
                to_commit[(name, p.partition_index)] = (p.committed_offset, getattr(p, "committed_leader_epoch", -1),
                                                         p.committed_metadata)
                parts.append((p.partition_index, None))
        results.append((t, name, parts))
    errors: dict[Any, ErrorCode] = {}  # (name, partition) of to_commit -> its error
    if stale:
        # Kafka's validator throws for the request: every partition it reached is refused
        errors = dict.fromkeys(to_commit, ErrorCode.stale_member_epoch)
    elif to_commit:
        retention = getattr(request, "retention_time", None)
        retention_ms = -1
        if retention is not None:
            retention_ms = retention if isinstance(retention, int) else int(retention.total_seconds() * 1000)
        errors = coord.commit_offsets(request.group_id, to_commit, retention_ms=retention_ms)
    return make(mod.OffsetCommitResponse, throttle_time=0, topics=tuple(
        make(mod.OffsetCommitResponseTopic, name=name, topic_id=getattr(t, "topic_id", None),
             partitions=tuple(make(mod.OffsetCommitResponsePartition, partition_index=idx,
                                   error_code=err if err is not None else errors[(name, idx)])
                              for idx, err in parts))
        for t, name, parts in results))


def _fetch_group(ctx: RequestContext, coord, group_id, topics, require_stable, member_id, member_epoch, by_id):
    """(group error, [(topic key, name, [(partition, offset, epoch, metadata, error)])])"""
    if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.group_authorization_failed, []
    if (not_coordinator := group_coordinator_error(ctx, group_id)) is not None:
        return not_coordinator, []
    unknown: list = []
    refused: list = []
    tps: list[tuple[str, int]] | None
    if topics is None:
        tps = None
    else:
        tps = []
        for t in topics:
            name = _topic_name(ctx, t, by_id)
            if name is None:
                unknown.append(t)
                continue
            if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                refused.append((t, name))
                continue
            tps.extend((name, p) for p in t.partition_indexes)
    err, rows = coord.fetch_offsets(group_id, tps, require_stable=require_stable, member_id=member_id,
                                    member_epoch=member_epoch)
    if topics is None:
        # every committed offset: those of topics the principal may not DESCRIBE are left out
        visible = allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (r[0] for r in rows))
        if visible is not None:
            rows = [r for r in rows if r[0] in visible]
    grouped: dict[str, list] = {}
    for topic, p, off, epoch, meta, perr in rows:
        grouped.setdefault(topic, []).append((p, off, epoch, meta, perr))
    out: list[tuple[uuid.UUID | None, str | None, list[Any]]] = []
    for name, parts in grouped.items():
        key = ctx.cluster.topics[name].topic_id if by_id and name in ctx.cluster.topics else None
        out.append((key, name, parts))
    for t in unknown:
        out.append((t.topic_id, None, [(p, -1, -1, "", ErrorCode.unknown_topic_id) for p in t.partition_indexes]))
    if err == ErrorCode.none:
        for t, name in refused:
            out.append((getattr(t, "topic_id", None), name,
                        [(p, -1, -1, "", ErrorCode.topic_authorization_failed) for p in t.partition_indexes]))
    return err, out


@api(9, 1, 10)
async def offset_fetch(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    coord = _coordinator(ctx)
    v = ctx.api_version
    require_stable = bool(getattr(request, "require_stable", False))
    by_id = v >= 10
    if v >= 8:
        groups_out = []
        for g in request.groups:
            err, topics = _fetch_group(ctx, coord, g.group_id, g.topics, require_stable,
                                       getattr(g, "member_id", None), getattr(g, "member_epoch", -1), by_id)
            groups_out.append(make(mod.OffsetFetchResponseGroup, group_id=g.group_id, error_code=err, topics=tuple(
                make(mod.OffsetFetchResponseTopics, name=name, topic_id=key or ZERO_UUID, partitions=tuple(
                    make(mod.OffsetFetchResponsePartitions, partition_index=p, committed_offset=off,
                         committed_leader_epoch=epoch, metadata=meta, error_code=perr)
                    for p, off, epoch, meta, perr in parts))
                for key, name, parts in topics)))
        return make(mod.OffsetFetchResponse, throttle_time=0, groups=tuple(groups_out))
    topics_req = request.topics
    err, topics = _fetch_group(ctx, coord, request.group_id, topics_req, require_stable, None, -1, False)
    if err == ErrorCode.group_authorization_failed and v < 2 and topics_req:
        # v1 has no group-level error: Kafka puts it on every requested partition
        topics = [(None, t.name, [(p, -1, -1, "", err) for p in t.partition_indexes]) for t in topics_req]
    return make(mod.OffsetFetchResponse, throttle_time=0, error_code=err, topics=tuple(
        make(mod.OffsetFetchResponseTopic, name=name, partitions=tuple(
            make(mod.OffsetFetchResponsePartition, partition_index=p, committed_offset=off,
                 committed_leader_epoch=epoch, metadata=meta, error_code=perr)
            for p, off, epoch, meta, perr in parts))
        for _key, name, parts in topics))


@api(47, 0, 0)
async def offset_delete(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if not allowed(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return make(mod.OffsetDeleteResponse, error_code=ErrorCode.group_authorization_failed, throttle_time=0,
                    topics=())
    readable = allowed_names(ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
    # As Kafka's KafkaApis: unreadable topics and partitions the cluster does not have are
    # answered before the coordinator sees the rest; a group error keeps those answers.
    answered: dict[tuple[str, int], ErrorCode] = {}
    tps = []
    for t in request.topics:
        topic = ctx.cluster.topics.get(t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if readable is not None and t.name not in readable:
                answered[tp] = ErrorCode.topic_authorization_failed
            elif topic is None or not 0 <= p.partition_index < len(topic.partitions):
                answered[tp] = ErrorCode.unknown_topic_or_partition
            else:
                tps.append(tp)
    refused = group_coordinator_error(ctx, request.group_id)
    if refused is not None:
        return make(mod.OffsetDeleteResponse, error_code=refused, throttle_time=0, topics=())
    err, errors = _coordinator(ctx).delete_offsets(request.group_id, tps)
    if err != ErrorCode.none:
        errors = {}
    errors = {**errors, **answered}
    listed = [t for t in request.topics if any((t.name, p.partition_index) in errors for p in t.partitions)]
    return make(mod.OffsetDeleteResponse, error_code=err, throttle_time=0, topics=tuple(
        make(mod.OffsetDeleteResponseTopic, name=t.name, partitions=tuple(
            make(mod.OffsetDeleteResponsePartition, partition_index=p.partition_index,
                 error_code=errors[(t.name, p.partition_index)])
            for p in t.partitions if (t.name, p.partition_index) in errors))
        for t in listed))
