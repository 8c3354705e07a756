"""Metadata (key 3), v0-v13.

Every node that is up, at its address on the listener the request came in on; each
partition's leader (-1 with LEADER_NOT_AVAILABLE when it has none), leader epoch, replicas,
in-sync replicas and offline replicas (those on nodes that are down). The controller id is
the first node that is up, as a KRaft broker answers with an alive broker. Topics have
stable ids (v10+ lookups by id work). Unknown topics are created with num.partitions when
the request allows it and auto.create.topics.enable is on (a dev-broker default, like Kafka's).
The Metadata that creates a topic answers it UNKNOWN_TOPIC_OR_PARTITION, as Kafka 4.4 answers a
topic its controller is still creating (a client asks again; the next Metadata finds it); with
`auto.create.topics.instant=true` (kafkalite's setting) the new topic is answered at once. A full
or failing disk that stops the creation answers LEADER_NOT_AVAILABLE, nothing created. A null
topic list means every topic; internal topics are flagged is_internal.

With an authorizer (broker.authorizer), as Kafka's KafkaApis: topics the principal may not
DESCRIBE are left out of an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when
named (with a zero id, so their existence is not disclosed; by id, with the id); creating an
unknown topic needs CREATE on the cluster or on the topic (else TOPIC_AUTHORIZATION_FAILED).
Authorized-operation bit sets (v8+) report what the principal may do; without an authorizer,
every supported operation, as Kafka does.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from functools import lru_cache
from typing import Any, Callable

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import has_field, make

from ..context import RequestContext
from ..authorizer import (CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType, allowed, allowed_cluster,
                          operations)
from ..cluster import Topic, topic_name_error
from ..partition import Partition
from ..placement import PlacementError
from . import api
from .common import response_module

log = logging.getLogger("kafkalite.metadata")

ZERO_UUID = uuid.UUID(int=0)
NO_AUTHORIZED_OPS = -(2**31)
TOPIC_OPERATIONS = sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.TOPIC])
CLUSTER_OPERATIONS = sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.CLUSTER])


def broker_entries(ctx: RequestContext, mod):
    cluster = ctx.cluster
    name = ctx.listener.name
    # v0 has no rack field
    return tuple(
        make(mod.MetadataResponseBroker, node_id=node, host=adv.host, port=adv.port, rack=None)
        for node in cluster.node_ids if cluster.alive(node)
        for adv in (ctx.broker.address_of(node, name),))


def controller_id(cluster) -> int:
    return next((n for n in cluster.node_ids if cluster.alive(n)), -1)


def topic_entry(ctx: RequestContext, mod, topic):
    down = ctx.cluster.down
    entry = _partition_entry(mod.MetadataResponsePartition)
    parts = tuple(entry(p, down) for p in topic.partitions)
    return _make_topic(mod, ErrorCode.none, topic.name, topic.topic_id, topic.internal, parts)


@lru_cache(maxsize=None)
def _partition_entry(entity: type) -> Callable[[Partition, set[int]], Any]:
    """A partition's entry of this version, built directly: an answer lists every partition asked
    for, and `make`'s field-by-field conversion cost 5 µs each (0.25 s of 50 000)."""
    epoch, offline = has_field(entity, "leader_epoch"), has_field(entity, "offline_replicas")

    def entry(p: Partition, down: set[int]) -> Any:
        fields = {"error_code": ErrorCode.none if p.leader >= 0 else ErrorCode.leader_not_available,
                  "partition_index": p.index, "leader_id": p.leader, "replica_nodes": tuple(p.replicas),
                  "isr_nodes": tuple(p.isr)}
        if epoch:
            fields["leader_epoch"] = p.leader_epoch
        if offline:
            fields["offline_replicas"] = tuple(n for n in p.replicas if n in down) if down else ()
        return entity(**fields)
    return entry


def _make_topic(mod, error, name, topic_id, internal, parts):
    return make(mod.MetadataResponseTopic, error_code=error, name=name, topic_id=topic_id or ZERO_UUID,
                is_internal=internal, partitions=parts, topic_authorized_operations=NO_AUTHORIZED_OPS)


@api(3, 0, 13)
async def handle(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    cluster = ctx.cluster
    version = ctx.api_version
    auth = ctx.broker.authorizer
    topics_out = []
    topic: Topic | None
    if request.topics is None or (version == 0 and not request.topics):
        # v0 had no null: an empty list meant every topic; topics the principal may not
        # DESCRIBE are left out without a word
        for topic in cluster.topics.values():
            if auth is None or allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
                topics_out.append(topic_entry(ctx, mod, topic))
    else:
        allow_auto = getattr(request, "allow_auto_topic_creation", True)
        for req_topic in request.topics:
            name = req_topic.name
            topic_id = getattr(req_topic, "topic_id", None)
            # Kafka resolves by id whenever one is given (the Java client then sends name "")
            if topic_id not in (None, ZERO_UUID):
                topic = cluster.topics_by_id.get(topic_id)
                if topic is None:
                    topics_out.append(_make_topic(mod, ErrorCode.unknown_topic_id, None, topic_id, False, ()))
                elif not allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
                    # topic ids are not secret: the id is answered with the error
                    topics_out.append(_make_topic(mod, ErrorCode.topic_authorization_failed, None, topic_id, False, ()))
                else:
                    topics_out.append(topic_entry(ctx, mod, topic))
                continue
            if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name or ""):
                # whether the topic exists is not disclosed
                topics_out.append(_make_topic(mod, ErrorCode.topic_authorization_failed, name, None, False, ()))
                continue
            topic = cluster.topics.get(name)
            if topic is None:
                reason = topic_name_error(name)
                if reason is not None:
                    topics_out.append(_make_topic(mod, ErrorCode.invalid_topic_exception, name, None, False, ()))
                    continue
                if allow_auto and ctx.broker.config.bool_of("auto.create.topics.enable") and not name.startswith("__"):
                    if not (allowed_cluster(ctx, AclOperation.CREATE)
                            or allowed(ctx, AclOperation.CREATE, ResourceType.TOPIC, name)):
                        topics_out.append(_make_topic(mod, ErrorCode.topic_authorization_failed, name, None, False, ()))
                        continue
                    try:
                        topic = cluster.create_topic(name, ctx.broker.config.int_of("num.partitions"))
                    except PlacementError:  # default.replication.factor above the node count
                        topics_out.append(_make_topic(mod, ErrorCode.invalid_replication_factor, name, None, False,
                                                      ()))
                        continue
                    except OSError as exc:
                        # a full or failing disk: not created; LEADER_NOT_AVAILABLE, as Kafka answers
                        # while an auto-created topic is not ready, and the client asks again
                        log.warning("auto-creating topic %s failed: %s", name, exc)
                        topics_out.append(_make_topic(mod, ErrorCode.leader_not_available, name, None, False, ()))
                        continue
                    if not ctx.broker.config["auto.create.topics.instant"]:
                        topics_out.append(_make_topic(mod, ErrorCode.unknown_topic_or_partition, name, None, False,
                                                      ()))
                        continue
                else:
                    topics_out.append(_make_topic(mod, ErrorCode.unknown_topic_or_partition, name, None, False, ()))
                    continue
            topics_out.append(topic_entry(ctx, mod, topic))
    cluster_ops = NO_AUTHORIZED_OPS
    if 8 <= version <= 10 and request.include_cluster_authorized_operations:
        cluster_ops = (operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS)
                       if allowed_cluster(ctx, AclOperation.DESCRIBE) else 0)
    if version >= 8 and request.include_topic_authorized_operations:
        topics_out = [t if t.error_code != ErrorCode.none else dataclasses.replace(
            t, topic_authorized_operations=operations(ctx, ResourceType.TOPIC, t.name, TOPIC_OPERATIONS))
            for t in topics_out]
    return make(
        mod.MetadataResponse,
        throttle_time=0,
        brokers=broker_entries(ctx, mod),
        cluster_id=cluster.cluster_id,
        controller_id=controller_id(cluster),
        topics=tuple(topics_out),
        cluster_authorized_operations=cluster_ops,
        error_code=ErrorCode.none,
    )
