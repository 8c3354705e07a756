"""CreateTopics (key 19) v2-v7, DeleteTopics (20) v1-v6, CreatePartitions (37) v0-v3,
DescribeTopicPartitions (75) v0.

These follow Kafka's KRaft controller (ControllerApis, ReplicationControlManager), including
its error messages:

CreateTopics
- Checks run in Kafka's order: duplicate names in the request (INVALID_REQUEST "Duplicate
  topic name."), the name (INVALID_TOPIC_EXCEPTION "Topic name is invalid: ..."), an existing
  topic (TOPIC_ALREADY_EXISTS "Topic 'x' already exists."), a name that differs from an existing
  one only by '.' versus '_' (INVALID_TOPIC_EXCEPTION "... collides with existing topic: ..."),
  the configs (INVALID_CONFIG, see broker.topic_configs), then partitions and replication.
- num_partitions and replication_factor -1 mean num.partitions and default.replication.factor.
  A replication factor above the node count is INVALID_REPLICATION_FACTOR ("Unable to
  replicate the partition 3 time(s): The target replication factor of 3 cannot be reached
  because only 1 broker(s) are registered or some brokers have all their log directories
  cordoned."); 0 or below -1 is INVALID_REPLICATION_FACTOR and
  0 partitions INVALID_PARTITIONS. Replicas are placed by Kafka's rack-unaware rule
  (broker.placement); the first replica leads.
- Manual assignments need num_partitions = replication_factor = -1 (else INVALID_REQUEST), name
  only known nodes, each once per partition, the same number of replicas for every partition,
  partitions 0..n-1 (else INVALID_REPLICA_ASSIGNMENT); CreatePartitions' assignments the topic's
  replication factor.
- validate_only runs every check and creates nothing. More than 10,000 partitions in one request
  fail every topic with POLICY_VIOLATION, as Kafka's controller does.
- v5+ answers the partition count, replication factor and every effective config of the topic
  (value, source, read-only, sensitive); v7 the topic id. `__cluster_metadata` cannot be
  created (TOPIC_AUTHORIZATION_FAILED, as Kafka).

DeleteTopics
- By name (all versions) or by topic id (v6): UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID for
  topics that do not exist; INVALID_REQUEST for duplicates, for both a name and an id, or for
  neither. With delete.topic.enable=false: INVALID_REQUEST before v3, TOPIC_DELETION_DISABLED
  from v3.
- A deleted topic's reassignments in progress go with it (broker.reassignments).
- Internal topics (__consumer_offsets, __transaction_state) are never deleted: their
  coordinators live on them. The answer is INVALID_REQUEST with the message kafka-topics.sh
  gives for them (Kafka's controller itself would delete them).

CreatePartitions
- Increase only: the same count is INVALID_PARTITIONS "Topic already has N partition(s).", a
  smaller one "The topic x currently has N partition(s); M would not be an increase."
  Assignments must number exactly the new partitions and name only this broker. validate_only
  changes nothing.

All or nothing (broker.cluster): a topic created or deleted, or partitions added, are saved
before memory changes; a save that fails (a full disk) answers the topic KAFKA_STORAGE_ERROR and
leaves it as it was, on disk and in memory.

DescribeTopicPartitions
- Topics sorted by name from the cursor on; at most min(response_partition_limit, 2000)
  partitions per response, with next_cursor where the next page starts. An empty topic list
  means every topic (unknown names are then never reported); a named unknown topic is
  UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a bad name). A cursor outside the
  requested topics or with a negative partition fails the request with INVALID_REQUEST.

Controller mutation quota (KIP-599, broker.quotas): with a `controller_mutation_rate` for the
client, each topic that passes every check above is recorded against it, validate_only too (as
Kafka's controller records before it drops a validate-only request's records): a new topic's
partitions, the partitions CreatePartitions adds (before their assignments are checked) and a
deleted topic's partitions. A strict quota (CreateTopics v6+, CreatePartitions v3+, DeleteTopics
v5+) already in debt answers the topic THROTTLING_QUOTA_EXCEEDED (no message, as Kafka's
ApiError leaves out the generic one); the throttle time goes out through broker.throttling.

With an authorizer (Kafka's ControllerApis): CreateTopics needs CREATE on the cluster or the
topic, DeleteTopics DELETE on the cluster or DESCRIBE and DELETE on the topic (a topic given by
id and not describable is answered without its name), CreatePartitions ALTER on the topic,
DescribeTopicPartitions DESCRIBE (left out of an all-topics answer, refused when named);
TOPIC_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.error_responses import kafka_message
from kafkalite.protocol.messages import make

from ..clock import now_ms
from ..cluster import Topic, topic_name_error
from ..context import RequestContext
from ..quotas import ControllerMutationQuota, ThrottlingQuotaExceeded
from ..internal_topics import INTERNAL_TOPICS
from ..placement import replication_error_text
from ..settings.topic_keys import validate_topic_configs
from ..settings.values import ConfigError
from ..authorizer import AclOperation, ResourceType, allowed, allowed_cluster, allowed_names, operations
from . import api
from ..all_or_nothing import storage_error_message
from .common import response_module

log = logging.getLogger("kafkalite.admin")

ZERO_UUID = uuid.UUID(int=0)
MAX_PARTITIONS_PER_REQUEST = 10_000
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
DESCRIBE_TOPIC_PARTITIONS_MAX = 2000
# AclEntry.supportedOperations(TOPIC) as a bit field: READ, WRITE, CREATE, DELETE, ALTER,
# DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (no authorizer: everything is allowed)
TOPIC_AUTHORIZED_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


class AdminError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message


# ControllerApis: the first version whose controller mutation quota is strict
STRICT_SINCE = {19: 6, 20: 5, 37: 3}


def mutation_quota(ctx: RequestContext) -> ControllerMutationQuota | None:
    """ControllerMutationQuotaManager.newQuotaFor this request, kept on ctx for broker.throttling."""
    strict = ctx.api_version >= STRICT_SINCE[ctx.header.api_key]
    quota = ctx.broker.quotas.controller_mutation_quota(ctx.principal, ctx.client_id or "", strict, now_ms)
    ctx.controller_mutation = quota
    return quota


def record_mutations(quota: ControllerMutationQuota | None, partitions: int) -> None:
    """ReplicationControlManager's applyPartitionChangeQuota: raises THROTTLING_QUOTA_EXCEEDED."""
    if quota is None:
        return
    try:
        quota.record(partitions)
    except ThrottlingQuotaExceeded:
        raise AdminError(ErrorCode.throttling_quota_exceeded) from None


def colliding_topic(cluster, name: str) -> str | None:
    """An existing topic whose name equals `name` once '.' and '_' are unified."""
    if "." not in name and "_" not in name:
        return None
    unified = name.replace(".", "_")
    for existing in cluster.topics:
        if existing != name and ("." in existing or "_" in existing) and existing.replace(".", "_") == unified:
            return existing
    return None


def check_manual_assignment(node_ids, broker_ids, replication_factor: int | None) -> None:
    """ReplicationControlManager.validateManualPartitionAssignment."""
    if not broker_ids:
        raise AdminError(ErrorCode.invalid_replica_assignment,
                         "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker in sorted(broker_ids):
        if broker not in node_ids:
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             f"The manual partition assignment includes broker {broker}, but no such broker "
                             "is registered.")
        if broker == previous:
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             f"The manual partition assignment includes the broker {previous} more than once.")
        previous = broker
    if replication_factor is not None and len(broker_ids) != replication_factor:
        raise AdminError(ErrorCode.invalid_replica_assignment,
                         f"The manual partition assignment includes a partition with {len(broker_ids)} replica(s), "
                         f"but this is not consistent with previous partitions, which have {replication_factor} "
                         "replica(s).")


def replication_error(replication_factor: int, brokers: int) -> AdminError:
    return AdminError(ErrorCode.invalid_replication_factor, replication_error_text(replication_factor, brokers))


# --- CreateTopics ---------------------------------------------------------------------------


def _requested_partitions(t, default: int) -> int:
    if t.assignments:
        return len(t.assignments)
    if t.num_partitions == -1:
        return default
    return max(t.num_partitions, 0)


def _plan_topic(ctx: RequestContext, t) -> tuple[int, int, dict[str, str], list[list[int]] | None]:
    """Every check Kafka makes before creating one topic; returns (partitions, replication
    factor, configs as stored, the manual replica assignment or None)."""
    cluster = ctx.cluster
    config = ctx.broker.config
    name = t.name
    reason = topic_name_error(name)
    if reason is not None:
        raise AdminError(ErrorCode.invalid_topic_exception, reason)
    if name in cluster.topics:
        raise AdminError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
    other = colliding_topic(cluster, name)
    if other is not None:
        raise AdminError(ErrorCode.invalid_topic_exception, f"Topic '{name}' collides with existing topic: {other}")
    requested = {}
    for c in t.configs:
        requested[c.name] = c.value
    configs: dict[str, str] = {}
    if requested:
        try:
            configs = validate_topic_configs(requested, broker_values=config.values)
        except ConfigError as exc:
            raise AdminError(ErrorCode.invalid_config, str(exc)) from None
    nodes = cluster.node_ids
    if t.assignments:
        if t.replication_factor != -1:
            raise AdminError(ErrorCode.invalid_request, "A manual partition assignment was specified, but "
                             "replication factor was not set to -1.")
        if t.num_partitions != -1:
            raise AdminError(ErrorCode.invalid_request, "A manual partition assignment was specified, but "
                             "numPartitions was not set to -1.")
        seen: set[int] = set()
        replication = None
        for a in t.assignments:
            if a.partition_index in seen:
                raise AdminError(ErrorCode.invalid_replica_assignment,
                                 f"Found multiple manual partition assignments for partition {a.partition_index}")
            check_manual_assignment(nodes, a.broker_ids, replication)
            replication = len(a.broker_ids)
            seen.add(a.partition_index)
        if seen != set(range(len(seen))):
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             "partitions should be a consecutive 0-based integer sequence")
        by_index = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        return len(seen), replication or 1, configs, [by_index[i] for i in range(len(seen))]
    if t.replication_factor < -1 or t.replication_factor == 0:
        raise AdminError(ErrorCode.invalid_replication_factor,
                         "Replication factor must be larger than 0, or -1 to use the default value.")
    if t.num_partitions < -1 or t.num_partitions == 0:
        raise AdminError(ErrorCode.invalid_partitions,
                         "Number of partitions was set to an invalid non-positive value.")
    partitions = config["num.partitions"] if t.num_partitions == -1 else t.num_partitions
    replication = config["default.replication.factor"] if t.replication_factor == -1 else t.replication_factor
    if replication <= 0:
        raise AdminError(ErrorCode.invalid_replication_factor,
                         f"Unable to replicate the partition {replication} time(s): Invalid replication factor "
                         f"{replication}: the replication factor must be positive.")
    if replication > len(nodes):
        raise replication_error(replication, len(nodes))
    return partitions, replication, configs, None


def _created_result(ctx: RequestContext, mod, name: str, topic_id: uuid.UUID, partitions: int, replication: int,
                    configs: dict[str, str]):
    if not allowed(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name):
        # created, but what it was created with is not disclosed
        return make(mod.CreatableTopicResult, name=name, topic_id=topic_id, error_code=ErrorCode.none,
                    error_message=None, topic_config_error_code=ErrorCode.topic_authorization_failed,
                    num_partitions=-1, replication_factor=-1, configs=())
    config_results = ()
    if hasattr(mod, "CreatableTopicConfigs"):  # v5+
        entries = ctx.broker.dynamic_configs.describe_topic(configs, None)
        config_results = tuple(
            make(mod.CreatableTopicConfigs, name=e.name, value=None if e.sensitive else e.value,
                 read_only=e.read_only, config_source=int(e.source), is_sensitive=e.sensitive)
            for e in entries
        )
    return make(mod.CreatableTopicResult, name=name, topic_id=topic_id, error_code=ErrorCode.none,
                error_message=None, topic_config_error_code=0, num_partitions=partitions,
                replication_factor=replication, configs=config_results)


def _error_result(mod, name: str, code: ErrorCode, message: str | None):
    return make(mod.CreatableTopicResult, name=name, topic_id=ZERO_UUID, error_code=code, error_message=message,
                topic_config_error_code=0, num_partitions=-1, replication_factor=-1, configs=())


@api(19, 2, 7)
async def create_topics(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    cluster = ctx.cluster
    counts = Counter(t.name for t in request.topics)
    duplicates = [n for n, c in counts.items() if c > 1]
    results = []
    total = sum(_requested_partitions(t, ctx.broker.config["num.partitions"])
                for t in request.topics if counts[t.name] == 1)
    if total > MAX_PARTITIONS_PER_REQUEST:
        for name in counts:
            results.append(_error_result(mod, name, ErrorCode.policy_violation,
                                         "Excessively large number of partitions per request."))
        return make(mod.CreateTopicsResponse, throttle_time=0, topics=tuple(results))
    unauthorized = []
    quota = mutation_quota(ctx)
    creatable = None if allowed_cluster(ctx, AclOperation.CREATE) else allowed_names(
        ctx, AclOperation.CREATE, ResourceType.TOPIC, counts)
    created: list[tuple[int, Any]] = []     # (index in results, topic): topics.json is written once
    for t in request.topics:
        if counts[t.name] > 1:
            continue
        if t.name == CLUSTER_METADATA_TOPIC or (creatable is not None and t.name not in creatable):
            unauthorized.append(t.name)
            continue
        try:
            partitions, replication, configs, assignment = _plan_topic(ctx, t)
            record_mutations(quota, partitions)
        except AdminError as exc:
            results.append(_error_result(mod, t.name, exc.code, exc.message))
            continue
        if request.validate_only:
            topic_id = uuid.uuid4()
        else:
            try:
                topic = cluster.create_topic(t.name, partitions, configs, replication_factor=replication,
                                             assignment=assignment, persist=False)
            except OSError as exc:
                log.error("creating topic %s failed: %s", t.name, exc)
                results.append(_error_result(mod, t.name, ErrorCode.kafka_storage_error, storage_error_message(exc)))
                continue
            topic_id = topic.topic_id
            created.append((len(results), topic))
        results.append(_created_result(ctx, mod, t.name, topic_id, partitions, replication, configs))
    if created:
        try:
            cluster.save_created([topic for _i, topic in created])
        except OSError as exc:
            log.error("saving topics %s failed: %s", ", ".join(topic.name for _i, topic in created), exc)
            for i, topic in created:
                results[i] = _error_result(mod, topic.name, ErrorCode.kafka_storage_error, str(exc))
    for name in duplicates:
        results.append(_error_result(mod, name, ErrorCode.invalid_request, "Duplicate topic name."))
    for name in unauthorized:
        results.append(_error_result(mod, name, ErrorCode.topic_authorization_failed, "Authorization failed."))
    return make(mod.CreateTopicsResponse, throttle_time=0, topics=tuple(results))


# --- DeleteTopics ---------------------------------------------------------------------------


def _no_id(topic_id) -> bool:
    return topic_id is None or topic_id == ZERO_UUID


@api(20, 1, 6)
async def delete_topics(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    cluster = ctx.cluster
    version = ctx.api_version
    results = []

    def result(name, topic_id, code, message=None):
        results.append(make(mod.DeletableTopicResult, name=name, topic_id=topic_id or ZERO_UUID,
                            error_code=code, error_message=message))

    if version >= 6:
        requested = [(t.name, None if _no_id(t.topic_id) else t.topic_id) for t in request.topics]
    else:
        requested = [(n, None) for n in request.topic_names]

    if not ctx.broker.config["delete.topic.enable"]:
        for name, topic_id in requested:
            if version < 3:
                result(name, topic_id, ErrorCode.invalid_request, "Topic deletion is disabled.")
            else:
                result(name, topic_id, ErrorCode.topic_deletion_disabled)
        return make(mod.DeleteTopicsResponse, throttle_time=0, responses=tuple(results))

    quota = mutation_quota(ctx)
    names: list[str] = []
    ids: list[uuid.UUID] = []
    for name, topic_id in requested:
        if name is None and topic_id is None:
            result(None, None, ErrorCode.invalid_request, "Neither topic name nor id were specified.")
        elif name is not None and topic_id is not None:
            result(name, topic_id, ErrorCode.invalid_request, "You may not specify both topic name and topic id.")
        elif name is not None:
            names.append(name)
        elif topic_id is not None:
            ids.append(topic_id)
    name_counts, id_counts = Counter(names), Counter(ids)
    # DELETE on the cluster allows every topic; else DESCRIBE and DELETE on each topic
    everything = allowed_cluster(ctx, AclOperation.DELETE)
    known = [t.name for i in ids if (t := cluster.topics_by_id.get(i)) is not None] + names
    describable = None if everything else allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, known)
    deletable = None if everything else allowed_names(ctx, AclOperation.DELETE, ResourceType.TOPIC, known)
    for name in name_counts:
        if name_counts[name] > 1:
            result(name, None, ErrorCode.invalid_request, "Duplicate topic name.")
    duplicate_ids = {i for i, c in id_counts.items() if c > 1}
    to_delete: dict[uuid.UUID, Topic] = {}
    for topic_id in id_counts:
        if topic_id in duplicate_ids:
            continue
        topic = cluster.topics_by_id.get(topic_id)
        if topic is None:
            result(None, topic_id, ErrorCode.unknown_topic_id, kafka_message(ErrorCode.unknown_topic_id))
        elif deletable is not None and topic.name not in deletable:
            # the name only to whom may DESCRIBE the topic
            result(topic.name if describable is not None and topic.name in describable else None, topic_id,
                   ErrorCode.topic_authorization_failed, kafka_message(ErrorCode.topic_authorization_failed))
        else:
            to_delete[topic_id] = topic
    for name in name_counts:
        if name_counts[name] > 1:
            continue
        topic = cluster.topics.get(name)
        if describable is not None and name not in describable:
            result(name, None, ErrorCode.topic_authorization_failed, kafka_message(ErrorCode.topic_authorization_failed))
        elif topic is None:
            result(name, None, ErrorCode.unknown_topic_or_partition, kafka_message(ErrorCode.unknown_topic_or_partition))
        elif deletable is not None and name not in deletable:
            result(name, None, ErrorCode.topic_authorization_failed, kafka_message(ErrorCode.topic_authorization_failed))
        elif topic.topic_id in duplicate_ids or topic.topic_id in to_delete:
            duplicate_ids.add(topic.topic_id)
            to_delete.pop(topic.topic_id, None)
            result(name, topic.topic_id, ErrorCode.invalid_request,
                   "The provided topic name maps to an ID that was already supplied.")
        else:
            to_delete[topic.topic_id] = topic
    for topic_id in duplicate_ids:
        if id_counts[topic_id] > 1:
            result(None, topic_id, ErrorCode.invalid_request, "Duplicate topic id.")
    for topic_id, topic in to_delete.items():
        if topic.internal:
            result(topic.name, topic_id, ErrorCode.invalid_request,
                   f"Topic {topic.name} is a kafka internal topic and is not allowed to be marked for deletion.")
            continue
        try:
            record_mutations(quota, len(topic.partitions))
        except AdminError as exc:
            result(topic.name, topic_id, exc.code, exc.message)
            continue
        try:
            cluster.delete_topic(topic)
        except OSError as exc:
            log.error("deleting topic %s failed: %s", topic.name, exc)
            result(topic.name, topic_id, ErrorCode.kafka_storage_error, storage_error_message(exc))
            continue
        ctx.broker.reassignments.topic_deleted(topic.name)
        result(topic.name, topic_id, ErrorCode.none)
    return make(mod.DeleteTopicsResponse, throttle_time=0, responses=tuple(results))


# --- CreatePartitions -----------------------------------------------------------------------


def _check_new_partitions(ctx: RequestContext, t, quota: ControllerMutationQuota | None) -> int:
    """ReplicationControlManager.createPartitions checks, the quota recorded where Kafka records
    it; returns the partitions to add."""
    topic = ctx.cluster.topics.get(t.name)
    if topic is None:
        raise AdminError(ErrorCode.unknown_topic_or_partition)
    current = len(topic.partitions)
    if t.count == current:
        raise AdminError(ErrorCode.invalid_partitions, f"Topic already has {current} partition(s).")
    if t.count < current:
        raise AdminError(ErrorCode.invalid_partitions, f"The topic {t.name} currently has {current} partition(s); "
                         f"{t.count} would not be an increase.")
    additional = t.count - current
    if t.assignments is not None:
        if len(t.assignments) != additional:
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             f"Attempted to add {additional} additional partition(s), but only "
                             f"{len(t.assignments)} assignment(s) were specified.")
    record_mutations(quota, additional)
    if t.assignments is not None:
        for a in t.assignments:
            check_manual_assignment(ctx.cluster.node_ids, a.broker_ids, len(topic.partitions[0].replicas))
    return additional


@api(37, 0, 3)
async def create_partitions(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    cluster = ctx.cluster
    counts = Counter(t.name for t in request.topics)
    results = []

    def result(name, code=ErrorCode.none, message=None):
        results.append(make(mod.CreatePartitionsTopicResult, name=name, error_code=code, error_message=message))

    budget = MAX_PARTITIONS_PER_REQUEST
    quota = mutation_quota(ctx)
    alterable = allowed_names(ctx, AclOperation.ALTER, ResourceType.TOPIC, counts)
    for t in request.topics:
        if counts[t.name] > 1:
            continue
        if alterable is not None and t.name not in alterable:
            result(t.name, ErrorCode.topic_authorization_failed)
            continue
        try:
            additional = _check_new_partitions(ctx, t, quota)
        except AdminError as exc:
            result(t.name, exc.code, exc.message)
            continue
        if additional > budget:
            result(t.name, ErrorCode.policy_violation, "Excessively large number of partitions per request.")
            continue
        budget -= additional
        if not request.validate_only:
            try:
                cluster.add_partitions(cluster.topics[t.name], t.count,
                                       [list(a.broker_ids) for a in t.assignments] if t.assignments else None)
            except OSError as exc:
                log.error("adding partitions to %s failed: %s", t.name, exc)
                result(t.name, ErrorCode.kafka_storage_error, storage_error_message(exc))
                continue
            log.info("topic %s now has %d partition(s)", t.name, t.count)
        result(t.name)
    for name, c in counts.items():
        if c > 1:
            result(name, ErrorCode.invalid_request, "Duplicate topic name.")
    return make(mod.CreatePartitionsResponse, throttle_time=0, results=tuple(results))


# --- DescribeTopicPartitions ----------------------------------------------------------------


@api(75, 0, 0)
async def describe_topic_partitions(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    cluster = ctx.cluster
    down = cluster.down
    fetch_all = not request.topics
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""

    def failed(message: str):
        log.info("DescribeTopicPartitions from %r refused: %s", ctx.client_id, message)
        return make(mod.DescribeTopicPartitionsResponse, throttle_time=0, next_cursor=None, topics=tuple(
            make(mod.DescribeTopicPartitionsResponseTopic, error_code=ErrorCode.invalid_request, name=t.name,
                 topic_id=ZERO_UUID, is_internal=False, partitions=(),
                 topic_authorized_operations=-(2**31))
            for t in request.topics))

    if fetch_all:
        names = {n for n in cluster.topics if n >= cursor_topic}
    else:
        names = {t.name for t in request.topics if t.name >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            return failed("DescribeTopicPartitionsRequest topic list should contain the cursor topic: "
                          f"{cursor.topic_name}")
    if cursor is not None and cursor.partition_index < 0:
        return failed(f"DescribeTopicPartitionsRequest cursor partition must be valid: {cursor}")

    remaining = max(min(DESCRIBE_TOPIC_PARTITIONS_MAX, request.response_partition_limit), 1)
    topics_out = []
    refused: list[str] = []
    described = allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    if described is not None:
        # topics the principal may not DESCRIBE: left out of "all", refused when named
        refused = [] if fetch_all else sorted(names - described)
        names = names & described
    next_cursor = None
    for name in sorted(names):
        if remaining == 0:
            next_cursor = make(mod.Cursor, topic_name=name, partition_index=0)
            break
        topic = cluster.topics.get(name)
        if topic is None:
            if not fetch_all:
                code = (ErrorCode.invalid_topic_exception if topic_name_error(name) is not None
                        else ErrorCode.unknown_topic_or_partition)
                topics_out.append(make(mod.DescribeTopicPartitionsResponseTopic, error_code=code, name=name,
                                       topic_id=ZERO_UUID, is_internal=name in INTERNAL_TOPICS,
                                       partitions=(), topic_authorized_operations=TOPIC_AUTHORIZED_OPERATIONS))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(len(topic.partitions), start + remaining)
        parts = tuple(
            make(mod.DescribeTopicPartitionsResponsePartition,
                 error_code=ErrorCode.none if p.leader >= 0 else ErrorCode.leader_not_available,
                 partition_index=p.index, leader_id=p.leader, leader_epoch=p.leader_epoch,
                 replica_nodes=tuple(p.replicas), isr_nodes=tuple(p.isr), eligible_leader_replicas=(),
                 last_known_elr=(), offline_replicas=tuple(n for n in p.replicas if n in down))
            for p in topic.partitions[start:upper]
        )
        topics_out.append(make(mod.DescribeTopicPartitionsResponseTopic, error_code=ErrorCode.none, name=name,
                               topic_id=topic.topic_id, is_internal=topic.internal, partitions=parts,
                               topic_authorized_operations=operations(ctx, ResourceType.TOPIC, name,
                                                                      TOPIC_AUTHORIZED_OPERATIONS)))
        if upper < len(topic.partitions):
            next_cursor = make(mod.Cursor, topic_name=name, partition_index=upper)
            break
        remaining -= len(parts)
    for name in refused:
        topics_out.append(make(mod.DescribeTopicPartitionsResponseTopic, error_code=ErrorCode.topic_authorization_failed,
                               name=name, topic_id=ZERO_UUID, is_internal=False, partitions=(),
                               topic_authorized_operations=-(2**31)))
    return make(mod.DescribeTopicPartitionsResponse, throttle_time=0, topics=tuple(topics_out),
                next_cursor=next_cursor)
