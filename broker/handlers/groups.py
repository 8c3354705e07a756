"""Group membership APIs, served by the group coordinator (broker.groups).

- FindCoordinator (10) v0-v6: the coordinator of a group id or transactional id is the leader
  of the key's partition of __consumer_offsets / __transaction_state (created on first use);
  a leaderless partition is COORDINATOR_NOT_AVAILABLE. Key type 0 (group) and 1 (transaction);
  v4+ answers a batch of keys. Other key types get INVALID_REQUEST.
- Every group request on a node that does not coordinate its group is NOT_COORDINATOR
  (broker.handlers.leadership); ListGroups lists the groups this node coordinates.
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

With an authorizer: FindCoordinator needs DESCRIBE on the group or transactional id (GROUP_ /
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, no node); JoinGroup, SyncGroup, Heartbeat, LeaveGroup and
ConsumerGroupHeartbeat READ on the group; DescribeGroups and ConsumerGroupDescribe DESCRIBE per
group; DeleteGroups DELETE per group; ListGroups without DESCRIBE on the cluster lists only the
groups the principal may DESCRIBE.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..groups.states import ClassicGroupState
from ..kafka_versions import unsupported_group_api

from ..authorizer import (AUTHORIZATION_MESSAGES, SUPPORTED_OPERATIONS, AclOperation, ResourceType, allowed,
                          allowed_cluster, allowed_names, operations)
from . import api
from .common import response_module
from .leadership import coordinator_partition, group_coordinator_error

NO_AUTHORIZED_OPS = -(2**31)


def failed_group(mod, group_id: str, code: ErrorCode, message: str | None = None, group_state: str = ""):
    """A DescribedGroup entry of DescribeGroups or Consumer/Share/StreamsGroupDescribe that carries only
    an error, as Kafka's: no state, epochs 0, no members, no authorized operations (fields a
    version does not have are left out by make)."""
    return make(mod.DescribedGroup, error_code=code, error_message=message, group_id=group_id,
                group_state=group_state, group_epoch=0, assignment_epoch=0, assignor_name="", topology=None,
                protocol_type="", protocol_data="", members=(), authorized_operations=NO_AUTHORIZED_OPS)


def described_groups(ctx: RequestContext, mod, group_ids, describe) -> tuple:
    """The groups of DescribeGroups and Consumer/Share/StreamsGroupDescribe in Kafka's order: first
    those the principal may not DESCRIBE (GROUP_AUTHORIZATION_FAILED), then in the request's order
    NOT_COORDINATOR for a group another node coordinates and `describe(group_id)`'s entry for the
    others."""
    refused, out = [], []
    for gid in group_ids:
        if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, gid):
            refused.append(failed_group(mod, gid, ErrorCode.group_authorization_failed))
        elif (not_coordinator := group_coordinator_error(ctx, gid)) is not None:
            out.append(failed_group(mod, gid, not_coordinator))
        else:
            out.append(describe(gid))
    return tuple(refused + out)
KEY_TYPE_GROUP = 0
GROUP_OPERATIONS = sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.GROUP])
KEY_TYPE_TRANSACTION = 1


def _coordinator(ctx: RequestContext):
    return ctx.broker.services.groups


def _ms(value) -> int:
    """kio gives timedelta for *_ms fields; the wire value in ms."""
    if value is None:
        return -1
    if isinstance(value, int):
        return value
    return int(value.total_seconds() * 1000)


def _client_host(ctx: RequestContext) -> str:
    host = ctx.peer.rsplit(":", 1)[0] if ctx.peer and ctx.peer != "?" else ""
    return "/" + host if host else ""


# --- FindCoordinator -------------------------------------------------------------------------

def _locate(ctx: RequestContext, key_type: int, key: str) -> tuple[ErrorCode, str | None, int, str, int]:
    """(error, message, node id, host, port) of the coordinator of one key."""
    if key_type not in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION):
        return ErrorCode.invalid_request, f"key type {key_type} is not supported", -1, "", -1
    part = coordinator_partition(ctx, key_type == KEY_TYPE_TRANSACTION, key)
    node = -1 if part is None else part.leader
    if node < 0 or not ctx.cluster.alive(node):
        return ErrorCode.coordinator_not_available, None, -1, "", -1
    adv = ctx.broker.address_of(node, ctx.listener.name)
    return ErrorCode.none, None, node, adv.host, adv.port


@api(10, 0, 6)
async def find_coordinator(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    key_type = getattr(request, "key_type", KEY_TYPE_GROUP)
    if ctx.api_version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            refused = _refused_key(ctx, key_type, key)
            msg: str | None
            if refused is not None:
                # Kafka leaves the message at the field's default, "", as with a coordinator found
                error, msg, node, host, port = refused, "", -1, "", -1
            else:
                error, msg, node, host, port = _locate(ctx, key_type, key)
            coordinators.append(make(mod.Coordinator, key=key, node_id=node, host=host, port=port,
                                     error_code=error, error_message="" if error == ErrorCode.none else msg))
        return make(mod.FindCoordinatorResponse, throttle_time=0, coordinators=tuple(coordinators))
    refused = _refused_key(ctx, key_type, request.key)
    msg_v3: str | None
    if refused is not None:
        error, msg_v3, node, host, port = refused, AUTHORIZATION_MESSAGES[refused], -1, "", -1
    else:
        error, msg_v3, node, host, port = _locate(ctx, key_type, request.key)
    return make(mod.FindCoordinatorResponse, throttle_time=0, error_code=error, error_message=msg_v3,
                node_id=node, host=host, port=port)


def _refused_key(ctx: RequestContext, key_type: int, key: str) -> ErrorCode | None:
    """FindCoordinator needs DESCRIBE on the group or the transactional id."""
    if key_type == KEY_TYPE_GROUP and not allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return ErrorCode.group_authorization_failed
    if key_type == KEY_TYPE_TRANSACTION and not allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return ErrorCode.transactional_id_authorization_failed
    return None


def _may_read_group(ctx: RequestContext, group_id: str) -> bool:
    return allowed(ctx, AclOperation.READ, ResourceType.GROUP, group_id)


# --- JoinGroup / SyncGroup / Heartbeat / LeaveGroup --------------------------------------------

@api(11, 0, 9)
async def join_group(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if (refused := group_coordinator_error(ctx, request.group_id)) is not None:
        return make(mod.JoinGroupResponse, throttle_time=0, error_code=refused, generation_id=-1,
                    protocol_type=None, protocol_name=None if ctx.api_version >= 7 else "", leader="",
                    skip_assignment=False, member_id="", members=())
    session_timeout = _ms(request.session_timeout)
    rebalance_timeout = _ms(getattr(request, "rebalance_timeout", None))
    if rebalance_timeout < 0:
        rebalance_timeout = session_timeout
    if not _may_read_group(ctx, request.group_id):
        return make(mod.JoinGroupResponse, throttle_time=0, error_code=ErrorCode.group_authorization_failed,
                    generation_id=-1, protocol_type=None, protocol_name=None if ctx.api_version >= 7 else "",
                    leader="", skip_assignment=False, member_id="", members=())
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
async def sync_group(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if not _may_read_group(ctx, request.group_id):
        return make(mod.SyncGroupResponse, throttle_time=0, error_code=ErrorCode.group_authorization_failed,
                    protocol_type=None, protocol_name=None, assignment=b"")
    if (refused := group_coordinator_error(ctx, request.group_id)) is not None:
        return make(mod.SyncGroupResponse, throttle_time=0, error_code=refused, protocol_type=None,
                    protocol_name=None, assignment=b"")
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
async def heartbeat(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if not _may_read_group(ctx, request.group_id):
        return make(mod.HeartbeatResponse, throttle_time=0, error_code=ErrorCode.group_authorization_failed)
    if (refused := group_coordinator_error(ctx, request.group_id)) is not None:
        return make(mod.HeartbeatResponse, throttle_time=0, error_code=refused)
    err = _coordinator(ctx).heartbeat(group_id=request.group_id, member_id=request.member_id,
                                      group_instance_id=getattr(request, "group_instance_id", None),
                                      generation_id=request.generation_id)
    return make(mod.HeartbeatResponse, throttle_time=0, error_code=err)


@api(13, 0, 5)
async def leave_group(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if not _may_read_group(ctx, request.group_id):
        return make(mod.LeaveGroupResponse, throttle_time=0, error_code=ErrorCode.group_authorization_failed,
                    members=())
    if (refused := group_coordinator_error(ctx, request.group_id)) is not None:
        return make(mod.LeaveGroupResponse, throttle_time=0, error_code=refused, members=())
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
async def describe_groups(ctx: RequestContext, request: Any) -> Any:
    from ..groups.classic import ClassicGroup

    mod = response_module(ctx)
    coord = _coordinator(ctx)
    wants_ops = getattr(request, "include_authorized_operations", False)

    def describe(gid: str):
        group = coord.groups.get(gid)
        if not isinstance(group, ClassicGroup):
            err = ErrorCode.group_id_not_found if ctx.api_version >= 6 else ErrorCode.none
            # Kafka names a streams group's type (KIP-1071)
            msg = f"Group {gid} is not a classic group." if getattr(group, "protocol_type", "") == "streams" \
                else f"Group {gid} not found."
            return failed_group(mod, gid, err, msg if err != ErrorCode.none else None, ClassicGroupState.DEAD)
        stable = group.state == ClassicGroupState.STABLE
        members = tuple(
            make(mod.DescribedGroupMember, member_id=m.member_id, group_instance_id=m.group_instance_id,
                 client_id=m.client_id, client_host=m.client_host,
                 member_metadata=m.metadata(group.protocol_name) if stable else b"",
                 # Kafka's describeNoMetadata: outside Stable a member keeps showing its last assignment
                 member_assignment=m.assignment)
            for m in group.members.values())
        return make(mod.DescribedGroup, error_code=ErrorCode.none, error_message=None, group_id=gid,
                    group_state=group.state, protocol_type=group.protocol_type or "",
                    protocol_data=(group.protocol_name or "") if stable else "", members=members,
                    authorized_operations=operations(ctx, ResourceType.GROUP, gid, GROUP_OPERATIONS)
                    if wants_ops else NO_AUTHORIZED_OPS)
    return make(mod.DescribeGroupsResponse, throttle_time=0,
                groups=described_groups(ctx, mod, request.groups, describe))


@api(16, 0, 5)
async def list_groups(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    states = list(getattr(request, "states_filter", None) or ()) or None
    types = list(getattr(request, "types_filter", None) or ()) or None
    groups = [g for g in _coordinator(ctx).list_groups(states, types) if group_coordinator_error(ctx, g[0]) is None]
    groups += _share_groups(ctx, states, types)
    if not allowed_cluster(ctx, AclOperation.DESCRIBE):
        # without DESCRIBE on the cluster, only the groups the principal may DESCRIBE
        groups = [g for g in groups if allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g[0])]
    return make(mod.ListGroupsResponse, throttle_time=0, error_code=ErrorCode.none,
                groups=tuple(make(mod.ListedGroup, group_id=gid, protocol_type=ptype, group_state=state,
                                  group_type=gtype) for gid, ptype, state, gtype in groups))


def _share_groups(ctx: RequestContext, states, types) -> list[tuple[str, str, str, str]]:
    """Share groups (broker.share) as ListGroups lists them: protocol type "share", type "share"."""
    states_l = {s.lower() for s in states} if states else None
    if types and "share" not in {t.lower() for t in types}:
        return []
    return [(gid, "share", state, "share") for gid, state in ctx.broker.services.share.list_groups()
            if states_l is None or state.lower() in states_l]


@api(42, 0, 2)
async def delete_groups(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    names = list(request.groups_names)
    deletable = allowed_names(ctx, AclOperation.DELETE, ResourceType.GROUP, names)
    refused = {gid: ErrorCode.group_authorization_failed for gid in names
               if deletable is not None and gid not in deletable}
    refused.update({gid: err for gid in names if gid not in refused
                    and (err := group_coordinator_error(ctx, gid)) is not None})
    share = ctx.broker.services.share
    outcome = {gid: share.delete_group(gid) for gid in names if gid not in refused and share.known(gid)}
    outcome.update(_coordinator(ctx).delete_groups([g for g in names if g not in refused and g not in outcome]))
    outcome.update(refused)
    results = [(gid, outcome[gid]) for gid in names]
    return make(mod.DeleteGroupsResponse, throttle_time=0,
                results=tuple(make(mod.DeletableGroupResult, group_id=gid, error_code=err) for gid, err in results))


# --- KIP-848 ---------------------------------------------------------------------------------

@api(68, 0, 1)
async def consumer_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    refused = unsupported_group_api(ctx, request)
    if refused is not None:
        return refused
    mod = response_module(ctx)
    if not _may_read_group(ctx, request.group_id):
        return make(mod.ConsumerGroupHeartbeatResponse, throttle_time=0,
                    error_code=ErrorCode.group_authorization_failed, error_message=None, member_id=None,
                    member_epoch=0, heartbeat_interval=0, assignment=None)
    subscribed = request.subscribed_topic_names
    if subscribed and ctx.broker.authorizer is not None:
        described = allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, subscribed)
        if described is not None and len(described) < len(set(subscribed)):
            return make(mod.ConsumerGroupHeartbeatResponse, throttle_time=0,
                        error_code=ErrorCode.topic_authorization_failed,
                        error_message=None, member_id=None, member_epoch=0,
                        heartbeat_interval=0, assignment=None)
    if (refused := group_coordinator_error(ctx, request.group_id)) is not None:
        return make(mod.ConsumerGroupHeartbeatResponse, throttle_time=0, error_code=refused, error_message=None,
                    member_id=None, member_epoch=0, heartbeat_interval=0, assignment=None)
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
async def consumer_group_describe(ctx: RequestContext, request: Any) -> Any:
    from ..groups.consumer import ConsumerGroup

    refused = unsupported_group_api(ctx, request)
    if refused is not None:
        return refused
    mod = response_module(ctx)
    coord = _coordinator(ctx)
    by_id = {t.topic_id: t.name for t in ctx.cluster.topics.values()}

    def tps(assign):
        return tuple(make(mod.TopicPartitions, topic_id=tid, topic_name=by_id.get(tid, ""), partitions=tuple(sorted(ps)))
                     for tid, ps in sorted(assign.items(), key=lambda kv: str(kv[0])) if ps)

    def describe(gid: str):
        group = coord.groups.get(gid)
        if not isinstance(group, ConsumerGroup):
            msg = f"Group {gid} not found." if group is None else f"Group {gid} is not a consumer group."
            # Kafka's error entry leaves the state empty and the epochs at 0
            return failed_group(mod, gid, ErrorCode.group_id_not_found, msg)
        members = tuple(
            make(mod.Member, member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                 member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                 subscribed_topic_names=tuple(m.subscribed_topic_names),
                 subscribed_topic_regex=m.subscribed_topic_regex or "",  # Kafka: "" when none
                 assignment=make(mod.Assignment, topic_partitions=tps(m.assigned)),
                 target_assignment=make(mod.Assignment, topic_partitions=tps(group.target.get(m.member_id, {}))),
                 member_type=1)
            for m in group.members.values())
        return make(mod.DescribedGroup, error_code=ErrorCode.none, error_message=None, group_id=gid,
                    group_state=group.state, group_epoch=group.group_epoch,
                    assignment_epoch=group.assignment_epoch, assignor_name=group.preferred_assignor(),
                    members=members,
                    authorized_operations=operations(ctx, ResourceType.GROUP, gid, GROUP_OPERATIONS)
                    if request.include_authorized_operations else NO_AUTHORIZED_OPS)
    return make(mod.ConsumerGroupDescribeResponse, throttle_time=0,
                groups=described_groups(ctx, mod, request.group_ids, describe))
