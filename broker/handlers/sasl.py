"""SaslHandshake (key 17) v0-v1 and SaslAuthenticate (key 36) v0-v2.

On a SASL listener (broker.connection gates what a connection may send before it is
authenticated): SaslHandshake names the mechanism; an enabled one is answered with NONE and
the enabled list, any other with UNSUPPORTED_SASL_MECHANISM and the list, and the connection
is closed after that answer, as Kafka's SaslServerAuthenticator. SaslAuthenticate carries the
mechanism's tokens (broker.sasl); a failure is answered with SASL_AUTHENTICATION_FAILED and
Kafka's message, then the connection is closed. Once complete, v1+ reports
`session_lifetime_ms` (KIP-368: `connections.max.reauth.ms`, or an OAUTHBEARER token's expiry
if sooner); a SaslHandshake on that authenticated connection starts re-authentication with the
same mechanism and principal. After SaslHandshake v0 the tokens come as bare size-prefixed
frames instead of SaslAuthenticate requests (broker.connection reads them), answered the same way
and, on failure, with a closed connection, as Kafka.

Anywhere else (a PLAINTEXT or SSL listener, or an authenticated connection that is not
re-authenticating) both answer ILLEGAL_SASL_STATE, as Kafka's KafkaApis.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..sasl import SaslFailed, SaslState
from . import api
from .common import response_module

log = logging.getLogger("kafkalite.sasl")


@api(17, 0, 1)
async def sasl_handshake(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    sasl = ctx.conn.sasl if ctx.conn is not None else None
    if sasl is None or sasl.state == SaslState.COMPLETE:
        return make(mod.SaslHandshakeResponse, error_code=ErrorCode.illegal_sasl_state, mechanisms=())
    enabled = tuple(sasl.security.mechanisms)
    sasl.raw_tokens = ctx.api_version == 0
    if not sasl.handshake(request.mechanism):
        assert ctx.conn is not None  # a SASL session belongs to a connection
        ctx.conn.close_after_response = f"SASL mechanism {request.mechanism!r} is not enabled on this listener"
        return make(mod.SaslHandshakeResponse, error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=enabled)
    return make(mod.SaslHandshakeResponse, error_code=ErrorCode.none, mechanisms=enabled)


@api(36, 0, 2)
async def sasl_authenticate(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    sasl = ctx.conn.sasl if ctx.conn is not None else None
    if sasl is None or sasl.state not in (SaslState.AUTHENTICATE, SaslState.REAUTH_BAD_MECHANISM):
        return make(mod.SaslAuthenticateResponse, error_code=ErrorCode.illegal_sasl_state,
                    error_message="SaslAuthenticate request received after successful authentication",
                    auth_bytes=b"", session_lifetime=0)
    mechanism = sasl.mechanism_name
    again = sasl.reauthenticating
    try:
        token, lifetime = sasl.authenticate(bytes(request.auth_bytes))
    except SaslFailed as exc:
        # the reason the client is told; never the credentials themselves
        assert ctx.conn is not None  # a SASL session belongs to a connection
        ctx.conn.close_after_response = f"SASL {mechanism} authentication failed: {exc}"
        return make(mod.SaslAuthenticateResponse, error_code=ErrorCode.sasl_authentication_failed,
                    error_message=str(exc), auth_bytes=b"", session_lifetime=0)
    if sasl.authenticated:
        log.debug("%s %s from %s with %s; session lifetime %d ms", sasl.principal,
                  "re-authenticated" if again else "authenticated", ctx.peer, mechanism, lifetime)
    return make(mod.SaslAuthenticateResponse, error_code=ErrorCode.none, error_message="",
                auth_bytes=token, session_lifetime=lifetime)
