"""Throttling on demand: make the broker throttle a client now, as a quota would.

    throttle-client  ms, [count, client_id, user]
                     the next `count` responses (null: every one until cleared) to requests of
                     clients with `client_id` and/or principal `user` (any client when neither is
                     given) carry throttle_time_ms = `ms`, and their connection is muted for that
                     long, as Kafka throttles a client over its quota (broker.throttling); a
                     throttled Fetch is answered without records. ApiVersions and the SASL
                     exchange are never throttled by it.
    list-throttles   the armed throttles, with how many responses each has left and has hit
    clear-throttles  disarm every throttle (or the one with `id`)
"""

from __future__ import annotations

import dataclasses

from . import ControlError, control, is_int


@control("throttle-client")
async def throttle_client(broker, *, ms: int, count: int = 1, client_id: str | None = None,
                          user: str | None = None):
    """Throttle the next `count` responses (null: all until cleared) of the matching clients by `ms`."""
    if not is_int(ms) or not 0 < ms < 2**31:
        raise ControlError(f"ms must be a positive number of milliseconds, not {ms!r}")
    if count is not None and (not is_int(count) or count < 1):
        raise ControlError(f"count must be a positive integer or null, not {count!r}")
    for name, value in (("client_id", client_id), ("user", user)):
        if value is not None and not isinstance(value, str):
            raise ControlError(f"{name} must be a string, not {value!r}")
    forced = broker.quotas.force(ms, count, client_id, user)
    return dataclasses.asdict(forced)


@control("list-throttles")
async def list_throttles(broker):
    """The armed throttles."""
    return [dataclasses.asdict(f) for f in broker.quotas.forced]


@control("clear-throttles")
async def clear_throttles(broker, *, id=None):
    """Disarm every throttle, or the one with `id`."""
    before = len(broker.quotas.forced)
    broker.quotas.forced[:] = [f for f in broker.quotas.forced if id is not None and f.id != id]
    return {"cleared": before - len(broker.quotas.forced)}
