"""How client quotas throttle requests, as Kafka's KafkaApis applies them (KIP-219).

After a request is handled the broker records what it cost against the client's quotas
(broker.quotas): a Produce its request size against `producer_byte_rate` (acks=0 too), a Fetch
its response size against `consumer_byte_rate`, and every request its handling time against
`request_percentage` (100 = one request thread's whole time; acks=0 Produce is exempt, as in
Kafka, and so are the SASL exchanges). CreateTopics, CreatePartitions and DeleteTopics have
recorded their partitions against `controller_mutation_rate` as they were handled
(broker.handlers.admin_topics); their quota's throttle time counts with the request quota's, as
Kafka's sendResponseMaybeThrottleWithControllerQuota takes the larger. The answer carries the
largest throttle time in `throttle_time_ms`; a throttled Fetch is answered without records
(Kafka's getThrottledResponse: error NONE, no partitions, the session of an incremental fetch or
none), and its bytes are taken back from the fetch rate. Then the connection is muted for the throttle time: nothing more is read
from it, as Kafka mutes a throttled channel, while a client that honours KIP-219 waits on its
own. Kafka delays, instead of muting after, the answer to the old request versions whose clients
do not back off; here every version is answered at once and then muted.

A throttle armed by the `throttle-client` control is applied the same way, whatever the quotas.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages import EncodedBody, encode_response, has_field, make, response_type

from .clock import now_ms
from .handlers.produce import encoded_with_throttle_time
from .quotas import FETCH, PRODUCE, REQUEST, user_of

UNTHROTTLED = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
# a forced throttle leaves the connection's set-up alone, as the faults do
NOT_FORCED = UNTHROTTLED | {ApiKey.API_VERSIONS}


def throttle_time(ctx, request, response_size: int, started: float, request_size: int) -> tuple[int, bool]:
    """The throttle time of this request and whether its Fetch answer must go out empty."""
    quotas = ctx.broker.quotas
    api_key = ctx.header.api_key
    if api_key in UNTHROTTLED:
        return 0, False
    user, client_id = user_of(ctx.principal), ctx.client_id or ""
    now = now_ms()
    percentage = (time.monotonic() - started) * 100.0
    empty_fetch = False
    if api_key == ApiKey.PRODUCE:
        bandwidth = quotas.record(PRODUCE, user, client_id, request_size, now)
        busy = 0 if request.acks == 0 else quotas.record(REQUEST, user, client_id, percentage, now)
        throttle = max(bandwidth, busy)
    elif api_key == ApiKey.FETCH and getattr(request, "replica_id", -1) < 0:
        busy = quotas.record(REQUEST, user, client_id, percentage, now)
        bandwidth = quotas.record(FETCH, user, client_id, response_size, now)
        throttle = max(busy, bandwidth)
        if throttle > 0:
            quotas.unrecord(FETCH, user, client_id, response_size, now)
            empty_fetch = True
    else:
        throttle = quotas.record(REQUEST, user, client_id, percentage, now)
        if ctx.controller_mutation is not None:
            throttle = max(throttle, ctx.controller_mutation.throttle_time())
    if quotas.forced and api_key not in NOT_FORCED:
        forced = quotas.take_forced(user, ctx.client_id)
        if forced > throttle:
            throttle = forced
            empty_fetch = api_key == ApiKey.FETCH
    return throttle, empty_fetch


def throttled_fetch(ctx, request, throttle_ms: int):
    """FetchContext.getThrottledResponse: no partitions; an incremental session keeps its id."""
    rt = response_type(ApiKey.FETCH, ctx.api_version)
    epoch = getattr(request, "session_epoch", -1)
    session_id = request.session_id if epoch > 0 else 0
    return make(rt, throttle_time=throttle_ms, error_code=ErrorCode.none, session_id=session_id, responses=(),
                node_endpoints=())


def with_throttle_time(ctx, response: Any, throttle_ms: int) -> Any:
    """The response with `throttle_time_ms` set (responses without the field are returned as they are)."""
    if type(response) is EncodedBody:
        return encoded_with_throttle_time(response, ctx.api_version, throttle_ms)
    if not has_field(type(response), "throttle_time"):
        return response
    return dataclasses.replace(response, throttle_time=timedelta(milliseconds=throttle_ms))


def apply(ctx, request, response: Any, out: Any, request_size: int, started: float) -> tuple[Any, int]:
    """Record the request against the quotas; returns the frame to send (re-encoded when a
    throttle time goes in it) and how long to mute the connection after sending it."""
    if out is None:
        response_size = 0
    elif isinstance(out, (bytes, bytearray)):
        response_size = len(out)
    else:
        response_size = sum(len(c) for c in out)
    throttle_ms, empty_fetch = throttle_time(ctx, request, response_size, started, request_size)
    if throttle_ms <= 0:
        return out, 0
    if out is None:  # acks=0: no answer to carry it, the connection is muted all the same
        return None, throttle_ms
    header = ctx.header
    response = throttled_fetch(ctx, request, throttle_ms) if empty_fetch else \
        with_throttle_time(ctx, response, throttle_ms)
    return encode_response(header.api_key, header.api_version, header.correlation_id, response), throttle_ms
