"""The differ's machinery: build raw requests from plain values, record a conversation's
responses, normalise them, and compare two transcripts field by field.

A conversation is a function `conv(c: Conversation)` that sends requests through
protocol/client.py with `c.send(api_key, version, **fields)` and may read the returned kio
response to build later requests (topic ids, producer ids, member ids). Every recorded answer
is turned into plain values (dicts, lists, ints, strings), then normalised: what legitimately
differs between two brokers (cluster and node ids, hosts and ports, topic ids, producer ids,
member ids, session ids, wall-clock timestamps, throttle times, the text of error messages
(whether there is one, null or "" is compared), record-batch CRCs) becomes a stable placeholder, and the conversation's fresh resource names (topics,
groups, transactional ids) go back to their labels. Two brokers answered alike when their
normalised transcripts are equal.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import socket
import time
import typing
import uuid
from functools import lru_cache
from typing import Any, Callable

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkalite.protocol.client import WireClient, decode_response
from kafkalite.protocol.messages import _converter
from kafkalite.protocol.batch import iter_batches
from kafkalite.protocol.records import decode_records

MS = datetime.timedelta(milliseconds=1)
_MISSING = dataclasses.MISSING

# ------------------------------------------------------------------ building requests


@lru_cache(maxsize=None)
def _hints(entity: type) -> dict[str, Any]:
    return typing.get_type_hints(entity)


def _entity_of(tp) -> tuple[type | None, bool]:
    """(nested entity type, is a sequence) for a field type, or (None, False)."""
    origin = typing.get_origin(tp)
    if origin is tuple:
        inner = typing.get_args(tp)[0]
        if dataclasses.is_dataclass(inner):
            return inner, True
        return None, True
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _entity_of(args[0])
    if dataclasses.is_dataclass(tp):
        return tp, False
    return None, False


def _nullable(tp) -> bool:
    return type(None) in typing.get_args(tp)


def build(entity: type, values: dict[str, Any]) -> Any:
    """Build a kio entity from plain values, for whichever version `entity` is: keys the version
    lacks are dropped, nested entities may be dicts (lists of dicts for arrays), ints become
    timedeltas/error codes where kio wants them. A required field left out becomes an empty
    array, null, an empty string or false; a required number left out is an error."""
    hints = _hints(entity)
    kwargs = {}
    for f in dataclasses.fields(entity):
        tp = hints[f.name]
        if f.name in values:
            v = values[f.name]
            nested, seq = _entity_of(tp)
            if nested is not None and v is not None:
                v = tuple(build(nested, x) if isinstance(x, dict) else x for x in v) if seq else (
                    build(nested, v) if isinstance(v, dict) else v)
            elif seq and v is not None:
                v = tuple(v)
            else:
                conv = _converter(f)
                if conv is not None and v is not None:
                    v = conv(v)
            kwargs[f.name] = v
        elif f.default is _MISSING and f.default_factory is _MISSING:
            nested, seq = _entity_of(tp)
            if seq:
                kwargs[f.name] = ()
            elif _nullable(tp):
                kwargs[f.name] = None
            elif tp is str:
                kwargs[f.name] = ""
            elif tp is bool:
                kwargs[f.name] = False
            else:
                raise TypeError(f"{entity.__name__} v{entity.__version__}: field {f.name} is required")
    return entity(**kwargs)


def request(api_key: int, version: int, **fields: Any) -> Any:
    return build(load_request_schema(api_key, version), fields)


# ------------------------------------------------------------------ plain values


def plain(value: Any, field: str = "") -> Any:
    """A kio response as dicts, lists and scalars. Record batches are decoded (see `_batches`)."""
    if dataclasses.is_dataclass(value):
        return {f.name: plain(getattr(value, f.name), f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [plain(v, field) for v in value]
    if isinstance(value, ErrorCode):
        return value.name.upper()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.timedelta):
        return int(value / MS)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        if field == "records":
            return _batches(bytes(value))
        return bytes(value).hex()
    return value


def _batches(data: bytes) -> list[dict]:
    """Decoded record batches: header fields that mean something, and every record. The CRC,
    the batch length and the timestamps are left out (they follow from what is kept, the
    codec's byte output and the wall clock)."""
    out = []
    for pos, h in iter_batches(data) if data else ():
        batch = {
            "base_offset": h.base_offset, "partition_leader_epoch": h.partition_leader_epoch,
            "compression": h.compression, "timestamp_type": h.timestamp_type,
            "transactional": h.is_transactional, "control": h.is_control,
            "last_offset_delta": h.last_offset_delta, "producer_id": h.producer_id,
            "producer_epoch": h.producer_epoch, "base_sequence": h.base_sequence,
            "record_count": h.record_count,
        }
        try:
            batch["records"] = [
                {"offset": r.offset, "key": _text(r.key), "value": _text(r.value),
                 "headers": [[k, _text(v)] for k, v in r.headers]}
                for r in decode_records(data, pos)]
        except Exception as exc:  # noqa: BLE001 - shown as a difference, not a crash
            batch["records"] = f"undecodable: {type(exc).__name__}"
        out.append(batch)
    return out


def _text(b: bytes | None) -> str | None:
    if b is None:
        return None
    try:
        return b.decode()
    except UnicodeDecodeError:
        return "0x" + b.hex()


# ------------------------------------------------------------------ normalising

# Fields whose value is the broker's own and never comparable.
DROPPED = {"throttle_time", "throttle_time_ms", "host", "port", "rack", "cluster_id", "message"}
# Error messages: their text is compared where a conversation records it (`error_text`); here
# whether there is one: null, "" or "<text>" (a client may print null and "" differently, or
# take a null as "no error").
MESSAGES = {"error_message", "batch_index_error_message"}
# Fields whose values are identities: each distinct value becomes NAME#n in order of first
# appearance, so equality between them (this id == that id) is still compared.
ALIASED = {
    "node_id": "node", "leader_id": "node", "controller_id": "node", "broker_id": "node",
    "replica_nodes": "node", "isr_nodes": "node", "offline_replicas": "node",
    "eligible_leader_replicas": "node", "last_known_elr": "node", "coordinator_id": "node",
    "topic_id": "topic-id", "producer_id": "producer", "member_id": "member",
    "leader": "member", "session_id": "session", "member_epoch_owner": "member",
    "group_instance_id": "instance", "incarnation_id": "incarnation",
}
# Values that mean "none" keep their value (0 is a real node or producer id).
_NONE_VALUES = {None, -1, "", "00000000-0000-0000-0000-000000000000"}
_WALL_CLOCK = 1_000_000_000_000  # ms since the epoch, 2001: any larger time field is a clock reading


def _keyed(items: list) -> Any:
    """A list of named entries (configs, synonyms, topics, api keys) becomes a dict keyed by
    name, so that one entry more or less is one difference, not a shifted list."""
    for key in ("name", "topic", "api_key", "partition_index", "member_id"):
        if items and all(isinstance(x, dict) and key in x for x in items):
            names = [x[key] for x in items]
            if len(set(map(repr, names))) == len(names):
                return {f"{key}={n}": x for n, x in zip(names, items)}
    return items


class Normaliser:
    def __init__(self, names: dict[str, str]):
        self.names = {actual: label for label, actual in names.items()}
        self.aliases: dict[str, dict[Any, str]] = {}

    def alias(self, kind: str, value: Any) -> Any:
        if value in _NONE_VALUES or (kind == "session" and value == 0):  # session id 0: no session
            return value
        table = self.aliases.setdefault(kind, {})
        if value not in table:
            table[value] = f"<{kind}#{len(table) + 1}>"
        return table[value]

    def __call__(self, value: Any, field: str = "") -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if k in DROPPED:
                    continue
                out[k] = v if k in MESSAGES and v in (None, "") else "<text>" if k in MESSAGES else self(v, k)
            return out
        if isinstance(value, list):
            items = [self(v, field) for v in value]
            return _keyed(items)
        kind = ALIASED.get(field)
        if kind is not None:
            return self.alias(kind, value)
        if isinstance(value, str):
            return self._names(value)
        if isinstance(value, int) and not isinstance(value, bool) and value > _WALL_CLOCK and (
                "time" in field or field.endswith("_ms")):
            return "<wall-clock>"
        return value

    def _names(self, s: str) -> str:
        if s in self.names:
            return self.names[s]
        for actual, label in self.names.items():
            if actual in s:
                s = s.replace(actual, label)
        return s


# ------------------------------------------------------------------ conversations


@dataclasses.dataclass
class Undecodable:
    """A response kio could not decode: compared as its bytes."""
    decode_error: str
    body: str


class Conversation:
    """One run of a conversation against one broker."""

    def __init__(self, bootstrap: str, names: dict[str, str], timeout: float = 20.0):
        self.bootstrap = bootstrap
        self.names = names
        self.timeout = timeout
        self.transcript: list[tuple[str, Any]] = []
        self.normalise = Normaliser(names)
        self._wire: WireClient | None = None
        self.context: dict[str, Any] = {}
        # set by the runner: the version of the conversation's own API, which end of the common
        # ranges this run takes ("lowest" / "highest"), and those ranges
        self.v = 0
        self.end = "highest"
        self.versions: dict[int, tuple[int, int]] = {}

    def ver(self, api_key: int, cap: int | None = None) -> int:
        """The version this run sends `api_key` at: the lowest or highest both brokers serve."""
        lo, hi = self.versions[api_key]
        v = lo if self.end == "lowest" else hi
        return min(v, cap) if cap is not None else v

    # names
    def __getitem__(self, label: str) -> str:
        return self.names[label]

    @property
    def wire(self) -> WireClient:
        if self._wire is None:
            self._wire = WireClient(self.bootstrap, timeout=self.timeout, client_id="differ")
        return self._wire

    def reconnect(self) -> None:
        if self._wire is not None:
            self._wire.close()
        self._wire = None

    def close(self) -> None:
        self.reconnect()

    def send(self, api_key: int, version: int, *, label: str = "", record: bool = True, **fields: Any) -> Any:
        """Send one request; record its normalised response under `label`; return the kio response.

        A coordinator that is still loading (a fresh Kafka loads its group and transaction
        coordinators in the background) is retried, unrecorded, as every client does."""
        req = request(api_key, version, **fields)
        deadline = time.monotonic() + self.timeout
        while True:
            resp = self._request(req)
            if getattr(resp, "error_code", None) not in _LOADING or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if record:
            self.record(label or f"{type(req).__name__} v{version}", resp)
        return resp

    def _request(self, req: Any) -> Any:
        """The decoded response, or Undecodable with the body's bytes when kio cannot read it
        (kio refuses some values Kafka sends, e.g. a -1 timestamp in DescribeTransactions)."""
        w = self.wire
        w.correlation_id += 1
        w.send_raw(w.encode(req, w.correlation_id))
        frame = w.recv_frame()
        try:
            return decode_response(type(req).__api_key__, type(req).__version__, frame, w.correlation_id)
        except Exception as exc:  # noqa: BLE001
            return Undecodable(type(exc).__name__, frame[4:].hex())

    def begin(self, api_key: int, version: int, **fields: Any) -> tuple[WireClient, Any]:
        """Send a request that will wait (a JoinGroup during a rebalance) on a connection of its
        own; `finish` reads and records its answer."""
        w = WireClient(self.bootstrap, timeout=self.timeout, client_id="differ")
        req = request(api_key, version, **fields)
        w.correlation_id += 1
        w.send_raw(w.encode(req, w.correlation_id))
        return w, req

    def finish(self, pending: tuple[WireClient, Any], label: str) -> Any:
        w, req = pending
        try:
            resp = decode_response(type(req).__api_key__, type(req).__version__, w.recv_frame(), w.correlation_id)
        finally:
            w.close()
        self.record(label, resp)
        return resp

    def send_expect_close(self, api_key: int, version: int, *, label: str = "", **fields: Any) -> None:
        """Send a request after which the broker may close the connection (acks=0 errors, bad frames):
        records whether it did, and starts a new connection."""
        req = request(api_key, version, **fields)
        self.wire.send_only(req)
        self.record(label or f"{type(req).__name__} v{version} (connection)", self._closed_state())
        self.reconnect()

    def send_raw(self, payload: bytes, *, label: str) -> None:
        """Send a hand-made frame; record whether the connection was closed or what came back."""
        self.wire.send_raw(payload)
        self.record(label, self._closed_state())
        self.reconnect()

    def _closed_state(self) -> str:
        sock = self.wire.sock
        sock.settimeout(1.5)
        try:
            data = sock.recv(4)
        except socket.timeout:
            return "open, no response"
        except OSError:
            return "closed"
        return "closed" if not data else "answered"

    def record(self, label: str, value: Any) -> None:
        self.transcript.append((label, self.normalise(plain(value))))

    def until(self, api_key: int, version: int, ok: Callable[[Any], bool], *, label: str = "",
              record: bool = True, timeout: float = 20.0, **fields: Any) -> Any:
        """Repeat a request until `ok(response)` (e.g. a coordinator is ready; a topic's leader is
        known), then record the last answer. Kafka does some things asynchronously that
        kafkalite does at once; what is compared is the settled answer."""
        deadline = time.monotonic() + timeout
        while True:
            resp = self.send(api_key, version, record=False, **fields)
            if ok(resp) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if record:
            self.record(label or f"{type(resp).__name__} v{version}", resp)
        return resp

    # --- helpers every conversation needs (their answers are compared too)

    def create_topics(self, *specs: tuple[str, int] | tuple[str, int, dict], version: int | None = None) -> Any:
        version = self.ver(19) if version is None else version
        topics = []
        for spec in specs:
            label, parts, *rest = spec
            configs = rest[0] if rest else {}
            topics.append({"name": self[label], "num_partitions": parts, "replication_factor": 1,
                           "assignments": [], "configs": [{"name": k, "value": v} for k, v in configs.items()]})
        resp = self.send(19, version, label=f"CreateTopics v{version}", topics=topics, timeout=30000,
                         validate_only=False)
        labels = [s[0] for s in specs]
        found = self.wait_for_leaders(*labels)
        # Kafka's metadata cache knows the leader a moment before its replica manager serves the
        # partition (NOT_LEADER_OR_FOLLOWER meanwhile): wait until every partition answers
        for _lb, t in found.items():
            self.until(2, 7, lambda r: all(p.error_code == ErrorCode.none for tt in r.topics for p in tt.partitions),
                       record=False, replica_id=-1, isolation_level=0, timeout=1000, topics=[
                           {"name": t.name, "partitions": [{"partition_index": p.partition_index, "timestamp": -1,
                                                            "current_leader_epoch": -1} for p in t.partitions]}])
        return resp

    def wait_for_leaders(self, *labels: str) -> dict[str, Any]:
        """Poll Metadata (not recorded) until every partition of these topics has a leader;
        returns label -> topic metadata."""

        def ready(resp):
            return all(t.error_code == ErrorCode.none and t.partitions and
                       all(p.leader_id >= 0 and p.error_code == ErrorCode.none for p in t.partitions)
                       for t in resp.topics)

        resp = self.until(3, 12, ready, record=False,
                          topics=[{"name": self[lb], "topic_id": None} for lb in labels],
                          allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        found = {self.normalise.names.get(t.name, t.name): t for t in resp.topics}
        for lb, t in found.items():
            self.context[f"topic_id:{lb}"] = t.topic_id
        return found

    def topic_id(self, label: str) -> uuid.UUID:
        key = f"topic_id:{label}"
        if key not in self.context:
            self.wait_for_leaders(label)
        return self.context[key]

    def find_coordinator(self, key_type: int, label: str, version: int = 4, record: bool = True) -> Any:
        """FindCoordinator until the coordinator is available (Kafka creates its internal topic on
        the first lookup and answers COORDINATOR_NOT_AVAILABLE meanwhile)."""
        return self.until(10, version, lambda r: _coordinators_ready(r), record=record,
                          key=self[label], key_type=key_type, coordinator_keys=[self[label]])


_LOADING = {ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available, ErrorCode.not_coordinator}


def _coordinators_ready(resp) -> bool:
    if hasattr(resp, "coordinators") and resp.coordinators:
        return all(c.error_code == ErrorCode.none for c in resp.coordinators)
    return getattr(resp, "error_code", ErrorCode.none) == ErrorCode.none


def run(conv: Callable[[Conversation], None], bootstrap: str, labels: tuple[str, ...], tag: str, *,
        api_key: int, end: str, versions: dict[int, tuple[int, int]]) -> list[tuple[str, Any]]:
    """Run `conv` once against `bootstrap` with fresh names for `labels`, every API at the `end`
    ("lowest" / "highest") of its common range; the normalised transcript."""
    names = {lb: f"d-{tag}-{lb}-{uuid.uuid4().hex[:10]}" for lb in labels}
    c = Conversation(bootstrap, names)
    c.versions, c.end = versions, end
    c.v = c.ver(api_key)
    try:
        conv(c)
    finally:
        c.close()
    return c.transcript


def served(bootstrap: str) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) version a broker advertises."""
    with WireClient(bootstrap) as w:
        resp = w.request(request(18, 3, client_software_name="differ", client_software_version="1"))
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


def common_versions(reference: str, subject: str) -> dict[int, tuple[int, int]]:
    """api key -> the version range both brokers serve."""
    ref, sub = served(reference), served(subject)
    # Kafka 4.x advertises Produce from v0 but refuses v0-v2 (KAFKA-18659), as kafkalite does
    ref[0] = (max(ref[0][0], 3), ref[0][1])
    return {k: (max(ref[k][0], sub[k][0]), min(ref[k][1], sub[k][1])) for k in ref.keys() & sub.keys()}


# ------------------------------------------------------------------ comparing


@dataclasses.dataclass
class Difference:
    path: str
    reference: Any
    subject: Any

    def __str__(self) -> str:
        return f"{self.path}: kafka={self.reference!r} kafkalite={self.subject!r}"


@dataclasses.dataclass
class Comparison:
    fields: int = 0
    differences: list[Difference] = dataclasses.field(default_factory=list)


def compare(reference: list[tuple[str, Any]], subject: list[tuple[str, Any]]) -> Comparison:
    """Field-by-field comparison of two normalised transcripts; counts the leaves compared."""
    out = Comparison()
    if len(reference) != len(subject):
        out.differences.append(Difference("transcript length", len(reference), len(subject)))
    for i, ((lr, vr), (_ls, vs)) in enumerate(zip(reference, subject)):
        _walk(f"[{i}] {lr}", vr, vs, out)
    return out


def assert_alike(name: str, conv: Any, reference: str, subject: str, end: str,
                 versions: dict[int, tuple[int, int]]) -> None:
    """Run conversation `name` (a conversations.Conversation entry) on both brokers at `end` of the
    common ranges; every field must match but those known.py accepts."""
    from .known import accepted

    tag = f"{conv.api_key}{end[0]}"
    kafka = run(conv.fn, reference, conv.labels, tag, api_key=conv.api_key, end=end, versions=versions)
    ours = run(conv.fn, subject, conv.labels, tag, api_key=conv.api_key, end=end, versions=versions)

    def unexpected_in(result: Comparison) -> list[Difference]:
        return [d for d in result.differences if accepted(name, d.path) is None]

    result = compare(kafka, ours)
    assert result.fields > 0, f"{name}: no fields compared"
    unexpected = unexpected_in(result)
    if unexpected:
        # Kafka itself does not always answer a conversation the same way on a busy machine (a Fetch
        # right after acks=all produces once answered OFFSET_OUT_OF_RANGE with no high watermark on
        # both partitions). So Kafka is asked once more: kafkalite's one transcript must equal one of
        # Kafka's two, field by field; what Kafka's runs differ in is printed.
        kafka_again = run(conv.fn, reference, conv.labels, tag, api_key=conv.api_key, end=end, versions=versions)
        between = [str(d) for d in unexpected_in(compare(kafka, kafka_again))]
        print(f"{name}: Kafka's second run differs from its first in:", *(between or ["nothing"]), sep="\n  ")
        again = compare(kafka_again, ours)
        if not unexpected_in(again):
            return
    assert not unexpected, f"{len(unexpected)} of {result.fields} fields differ:\n" + "\n".join(map(str, unexpected))


def _walk(path: str, a: Any, b: Any, out: Comparison) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() | b.keys():
            if k not in a or k not in b:
                out.fields += 1
                out.differences.append(Difference(f"{path}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                _walk(f"{path}.{k}", a[k], b[k], out)
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.fields += 1
            out.differences.append(Difference(f"{path} (length)", len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(f"{path}[{i}]", x, y, out)
        return
    out.fields += 1
    if a != b:
        out.differences.append(Difference(path, a, b))
