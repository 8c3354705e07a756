"""An API's response carrying one error everywhere, built from the request: what Kafka's
`AbstractRequest.getErrorResponse(error)` answers for every API.

Kafka's error responses mirror the request: a Produce error response names every topic and
partition of the request, each with the error; an OffsetFetch one every group, topic and
partition; a FindCoordinator v4 one every key. Offsets, ids and epochs are -1, throttle time 0,
strings empty, other arrays empty. This builds that for any API from kio's schema types, so it
serves every API and version we serve without one builder per API:

- every error-code field (top level and in each entry) carries the error;
- an array of entries in the response mirrors the request's array whose entries share its key
  fields (`name`, `topic_id`, `partition_index`, `group_id`, `key`, ... with Kafka's other
  spellings of the same key: `topic`, `partition`); entries of a plain list (`partition_indexes`,
  `coordinator_keys`, `groups`) fill the first field of the same type;
- key fields are copied from the request entry they mirror.

One API departs from the mirror, as Kafka's own getErrorResponse does: Fetch from v13 answers
the top-level error alone, with the request's session id.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
import uuid
from functools import lru_cache
from typing import Any

from kio.schema.errors import ErrorCode

from .messages import response_type

# the same key under Kafka's different names in requests and responses
_ALIASES = {"topic": "name", "topic_name": "name", "user": "name", "partition": "partition_index", "index": "partition_index",
            "partition_id": "partition_index", "group": "group_id"}
_ZERO_UUID = uuid.UUID(int=0)
_FETCH = 1
# the fields that name what an entry is about, copied from the request entry it mirrors; the
# rest take their "nothing" value (an error response's producer id is -1, not the request's)
_KEYS = {"name", "topic_id", "partition_index", "group_id", "key", "transactional_id", "resource_name",
         "resource_type"}


def _key(name: str) -> str:
    return _ALIASES.get(name, name)


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    kafka_type: str | None  # None for an entity or an array of entities
    element: type | None  # an entity type, or the entity type of an array's entries
    is_array: bool
    nullable: bool
    default: Any  # dataclasses.MISSING when the schema has none


@lru_cache(maxsize=None)
def _fields(entity: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(entity)
    out = []
    for f in dataclasses.fields(entity):
        tp = hints.get(f.name, f.type)
        nullable = False
        args = typing.get_args(tp)
        if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
            nullable = True
            tp = next(a for a in args if a is not type(None))
        is_array = typing.get_origin(tp) is tuple
        inner = typing.get_args(tp)[0] if is_array else tp
        element: Any = inner if dataclasses.is_dataclass(inner) else None
        default = f.default
        if default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        out.append(_Field(f.name, f.metadata.get("kafka_type"), element, is_array, nullable, default))
    return tuple(out)


def _empty(f: _Field) -> Any:
    """A field's value in an error response when the request says nothing about it."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.is_array:
        return ()
    if f.element is not None:
        return _build(f.element, None, ErrorCode.none)
    if f.nullable:
        return None
    kt = f.kafka_type
    if kt in ("int8", "int16", "int32", "int64"):
        return -1
    if kt == "uint16":
        return 0
    if kt == "float64":
        return 0.0
    if kt == "string":
        return ""
    if kt in ("bytes", "records"):  # ShareFetch's records are not nullable
        return b""
    if kt == "bool":
        return False
    if kt == "uuid":
        return _ZERO_UUID
    if kt in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(0)
    if kt == "datetime_i64":  # -1, Kafka's "no time" (delegation token timestamps)
        return datetime.datetime.fromtimestamp(-0.001, datetime.timezone.utc)
    if kt == "error_code":
        return ErrorCode.none
    return None


def _request_values(req: Any) -> dict[str, Any]:
    """A request entry's fields by key name (aliases applied; the first spelling wins)."""
    out: dict[str, Any] = {}
    if req is None or not dataclasses.is_dataclass(req):
        return out
    for f in dataclasses.fields(req):
        out.setdefault(_key(f.name), getattr(req, f.name))
    return out


def _source_list(f: _Field, req: Any) -> list[Any]:
    """The request's list that response array `f` mirrors (empty when there is none). An entry
    that is nothing but an error (CreateAcls' results, DeleteAcls' filter results) mirrors the
    request's one list of entries by count; lists that name the same key equally well are
    merged, each key once, sorted (AlterUserScramCredentials' users from its deletions and
    upsertions)."""
    if req is None or not dataclasses.is_dataclass(req) or f.element is None:
        return []
    req_type: Any = type(req)
    scalars = [x for x in _fields(f.element) if x.element is None and not x.is_array]
    wanted = {_key(x.name) for x in scalars}
    if scalars and all(x.kafka_type == "error_code" or x.name == "error_message" for x in scalars):
        entries = [rf for rf in _fields(req_type) if rf.is_array and rf.element is not None]
        return list(getattr(req, entries[0].name)) if len(entries) == 1 else []
    best: tuple[int, list[Any]] | None = None
    ties: list[list[Any]] = []
    for rf in _fields(req_type):
        if not rf.is_array:
            continue
        values = getattr(req, rf.name)
        if not values:
            continue
        if rf.name == f.name:
            score = 100
        elif rf.element is not None:
            shared = wanted & {_key(x.name) for x in _fields(rf.element) if x.element is None and not x.is_array}
            score = len(shared)
        else:
            score = 1 if any(x.kafka_type == rf.kafka_type for x in _fields(f.element)) else 0
        if score and (best is None or score > best[0]):
            best = (score, list(values))
            ties = [best[1]]
        elif best is not None and score == best[0] and rf.element is not None:
            ties.append(list(values))
    if best is None:
        return []
    if len(ties) > 1 and all(dataclasses.is_dataclass(e) for t in ties for e in t):
        return _merged(ties, wanted)
    return best[1]


def _merged(lists: list[list[Any]], wanted: set[str]) -> list[Any]:
    """Entries of several request lists, one per value of the key fields they share, sorted."""
    by_key: dict[tuple, Any] = {}
    for entries in lists:
        for e in entries:
            values = _request_values(e)
            by_key.setdefault(tuple(str(values[k]) for k in sorted(wanted) if k in values), e)
    return [by_key[k] for k in sorted(by_key)]


def _build(entity: type, req: Any, error: ErrorCode) -> Any:
    known = _request_values(req)
    scalar_entry = req is not None and not dataclasses.is_dataclass(req)
    scalar_key = _scalar_key(entity, req) if scalar_entry else None
    values: dict[str, Any] = {}
    for f in _fields(entity):
        if f.kafka_type == "error_code":
            values[f.name] = error
        elif f.name in ("throttle_time", "throttle_time_ms"):
            values[f.name] = _empty(f)
        elif f.is_array and f.element is not None:
            values[f.name] = tuple(_build(f.element, r, error) for r in _source_list(f, req))
        elif scalar_entry and f.name == scalar_key:
            values[f.name] = req
        elif not f.is_array and f.element is None and _key(f.name) in _KEYS and _key(f.name) in known:
            values[f.name] = known[_key(f.name)]
        else:
            values[f.name] = _empty(f)
    return entity(**values)


def _scalar_key(entity: type, value: Any) -> str | None:
    """The field an entry built from a plain value (a partition index, a key) carries it in."""
    same = [f for f in _fields(entity)
            if f.element is None and not f.is_array and f.name != "error_message" and _same_kind(f, value)]
    for f in same:
        if _key(f.name) in _KEYS:
            return f.name
    return same[0].name if same else None


def _same_kind(f: _Field, value: Any) -> bool:
    if isinstance(value, str):
        return f.kafka_type == "string"
    if isinstance(value, int):
        return f.kafka_type in ("int8", "int16", "int32", "int64")
    if isinstance(value, uuid.UUID):
        return f.kafka_type == "uuid"
    return False


def error_response(api_key: int, version: int, request: Any, error: ErrorCode, message: str | None = None) -> Any:
    """The response of `api_key` v`version` to `request` with `error` in every entry (and
    `message` in its top-level error message, where the response has one)."""
    body = _build(response_type(api_key, version), request, error)
    if api_key == _FETCH and version >= 13:
        # Kafka's FetchRequest.getErrorResponse: from v13 the top-level error alone, no partitions
        # (librdkafka refuses a partition whose records are null), and the request's session id
        body = dataclasses.replace(body, responses=(), session_id=-1 if request is None else request.session_id)
    if message is not None and any(f.name == "error_message" for f in dataclasses.fields(body)):
        body = dataclasses.replace(body, error_message=message)
    return body


@lru_cache(maxsize=1)
def _kafka_messages() -> dict[int, str]:
    """Each error code's default message in Kafka's Errors enum, which kio's ErrorCode keeps as
    the docstring of each member (read from its source: enum members keep no __doc__)."""
    import ast
    import inspect

    from kio.schema import errors

    body = next(n for n in ast.parse(inspect.getsource(errors)).body
                if isinstance(n, ast.ClassDef) and n.name == "ErrorCode").body
    out: dict[int, str] = {}
    for stmt, nxt in zip(body, body[1:]):
        if (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
                and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str) and hasattr(ErrorCode, stmt.targets[0].id)):
            out[int(getattr(ErrorCode, stmt.targets[0].id))] = nxt.value.value
    return out


def kafka_message(code: ErrorCode) -> str | None:
    """The message Kafka's `new ApiError(code)` carries: the error's default message (null for
    NONE)."""
    return _kafka_messages().get(int(code))
