"""Group membership APIs, served by the group coordinator (broker.groups).

- FindCoordinator (10) v0-v6: this broker coordinates every group and every transactional id;
  key type 0 (group) and 1 (transaction); v4+ answers a batch of keys. Other key types get
  INVALID_REQUEST.
- JoinGroup (11) v0-v9, SyncGroup (14) v0-v5, Heartbeat (12) v0-v4, LeaveGroup (13) v0-v5
  (v3+ batched members, static members by group.instance.id): the classic protocol. From
  JoinGroup v4 a member without an id is answered MEMBER_ID_REQUIRED with its new id
  (KIP-394). JoinGroup and SyncGroup wait for the rebalance; a join completes as soon as every
  known member has rejoined (group.initial.rebalance.delay.ms, default 0, delays a new group's
  first rebalance; with 0, members arriving together at an empty group still share one
  generation: see broker/groups/classic.py). v9 sets skip_assignment for a static leader that
  rejoins a Stable group; before v9 it is told the old leader id and acts as a follower.
- DescribeGroups (15) v0-v6: classic groups; member metadata/assignment only when Stable.
  An unknown group, or a KIP-848 group, is reported Dead (v6: with GROUP_ID_NOT_FOUND).
- ListGroups (16) v0-v5: v4+ states filter, v5+ types filter ("classic", "consumer").
- DeleteGroups (42) v0-v2: only empty groups (NON_EMPTY_GROUP); deletes their offsets.
- ConsumerGroupHeartbeat (68) v0-v1, ConsumerGroupDescribe (69) v0-v1: KIP-848 consumer
  groups with server-side `uniform` (default) and `range` assignors; heartbeat interval and
  session timeout come from group.consumer.heartbeat.interval.ms / .session.timeout.ms. v0
  members get their id from us; v1 members bring their own (empty is INVALID_REQUEST).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from protocol.messages import make

from ..groups.states import ClassicGroupState

from . import api
from .common import response_module

NO_AUTHORIZED_OPS = -(2**31)
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1


def _coordinator(ctx):
    return ctx.broker.services.groups


def _ms(value) -> int:
    """kio gives timedelta for *_ms fields; the wire value in ms."""
    if value is None:
        return -1
    if isinstance(value, int):
        return value
    return int(value.total_seconds() * 1000)


def _client_host(ctx) -> str:
    host = ctx.peer.rsplit(":", 1)[0] if ctx.peer and ctx.peer != "?" else ""
    return "/" + host if host else ""


# --- FindCoordinator -------------------------------------------------------------------------

@api(10, 0, 6)
async def find_coordinator(ctx, request):
    mod = response_module(ctx)
    adv = ctx.broker.advertised[ctx.listener.name]
    node = ctx.cluster.node_id
    key_type = getattr(request, "key_type", KEY_TYPE_GROUP)
    error = ErrorCode.none if key_type in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION) else ErrorCode.invalid_request
    msg = None if error == ErrorCode.none else f"key type {key_type} is not supported"
    if ctx.api_version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            ok = error == ErrorCode.none
            coordinators.append(make(mod.Coordinator, key=key, node_id=node if ok else -1,
                                     host=adv.host if ok else "", port=adv.port if ok else -1,
                                     error_code=error, error_message=msg))
        return make(mod.FindCoordinatorResponse, throttle_time=0, coordinators=tuple(coordinators))
    ok = error == ErrorCode.none
    return make(mod.FindCoordinatorResponse, throttle_time=0, error_code=error, error_message=msg,
                node_id=node if ok else -1, host=adv.host if ok else "", port=adv.port if ok else -1)


# --- JoinGroup / SyncGroup / Heartbeat / LeaveGroup --------------------------------------------

@api(11, 0, 9)
async def join_group(ctx, request):
    mod = response_module(ctx)
    session_timeout = _ms(request.session_timeout)
    rebalance_timeout = _ms(getattr(request, "rebalance_timeout", None))
    if rebalance_timeout < 0:
        rebalance_timeout = session_timeout
    result = await _coordinator(ctx).join_group(
        group_id=request.group_id, member_id=request.member_id or "",
        group_instance_id=getattr(request, "group_instance_id", None), client_id=ctx.client_id or "",
        client_host=_client_host(ctx), session_timeout_ms=session_timeout, rebalance_timeout_ms=rebalance_timeout,
        protocol_type=request.protocol_type, protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        api_version=ctx.api_version)
    members = tuple(make(mod.JoinGroupResponseMember, member_id=mid, group_instance_id=iid, metadata=meta)
                    for mid, iid, meta in result.members)
    protocol_name = result.protocol_name
    if protocol_name is None and ctx.api_version < 7:
        protocol_name = ""
    return make(mod.JoinGroupResponse, throttle_time=0, error_code=result.error,
                generation_id=result.generation_id, protocol_type=result.protocol_type,
                protocol_name=protocol_name, leader=result.leader or "", skip_assignment=result.skip_assignment,
                member_id=result.member_id or "", members=members)


@api(14, 0, 5)
async def sync_group(ctx, request):
    mod = response_module(ctx)
    assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}
    result = await _coordinator(ctx).sync_group(
        group_id=request.group_id, member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None), generation_id=request.generation_id,
        protocol_type=getattr(request, "protocol_type", None), protocol_name=getattr(request, "protocol_name", None),
        assignments=assignments)
    return make(mod.SyncGroupResponse, throttle_time=0, error_code=result.error,
                protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                assignment=result.assignment or b"")


@api(12, 0, 4)
async def heartbeat(ctx, request):
    mod = response_module(ctx)
    err = _coordinator(ctx).heartbeat(group_id=request.group_id, member_id=request.member_id,
                                      group_instance_id=getattr(request, "group_instance_id", None),
                                      generation_id=request.generation_id)
    return make(mod.HeartbeatResponse, throttle_time=0, error_code=err)


@api(13, 0, 5)
async def leave_group(ctx, request):
    mod = response_module(ctx)
    if ctx.api_version < 3:
        members = [(request.member_id, None)]
    else:
        members = [(m.member_id or "", m.group_instance_id) for m in request.members]
    top, errors = _coordinator(ctx).leave_group(request.group_id, members)
    if ctx.api_version < 3:
        return make(mod.LeaveGroupResponse, throttle_time=0, error_code=errors[0] if top == ErrorCode.none else top)
    return make(mod.LeaveGroupResponse, throttle_time=0, error_code=top,
                members=tuple(make(mod.MemberResponse, member_id=mid, group_instance_id=iid, error_code=err)
                              for (mid, iid), err in zip(members, errors)) if top == ErrorCode.none else ())


# --- DescribeGroups / ListGroups / DeleteGroups ------------------------------------------------

@api(15, 0, 6)
async def describe_groups(ctx, request):
    from ..groups.classic import ClassicGroup

    mod = response_module(ctx)
    coord = _coordinator(ctx)
    out = []
    for gid in request.groups:
        group = coord.groups.get(gid)
        if not isinstance(group, ClassicGroup):
            err = ErrorCode.group_id_not_found if ctx.api_version >= 6 else ErrorCode.none
            # Kafka names a streams group's type (KIP-1071)
            msg = f"Group {gid} is not a classic group." if getattr(group, "protocol_type", "") == "streams" \
                else f"Group {gid} not found."
            out.append(make(mod.DescribedGroup, error_code=err,
                            error_message=msg if err != ErrorCode.none else None,
                            group_id=gid, group_state=ClassicGroupState.DEAD, protocol_type="", protocol_data="", members=(),
                            authorized_operations=NO_AUTHORIZED_OPS))
            continue
        stable = group.state == ClassicGroupState.STABLE
        members = tuple(
            make(mod.DescribedGroupMember, member_id=m.member_id, group_instance_id=m.group_instance_id,
                 client_id=m.client_id, client_host=m.client_host,
                 member_metadata=m.metadata(group.protocol_name) if stable else b"",
                 # Kafka's describeNoMetadata: outside Stable a member keeps showing its last assignment
                 member_assignment=m.assignment)
            for m in group.members.values())
        out.append(make(mod.DescribedGroup, error_code=ErrorCode.none, error_message=None, group_id=gid,
                        group_state=group.state, protocol_type=group.protocol_type or "",
                        protocol_data=(group.protocol_name or "") if stable else "", members=members,
                        authorized_operations=NO_AUTHORIZED_OPS))
    return make(mod.DescribeGroupsResponse, throttle_time=0, groups=tuple(out))


@api(16, 0, 5)
async def list_groups(ctx, request):
    mod = response_module(ctx)
    states = list(getattr(request, "states_filter", None) or ()) or None
    types = list(getattr(request, "types_filter", None) or ()) or None
    groups = _coordinator(ctx).list_groups(states, types)
    return make(mod.ListGroupsResponse, throttle_time=0, error_code=ErrorCode.none,
                groups=tuple(make(mod.ListedGroup, group_id=gid, protocol_type=ptype, group_state=state,
                                  group_type=gtype) for gid, ptype, state, gtype in groups))


@api(42, 0, 2)
async def delete_groups(ctx, request):
    mod = response_module(ctx)
    results = _coordinator(ctx).delete_groups(list(request.groups_names))
    return make(mod.DeleteGroupsResponse, throttle_time=0,
                results=tuple(make(mod.DeletableGroupResult, group_id=gid, error_code=err) for gid, err in results))


# --- KIP-848 ---------------------------------------------------------------------------------

@api(68, 0, 1)
async def consumer_group_heartbeat(ctx, request):
    mod = response_module(ctx)
    owned = None
    if request.topic_partitions is not None:
        owned = {tp.topic_id: set(tp.partitions) for tp in request.topic_partitions}
    names = request.subscribed_topic_names
    result = _coordinator(ctx).consumer_group_heartbeat(
        group_id=request.group_id, member_id=request.member_id or "", member_epoch=request.member_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=_ms(request.rebalance_timeout),
        subscribed_topic_names=list(names) if names is not None else None,
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor, owned=owned, client_id=ctx.client_id or "",
        client_host=_client_host(ctx), api_version=ctx.api_version)
    assignment = None
    if result.assignment is not None and result.error == ErrorCode.none:
        assignment = make(mod.Assignment, topic_partitions=tuple(
            make(mod.TopicPartitions, topic_id=tid, partitions=tuple(sorted(ps)))
            for tid, ps in sorted(result.assignment.items(), key=lambda kv: str(kv[0]))))
    if result.error != ErrorCode.none:
        # Kafka's error answer carries only the error: no member id, epoch 0, interval 0
        return make(mod.ConsumerGroupHeartbeatResponse, throttle_time=0, error_code=result.error,
                    error_message=result.error_message, member_id=None, member_epoch=0, heartbeat_interval=0,
                    assignment=None)
    return make(mod.ConsumerGroupHeartbeatResponse, throttle_time=0, error_code=result.error,
                error_message=result.error_message, member_id=result.member_id,
                member_epoch=result.member_epoch, heartbeat_interval=result.heartbeat_interval_ms,
                assignment=assignment)


@api(69, 0, 1)
async def consumer_group_describe(ctx, request):
    from ..groups.consumer import ConsumerGroup

    mod = response_module(ctx)
    coord = _coordinator(ctx)
    by_id = {t.topic_id: t.name for t in ctx.cluster.topics.values()}

    def tps(assign):
        return tuple(make(mod.TopicPartitions, topic_id=tid, topic_name=by_id.get(tid, ""), partitions=tuple(sorted(ps)))
                     for tid, ps in sorted(assign.items(), key=lambda kv: str(kv[0])) if ps)

    out = []
    for gid in request.group_ids:
        group = coord.groups.get(gid)
        if not isinstance(group, ConsumerGroup):
            msg = f"Group {gid} not found." if group is None else f"Group {gid} is not a consumer group."
            # Kafka's error entry leaves the state empty and the epochs at 0
            out.append(make(mod.DescribedGroup, error_code=ErrorCode.group_id_not_found, error_message=msg,
                            group_id=gid, group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                            members=(), authorized_operations=NO_AUTHORIZED_OPS))
            continue
        members = tuple(
            make(mod.Member, member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                 member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                 subscribed_topic_names=tuple(m.subscribed_topic_names),
                 subscribed_topic_regex=m.subscribed_topic_regex or "",  # Kafka: "" when none
                 assignment=make(mod.Assignment, topic_partitions=tps(m.assigned)),
                 target_assignment=make(mod.Assignment, topic_partitions=tps(group.target.get(m.member_id, {}))),
                 member_type=1)
            for m in group.members.values())
        out.append(make(mod.DescribedGroup, error_code=ErrorCode.none, error_message=None, group_id=gid,
                        group_state=group.state, group_epoch=group.group_epoch,
                        assignment_epoch=group.assignment_epoch, assignor_name=group.preferred_assignor(),
                        members=members, authorized_operations=NO_AUTHORIZED_OPS))
    return make(mod.ConsumerGroupDescribeResponse, throttle_time=0, groups=tuple(out))
