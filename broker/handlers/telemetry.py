"""GetTelemetrySubscriptions (key 71) v0, PushTelemetry (72) v0 and ListConfigResources (74) v0-v1:
client telemetry (KIP-714) and the listing of config resources that `kafka-client-metrics.sh` and
`kafka-configs.sh` use. broker.telemetry owns the subscriptions and the rules.

- GetTelemetrySubscriptions and PushTelemetry are served always but advertised in ApiVersions
  only with `client.telemetry.enable` (clients then push), as Kafka advertises them only when a
  client telemetry receiver is configured.
- GetTelemetrySubscriptions answers the client's instance id (a new one for the zero id), its
  subscription id, the metrics asked for, the push interval, the compression types, the size limit
  and delta temporality; too early a repeat is THROTTLING_QUOTA_EXCEEDED.
- PushTelemetry keeps what the client sent (the client-telemetry control reads it) or answers
  broker.telemetry's error.
- ListConfigResources v0 lists the client-metrics subscriptions; v1 lists the resources of the
  types asked for (all with an empty list): topics (2), the broker's nodes (4), client-metrics
  subscriptions (16) and groups with configs (32).

With an authorizer: ListConfigResources needs DESCRIBE_CONFIGS on the cluster
(CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..authorizer import AclOperation, allowed_cluster
from ..clock import now_ms
from ..telemetry import ACCEPTED_COMPRESSION, TELEMETRY_MAX_BYTES
from ..context import RequestContext
from . import api
from .common import response_module

TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32


def _source(ctx: RequestContext) -> tuple[str, str]:
    host, _, port = ctx.peer.rpartition(":")
    return host, port


@api(71, 0, 0)
async def get_telemetry_subscriptions(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    code, instance_id, inst = ctx.broker.telemetry.get(request.client_instance_id, ctx.client_id or "",
                                                       _source(ctx), now_ms())
    return make(mod.GetTelemetrySubscriptionsResponse, throttle_time=0, error_code=code,
                client_instance_id=instance_id, subscription_id=inst.subscription_id,
                accepted_compression_types=ACCEPTED_COMPRESSION, push_interval=inst.interval_ms,
                telemetry_max_bytes=TELEMETRY_MAX_BYTES, delta_temporality=True, requested_metrics=inst.metrics)


@api(72, 0, 0)
async def push_telemetry(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    code = ctx.broker.telemetry.push(request.client_instance_id, request.subscription_id, request.terminating,
                                     request.compression_type, request.metrics, now_ms())
    return make(mod.PushTelemetryResponse, throttle_time=0, error_code=code)


@api(74, 0, 1)
async def list_config_resources(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if not allowed_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
        return make(mod.ListConfigResourcesResponse, throttle_time=0,
                    error_code=ErrorCode.cluster_authorization_failed, config_resources=())
    types = set(getattr(request, "resource_types", ()) or ()) or {TOPIC, BROKER, CLIENT_METRICS, GROUP}
    if ctx.api_version == 0:
        types = {CLIENT_METRICS}
    found: list[tuple[str, int]] = []
    if TOPIC in types:
        found += [(name, TOPIC) for name in sorted(ctx.cluster.topics)]
    if BROKER in types:
        found += [(str(n), BROKER) for n in ctx.cluster.node_ids]
    if CLIENT_METRICS in types:
        found += [(name, CLIENT_METRICS) for name in sorted(ctx.broker.telemetry.subscriptions)]
    if GROUP in types:
        found += [(name, GROUP) for name in sorted(ctx.broker.services.group_configs.values)]
    return make(mod.ListConfigResourcesResponse, throttle_time=0, error_code=ErrorCode.none, config_resources=tuple(
        make(mod.ConfigResource, resource_name=name, resource_type=rtype) for name, rtype in found))
