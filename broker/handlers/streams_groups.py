"""StreamsGroupHeartbeat (88) v0 and StreamsGroupDescribe (89) v0: KIP-1071 streams groups.

StreamsGroupHeartbeat: a member joins with epoch 0 and its topology (subtopologies, source
topics, repartition and changelog topics, copartition groups); the group configures it against
the cluster's topics, creates missing internal topics, and answers with the member's active,
standby and warmup tasks (only when they changed, or on a join), the group's statuses
(MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, STALE_TOPOLOGY, ...), the heartbeat
interval, and the partitions by user endpoint when the member's endpoint information epoch is
behind the group's; once a member sets ShutdownApplication, every member's heartbeat carries the
status SHUTDOWN_APPLICATION until the group is empty. Epoch -1 leaves, -2 is a static member's temporary leave. Invalid requests
get INVALID_REQUEST with Kafka's message; a consumer group's id gets GROUP_ID_NOT_FOUND. An
error answer carries only the error (member id empty, epoch 0), as Kafka's.

StreamsGroupDescribe: per group id, the state, epochs, topology (with the partition counts the
broker decided for internal topics) and members with their current and target assignments;
GROUP_ID_NOT_FOUND ("Group X not found." / "Group X is not a streams group.") otherwise.

Several nodes (leadership.py): both are for the group's coordinator; on any other node a
heartbeat is NOT_COORDINATOR (after the request's validation, as Kafka's GroupCoordinatorService
checks the request before routing it to the coordinator's partition) and a described group
carries NOT_COORDINATOR.

Authorisation as Kafka's KafkaApis: StreamsGroupHeartbeat needs GROUP READ (else
GROUP_AUTHORIZATION_FAILED, before any validation) and TOPIC DESCRIBE on every topic its
topology names (else TOPIC_AUTHORIZATION_FAILED); StreamsGroupDescribe needs GROUP DESCRIBE per
group (refused groups listed first) and TOPIC DESCRIBE on the topics of the described topology.

Kafka 4.4 serves v0-v1; kio has v0 only, which every client that speaks v1 also speaks.
"""

from __future__ import annotations

from typing import Any, TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..authorizer import AclOperation as Op
from ..authorizer import ResourceType as Res
from ..authorizer import allowed, allowed_names, operations
from . import api
from .common import response_module
from .groups import GROUP_OPERATIONS, NO_AUTHORIZED_OPS, _client_host, _coordinator, _ms, described_groups, failed_group
from .leadership import group_coordinator_error

if TYPE_CHECKING:
    from ..groups.streams import StreamsGroup, TopicInfo, Topology
    from ..groups.streams_assignor import Tasks


def _topic_info(t) -> TopicInfo:
    from ..groups.streams import TopicInfo

    return TopicInfo(t.name, t.partitions, t.replication_factor, tuple((kv.key, kv.value) for kv in t.topic_configs))


def _topology(t) -> Topology | None:
    from ..groups.streams import Subtopology, Topology

    if t is None:
        return None
    return Topology(t.epoch, tuple(
        Subtopology(s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex),
                    tuple(s.repartition_sink_topics), tuple(_topic_info(x) for x in s.repartition_source_topics),
                    tuple(_topic_info(x) for x in s.state_changelog_topics),
                    tuple((tuple(g.source_topics), tuple(g.source_topic_regex), tuple(g.repartition_source_topics))
                          for g in s.copartition_groups))
        for s in t.subtopologies))


def _tasks(ids) -> set[tuple[str, int]] | None:
    if ids is None:
        return None
    return {(t.subtopology_id, p) for t in ids for p in t.partitions}


def _task_ids(mod, tasks: dict[str, set[int]]):
    return tuple(make(mod.TaskIds, subtopology_id=s, partitions=tuple(sorted(ps)))
                 for s, ps in sorted(tasks.items()) if ps)


@api(88, 0, 0)
async def streams_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if not allowed(ctx, Op.READ, Res.GROUP, request.group_id):
        return _error(mod, ErrorCode.group_authorization_failed, None)
    if request.topology is not None:
        named = {n for s in request.topology.subtopologies
                 for n in (*s.source_topics, *s.repartition_sink_topics,
                           *(t.name for t in s.repartition_source_topics),
                           *(t.name for t in s.state_changelog_topics))}
        visible = allowed_names(ctx, Op.DESCRIBE, Res.TOPIC, named)
        if visible is not None and not named <= visible:
            return _error(mod, ErrorCode.topic_authorization_failed, None)
    rebalance_timeout_ms = _ms(request.rebalance_timeout)
    from ..groups.streams import validate_heartbeat

    invalid = validate_heartbeat(request.group_id, request.member_id, request.member_epoch, request.instance_id,
                                 request.rack_id, rebalance_timeout_ms, request.topology, request.active_tasks,
                                 request.standby_tasks, request.warmup_tasks, request.process_id)
    if invalid is not None:
        return _error(mod, ErrorCode.invalid_request, invalid)
    if (refused := group_coordinator_error(ctx, request.group_id)) is not None:
        return _error(mod, refused, None)
    endpoint = request.user_endpoint
    result = _coordinator(ctx).streams_group_heartbeat(
        group_id=request.group_id, member_id=request.member_id, member_epoch=request.member_epoch,
        endpoint_information_epoch=request.endpoint_information_epoch, instance_id=request.instance_id,
        rack_id=request.rack_id, rebalance_timeout_ms=rebalance_timeout_ms, topology=_topology(request.topology),
        active=_tasks(request.active_tasks), process_id=request.process_id,
        user_endpoint=(endpoint.host, endpoint.port) if endpoint is not None else None,
        client_tags={kv.key: kv.value for kv in request.client_tags} if request.client_tags is not None else None,
        client_id=ctx.client_id or "", client_host=_client_host(ctx),
        shutdown_application=bool(request.shutdown_application))
    if result.error != ErrorCode.none:
        return _error(mod, result.error, result.error_message)
    a = result.assignment
    by_endpoint = None
    if result.partitions_by_endpoint is not None:
        by_endpoint = tuple(
            make(mod.EndpointToPartitions, user_endpoint=make(mod.Endpoint, host=host, port=port),
                 active_partitions=_topic_partitions(mod, act), standby_partitions=_topic_partitions(mod, stb))
            for (host, port), act, stb in result.partitions_by_endpoint)
    return make(mod.StreamsGroupHeartbeatResponse, throttle_time=0, error_code=ErrorCode.none, error_message=None,
                member_id=result.member_id, member_epoch=result.member_epoch,
                heartbeat_interval=result.heartbeat_interval_ms,
                # Kafka 4.4 answers 0 and a 60 s task offset interval (group.streams.task.offset.interval.ms)
                acceptable_recovery_lag=0, task_offset_interval=60_000,
                status=tuple(make(mod.Status, status_code=code, status_detail=detail) for code, detail in result.status),
                active_tasks=_task_ids(mod, a.active) if a is not None else None,
                standby_tasks=_task_ids(mod, a.standby) if a is not None else None,
                warmup_tasks=_task_ids(mod, a.warmup) if a is not None else None,
                endpoint_information_epoch=result.endpoint_information_epoch,
                partitions_by_user_endpoint=by_endpoint)


def _topic_partitions(mod, by_topic: dict[str, set[int]]):
    return tuple(make(mod.TopicPartition, topic=t, partitions=tuple(sorted(ps))) for t, ps in sorted(by_topic.items()))


def _error(mod, code: ErrorCode, message: str | None):
    return make(mod.StreamsGroupHeartbeatResponse, throttle_time=0, error_code=code, error_message=message,
                member_id="", member_epoch=0, heartbeat_interval=0, acceptable_recovery_lag=0,
                task_offset_interval=0, status=(), active_tasks=None, standby_tasks=None, warmup_tasks=None,
                endpoint_information_epoch=0, partitions_by_user_endpoint=None)


@api(89, 0, 0)
async def streams_group_describe(ctx: RequestContext, request: Any) -> Any:
    # the streams group code is loaded with the group coordinator, on first use (broker.services)
    from ..groups.streams import StreamsGroup

    mod = response_module(ctx)
    coord = _coordinator(ctx)
    def describe(gid: str):
        group = coord.groups.get(gid)
        if not isinstance(group, StreamsGroup):
            msg = f"Group {gid} not found." if group is None else f"Group {gid} is not a streams group."
            return failed_group(mod, gid, ErrorCode.group_id_not_found, msg)
        topology = _describe_topology(mod, group)
        if topology is not None:
            named = {n for s in topology.subtopologies
                     for n in (*s.source_topics, *s.repartition_sink_topics,
                               *(t.name for t in s.repartition_source_topics),
                               *(t.name for t in s.state_changelog_topics))}
            visible = allowed_names(ctx, Op.DESCRIBE, Res.TOPIC, named)
            if visible is not None and not named <= visible:
                return failed_group(mod, gid, ErrorCode.topic_authorization_failed,
                                    "The described group uses topics that the client is not authorized to "
                                    "describe.")
        ops = (operations(ctx, Res.GROUP, gid, GROUP_OPERATIONS) if request.include_authorized_operations
               else NO_AUTHORIZED_OPS)
        return make(mod.DescribedGroup, error_code=ErrorCode.none, error_message=None, group_id=gid,
                    group_state=group.state, group_epoch=group.group_epoch,
                    assignment_epoch=group.assignment_epoch, topology=topology,
                    members=tuple(_describe_member(mod, group, m) for m in group.members.values()),
                    authorized_operations=ops)
    return make(mod.StreamsGroupDescribeResponse, throttle_time=0,
                groups=described_groups(ctx, mod, request.group_ids, describe))


def _describe_topology(mod, group: StreamsGroup):
    if group.topology is None:
        return None
    decided = group.configured.internal_partitions if group.configured is not None else {}

    def info(t: TopicInfo):
        return make(mod.TopicInfo, name=t.name, partitions=decided.get(t.name, t.partitions),
                    replication_factor=t.replication_factor,
                    topic_configs=tuple(make(mod.KeyValue, key=k, value=v) for k, v in t.configs))

    return make(mod.Topology, epoch=group.topology.epoch, subtopologies=tuple(
        make(mod.Subtopology, subtopology_id=s.subtopology_id, source_topics=s.source_topics,
             repartition_sink_topics=s.repartition_sink_topics,
             state_changelog_topics=tuple(info(t) for t in s.state_changelog_topics),
             repartition_source_topics=tuple(info(t) for t in s.repartition_source_topics))
        for s in group.topology.subtopologies))


def _describe_member(mod, group: StreamsGroup, m):
    from ..groups.streams_assignor import Tasks

    def assignment(t: Tasks):
        return make(mod.Assignment, active_tasks=_task_ids(mod, t.active), standby_tasks=_task_ids(mod, t.standby),
                    warmup_tasks=_task_ids(mod, t.warmup))

    endpoint = make(mod.Endpoint, host=m.user_endpoint[0], port=m.user_endpoint[1]) if m.user_endpoint else None
    return make(mod.Member, member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id,
                rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
                topology_epoch=m.topology_epoch, process_id=m.process_id, user_endpoint=endpoint,
                client_tags=tuple(make(mod.KeyValue, key=k, value=v) for k, v in sorted(m.client_tags.items())),
                task_offsets=(), task_end_offsets=(), assignment=assignment(m.assigned),
                target_assignment=assignment(group.target.get(m.member_id, Tasks())), is_classic=False)
