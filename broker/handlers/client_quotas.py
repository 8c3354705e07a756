"""DescribeClientQuotas (key 48) v0-v1, AlterClientQuotas (49) v0-v1.

The quota values live in broker.quotas, which enforces them (broker.throttling).

DescribeClientQuotas
- Filter components as Kafka's ClientQuotasImage.describe reads them: an empty entity type or
  one given twice, MATCH_TYPE_EXACT without a match string, DEFAULT or SPECIFIED with one, an
  unknown match type and an ip component beside user or client-id components are INVALID_REQUEST;
  an entity type other than user, client-id and ip is UNSUPPORTED_VERSION; each with Kafka's
  message and null entries. Otherwise every entity that has each filtered type (with that name,
  or the default for DEFAULT) and, with `strict`, no other type; without components and without
  `strict`, every entity. Entries come in no particular order, as Kafka's come from a hash map.

AlterClientQuotas
- One result per distinct entity (an entity named twice is INVALID_REQUEST "Ignoring duplicate
  entity ..."), each validated as Kafka's ClientQuotaControlManager does: known entity types,
  no empty names, user/client-id keys on user and client-id entities and connection_creation_rate
  on ip entities ("Invalid configuration key k"), whole numbers for the byte rates; `remove`
  deletes a key. validate_only checks and changes nothing. Entities without an error are applied.

With an authorizer: DESCRIBE_CONFIGS (describe) and ALTER_CONFIGS (alter) on the cluster, else
CLUSTER_AUTHORIZATION_FAILED (describe: null entries; alter: every entity).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..authorizer import AUTHORIZATION_MESSAGES, AclOperation, allowed_cluster
from ..quotas import QuotaError
from ..context import RequestContext
from . import api
from .common import response_module


@api(48, 0, 1)
async def describe_client_quotas(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    if ctx.broker.authorizer is not None and not allowed_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
        code = ErrorCode.cluster_authorization_failed
        return make(mod.DescribeClientQuotasResponse, throttle_time=0, error_code=code,
                    error_message=AUTHORIZATION_MESSAGES[code], entries=None)
    try:
        found = ctx.broker.quotas.describe(request.components, request.strict)
    except QuotaError as exc:
        return make(mod.DescribeClientQuotasResponse, throttle_time=0, error_code=exc.code,
                    error_message=exc.message, entries=None)
    entries = tuple(
        mod.EntryData(entity=tuple(make(mod.EntityData, entity_type=t, entity_name=n) for t, n in entity),
                      values=tuple(make(mod.ValueData, key=k, value=v) for k, v in values.items()))
        for entity, values in found)
    return make(mod.DescribeClientQuotasResponse, throttle_time=0, error_code=ErrorCode.none, error_message="",
                entries=entries)


@api(49, 0, 1)
async def alter_client_quotas(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    # AlterClientQuotasRequest.entries(): an entity is a map, a type named twice keeps its last name
    entries = [({e.entity_type: e.entity_name for e in entry.entity},
                [(op.key, None if op.remove else float(op.value)) for op in entry.ops])
               for entry in request.entries]
    results: list[tuple[dict[str, str | None], ErrorCode, str | None]]
    if ctx.broker.authorizer is not None and not allowed_cluster(ctx, AclOperation.ALTER_CONFIGS):
        code = ErrorCode.cluster_authorization_failed
        results = [(entity, code, AUTHORIZATION_MESSAGES[code]) for entity, _ops in entries]
    else:
        results = ctx.broker.quotas.alter(entries, request.validate_only)
    # built directly: make()'s first parameter is also called `entity`
    return make(mod.AlterClientQuotasResponse, throttle_time=0, entries=tuple(
        mod.EntryData(error_code=code, error_message=message,
                      entity=tuple(make(mod.EntityData, entity_type=t, entity_name=n) for t, n in entity.items()))
        for entity, code, message in results))
