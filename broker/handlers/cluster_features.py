"""UpdateFeatures (key 57) v0-v2 and DescribeQuorum (55) v0-v2: the cluster's feature levels and its
KRaft quorum, as `kafka-features.sh` and `kafka-metadata-quorum.sh` use them.

UpdateFeatures
- Each update is checked as Kafka's controller checks it (broker.features owns the rules and the
  levels): any refusal fails the whole request with INVALID_UPDATE_VERSION and Kafka's message,
  "The update failed for all features since the following feature had an error: ...", and (v0-v1)
  no per-feature results. On success v0-v1 list each feature with NONE; v2 has no results.
  validate_only (v1+) checks and changes nothing. v0's allow_downgrade is not an upgrade type, so
  v0 cannot downgrade, as on Kafka. ApiVersions reports the new levels at once. The new levels
  are saved before they apply: a save that fails (a full disk) answers KAFKA_STORAGE_ERROR on
  the whole request (v0-v1: no per-feature results) and changes nothing.

DescribeQuorum
- kafkalite answers as a KRaft quorum whose voters are its nodes (one, or N with --nodes) in
  combined mode, with no observers: the first node leads at epoch 1, the metadata log grows by one
  record each half second (Kafka's metadata.max.idle.interval.ms no-op records), every voter has
  caught up. As a static quorum (kraft.version 0) its voters have no directory id; v2 adds each
  voter's endpoint, under Kafka's controller listener name CONTROLLER with the node's first
  advertised address. A topic other than __cluster_metadata or a partition other than 0 is
  UNKNOWN_TOPIC_OR_PARTITION on that partition, with Kafka's message.

With an authorizer: ALTER (UpdateFeatures) and DESCRIBE (DescribeQuorum) on the cluster, else
CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..all_or_nothing import storage_error_message
from ..authorizer import AUTHORIZATION_MESSAGES, AclOperation, allowed_cluster
from ..clock import now_ms
from ..features import FeatureUpdate, FeatureUpdateError
from ..context import RequestContext
from . import api
from .common import response_module

log = logging.getLogger("kafkalite.admin")

METADATA_TOPIC = "__cluster_metadata"
CONTROLLER_LISTENER = "CONTROLLER"
NO_OP_INTERVAL_MS = 500  # metadata.max.idle.interval.ms
FAILED_ALL = "The update failed for all features since the following feature had an error: "


@api(57, 0, 2)
async def update_features(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    # v0 has allow_downgrade and no upgrade type: every v0 update is an UPGRADE, as Kafka reads it
    updates = [FeatureUpdate(u.feature, u.max_version_level, getattr(u, "upgrade_type", 1))
               for u in request.feature_updates]
    if ctx.broker.authorizer is not None and not allowed_cluster(ctx, AclOperation.ALTER):
        code = ErrorCode.cluster_authorization_failed
        return make(mod.UpdateFeaturesResponse, throttle_time=0, error_code=code,
                    error_message=AUTHORIZATION_MESSAGES[code], results=())
    try:
        features = ctx.broker.features.update(updates, validate_only=getattr(request, "validate_only", False))
    except FeatureUpdateError as exc:
        return make(mod.UpdateFeaturesResponse, throttle_time=0, error_code=ErrorCode.invalid_update_version,
                    error_message=FAILED_ALL + str(exc), results=())
    except OSError as exc:
        log.error("saving the finalized features failed: %s", exc)
        return make(mod.UpdateFeaturesResponse, throttle_time=0, error_code=ErrorCode.kafka_storage_error,
                    error_message=storage_error_message(exc), results=())
    results = tuple(make(mod.UpdatableFeatureResult, feature=f, error_code=ErrorCode.none, error_message="NONE")
                    for f in features) if hasattr(mod, "UpdatableFeatureResult") else ()
    return make(mod.UpdateFeaturesResponse, throttle_time=0, error_code=ErrorCode.none, error_message=None,
                results=results)


@api(55, 0, 2)
async def describe_quorum(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if ctx.broker.authorizer is not None and not allowed_cluster(ctx, AclOperation.DESCRIBE):
        return make(mod.DescribeQuorumResponse, error_code=ErrorCode.cluster_authorization_failed,
                    error_message=AUTHORIZATION_MESSAGES[ErrorCode.cluster_authorization_failed], topics=(), nodes=())
    wanted = [(t.topic_name, p.partition_index) for t in request.topics for p in t.partitions]
    if wanted != [(METADATA_TOPIC, 0)]:
        # DescribeQuorumResponse.singletonErrorResponse: the error on the first partition asked for
        topic, index = wanted[0] if wanted else (METADATA_TOPIC, 0)
        part = make(mod.PartitionData, partition_index=index, error_code=ErrorCode.unknown_topic_or_partition,
                    error_message="This server does not host this topic-partition.", leader_id=0, leader_epoch=0,
                    high_watermark=0, current_voters=(), observers=())
        return make(mod.DescribeQuorumResponse, error_code=ErrorCode.none, error_message="", nodes=(),
                    topics=(make(mod.TopicData, topic_name=topic, partitions=(part,)),))
    broker, cluster = ctx.broker, ctx.cluster
    now = now_ms()
    offset = max(1, (now - broker.started_ms) // NO_OP_INTERVAL_MS)
    # a static quorum (kraft.version 0) has no directory ids: Kafka sends the zero uuid
    voters = tuple(make(mod.ReplicaState, replica_id=n, replica_directory_id=None, log_end_offset=offset,
                        last_fetch_timestamp=now, last_caught_up_timestamp=now)
                   for n in cluster.node_ids)
    partition = make(mod.PartitionData, partition_index=0, error_code=ErrorCode.none, error_message="",
                     leader_id=cluster.node_ids[0], leader_epoch=1, high_watermark=offset, current_voters=voters,
                     observers=())
    nodes = ()
    if hasattr(mod, "Node"):
        nodes = tuple(make(mod.Node, node_id=n, listeners=tuple(
            make(mod.Listener, name=CONTROLLER_LISTENER, host=lis.host, port=lis.port)
            for lis in list(broker.node_advertised.get(n, broker.advertised).values())[:1]))
            for n in cluster.node_ids)
    return make(mod.DescribeQuorumResponse, error_code=ErrorCode.none, error_message="", nodes=nodes,
                topics=(make(mod.TopicData, topic_name=METADATA_TOPIC, partitions=(partition,)),))
