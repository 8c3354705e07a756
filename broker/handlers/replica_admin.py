"""ElectLeaders (key 43) v0-v2, AlterPartitionReassignments (45) v0-v1, ListPartitionReassignments
(46) v0: what `kafka-leader-election.sh` and `kafka-reassign-partitions.sh` (and Cruise Control)
send. broker.reassignments owns the rules; this module reads requests and writes answers.

ElectLeaders
- v0 elects the preferred leader; v1+ carries the election type (PREFERRED or UNCLEAN; any other
  is INVALID_REQUEST "Unknown election type N" on the answer and on every partition asked for,
  and nothing is elected, as Kafka's controller answers). Each
  partition asked for gets a result: NONE (a new leader, no message), ELECTION_NOT_NEEDED,
  PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE with Kafka's default messages,
  UNKNOWN_TOPIC_OR_PARTITION "No such topic as t" / "No such partition as t-p". A null partition
  list means every partition, and then only partitions that got a new leader or could not be
  elected are listed, as Kafka leaves out ELECTION_NOT_NEEDED.

AlterPartitionReassignments
- Per partition: UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic named t." / "Unable to find
  partition t:p.", then the target's checks; a null replica list cancels. allow_replication_factor_change
  (v1, default true) is echoed in the answer. The new replica lists are saved before they change:
  a save that fails (a full disk) answers the partition KAFKA_STORAGE_ERROR and changes nothing.
  A topic's reassignments go when it is deleted (and on the reset control).

ListPartitionReassignments
- The reassignments running (held by the hold-reassignments control): every one for a null topic
  list, else those of the partitions asked for; each with its replicas, adding and removing.

With an authorizer: ALTER on the cluster (ElectLeaders, AlterPartitionReassignments) or DESCRIBE
(ListPartitionReassignments), else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..authorizer import AUTHORIZATION_MESSAGES, AclOperation, allowed_cluster
from ..reassignments import ELECTION_MESSAGES, ELECTION_TYPES, PREFERRED
from ..context import RequestContext
from . import api
from ..all_or_nothing import storage_error_message
from .common import response_module

log = logging.getLogger("kafkalite.admin")

REFUSED = ErrorCode.cluster_authorization_failed


def _refused(ctx: RequestContext, op: AclOperation) -> bool:
    return not allowed_cluster(ctx, op)


@api(43, 0, 2)
async def elect_leaders(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    cluster = ctx.cluster
    election_type = getattr(request, "election_type", PREFERRED)
    if _refused(ctx, AclOperation.ALTER):
        return make(mod.ElectLeadersResponse, throttle_time=0, error_code=REFUSED, replica_election_results=())
    if election_type not in ELECTION_TYPES:
        return _unknown_election_type(mod, request, election_type)
    every = request.topic_partitions is None
    wanted = [(p.topic.name, p.index) for p in cluster.all_partitions()] if every else \
        [(t.topic, i) for t in request.topic_partitions for i in t.partitions]
    results: dict[str, list] = {}
    for topic, index in wanted:
        message: str | None
        if topic not in cluster.topics:
            code, message = ErrorCode.unknown_topic_or_partition, f"No such topic as {topic}"
        else:
            part = cluster.partition(topic, index)
            if part is None:
                code, message = ErrorCode.unknown_topic_or_partition, f"No such partition as {topic}-{index}"
            else:
                code = ctx.broker.reassignments.elect(part, election_type)
                message = ELECTION_MESSAGES.get(code)
        if every and code == ErrorCode.election_not_needed:
            continue
        results.setdefault(topic, []).append(make(mod.PartitionResult, partition_id=index, error_code=code,
                                                  error_message=message))
    return make(mod.ElectLeadersResponse, throttle_time=0, error_code=ErrorCode.none, replica_election_results=tuple(
        make(mod.ReplicaElectionResult, topic=t, partition_result=tuple(ps)) for t, ps in results.items()))


def _unknown_election_type(mod: Any, request: Any, election_type: int) -> Any:
    """ElectLeadersRequest.getErrorResponse of the controller's InvalidRequestException: the error
    on the whole answer and on every partition asked for; nothing is elected."""
    code, message = ErrorCode.invalid_request, f"Unknown election type {election_type}"
    return make(mod.ElectLeadersResponse, throttle_time=0, error_code=code, replica_election_results=tuple(
        make(mod.ReplicaElectionResult, topic=t.topic, partition_result=tuple(
            make(mod.PartitionResult, partition_id=i, error_code=code, error_message=message) for i in t.partitions))
        for t in request.topic_partitions or ()))


@api(45, 0, 1)
async def alter_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    allow_rf_change = getattr(request, "allow_replication_factor_change", True)
    refused = _refused(ctx, AclOperation.ALTER)
    reassignments, cluster = ctx.broker.reassignments, ctx.cluster
    responses = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            code, message = ErrorCode.none, None
            part = cluster.partition(t.name, p.partition_index)
            if refused:
                code, message = REFUSED, AUTHORIZATION_MESSAGES[REFUSED]
            elif t.name not in cluster.topics:
                code, message = ErrorCode.unknown_topic_or_partition, f"Unable to find a topic named {t.name}."
            elif part is None:
                code, message = ErrorCode.unknown_topic_or_partition, f"Unable to find partition {t.name}:{p.partition_index}."
            else:
                target = None if p.replicas is None else list(p.replicas)
                problem = None if target is None else reassignments.check_target(part, target, allow_rf_change)
                if problem is not None:
                    code, message = problem
                else:
                    try:
                        code = reassignments.reassign(part, target)
                    except OSError as exc:
                        log.error("reassigning %s-%d failed: %s", t.name, p.partition_index, exc)
                        code, message = ErrorCode.kafka_storage_error, storage_error_message(exc)
            partitions.append(make(mod.ReassignablePartitionResponse, partition_index=p.partition_index,
                                   error_code=code, error_message=message))
        responses.append(make(mod.ReassignableTopicResponse, name=t.name, partitions=tuple(partitions)))
    return make(mod.AlterPartitionReassignmentsResponse, throttle_time=0, error_code=ErrorCode.none,
                error_message=None, allow_replication_factor_change=allow_rf_change, responses=tuple(responses))


@api(46, 0, 0)
async def list_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if _refused(ctx, AclOperation.DESCRIBE):
        return make(mod.ListPartitionReassignmentsResponse, throttle_time=0, error_code=REFUSED, error_message=None,
                    topics=())
    ongoing = ctx.broker.reassignments.ongoing
    if request.topics is None:
        keys = sorted(ongoing)
    else:
        keys = [(t.name, i) for t in request.topics for i in t.partition_indexes if (t.name, i) in ongoing]
    topics: dict[str, list] = {}
    for name, index in keys:
        step = ongoing[(name, index)]
        topics.setdefault(name, []).append(make(mod.OngoingPartitionReassignment, partition_index=index,
                                                replicas=tuple(step.replicas), adding_replicas=tuple(step.adding),
                                                removing_replicas=tuple(step.removing)))
    return make(mod.ListPartitionReassignmentsResponse, throttle_time=0, error_code=ErrorCode.none, error_message=None,
                topics=tuple(make(mod.OngoingTopicReassignment, name=n, partitions=tuple(ps)) for n, ps in topics.items()))
