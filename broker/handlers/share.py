"""Share group APIs (KIP-932), served by the share coordinator (broker.share).

- ShareGroupHeartbeat (76) v1: join with epoch 0 and a member id of the client's making,
  leave with -1; the answer carries the member epoch and, when it changed, the assignment
  (topic ids and partitions). Heartbeat interval: group.share.heartbeat.interval.ms.
- ShareGroupDescribe (77) v1: state Empty or Stable, epochs, assignor "simple", members with
  their subscriptions and assignments; an unknown group is GROUP_ID_NOT_FOUND.
- ShareFetch (78) v1-v2: opens (epoch 0), continues (the next epoch) or closes (-1) the
  member's share session; applies the acknowledgements it carries first, then acquires up to
  max_records (v2 share_acquire_mode 1: exactly, else to the end of a batch) from the session's
  partitions and waits up to max_wait for records when there are none. Records are answered
  as whole log batches with the acquired ranges and their delivery counts; the client delivers
  only acquired offsets. A bad session epoch is INVALID_SHARE_SESSION_EPOCH, an unknown session
  SHARE_SESSION_NOT_FOUND, an acknowledgement of a record the member does not hold
  INVALID_RECORD_STATE (for its partition, in acknowledge_error_code).
- ShareAcknowledge (79) v1-v2: acknowledgements only, in the session (epoch -1 closes it).
- DescribeShareGroupOffsets (90) v0-v1: the share-partition start offsets (-1 for a partition
  with no state), v1 with the lag (records from the start offset to the high watermark not
  yet acknowledged or archived... as Kafka: high watermark - start offset - records done).
- AlterShareGroupOffsets (91) v0: only for an empty group; resets each partition's state to the
  given start offset. DeleteShareGroupOffsets (92) v0: only for an empty group; forgets the state
  of every partition of the topics named.
- Several nodes (leadership.py): the group APIs (76, 77, 90-92) on a node that is not the group's
  coordinator are NOT_COORDINATOR, as Kafka's group coordinator answers (a heartbeat Kafka's
  validation refuses is INVALID_REQUEST first, on any node); ShareFetch and
  ShareAcknowledge are answered per partition by its leader (Kafka's share-partition leader),
  elsewhere NOT_LEADER_OR_FOLLOWER with the current leader and its endpoint (KIP-951 fields),
  and an acknowledgement sent to such a node is not applied.

Authorisation as Kafka's KafkaApis: GROUP READ for ShareGroupHeartbeat, ShareFetch,
ShareAcknowledge and AlterShareGroupOffsets, DESCRIBE for ShareGroupDescribe and
DescribeShareGroupOffsets, DELETE for DeleteShareGroupOffsets (a whole-request
GROUP_AUTHORIZATION_FAILED, per group for the two describes); then TOPIC DESCRIBE on every
subscribed topic (heartbeat: TOPIC_AUTHORIZATION_FAILED for the request) and on described
assignments and offsets, TOPIC READ per partition fetched or acknowledged and per topic whose
offsets are altered or deleted.
"""

from __future__ import annotations

import trio
from typing import Any
from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..authorizer import AUTHORIZATION_MESSAGES, allowed, allowed_names, operations
from ..authorizer import AclOperation as Op
from ..authorizer import ResourceType as Res
from . import api
from .common import response_module
from .groups import GROUP_OPERATIONS, NO_AUTHORIZED_OPS, _client_host, described_groups, failed_group
from .leadership import current_leader, group_coordinator_error, node_endpoints, partition_error

RECORD_LIMIT = 1  # ShareAcquireMode record_limit
GROUP_DENIED = ErrorCode.group_authorization_failed
TOPIC_DENIED = ErrorCode.topic_authorization_failed


def _readable_topic_ids(ctx: RequestContext, topic_ids) -> set | None:
    """The topic ids among `topic_ids` whose topics the principal may READ (None: all, no
    authorizer). An unknown id is left for the unknown-topic check."""
    names = {tid: t.name for tid in topic_ids if (t := ctx.cluster.topics_by_id.get(tid)) is not None}
    ok = allowed_names(ctx, Op.READ, Res.TOPIC, names.values())
    if ok is None:
        return None
    return {tid for tid in topic_ids if tid not in names or names[tid] in ok}


def _share(ctx: RequestContext):
    return ctx.broker.services.share


def _ms(value) -> int:
    return value if isinstance(value, int) else int(value.total_seconds() * 1000)


def _leader(ctx: RequestContext, mod, part, error=ErrorCode.none, endpoints: dict | None = None):
    """Kafka fills in the current leader only for a partition in error (NOT_LEADER_OR_FOLLOWER and
    the like); otherwise the field keeps its schema defaults, 0 and 0."""
    if error == ErrorCode.none:
        return make(mod.LeaderIdAndEpoch, leader_id=0, leader_epoch=0)
    if part is not None and error in (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch):
        # KIP-951: the partition's leader, and its endpoint in the response's node_endpoints
        return current_leader(ctx, mod, part, {} if endpoints is None else endpoints)
    return make(mod.LeaderIdAndEpoch, leader_id=ctx.node_id if part else -1,
                leader_epoch=part.leader_epoch if part else -1)


# --- ShareGroupHeartbeat / ShareGroupDescribe -----------------------------------------------

@api(76, 1, 1)
async def share_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    # the share coordinator's code is loaded with the coordinator, on first use (broker.services)
    from ..share.coordinator import ShareError, heartbeat_error

    mod = response_module(ctx)
    share = _share(ctx)
    # Kafka validates the request first (INVALID_REQUEST on any node), then routes it
    refused = group_coordinator_error(ctx, request.group_id)
    if refused is not None and heartbeat_error(request.group_id, request.member_id, request.member_epoch,
                                               request.subscribed_topic_names) is None:
        return make(mod.ShareGroupHeartbeatResponse, throttle_time=0, error_code=refused, error_message=None,
                    member_id=None, member_epoch=0, heartbeat_interval=0, assignment=None)
    interval = ctx.broker.config["group.share.heartbeat.interval.ms"]
    denied = None
    if not allowed(ctx, Op.READ, Res.GROUP, request.group_id):
        denied = GROUP_DENIED
    elif request.subscribed_topic_names:
        # clients may not learn of topics they may not DESCRIBE
        ok = allowed_names(ctx, Op.DESCRIBE, Res.TOPIC, request.subscribed_topic_names)
        if ok is not None and len(ok) < len(set(request.subscribed_topic_names)):
            denied = TOPIC_DENIED
    if denied is not None:
        return make(mod.ShareGroupHeartbeatResponse, throttle_time=0, error_code=denied, error_message=None,
                    member_id=None, member_epoch=0, heartbeat_interval=0, assignment=None)
    try:
        member = share.heartbeat(group_id=request.group_id, member_id=request.member_id,
                                 member_epoch=request.member_epoch, rack_id=request.rack_id,
                                 subscribed=request.subscribed_topic_names, client_id=ctx.client_id or "",
                                 client_host=_client_host(ctx))
    except ShareError as exc:
        return make(mod.ShareGroupHeartbeatResponse, throttle_time=0, error_code=exc.code, error_message=exc.message,
                    member_id=None, member_epoch=0, heartbeat_interval=0, assignment=None)
    if member is None:
        return make(mod.ShareGroupHeartbeatResponse, throttle_time=0, error_code=ErrorCode.none,
                    member_id=request.member_id, member_epoch=-1, heartbeat_interval=0, assignment=None)
    assignment = None
    if member.sent_epoch != member.epoch:
        member.sent_epoch = member.epoch
        assignment = make(mod.Assignment, topic_partitions=tuple(
            make(mod.TopicPartitions, topic_id=tid, partitions=tuple(sorted(ps)))
            for tid, ps in member.assignment.items()))
    return make(mod.ShareGroupHeartbeatResponse, throttle_time=0, error_code=ErrorCode.none,
                member_id=member.member_id, member_epoch=member.epoch, heartbeat_interval=interval,
                assignment=assignment)


@api(77, 1, 1)
async def share_group_describe(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    share = _share(ctx)
    def describe(gid: str):
        group = share.groups.get(gid)
        if group is None and share.known(gid):
            from ..share.coordinator import ShareGroup
            group = ShareGroup(gid)
        if group is None:
            other = ctx.broker.services.groups.groups.get(gid)
            msg = f"Group {gid} is not a share group." if other is not None else f"Group {gid} not found."
            return failed_group(mod, gid, ErrorCode.group_id_not_found, msg)
        members = []
        for m in group.members.values():
            tps = []
            for tid, ps in m.assignment.items():
                topic = ctx.cluster.topics_by_id.get(tid)
                if topic is not None:
                    tps.append(make(mod.TopicPartitions, topic_id=tid, topic_name=topic.name,
                                    partitions=tuple(sorted(ps))))
            members.append(make(mod.Member, member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.epoch,
                                client_id=m.client_id, client_host=m.client_host,
                                subscribed_topic_names=tuple(m.subscribed),
                                assignment=make(mod.Assignment, topic_partitions=tuple(tps))))
        names = {tp.topic_name for m in members for tp in m.assignment.topic_partitions}
        visible = allowed_names(ctx, Op.DESCRIBE, Res.TOPIC, names)
        if visible is not None and not names <= visible:
            return failed_group(mod, gid, TOPIC_DENIED, "The group has described topic(s) that the client is "
                                                        "not authorized to describe.")
        ops = (operations(ctx, Res.GROUP, gid, GROUP_OPERATIONS) if request.include_authorized_operations
               else NO_AUTHORIZED_OPS)
        return make(mod.DescribedGroup, error_code=ErrorCode.none, group_id=gid, group_state=group.state,
                    group_epoch=group.epoch, assignment_epoch=group.assignment_epoch, assignor_name="simple",
                    members=tuple(members), authorized_operations=ops)
    return make(mod.ShareGroupDescribeResponse, throttle_time=0,
                groups=described_groups(ctx, mod, request.group_ids, describe))


# --- ShareFetch / ShareAcknowledge ---------------------------------------------------------------

def _resolve(ctx: RequestContext, topic_id, index):
    topic = ctx.cluster.topics_by_id.get(topic_id)
    if topic is None:
        return None, ErrorCode.unknown_topic_id
    if not 0 <= index < len(topic.partitions):
        return None, ErrorCode.unknown_topic_or_partition
    return topic.partitions[index], ErrorCode.none


def _led(ctx: RequestContext, topic_id, index):
    """The partition and ErrorCode.none when this node leads it (share-partitions live on the
    leader), else the error: unknown topic or partition, or NOT_LEADER_OR_FOLLOWER."""
    part, err = _resolve(ctx, topic_id, index)
    if part is not None and (not_led := partition_error(ctx, part)) is not None:
        return part, not_led
    return part, err


def _apply_acks(ctx: RequestContext, share, group_id, member_id, topics,
                readable: set | None = None) -> dict[tuple, tuple[ErrorCode, str | None]]:
    """Acknowledgements per (topic id, partition): the error code and message for each. Those of
    topics outside `readable` (None: all readable) are TOPIC_AUTHORIZATION_FAILED, unapplied."""
    from ..share.coordinator import ShareError

    results: dict[tuple, tuple[ErrorCode, str | None]] = {}
    for t in topics:
        for p in t.partitions:
            batches = [(b.first_offset, b.last_offset, tuple(b.acknowledge_types)) for b in p.acknowledgement_batches]
            if not batches:
                continue
            if readable is not None and t.topic_id not in readable:
                results[(t.topic_id, p.partition_index)] = (TOPIC_DENIED, None)
                continue
            part, err = _led(ctx, t.topic_id, p.partition_index)
            if err != ErrorCode.none:
                results[(t.topic_id, p.partition_index)] = (err, None)
                continue
            try:
                share.acknowledge(group_id, member_id, t.topic_id, p.partition_index, batches)
                results[(t.topic_id, p.partition_index)] = (ErrorCode.none, None)
            except ShareError as exc:
                results[(t.topic_id, p.partition_index)] = (exc.code, exc.message)
    return results


def _top_error(mod, name, code, message=None, **extra):
    return make(getattr(mod, name), throttle_time=0, error_code=code, error_message=message,
                acquisition_lock_timeout=0, responses=(), node_endpoints=(), **extra)


def _open_session(ctx: RequestContext, share, mod, response: str, group_id: str, member_id: str, epoch: int):
    """The checks ShareFetch and ShareAcknowledge share, then the member's share session:
    (session, None), or (None, the response refusing the request). ShareAcknowledge cannot open
    a session (epoch 0)."""
    from ..share.coordinator import ShareError

    if not allowed(ctx, Op.READ, Res.GROUP, group_id):
        return None, _top_error(mod, response, GROUP_DENIED)
    if not group_id or not member_id:
        return None, _top_error(mod, response, ErrorCode.invalid_request, "group and member ids are required")
    if epoch == 0 and response == "ShareAcknowledgeResponse":
        return None, _top_error(mod, response, ErrorCode.invalid_share_session_epoch)
    try:
        return share.open_session(group_id, member_id, epoch, ctx.peer, ctx.node_id), None
    except ShareError as exc:
        return None, _top_error(mod, response, exc.code, exc.message)


@api(78, 1, 2)
async def share_fetch(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    share = _share(ctx)
    group_id, member_id, epoch = request.group_id or "", request.member_id or "", request.share_session_epoch
    session, refused = _open_session(ctx, share, mod, "ShareFetchResponse", group_id, member_id, epoch)
    if refused is not None:
        return refused
    asked = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]
    if epoch == 0:
        session.partitions = set(asked)
    else:
        session.partitions.update(asked)
        for f in request.forgotten_topics_data:
            for p in f.partitions:
                session.partitions.discard((f.topic_id, p))
    # share consumers need READ on every topic they fetch from or acknowledge
    readable = _readable_topic_ids(ctx, {tid for tid, _ in session.partitions}
                                   | {t.topic_id for t in request.topics})
    acks = _apply_acks(ctx, share, group_id, member_id, request.topics, readable)
    lock_ms = share.lock_ms(group_id)
    fetched: dict[tuple, tuple[bytes, list]] = {}
    errors: dict[tuple, ErrorCode] = {}
    if epoch == -1:
        share.final(group_id, member_id, ctx.node_id)
    else:
        strict = getattr(request, "share_acquire_mode", 0) == RECORD_LIMIT
        deadline = trio.current_time() + _ms(request.max_wait) / 1000
        while True:
            budget = request.max_records if request.max_records > 0 else 500
            bytes_left = request.max_bytes
            for tid, index in sorted(session.partitions, key=lambda k: (str(k[0]), k[1])):
                if readable is not None and tid not in readable:
                    errors[(tid, index)] = TOPIC_DENIED
                    continue
                part, err = _led(ctx, tid, index)
                if err != ErrorCode.none:
                    errors[(tid, index)] = err
                    continue
                if budget <= 0 or bytes_left <= 0:
                    break
                data, acquired = share.acquire(group_id, member_id, tid, index, max_records=budget,
                                               max_bytes=bytes_left, strict_limit=strict)
                if acquired:
                    fetched[(tid, index)] = (data, acquired)
                    budget -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
                    bytes_left -= len(data)
            if fetched or errors or trio.current_time() >= deadline or not session.partitions:
                break
            woken = trio.Event()
            parts = [p for tid, i in session.partitions if (p := _led(ctx, tid, i)[0]) is not None]
            for p in parts:
                p.add_waiter(woken)
            share.waiters.add(woken)
            with trio.move_on_at(deadline):
                await woken.wait()
            share.waiters.discard(woken)
            for p in parts:
                p.remove_waiter(woken)
            if share.session(group_id, member_id, ctx.node_id) is not session:
                break  # the member left or its session was replaced while we waited
    keys = list(dict.fromkeys([*acks, *errors, *fetched]))
    topics: dict = {}
    endpoints: dict = {}
    for tid, index in keys:
        part, _ = _resolve(ctx, tid, index)
        ack_err, ack_msg = acks.get((tid, index), (ErrorCode.none, None))
        data, acquired = fetched.get((tid, index), (b"", []))
        err = errors.get((tid, index), ErrorCode.none)
        topics.setdefault(tid, []).append(make(
            mod.PartitionData, partition_index=index, error_code=err,
            acknowledge_error_code=ack_err, acknowledge_error_message=ack_msg,
            current_leader=_leader(ctx, mod, part, err, endpoints),
            records=data, acquired_records=tuple(make(mod.AcquiredRecords, first_offset=a.first_offset,
                                                      last_offset=a.last_offset, delivery_count=a.delivery_count)
                                                 for a in acquired)))
    responses = tuple(make(mod.ShareFetchableTopicResponse, topic_id=tid, partitions=tuple(ps))
                      for tid, ps in topics.items())
    return make(mod.ShareFetchResponse, throttle_time=0, error_code=ErrorCode.none, acquisition_lock_timeout=lock_ms,
                responses=responses, node_endpoints=node_endpoints(endpoints))


@api(79, 1, 2)
async def share_acknowledge(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    share = _share(ctx)
    group_id, member_id, epoch = request.group_id or "", request.member_id or "", request.share_session_epoch
    _, refused = _open_session(ctx, share, mod, "ShareAcknowledgeResponse", group_id, member_id, epoch)
    if refused is not None:
        return refused
    acks = _apply_acks(ctx, share, group_id, member_id, request.topics,
                       _readable_topic_ids(ctx, {t.topic_id for t in request.topics}))
    if epoch == -1:
        share.final(group_id, member_id, ctx.node_id)
    topics: dict = {}
    endpoints: dict = {}
    for (tid, index), (err, msg) in acks.items():
        part, _ = _resolve(ctx, tid, index)
        topics.setdefault(tid, []).append(make(mod.PartitionData, partition_index=index, error_code=err,
                                               error_message=msg,
                                               current_leader=_leader(ctx, mod, part, err, endpoints)))
    return make(mod.ShareAcknowledgeResponse, throttle_time=0, error_code=ErrorCode.none,
                acquisition_lock_timeout=share.lock_ms(group_id),
                responses=tuple(make(mod.ShareAcknowledgeTopicResponse, topic_id=tid, partitions=tuple(ps))
                                for tid, ps in topics.items()), node_endpoints=node_endpoints(endpoints))


# --- Describe / Alter / DeleteShareGroupOffsets ----------------------------------------------------

@api(90, 0, 1)
async def describe_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    share = _share(ctx)
    out = []
    for g in request.groups:
        gid = g.group_id
        if not allowed(ctx, Op.DESCRIBE, Res.GROUP, gid):
            out.append(make(mod.DescribeShareGroupOffsetsResponseGroup, group_id=gid, topics=(),
                            error_code=GROUP_DENIED, error_message=None))
            continue
        if (refused := group_coordinator_error(ctx, gid)) is not None:
            out.append(make(mod.DescribeShareGroupOffsetsResponseGroup, group_id=gid, topics=(),
                            error_code=refused, error_message=None))
            continue
        if not share.known(gid):
            out.append(make(mod.DescribeShareGroupOffsetsResponseGroup, group_id=gid, topics=(),
                            error_code=ErrorCode.group_id_not_found, error_message=f"Group {gid} not found."))
            continue
        states = share.group_partitions(gid)
        wanted: list[tuple[str, list[int] | None]]
        if g.topics is None:
            names: dict[str, list[int]] = {}
            for (tid, index) in sorted(states, key=lambda k: (str(k[0]), k[1])):
                topic = ctx.cluster.topics_by_id.get(tid)
                if topic is not None:
                    names.setdefault(topic.name, []).append(index)
            wanted = list(names.items())
        else:
            wanted = [(t.topic_name, list(t.partitions)) for t in g.topics]
        # offsets of topics the principal may not DESCRIBE: left out of an all-topics answer,
        # refused (after the others) when named
        visible = allowed_names(ctx, Op.DESCRIBE, Res.TOPIC, (n for n, _ in wanted))
        hidden = [] if visible is None else [(n, ps) for n, ps in wanted if n not in visible]
        if visible is not None:
            wanted = [(n, ps) for n, ps in wanted if n in visible]
        topics = []
        for name, indexes in wanted:
            topic = ctx.cluster.topics.get(name)
            parts = []
            for index in indexes or []:
                sp = states.get((topic.topic_id, index)) if topic is not None else None
                err = ErrorCode.none
                if topic is None or not 0 <= index < len(topic.partitions):
                    err = ErrorCode.unknown_topic_or_partition
                start = sp.start_offset if sp is not None else -1
                lag = -1
                if sp is not None and topic is not None:
                    lag = max(0, topic.partitions[index].high_watermark - sp.start_offset
                              - sp.delivery_complete_count())
                parts.append(make(mod.DescribeShareGroupOffsetsResponsePartition, partition_index=index,
                                  start_offset=start, leader_epoch=0 if sp is not None else -1, lag=lag,
                                  error_code=err, error_message=None))
            topics.append(make(mod.DescribeShareGroupOffsetsResponseTopic, topic_name=name,
                               topic_id=topic.topic_id if topic else None, partitions=tuple(parts)))
        if g.topics is not None:
            for name, indexes in hidden:
                topics.append(make(mod.DescribeShareGroupOffsetsResponseTopic, topic_name=name, topic_id=None,
                                   partitions=tuple(make(mod.DescribeShareGroupOffsetsResponsePartition,
                                                         partition_index=i, start_offset=-1, leader_epoch=0, lag=-1,
                                                         error_code=TOPIC_DENIED,
                                                         error_message=AUTHORIZATION_MESSAGES[TOPIC_DENIED])
                                                    for i in indexes or [])))
        out.append(make(mod.DescribeShareGroupOffsetsResponseGroup, group_id=gid, topics=tuple(topics),
                        error_code=ErrorCode.none, error_message=None))
    return make(mod.DescribeShareGroupOffsetsResponse, throttle_time=0, groups=tuple(out))


def _empty_group_error(share, gid):
    group = share.groups.get(gid)
    if group is not None and group.members:
        return ErrorCode.non_empty_group, f"The group {gid} is not empty."
    return None


@api(91, 0, 0)
async def alter_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    share = _share(ctx)
    gid = request.group_id
    if not allowed(ctx, Op.READ, Res.GROUP, gid):
        return make(mod.AlterShareGroupOffsetsResponse, throttle_time=0, error_code=GROUP_DENIED,
                    error_message=AUTHORIZATION_MESSAGES[GROUP_DENIED], responses=())
    busy = _empty_group_error(share, gid)
    if (refused := group_coordinator_error(ctx, gid)) is not None:
        busy = (refused, None)
    if busy is not None:
        return make(mod.AlterShareGroupOffsetsResponse, throttle_time=0, error_code=busy[0], error_message=busy[1],
                    responses=())
    topics = []
    denied = []
    readable = allowed_names(ctx, Op.READ, Res.TOPIC, (t.topic_name for t in request.topics))
    for t in request.topics:
        topic = ctx.cluster.topics.get(t.topic_name)
        parts = []
        if readable is not None and t.topic_name not in readable:
            denied.append(make(mod.AlterShareGroupOffsetsResponseTopic, topic_name=t.topic_name,
                                topic_id=topic.topic_id if topic else None, partitions=tuple(
                                    make(mod.AlterShareGroupOffsetsResponsePartition,
                                         partition_index=p.partition_index, error_code=TOPIC_DENIED,
                                         error_message=AUTHORIZATION_MESSAGES[TOPIC_DENIED])
                                    for p in t.partitions)))
            continue
        for p in t.partitions:
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                parts.append(make(mod.AlterShareGroupOffsetsResponsePartition, partition_index=p.partition_index,
                                  error_code=ErrorCode.unknown_topic_or_partition,
                                  error_message="This server does not host this topic-partition."))
                continue
            altered = share.alter_offset(gid, topic.topic_id, p.partition_index, p.start_offset)
            parts.append(make(mod.AlterShareGroupOffsetsResponsePartition, partition_index=p.partition_index,
                              error_code=altered, error_message=None))
        topics.append(make(mod.AlterShareGroupOffsetsResponseTopic, topic_name=t.topic_name,
                           topic_id=topic.topic_id if topic else None, partitions=tuple(parts)))
    return make(mod.AlterShareGroupOffsetsResponse, throttle_time=0, error_code=ErrorCode.none,
                error_message=None, responses=tuple(denied + topics))


@api(92, 0, 0)
async def delete_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    share = _share(ctx)
    gid = request.group_id
    if not allowed(ctx, Op.DELETE, Res.GROUP, gid):
        return make(mod.DeleteShareGroupOffsetsResponse, throttle_time=0, error_code=GROUP_DENIED,
                    error_message=AUTHORIZATION_MESSAGES[GROUP_DENIED], responses=())
    if (refused := group_coordinator_error(ctx, gid)) is not None:
        return make(mod.DeleteShareGroupOffsetsResponse, throttle_time=0, error_code=refused, error_message=None,
                    responses=())
    if not share.known(gid):
        return make(mod.DeleteShareGroupOffsetsResponse, throttle_time=0, error_code=ErrorCode.group_id_not_found,
                    error_message=f"Group {gid} not found.", responses=())
    busy = _empty_group_error(share, gid)
    if busy is not None:
        return make(mod.DeleteShareGroupOffsetsResponse, throttle_time=0, error_code=busy[0],
                    error_message=busy[1], responses=())
    topics = []
    denied = []
    readable = allowed_names(ctx, Op.READ, Res.TOPIC, (t.topic_name for t in request.topics))
    for t in request.topics:
        topic = ctx.cluster.topics.get(t.topic_name)
        if readable is not None and t.topic_name not in readable:
            denied.append(make(mod.DeleteShareGroupOffsetsResponseTopic, topic_name=t.topic_name, topic_id=None,
                                error_code=TOPIC_DENIED, error_message=AUTHORIZATION_MESSAGES[TOPIC_DENIED]))
            continue
        if topic is None:
            topics.append(make(mod.DeleteShareGroupOffsetsResponseTopic, topic_name=t.topic_name, topic_id=None,
                               error_code=ErrorCode.unknown_topic_or_partition,
                               error_message="This server does not host this topic-partition."))
            continue
        deleted = share.delete_offsets(gid, topic.topic_id)
        topics.append(make(mod.DeleteShareGroupOffsetsResponseTopic, topic_name=t.topic_name,
                           topic_id=topic.topic_id, error_code=deleted, error_message=None))
    return make(mod.DeleteShareGroupOffsetsResponse, throttle_time=0, error_code=ErrorCode.none, error_message=None,
                responses=tuple(denied + topics))
