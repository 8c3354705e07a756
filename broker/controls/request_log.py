"""The request log: what the broker received, for tests that assert on what a client sent
("the producer was idempotent", "the consumer committed twice"), as librdkafka's mock cluster
offers with rd_kafka_mock_get_requests.

    record-requests  [enabled=true, limit=10000]: start (or stop) recording; the log keeps the
                     newest `limit` requests
    requests         [api, client_id, topic, group_id, transactional_id, clear=false]: the
                     requests received since recording started or the last reset (which empties
                     the log), oldest first, those matching every filter given; clear=true
                     empties the log after reading it

Each entry: `seq` (its number since recording started), `time_ms` (the broker's clock), `api`
(Kafka's name: Produce, InitProducerId), `api_key`, `version`, `client_id`, `client_software`
(name and version from the connection's ApiVersions v3+, when the log saw it), `connection` (the
client's address), `listener`, `principal`, and the key fields the request carries: `topics`
({name: [partitions]}; a topic given by id is named), `transactional_id`, `group_id`,
`member_id`, `producer_id`, `producer_epoch` (from a Produce request's first record batch),
`acks` (Produce), `coordinator_keys` (FindCoordinator).

Recording is off until asked for: the dispatch then pays one attribute test per request, so the
produce and fetch paths do not slow down (bench.isolation measures it). When on, the key fields
are taken from the decoded request as it arrives (no reference to the request is kept: a
Produce request's records would stay in memory otherwise).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import deque
from typing import TYPE_CHECKING, Any

from kio.index import api_key_map

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.batch import BatchHeader

from ..clock import now_ms
from . import ControlError, control, is_int
from .faults import _snake

if TYPE_CHECKING:
    from ..context import RequestContext
    from ..state import Broker

DEFAULT_LIMIT = 10_000
_PARTITION_FIELDS = ("partition_index", "partition", "index")
_PARTITION_LISTS = ("partition_indexes", "partitions")
_SCALARS = ("transactional_id", "group_id", "member_id", "producer_id", "producer_epoch")


def _camel(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


API_NAMES: dict[int, str] = {key: _camel(name) for key, name in api_key_map.items()}
# kio's names that Kafka spells with more capitals
API_NAMES.update({22: "InitProducerId", 29: "DescribeAcls", 30: "CreateAcls", 31: "DeleteAcls",
                  50: "DescribeUserScramCredentials", 51: "AlterUserScramCredentials"})


class RequestLog:
    """The newest `limit` requests' entries, and the software each connection announced."""

    def __init__(self, limit: int = DEFAULT_LIMIT):
        self.entries: deque[dict[str, Any]] = deque(maxlen=limit)
        self.seq = 0
        # connection -> (software name, version) from its ApiVersions
        self._software: dict[str, tuple[str, str]] = {}

    def clear(self) -> None:
        self.entries.clear()

    def record(self, ctx: "RequestContext", request: Any) -> None:
        key = ctx.header.api_key
        peer = ctx.peer
        if key == ApiKey.API_VERSIONS and getattr(request, "client_software_name", None):
            if len(self._software) > 10 * DEFAULT_LIMIT:
                self._software.clear()
            self._software[peer] = (request.client_software_name, request.client_software_version)
        self.seq += 1
        software = self._software.get(peer)
        entry: dict[str, Any] = {
            "seq": self.seq, "time_ms": now_ms(), "api": API_NAMES.get(key, str(key)), "api_key": key,
            "version": ctx.header.api_version, "client_id": ctx.header.client_id,
            "client_software": None if software is None else {"name": software[0], "version": software[1]},
            "connection": peer, "listener": ctx.listener.name, "principal": ctx.principal,
        }
        entry.update(key_fields(ctx.broker, key, request))
        self.entries.append(entry)


def key_fields(broker: "Broker", api_key: int, request: Any) -> dict[str, Any]:
    """The fields a test asserts on, from any request: its topics and partitions and the ids it
    names (at the top level, or in AddPartitionsToTxn v4+'s first transaction)."""
    out: dict[str, Any] = {}
    holder = request
    transactions = getattr(request, "transactions", None)
    if transactions and dataclasses.is_dataclass(transactions[0]):
        holder = transactions[0]  # AddPartitionsToTxn v4+: a batch of transactions
    for name in _SCALARS:
        value = getattr(holder, name, None)
        if value is not None and not isinstance(value, (list, tuple)):
            out[name] = value if isinstance(value, (str, int)) else int(value)
    if getattr(request, "key_type", None) is not None:  # FindCoordinator
        keys = [k for k in (getattr(request, "key", None), *(getattr(request, "coordinator_keys", None) or ()))
                if k]
        out["coordinator_keys"] = keys
        out["key_type"] = int(request.key_type)
    topics: dict[str, list[int]] = {}
    _walk_topics(broker, request, topics, None)
    if topics:
        out["topics"] = topics
    if api_key == ApiKey.PRODUCE:
        out["acks"] = int(request.acks)
        header = _first_batch(request)
        if header is not None:
            out["producer_id"] = header.producer_id
            out["producer_epoch"] = header.producer_epoch
            out["transactional"] = header.is_transactional
    return out


def _first_batch(request: Any) -> BatchHeader | None:
    for topic in request.topic_data:
        for part in topic.partition_data:
            records = part.records
            if records is not None and len(records) >= 61:
                return BatchHeader(records, 0)
    return None


def _topic_name(broker: "Broker", obj: Any) -> str | None:
    for field in ("name", "topic", "topic_name"):
        value = getattr(obj, field, None)
        if isinstance(value, str) and value:
            return value
    topic_id = getattr(obj, "topic_id", None)
    if isinstance(topic_id, uuid.UUID):
        topic = broker.cluster.topics_by_id.get(topic_id)
        return topic.name if topic is not None else str(topic_id)
    return None


def _walk_topics(broker: "Broker", obj: Any, topics: dict[str, list[int]], current: str | None) -> None:
    if isinstance(obj, (tuple, list)):
        for item in obj:
            _walk_topics(broker, item, topics, current)
        return
    if not dataclasses.is_dataclass(obj):
        return
    if "Topic" in type(obj).__name__:
        name = _topic_name(broker, obj)
        if name is not None:
            current = name
            topics.setdefault(name, [])
    elif current is not None:
        for field in _PARTITION_FIELDS:
            value = getattr(obj, field, None)
            if isinstance(value, int) and not isinstance(value, bool):  # kio's int32 is an int
                topics[current].append(int(value))
                break
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.name in _PARTITION_LISTS and current is not None and value and not dataclasses.is_dataclass(value[0]):
            topics[current].extend(int(v) for v in value)
        elif f.name == "records":
            continue
        elif isinstance(value, (tuple, list)) or dataclasses.is_dataclass(value):
            _walk_topics(broker, value, topics, current)


def _matches(entry: dict[str, Any], api_key: int | None, client_id: str | None, topic: str | None,
             group_id: str | None, transactional_id: str | None) -> bool:
    return ((api_key is None or entry["api_key"] == api_key)
            and (client_id is None or entry["client_id"] == client_id)
            and (topic is None or topic in entry.get("topics", ()))
            and (group_id is None or entry.get("group_id") == group_id)
            and (transactional_id is None or entry.get("transactional_id") == transactional_id))


@control("record-requests")
async def record_requests(broker, *, enabled=True, limit=DEFAULT_LIMIT):
    """Start recording the requests the broker receives (the newest `limit` are kept), or stop
    with enabled=false. Returns whether it records and how many entries it holds."""
    if not isinstance(enabled, bool):
        raise ControlError(f"enabled must be true or false, not {enabled!r}")
    if not is_int(limit) or limit < 1:
        raise ControlError(f"limit must be a positive integer, not {limit!r}")
    if not enabled:
        broker.request_log = None
    elif broker.request_log is None or broker.request_log.entries.maxlen != limit:
        kept = broker.request_log.entries if broker.request_log is not None else ()
        broker.request_log = RequestLog(limit)
        broker.request_log.entries.extend(kept)
    log = broker.request_log
    return {"enabled": log is not None, "entries": 0 if log is None else len(log.entries),
            "limit": None if log is None else log.entries.maxlen}


@control("requests")
async def requests(broker, *, api=None, client_id=None, topic=None, group_id=None, transactional_id=None,
                   clear=False):
    """The requests received since recording started or the last reset, oldest first, filtered by
    api (a name or key), client_id, topic, group_id and transactional_id; clear=true empties the
    log afterwards. Recording starts with the record-requests control."""
    log = broker.request_log
    if log is None:
        raise ControlError("the broker is not recording requests; start with the record-requests control")
    api_key = None if api is None else _api_key(api)
    for what, value in (("client_id", client_id), ("topic", topic), ("group_id", group_id),
                        ("transactional_id", transactional_id)):
        if value is not None and not isinstance(value, str):
            raise ControlError(f"{what} must be a string, not {value!r}")
    found = [e for e in log.entries if _matches(e, api_key, client_id, topic, group_id, transactional_id)]
    if clear:
        log.clear()
    return found


def _api_key(api: Any) -> int:
    """An API key from its number or name (Produce, InitProducerId, init_producer_id, "22")."""
    if is_int(api) or (isinstance(api, str) and api.strip().isdigit()):
        if int(api) in API_NAMES:
            return int(api)
    elif isinstance(api, str):
        wanted = _snake(api.strip()).replace("-", "_")
        for key, name in API_NAMES.items():
            if _snake(name) == wanted or api_key_map[key] == wanted:
                return key
    raise ControlError(f"no Kafka API {api!r}")
