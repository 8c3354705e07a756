"""The request log: what the broker received and what it answered, for tests that assert on what a
client sent ("the producer was idempotent", "the consumer committed twice") and for a failing
test's report, as librdkafka's mock cluster offers with rd_kafka_mock_get_requests. The
`record-requests` and `requests` controls (broker.controls.request_log) read and size it.

It is on by default: the newest `request.log.size` requests (10 000; 0 turns it off). broker.dispatch
writes an entry as a request arrives, before the dispatch hooks (so it holds what clients sent
whatever a fault then does), and completes it with the answer.

Each entry: `seq` (its number since the log began), `time_ms` (the broker's clock), `api`
(Kafka's name: Produce, InitProducerId), `api_key`, `version`, `client_id`, `client_software`
(name and version from the connection's ApiVersions v3+, when the log saw it), `connection` (the
client's address), `listener`, `principal`, the key fields the request carries: `topics`
({name: [partitions]}; a topic given by id is named), `transactional_id`, `group_id`,
`member_id`, `producer_id`, `producer_epoch` (from a Produce request's first record batch),
`acks` (Produce), `coordinator_keys` (FindCoordinator); and from the answer `error` (Kafka's
name of the top-level error, or else of the first partition-level one; NONE when there was
none; null when nothing was answered) and `response_ms` (how long the handler took).

The key fields are taken from the decoded request as it arrives and the error from the response
object before it is encoded: no reference to either is kept (a Produce request's records, a
Fetch response's, would stay in memory otherwise). bench/request_log.py measures its cost on the
produce and fetch paths.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import deque
from typing import Any, Protocol

from kio.index import api_key_map
from kio.schema.errors import ErrorCode

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.batch import BatchHeader
from kafkalite.protocol.messages import EncodedBody, RequestHeader

from .clock import now_ms
from .cluster import Cluster
from .settings.listeners import Listener


class LoggedContext(Protocol):
    """What the log reads of a request's context (broker.context.RequestContext)."""

    header: RequestHeader
    peer: str
    listener: Listener
    principal: str
    broker: Any  # the Broker, whose `cluster` names topics given by id


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

    def record(self, ctx: LoggedContext, request: Any) -> dict[str, Any]:
        """The entry of a request as it arrives; `answered` completes it with the response."""
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
        entry.update(key_fields(ctx.broker.cluster, key, request))
        entry["error"] = None
        entry["response_ms"] = None
        self.entries.append(entry)
        return entry

    @staticmethod
    def answered(entry: dict[str, Any], response: Any, response_ms: float) -> None:
        """The error the broker answered (Kafka's name: the top-level error, or else the first
        partition-level one; NONE when every code is 0; null with no response) and how long the
        broker took to answer, in milliseconds."""
        entry["error"] = None if response is None else answered_error(response)
        entry["response_ms"] = round(response_ms, 3)


def key_fields(cluster: Cluster, api_key: int, request: Any) -> dict[str, Any]:
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
    _walk_topics(cluster, request, topics, None)
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


def _topic_name(cluster: Cluster, obj: Any) -> str | None:
    for field in ("name", "topic", "topic_name"):
        value = getattr(obj, field, None)
        if isinstance(value, str) and value:
            return value
    topic_id = getattr(obj, "topic_id", None)
    if isinstance(topic_id, uuid.UUID):
        topic = cluster.topics_by_id.get(topic_id)
        return topic.name if topic is not None else str(topic_id)
    return None


class _Shape:
    """What the walks need of one message class, worked out once per class (dataclasses.fields
    and the name tests cost more than the walk itself)."""

    __slots__ = ("fields", "is_topic")

    def __init__(self, cls: type):
        self.fields = tuple(f.name for f in dataclasses.fields(cls) if f.name != "records")
        self.is_topic = "Topic" in cls.__name__


# every class met, messages and others (None): a few dozen message classes and the value types
_SHAPES: dict[type, _Shape | None] = {}


def _shape(cls: type) -> _Shape | None:
    """The shape of a message class, None for anything that is not a message (a dataclass)."""
    try:
        return _SHAPES[cls]
    except KeyError:
        shape = _SHAPES[cls] = _Shape(cls) if dataclasses.is_dataclass(cls) else None
        return shape


def _nested(value: Any) -> bool:
    """A message, or a non-empty list of messages (or of lists)."""
    if type(value) in (tuple, list):
        return bool(value) and (type(value[0]) in (tuple, list) or _shape(type(value[0])) is not None)
    return _shape(type(value)) is not None


def _walk_topics(cluster: Cluster, obj: Any, topics: dict[str, list[int]], current: str | None) -> None:
    if type(obj) in (tuple, list):
        for item in obj:
            _walk_topics(cluster, item, topics, current)
        return
    shape = _shape(type(obj))
    if shape is None:
        return
    if shape.is_topic:
        name = _topic_name(cluster, obj)
        if name is not None:
            current = name
            topics.setdefault(name, [])
    elif current is not None:
        for field in _PARTITION_FIELDS:
            value = getattr(obj, field, None)
            if isinstance(value, int) and not isinstance(value, bool):  # kio's int32 is an int
                topics[current].append(int(value))
                break
    for name in shape.fields:
        value = getattr(obj, name)
        # a list of partition numbers (not of partition objects; a streams group's `partitions`
        # is a count)
        if (name in _PARTITION_LISTS and current is not None and isinstance(value, (tuple, list)) and value
                and _shape(type(value[0])) is None):
            topics[current].extend(int(v) for v in value)
        elif _nested(value):
            _walk_topics(cluster, value, topics, current)


_ERROR_NAMES: dict[int, str] = {int(code): code.name.upper() for code in ErrorCode}


def answered_error(response: Any) -> str | None:
    """Kafka's name of the error a response carries: its top-level `error_code`, or else the first
    non-zero one among its topics and partitions (records are not looked into); NONE when all
    are 0, None when the response has no error code at all."""
    if _shape(type(response)) is None:
        # a body encoded by its handler: Produce's answer when every batch was taken
        return "NONE" if isinstance(response, EncodedBody) else None
    code = getattr(response, "error_code", None)
    if code:
        return _ERROR_NAMES.get(int(code), str(int(code)))
    found = _first_error(response)
    if found:
        return _ERROR_NAMES.get(found, str(found))
    return "NONE" if code is not None or found is not None else None


def _first_error(obj: Any) -> int | None:
    """The first non-zero error code below `obj`, 0 when every one is 0, None when there is none."""
    seen: int | None = None
    shape = _shape(type(obj))
    if shape is None:
        return None
    for name in shape.fields:
        value = getattr(obj, name)
        if name == "error_code" and value is not None:
            if value:
                return int(value)
            seen = 0
        elif _nested(value):
            for item in value if type(value) in (tuple, list) else (value,):
                code = _first_error(item)
                if code:
                    return code
                if code is not None:
                    seen = 0
    return seen
