"""Error injection: make the next requests of one API fail as a Kafka cluster's can.

    fail-requests   api, error, [count, topic, client_id, transactional_id]
                    answer with `error` (a Kafka error name or code) in that API's response
                    shape, every topic/partition/group entry carrying it, without applying the
                    request (protocol.error_responses, what Kafka's getErrorResponse builds)
    drop-responses  api, [count, ...]
                    apply the request and send no response; the connection then goes deaf
                    (what it receives is read and thrown away) until the client gives up on it
                    and closes it, as when the network loses a response: the client's request
                    times out after request.timeout.ms, it reconnects and retries
    close-connections api, [count, ...]
                    close the connection without applying the request
    delay-responses api, ms, [count, ...]
                    apply the request and hold its response for `ms` milliseconds (the connection
                    is muted meanwhile, as Kafka mutes a connection with a request in progress)
    list-faults     the armed faults, with how many requests each has left and has hit
    clear-faults    disarm every fault (or the one with `id`)

`api` is an API key number or Kafka's name of it (Produce, EndTxn, "end_txn"); a fault applies to
the next `count` requests of that API (null: every one until cleared) that name `topic` (by name
or topic id), come from `client_id` and carry `transactional_id` (in the request, or as the key of
a transaction-coordinator FindCoordinator), whichever of those are given. Faults are matched in
the order they were armed; an ApiVersions request is never faulted (a client could not connect).

An armed fault is a dispatch hook (broker.hooks) registered on its API key in `broker.hooks`:
dispatch asks it before the handler, and it removes itself once its count has run out. Nothing
else holds the armed faults, so an unarmed broker pays one dict lookup per request.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.index import api_key_map
from kio.schema.errors import ErrorCode

from kafkalite.protocol.apis import ApiRange

from ..handlers.common import CloseConnection
from ..hooks import HookContext, Interception
from . import ControlError, control, is_int

if TYPE_CHECKING:
    from ..state import Broker

log = logging.getLogger("kafkalite.faults")

ACTIONS = ("error", "drop", "close", "delay")
_ids = itertools.count(1)


@dataclass(eq=False)
class Fault:
    """One armed fault: a dispatch hook on its API key until its count runs out or it is cleared."""

    broker: "Broker"
    id: int
    api_key: int
    action: str
    remaining: int | None  # None: until cleared
    error: ErrorCode | None = None
    delay_ms: int = 0
    topic: str | None = None
    client_id: str | None = None
    transactional_id: str | None = None
    hits: int = 0

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "api": api_key_map[self.api_key], "api_key": self.api_key,
                "action": self.action, "error": None if self.error is None else self.error.name.upper(),
                "error_code": None if self.error is None else int(self.error), "delay_ms": self.delay_ms,
                "remaining": self.remaining, "hits": self.hits, "topic": self.topic,
                "client_id": self.client_id, "transactional_id": self.transactional_id}

    def __call__(self, ctx: HookContext, request: Any) -> Interception | None:
        """The dispatch hook: intercept the request when it matches, taking one of the count."""
        if not self.matches(ctx, request):
            return None
        self.hits += 1
        if self.remaining is not None:
            self.remaining -= 1
            if self.remaining <= 0:
                self.broker.hooks.remove(self.api_key, self)
        log.info("fault %d (%s) hits %s v%d from %s (client %r)", self.id, self.action,
                 api_key_map[self.api_key], ctx.api_version, ctx.peer, ctx.client_id)
        if self.action == "drop":
            return Interception(drop=True)
        if self.action == "delay":
            return Interception(delay_ms=self.delay_ms)
        return Interception(answer=lambda: self.answer(ctx, request))

    def matches(self, ctx: HookContext, request: Any) -> bool:
        if self.client_id is not None and ctx.client_id != self.client_id:
            return False
        if self.transactional_id is not None and self.transactional_id not in _transactional_id(request):
            return False
        return self.topic is None or self.topic in _topics_named(self.broker, request)

    def answer(self, ctx: HookContext, request: Any) -> Any:
        """What a faulted request gets instead of being handled: an error response, or the
        connection closed (close-connections, and an error for an acks=0 Produce, which has no
        response to carry it: Kafka closes the connection then)."""
        from kafkalite.protocol.error_responses import error_response  # kio's schemas, on first use

        if self.action == "close" or (ctx.header.api_key == 0 and getattr(request, "acks", -1) == 0):
            raise CloseConnection(f"fault {self.id} ({self.action}) on {api_key_map[self.api_key]}")
        assert self.error is not None
        return error_response(ctx.header.api_key, ctx.header.api_version, request, self.error)


def armed(broker: "Broker") -> list[Fault]:
    """The armed faults, in the order they match."""
    return [hook for _key, hook in broker.hooks.registered() if isinstance(hook, Fault)]


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def api_key_of(api: Any, served: dict[int, ApiRange]) -> int:
    """An API key from its number or Kafka's name (Produce, EndTxn, end_txn, END_TXN)."""
    if isinstance(api, bool):
        raise ControlError(f"api must be an API key or name, not {api!r}")
    if isinstance(api, int) or (isinstance(api, str) and api.strip().isdigit()):
        key = int(api)
    elif isinstance(api, str):
        wanted = _snake(api.strip()).replace("-", "_")
        keys = [k for k, n in api_key_map.items() if n == wanted]
        if not keys:
            raise ControlError(f"no Kafka API named {api!r}")
        key = keys[0]
    else:
        raise ControlError(f"api must be an API key or name, not {api!r}")
    if key not in served:
        raise ControlError(f"API {api!r} (key {key}) is not served by this broker")
    if key == 18:
        raise ControlError("ApiVersions cannot be faulted: a client could not connect at all")
    return key


def error_of(error: Any) -> ErrorCode:
    if isinstance(error, bool):
        raise ControlError(f"error must be a Kafka error name or code, not {error!r}")
    try:
        if isinstance(error, int) or (isinstance(error, str) and error.strip().lstrip("-").isdigit()):
            code = ErrorCode(int(error))
        elif isinstance(error, str):
            code = ErrorCode[error.strip().lower()]
        else:
            raise ControlError(f"error must be a Kafka error name or code, not {error!r}")
    except (KeyError, ValueError):
        raise ControlError(f"no Kafka error {error!r}") from None
    if code is ErrorCode.none:
        raise ControlError("error must be an error, not NONE")
    return code


def _arm(broker: "Broker", api: Any, action: str, count: int | None, topic: str | None, client_id: str | None,
         transactional_id: str | None, error: ErrorCode | None = None, delay_ms: int = 0) -> dict[str, Any]:
    key = api_key_of(api, broker.api_ranges)
    if count is not None and (not is_int(count) or count < 1):
        raise ControlError(f"count must be a positive integer or null (every request), not {count!r}")
    for what, value in (("topic", topic), ("client_id", client_id), ("transactional_id", transactional_id)):
        if value is not None and not isinstance(value, str):
            raise ControlError(f"{what} must be a string, not {value!r}")
    fault = Fault(broker, next(_ids), key, action, count, error, delay_ms, topic, client_id, transactional_id)
    broker.hooks.add(key, fault)
    log.info("armed fault %d: %s", fault.id, fault.describe())
    return fault.describe()


@control("fail-requests")
async def fail_requests(broker: "Broker", *, api, error, count: int = 1, topic: str | None = None,
                         client_id: str | None = None, transactional_id: str | None = None):
    """Answer the next `count` requests of `api` with `error` in the API's response shape (every
    entry carrying it), without applying them. Optional filters: topic, client_id, transactional_id."""
    return _arm(broker, api, "error", count, topic, client_id, transactional_id, error=error_of(error))


@control("drop-responses")
async def drop_responses(broker: "Broker", *, api, count: int = 1, topic: str | None = None,
                         client_id: str | None = None, transactional_id: str | None = None):
    """Apply the next `count` requests of `api` and send no response; that connection then reads and
    discards everything until the client closes it (its request times out and is retried)."""
    return _arm(broker, api, "drop", count, topic, client_id, transactional_id)


@control("close-connections")
async def close_connections(broker: "Broker", *, api, count: int = 1, topic: str | None = None,
                         client_id: str | None = None, transactional_id: str | None = None):
    """Close the connection of the next `count` requests of `api` without applying them."""
    return _arm(broker, api, "close", count, topic, client_id, transactional_id)


@control("delay-responses")
async def delay_responses(broker: "Broker", *, api, ms: int, count: int = 1, topic: str | None = None,
                         client_id: str | None = None, transactional_id: str | None = None):
    """Apply the next `count` requests of `api` and hold each response `ms` milliseconds."""
    if not is_int(ms) or ms < 0:
        raise ControlError(f"ms must be a non-negative integer, not {ms!r}")
    return _arm(broker, api, "delay", count, topic, client_id, transactional_id, delay_ms=ms)


@control("list-faults")
async def list_faults(broker: "Broker"):
    """The armed faults, in the order they match."""
    return [f.describe() for f in armed(broker)]


@control("clear-faults")
async def clear_faults(broker: "Broker", *, id=None):  # noqa: A002 - the fault's id, as list-faults names it
    """Disarm every fault, or only the one with `id`; returns how many were disarmed."""
    faults = [f for f in armed(broker) if id is None or f.id == id]
    if id is not None and not faults:
        raise ControlError(f"no armed fault with id {id!r}")
    for fault in faults:
        broker.hooks.remove(fault.api_key, fault)
    return len(faults)


# --- matching -----------------------------------------------------------------------------------

_TOPIC_FIELDS = ("topic", "topic_name")


def _topics_named(broker: "Broker", request: Any) -> set[str]:
    """The topics a request names, by name or id."""
    names: set[str] = set()

    def walk(obj: Any, topical: bool) -> None:
        if isinstance(obj, (tuple, list)):
            for item in obj:
                walk(item, topical)
            return
        if not dataclasses.is_dataclass(obj):
            return
        in_topic = "Topic" in type(obj).__name__
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if isinstance(value, str) and (f.name in _TOPIC_FIELDS or (f.name == "name" and in_topic)):
                names.add(value)
            elif isinstance(value, uuid.UUID) and f.name == "topic_id":
                topic = broker.cluster.topics_by_id.get(value)
                if topic is not None:
                    names.add(topic.name)
            elif isinstance(value, (tuple, list)) or dataclasses.is_dataclass(value):
                walk(value, in_topic)

    walk(request, False)
    return names


def _transactional_id(request: Any) -> set[str]:
    found = set()
    tid = getattr(request, "transactional_id", None)
    if isinstance(tid, str):
        found.add(tid)
    if getattr(request, "key_type", 0) == 1:  # FindCoordinator for a transaction coordinator
        for key in (getattr(request, "key", None), *(getattr(request, "coordinator_keys", None) or ())):
            if isinstance(key, str):
                found.add(key)
    return found
