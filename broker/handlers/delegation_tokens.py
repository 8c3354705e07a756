"""CreateDelegationToken (key 38) v1-v3, RenewDelegationToken (39) v1-v2, ExpireDelegationToken (40)
v1-v2, DescribeDelegationToken (41) v1-v3: KIP-48's tokens, which broker.delegation_tokens keeps.

- Every one needs a SASL connection that did not authenticate with a token
  (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, checked first, as Kafka's allowTokenRequests); then without
  `delegation.token.secret.key` the answer is DELEGATION_TOKEN_AUTH_DISABLED.
- Create: the owner is the requester unless v3 names another, which needs CREATE_TOKENS on that
  user with an authorizer (DELEGATION_TOKEN_AUTHORIZATION_FAILED); a refusal names the owner and
  the requester, with -1 times and no token.
  Renewers are principals (User:name). A token's times are in milliseconds since the epoch.
- Renew and Expire find the token by its HMAC and need its owner or a renewer; answers carry the
  new expiry timestamp (-1 with an error).
- Describe lists the live tokens of the owners asked for (all with a null list, none with an empty
  one; a token is an owner's when it is its owner, requester or renewer) that the requester owns,
  requested or renews, or may DESCRIBE (the token) or DESCRIBE_TOKENS (its owner, a USER
  resource); with no authorizer, every token.
- Create, Renew and Expire save the tokens before they change: a save that fails (a full disk)
  answers KAFKA_STORAGE_ERROR (the responses have no message) and changes nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from datetime import datetime, timedelta, timezone

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..clock import now_ms
from ..delegation_tokens import DelegationTokens, TokenError
from ..context import RequestContext
from . import api
from .common import response_module

log = logging.getLogger("kafkalite.admin")


def _tokens(ctx: RequestContext) -> DelegationTokens:
    return ctx.broker.delegation_tokens


def _time(ms: int) -> datetime:
    """A timestamp field: kio writes datetimes, and Kafka sends -1 for "none"."""
    return datetime.fromtimestamp(ms / 1000, timezone.utc)


def _period_ms(value: timedelta | int) -> int:
    """A duration field (kio reads them as timedeltas; -1 is "none")."""
    return round(value.total_seconds() * 1000) if isinstance(value, timedelta) else int(value)


def _split(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


def _sasl_ok(ctx: RequestContext) -> bool:
    """A SASL-authenticated connection that did not use a token (Kafka's allowTokenRequests)."""
    sasl = ctx.conn.sasl if ctx.conn is not None else None
    return sasl is not None and sasl.authenticated and not sasl.token_authenticated


def _token_fields(token, as_time=_time) -> dict:
    owner_type, owner_name = _split(token.owner)
    requester_type, requester_name = _split(token.requester)
    return dict(principal_type=owner_type, principal_name=owner_name, token_requester_principal_type=requester_type,
                token_requester_principal_name=requester_name, issue_timestamp=as_time(token.issue_ms),
                expiry_timestamp=as_time(token.expiry_ms), max_timestamp=as_time(token.max_ms), token_id=token.token_id,
                hmac=token.hmac)


@api(38, 1, 3)
async def create_delegation_token(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    tokens = _tokens(ctx)
    owner_name = getattr(request, "owner_principal_name", None)
    owner = ctx.principal if not owner_name else f"{request.owner_principal_type}:{owner_name}"

    def refused(code: ErrorCode):
        # Kafka's CreateDelegationTokenResponse.prepareResponse: the owner and requester, no token
        owner_type, owner_only = _split(owner)
        requester_type, requester_name = _split(ctx.principal)
        return make(mod.CreateDelegationTokenResponse, error_code=code, principal_type=owner_type,
                    principal_name=owner_only, token_requester_principal_type=requester_type,
                    token_requester_principal_name=requester_name, issue_timestamp=_time(-1),
                    expiry_timestamp=_time(-1), max_timestamp=_time(-1), token_id="", hmac=b"", throttle_time=0)
    if not _sasl_ok(ctx):
        return refused(ErrorCode.delegation_token_request_not_allowed)
    if owner != ctx.principal and ctx.broker.authorizer is not None:
        from ..authorizer import AclOperation, ResourceType, allowed

        if not allowed(ctx, AclOperation.CREATE_TOKENS, ResourceType.USER, owner):
            return refused(ErrorCode.delegation_token_authorization_failed)
    if not tokens.enabled:
        return refused(ErrorCode.delegation_token_auth_disabled)
    renewers = [f"{r.principal_type}:{r.principal_name}" for r in request.renewers]
    try:
        token = tokens.create(owner, ctx.principal, renewers, _period_ms(request.max_lifetime), now_ms())
    except OSError as exc:
        log.error("saving a new delegation token failed: %s", exc)
        return refused(ErrorCode.kafka_storage_error)
    return make(mod.CreateDelegationTokenResponse, error_code=ErrorCode.none, throttle_time=0, **_token_fields(token))


async def _change(ctx: RequestContext, request, response_name: str, change) -> object:
    mod = response_module(ctx)
    tokens = _tokens(ctx)
    entity = getattr(mod, response_name)
    if not _sasl_ok(ctx):
        return make(entity, error_code=ErrorCode.delegation_token_request_not_allowed, expiry_timestamp=_time(-1),
                    throttle_time=0)
    if not tokens.enabled:
        return make(entity, error_code=ErrorCode.delegation_token_auth_disabled, expiry_timestamp=_time(-1), throttle_time=0)
    try:
        expiry = change(tokens)
    except TokenError as exc:
        return make(entity, error_code=ErrorCode[exc.name], expiry_timestamp=_time(-1), throttle_time=0)
    except OSError as exc:
        log.error("saving a delegation token failed: %s", exc)
        return make(entity, error_code=ErrorCode.kafka_storage_error, expiry_timestamp=_time(-1), throttle_time=0)
    return make(entity, error_code=ErrorCode.none, expiry_timestamp=_time(expiry), throttle_time=0)


@api(39, 1, 2)
async def renew_delegation_token(ctx: RequestContext, request: Any) -> Any:
    return await _change(ctx, request, "RenewDelegationTokenResponse",
                         lambda tokens: tokens.renew(request.hmac, ctx.principal, _period_ms(request.renew_period),
                                                      now_ms()))


@api(40, 1, 2)
async def expire_delegation_token(ctx: RequestContext, request: Any) -> Any:
    return await _change(ctx, request, "ExpireDelegationTokenResponse",
                         lambda tokens: tokens.expire(request.hmac, ctx.principal,
                                                       _period_ms(request.expiry_time_period), now_ms()))


@api(41, 1, 3)
async def describe_delegation_token(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    tokens = _tokens(ctx)
    if not _sasl_ok(ctx):
        return make(mod.DescribeDelegationTokenResponse, error_code=ErrorCode.delegation_token_request_not_allowed,
                    tokens=(), throttle_time=0)
    if not tokens.enabled:
        return make(mod.DescribeDelegationTokenResponse, error_code=ErrorCode.delegation_token_auth_disabled,
                    tokens=(), throttle_time=0)
    owners = None if request.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in request.owners]
    from ..authorizer import AclOperation, ResourceType, allowed

    def granted(t) -> bool:
        # DESCRIBE on the token, or DESCRIBE_TOKENS on its owner (KIP-373); with no authorizer, both
        return (allowed(ctx, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, t.token_id)
                or allowed(ctx, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, t.owner))
    found = [] if owners == [] else tokens.visible(ctx.principal, owners, now_ms(), granted)
    described = []
    for t in found:
        renewers = tuple(make(mod.DescribedDelegationTokenRenewer, principal_type=_split(r)[0],
                              principal_name=_split(r)[1]) for r in t.renewers)
        # Describe's times are plain int64 milliseconds in the schema, Create's timestamps
        described.append(make(mod.DescribedDelegationToken, renewers=renewers, **_token_fields(t, as_time=int)))
    return make(mod.DescribeDelegationTokenResponse, error_code=ErrorCode.none, tokens=tuple(described),
                throttle_time=0)
