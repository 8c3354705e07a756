"""DescribeCluster (key 60) v0-v2, DescribeLogDirs (35) v1-v5.

DescribeCluster
- Every node that is up, at its address advertised on the listener the request came in on;
  with v2 include_fenced_brokers also the nodes that are down, marked fenced. controller_id is
  the first node that is up, as a KRaft broker answers with an alive broker id. Endpoint type 1 (brokers) is served; 2
  (controllers) is MISMATCHED_ENDPOINT_TYPE and anything else UNSUPPORTED_ENDPOINT_TYPE
  (INVALID_REQUEST in v0), as Kafka answers on a broker listener.
- include_cluster_authorized_operations reports the cluster operations the principal may
  perform (0 without DESCRIBE on the cluster); every one when no authorizer is configured.
- DescribeLogDirs needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED).
  ListPartitionReassignments is broker.handlers.replica_admin's.

DescribeLogDirs
- One log directory: the data directory (absolute path), with its volume's total and usable
  bytes (v4+), holding the partitions of which the node asked is a replica. Each partition's
  size is the bytes of its segments; offset_lag is 0 (replicas are logical: every one is at the
  high watermark). A null topic list means every
  partition; listed partitions that do not exist are left out, as Kafka does.

"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..authorizer import CLUSTER_NAME, AclOperation, ResourceType, allowed_cluster, operations
from . import api
from .common import response_module
from .metadata import controller_id

log = logging.getLogger("kafkalite.admin")

BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT = 1, 2
# AclEntry.supportedOperations(CLUSTER): CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
# DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
CLUSTER_AUTHORIZED_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
NO_AUTHORIZED_OPERATIONS = -(2**31)


@api(60, 0, 2)
async def describe_cluster(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    cluster = ctx.cluster
    endpoint = getattr(request, "endpoint_type", BROKERS_ENDPOINT)
    if endpoint != BROKERS_ENDPOINT:
        if endpoint == CONTROLLERS_ENDPOINT:
            code = ErrorCode.mismatched_endpoint_type
            message = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
        else:
            code = ErrorCode.unsupported_endpoint_type
            message = f"Unsupported endpoint type {endpoint}"
        if ctx.api_version == 0:
            code = ErrorCode.invalid_request
        return make(mod.DescribeClusterResponse, throttle_time=0, error_code=code, error_message=message,
                    endpoint_type=BROKERS_ENDPOINT, cluster_id="", controller_id=-1, brokers=(),
                    cluster_authorized_operations=NO_AUTHORIZED_OPERATIONS)
    include_fenced = getattr(request, "include_fenced_brokers", False)
    brokers = tuple(
        make(mod.DescribeClusterBroker, broker_id=node, host=adv.host, port=adv.port, rack=None,
             is_fenced=not cluster.alive(node))
        for node in cluster.node_ids if include_fenced or cluster.alive(node)
        for adv in (ctx.broker.address_of(node, ctx.listener.name),))
    ops = NO_AUTHORIZED_OPERATIONS
    if request.include_cluster_authorized_operations:
        ops = (operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_AUTHORIZED_OPERATIONS)
               if allowed_cluster(ctx, AclOperation.DESCRIBE) else 0)
    return make(mod.DescribeClusterResponse, throttle_time=0, error_code=ErrorCode.none, error_message=None,
                endpoint_type=BROKERS_ENDPOINT, cluster_id=cluster.cluster_id, controller_id=controller_id(cluster),
                brokers=brokers, cluster_authorized_operations=ops)


@api(35, 1, 5)
async def describe_log_dirs(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if not allowed_cluster(ctx, AclOperation.DESCRIBE):
        return make(mod.DescribeLogDirsResponse, throttle_time=0, error_code=ErrorCode.cluster_authorization_failed,
                    results=())
    cluster = ctx.cluster
    data_dir = Path(cluster.data_dir).resolve()
    wanted: dict[str, set[int] | None]
    if request.topics is None:
        wanted = {name: None for name in cluster.topics}
    else:
        asked: dict[str, set[int]] = {}
        for t in request.topics:
            asked.setdefault(t.topic, set()).update(t.partitions)
        wanted = dict(asked)
    topics = []
    for name in sorted(wanted):
        topic = cluster.topics.get(name)
        if topic is None:
            continue
        indexes = wanted[name]
        parts = tuple(
            make(mod.DescribeLogDirsPartition, partition_index=p.index, partition_size=p.size_bytes,
                 offset_lag=0, is_future_key=False)
            for p in topic.partitions if (indexes is None or p.index in indexes) and ctx.node_id in p.replicas
        )
        if parts:
            topics.append(make(mod.DescribeLogDirsTopic, name=name, partitions=parts))
    try:
        usage = shutil.disk_usage(data_dir)
        total, usable = usage.total, usage.free
    except OSError:
        total = usable = -1
    result = make(mod.DescribeLogDirsResult, error_code=ErrorCode.none, log_dir=str(data_dir), topics=tuple(topics),
                  total_bytes=total, usable_bytes=usable, is_cordoned=False)
    return make(mod.DescribeLogDirsResponse, throttle_time=0, error_code=ErrorCode.none, results=(result,))
