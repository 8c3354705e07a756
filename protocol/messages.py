"""Request/response bodies through kio, and the request/response headers.

A frame is the bytes after the 4-byte size prefix. `parse_request` reads the header and the
body; `encode_response` writes a size-prefixed response with the right header version.
`make` builds any kio entity from keyword arguments, dropping fields the entity's version
does not have and converting plain ints to the enum/timedelta types kio expects, so one
handler can build its response for every version it serves.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import types
import typing
from functools import lru_cache
from typing import Any, Callable

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from .api_keys import ApiKey
from .metadata_encoding import encode_metadata_response

# a request frame as read from a connection, or a view of part of one
Frame = bytes | bytearray | memoryview

__all__ = [
    "ErrorCode",
    "RequestHeader",
    "peek_header",
    "parse_request",
    "encode_response",
    "encode_response_chunks",
    "EncodedBody",
    "uvarint",
    "make",
    "request_type",
    "response_type",
    "API_VERSIONS_KEY",
]

API_VERSIONS_KEY = ApiKey.API_VERSIONS
_HEAD = struct.Struct(">hhi")
# size prefix + response header v0 (correlation id) / v1 (correlation id, no tagged fields)
_HEAD_PLAIN = struct.Struct(">ii")
_HEAD_FLEX = struct.Struct(">iiB")


class RequestHeader:
    """What every request starts with, read without kio (it is needed before the body type)."""

    __slots__ = ("api_key", "api_version", "correlation_id", "client_id")

    def __init__(self, api_key: int, api_version: int, correlation_id: int, client_id: str | None):
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id

    def __repr__(self) -> str:
        return (f"RequestHeader(api_key={self.api_key}, api_version={self.api_version}, "
                f"correlation_id={self.correlation_id}, client_id={self.client_id!r})")


class MalformedRequest(Exception):
    """The frame cannot be a Kafka request: the connection should be closed."""


def peek_header(frame: bytes | memoryview) -> tuple[RequestHeader, int]:
    """Read api key, version, correlation id and client id; returns the header and the size read
    so far (tagged fields of a flexible header are not included)."""
    if len(frame) < 10:
        raise MalformedRequest(f"frame of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _HEAD.unpack_from(frame, 0)
    (n,) = struct.unpack_from(">h", frame, 8)
    if n < 0:
        client_id, pos = None, 10
    else:
        if 10 + n > len(frame):
            raise MalformedRequest("client id runs past the frame")
        client_id = bytes(frame[10 : 10 + n]).decode("utf-8", errors="replace")
        pos = 10 + n
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


@lru_cache(maxsize=None)
def request_type(api_key: int, version: int) -> Any:
    return load_request_schema(api_key, version)


@lru_cache(maxsize=None)
def response_type(api_key: int, version: int) -> Any:
    return load_response_schema(api_key, version)


@lru_cache(maxsize=None)
def _reader(entity: type) -> Callable:
    return entity_reader(entity)


@lru_cache(maxsize=None)
def _writer(entity: type) -> Callable:
    return entity_writer(entity)


def _skip_tagged_fields(frame: Frame, pos: int) -> int:
    count, pos = _read_uvarint(frame, pos)
    for _ in range(count):
        _tag, pos = _read_uvarint(frame, pos)
        size, pos = _read_uvarint(frame, pos)
        pos += size
    if pos > len(frame):
        raise MalformedRequest("tagged fields run past the frame")
    return pos


def uvarint(n: int) -> bytes:
    """An unsigned varint (flexible versions' lengths and tags; also the coordinators' records)."""
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_uvarint(buf: Frame, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(buf):
            raise MalformedRequest("varint runs past the frame")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise MalformedRequest("varint too long")


def parse_request(frame: bytes | memoryview, header: RequestHeader, header_size: int) -> Any:
    """Decode the body of a request whose header was read by `peek_header`.

    Raises MalformedRequest when the body does not decode."""
    rtype = request_type(header.api_key, header.api_version)
    pos = header_size
    if rtype.__flexible__:
        pos = _skip_tagged_fields(frame, pos)
    _check_lengths(rtype, frame, pos)
    try:
        body, _size = _reader(rtype)(frame, pos)
    except Exception as exc:  # kio raises a variety of errors on garbage
        raise MalformedRequest(f"cannot decode {rtype.__name__} v{header.api_version}: {exc!r}") from exc
    null = _null_in_non_nullable(body)
    if null is not None:
        # kio reads length -1 as None whatever the schema says; Kafka's generated readers
        # refuse it ("non-nullable field ... was serialized as null")
        raise MalformedRequest(f"non-nullable field {null} of {rtype.__name__} v{header.api_version} "
                               f"was serialized as null")
    return body


# --- array lengths before kio -------------------------------------------------------------
#
# kio's native reader reserves room for an array's declared length before reading it, and an
# allocation failure there aborts the whole process. So every array length is checked against
# the bytes left in the frame first (each element takes at least one byte), in one walk over
# the request's layout that reads lengths only.

_FIXED = {"int8": 1, "bool": 1, "int16": 2, "int32": 4, "timedelta_i32": 4, "int64": 8,
          "timedelta_i64": 8, "uuid": 16, "float64": 8, "uint16": 2, "uint32": 4, "uint64": 8}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@lru_cache(maxsize=None)
def _layout(entity: type) -> tuple[tuple[str, Any, bool], ...]:
    """(kind, detail, is_array) for each inline field: kind is 'fixed' (detail: size),
    'string', 'bytes' or 'entity' (detail: the entity type). Tagged fields are not inline."""
    out: list[tuple[str, Any, bool]] = []
    for f in dataclasses.fields(entity):
        if "tag" in f.metadata:
            continue
        tp = f.type
        nullable = isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union
        if nullable:
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        is_array = typing.get_origin(tp) is tuple
        inner = typing.get_args(tp)[0] if is_array else tp
        kafka_type = f.metadata.get("kafka_type")
        if dataclasses.is_dataclass(inner):
            # a nullable struct is preceded by an int8 marker (-1: null)
            out.append(("nullable_entity" if nullable and not is_array else "entity", inner, is_array))
        elif kafka_type in _FIXED:
            out.append(("fixed", _FIXED[kafka_type], is_array))
        elif kafka_type == "string":
            out.append(("string", None, is_array))
        elif kafka_type in ("bytes", "records"):
            out.append(("bytes", None, is_array))
        else:
            raise TypeError(f"{entity.__name__}.{f.name}: no layout for {kafka_type!r}")
    return tuple(out)


@lru_cache(maxsize=None)
def _fixed_size(entity: type) -> int | None:
    """Size of an entity made of fixed-size fields only (tagged section aside), else None."""
    layout = _layout(entity)
    if all(kind == "fixed" and not is_array for kind, _d, is_array in layout):
        return sum(d for _k, d, _a in layout)
    return None


def _check_lengths(entity: Any, frame: Frame, pos: int) -> int:
    flexible = entity.__flexible__
    end = len(frame)
    for kind, detail, is_array in _layout(entity):
        count = 1
        if is_array:
            if flexible:
                n, pos = _read_uvarint(frame, pos)
                n -= 1
            else:
                if pos + 4 > end:
                    raise MalformedRequest("array length runs past the frame")
                (n,) = _I32.unpack_from(frame, pos)
                pos += 4
            if n < 0:
                continue
            if n > end - pos:
                raise MalformedRequest(f"array of {n} elements in {end - pos} remaining bytes")
            count = n
        if kind == "fixed":
            pos += detail * count
        elif kind == "nullable_entity":
            if pos >= end:
                raise MalformedRequest("struct marker runs past the frame")
            pos += 1
            # kio takes only -1 as null (Kafka: any negative marker); the walk follows the
            # reader it guards, so that it looks at the same bytes kio will
            if frame[pos - 1] != 0xFF:
                pos = _check_lengths(detail, frame, pos)
        elif kind == "entity":
            fixed = _fixed_size(detail)
            if fixed is None:
                for _ in range(count):
                    pos = _check_lengths(detail, frame, pos)
            elif not detail.__flexible__:
                pos += fixed * count
            else:
                # the common case of Fetch/ListOffsets partitions: numbers, then (mostly empty) tags
                for _ in range(count):
                    pos += fixed
                    if pos < end and frame[pos] == 0:
                        pos += 1
                    else:
                        pos = _skip_tagged_fields(frame, pos)
        else:
            for _ in range(count):
                if flexible:
                    size, pos = _read_uvarint(frame, pos)
                    size -= 1
                elif kind == "string":
                    if pos + 2 > end:
                        raise MalformedRequest("string length runs past the frame")
                    (size,) = _I16.unpack_from(frame, pos)
                    pos += 2
                else:
                    if pos + 4 > end:
                        raise MalformedRequest("bytes length runs past the frame")
                    (size,) = _I32.unpack_from(frame, pos)
                    pos += 4
                if size > 0:
                    pos += size
        if pos > end:
            raise MalformedRequest("request runs past the frame")
    if flexible:
        pos = _skip_tagged_fields(frame, pos)
    return pos


@lru_cache(maxsize=None)
def _null_plan(entity: Any) -> tuple[tuple[str, bool, Any, bool], ...]:
    """(field, nullable, nested entity type, is an array) for every field that could hold None
    or nested entities; plain numbers and booleans are never None and are left out."""
    plan: list[tuple[str, bool, Any, bool]] = []
    for f in dataclasses.fields(entity):
        tp = f.type
        args = typing.get_args(tp)
        nullable = isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union
        if nullable:
            tp = next(a for a in args if a is not type(None))
            args = typing.get_args(tp)
        is_array = typing.get_origin(tp) is tuple
        inner = args[0] if is_array else tp
        nested = inner if dataclasses.is_dataclass(inner) else None
        if isinstance(inner, type) and issubclass(inner, (bool, int, float)) and not is_array and not nullable:
            continue
        plan.append((f.name, nullable, nested, is_array))
    return tuple(plan)


def _null_in_non_nullable(entity: Any) -> str | None:
    # kio's entity classes are hashable (lru_cache keys)
    for name, nullable, nested, is_array in _null_plan(type(entity)):  # type: ignore[arg-type]
        value = getattr(entity, name)
        if value is None:
            if not nullable:
                return name
            continue
        if is_array:
            for item in value:
                if item is None:
                    return f"{name}[]"
                if nested is not None:
                    found = _null_in_non_nullable(item)
                    if found is not None:
                        return f"{name}[].{found}"
        elif nested is not None:
            found = _null_in_non_nullable(value)
            if found is not None:
                return f"{name}.{found}"
    return None


# responses whose entity a module of ours writes byte for byte as kio does, faster (see each)
_BODY_ENCODERS: dict[int, Callable[[int, Any], bytes]] = {ApiKey.METADATA: encode_metadata_response}


class EncodedBody(bytes):
    """A response body a handler encoded itself, byte for byte what kio would write for the
    entity (a hot path's common case: Produce; its tests compare both encodings);
    encode_response adds the size prefix and the header."""

    __slots__ = ()


def encode_response(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    """Size prefix + response header + body.

    ApiVersions responses always use header v0 so that a client that sent a version we do not
    know can still read the answer."""
    by_hand = _BODY_ENCODERS.get(api_key)
    if by_hand is not None and type(body) is not EncodedBody:
        body = EncodedBody(by_hand(version, body))
    if type(body) is EncodedBody:
        if response_type(api_key, version).__flexible__ and api_key != API_VERSIONS_KEY:
            return _HEAD_FLEX.pack(len(body) + 5, correlation_id, 0) + body
        return _HEAD_PLAIN.pack(len(body) + 4, correlation_id) + body
    entity: Any = type(body)
    flexible = entity.__flexible__ and api_key != API_VERSIONS_KEY
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    if flexible:
        buf.write(struct.pack(">i", correlation_id))
        buf.write(b"\0")  # no tagged fields in the header
    else:
        buf.write(struct.pack(">i", correlation_id))
    _writer(entity)(buf, body)
    out = buf.getbuffer()
    struct.pack_into(">i", out, 0, len(out) - 4)
    del out
    return buf.getvalue()


def encode_response_chunks(api_key: int, version: int, correlation_id: int, body: Any) -> list:
    """encode_response for a body holding FileRegions (protocol.regions): the frame as a list
    of bytearrays and regions, in order, the first starting with the size prefix."""
    from .regions import ChunkWriter

    entity: Any = type(body)
    w = ChunkWriter()
    w.write(b"\0\0\0\0")
    w.write(struct.pack(">i", correlation_id))
    if entity.__flexible__ and api_key != API_VERSIONS_KEY:
        w.write(b"\0")  # no tagged fields in the header
    _writer(entity)(w, body)
    chunks = w.finish()
    struct.pack_into(">i", chunks[0], 0, w.size - 4)
    return chunks


# --- building entities -------------------------------------------------------------------

def _converter(f: dataclasses.Field) -> Callable[[Any], Any] | None:
    kafka_type = f.metadata.get("kafka_type")
    if kafka_type == "error_code":
        return lambda v: v if isinstance(v, ErrorCode) else ErrorCode(v)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return lambda v: v if isinstance(v, datetime.timedelta) else datetime.timedelta(milliseconds=v)
    if kafka_type in ("datetime_i64",):
        # -1 means "no time" on the wire; kio writes None as -1
        return lambda v: v if isinstance(v, datetime.datetime) else (
            None if v < 0 else datetime.datetime.fromtimestamp(v / 1000, datetime.timezone.utc))
    return None


@lru_cache(maxsize=None)
def _field_plan(entity: type) -> dict[str, Callable[[Any], Any] | None]:
    return {f.name: _converter(f) for f in dataclasses.fields(entity)}


def make(entity: type, **values: Any) -> Any:
    """Build `entity`, ignoring fields it does not have (older/newer versions)."""
    plan = _field_plan(entity)
    kwargs = {}
    for name, value in values.items():
        if name in plan:
            conv = plan[name]
            kwargs[name] = conv(value) if conv is not None and value is not None else value
    return entity(**kwargs)


def has_field(entity: type, name: str) -> bool:
    return name in _field_plan(entity)
