"""The records of `__transaction_state`, in Kafka's format, and their store (`TxnLogStore`).

Key: `TransactionLogKey` v0, version-prefixed: int16 version (0) + string TransactionalId.
Value: `TransactionLogValue`, version-prefixed; v0 is non-flexible, v1 (written when the
finalized transaction.version is >= 1, as Kafka does) is flexible with three tagged fields:
PreviousProducerId (tag 0), NextProducerId (tag 1), ClientTransactionVersion (tag 2).
A null value is the tombstone of an expired transactional id. TransactionStatus bytes are
TransactionState ids: Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3, CompleteCommit 4,
CompleteAbort 5, Dead 6, PrepareEpochFence 7. Partitions are null for Empty.

Rules of the store: the topic is created when the transaction coordinator is built (compacted,
100 MiB segments, transaction.state.log.num.partitions partitions), one record per state
change, keyed by transactional id on partition `Utils.abs(id.hashCode()) % partitions`, durable
before the change is applied (broker.internal_store: a failed write raises
CoordinatorWriteError, which the core answers NOT_COORDINATOR). Replay keeps the last value of
each id; a record of a key version we do not know is skipped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from kafkalite.protocol.messages import uvarint

from ..clock import now_ms
from ..internal_store import InternalTopicStore, StoredRecord
from ..internal_topics import TRANSACTION_STATE_TOPIC
from .state import TxnState, TxnTransit

if TYPE_CHECKING:
    from ..cluster import Partition

KEY_VERSION = 0

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class CorruptTxnRecord(ValueError):
    pass


@dataclass
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int
    partitions: set[tuple[str, int]] = field(default_factory=set)  # {(topic, partition)}
    last_update_ms: int = -1
    start_ms: int = -1
    prev_producer_id: int = -1
    next_producer_id: int = -1
    client_tv: int = 0


# --- writing ------------------------------------------------------------------------------

def encode_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode("utf-8")
    return _I16.pack(KEY_VERSION) + _I16.pack(len(raw)) + raw


def _grouped(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    return [(t, sorted(ps)) for t, ps in sorted(by_topic.items())]


def encode_value(v: TxnLogValue | None, version: int = 1) -> bytes | None:
    if v is None:
        return None
    out = bytearray(_I16.pack(version))
    out += _I64.pack(v.producer_id)
    out += _I16.pack(v.producer_epoch)
    out += _I32.pack(v.timeout_ms)
    out += _I8.pack(v.state)
    groups = None if v.state == TxnState.EMPTY else _grouped(v.partitions)  # Kafka writes null for Empty
    if version >= 1:
        if groups is None:
            out += uvarint(0)
        else:
            out += uvarint(len(groups) + 1)
            for topic, ids in groups:
                raw = topic.encode("utf-8")
                out += uvarint(len(raw) + 1) + raw
                out += uvarint(len(ids) + 1)
                for i in ids:
                    out += _I32.pack(i)
                out += uvarint(0)  # tagged fields of the element
    else:
        if groups is None:
            out += _I32.pack(-1)
        else:
            out += _I32.pack(len(groups))
            for topic, ids in groups:
                raw = topic.encode("utf-8")
                out += _I16.pack(len(raw)) + raw
                out += _I32.pack(len(ids))
                for i in ids:
                    out += _I32.pack(i)
    out += _I64.pack(v.last_update_ms)
    out += _I64.pack(v.start_ms)
    if version >= 1:
        tags = []
        if v.prev_producer_id != -1:
            tags.append((0, _I64.pack(v.prev_producer_id)))
        if v.next_producer_id != -1:
            tags.append((1, _I64.pack(v.next_producer_id)))
        if v.client_tv != 0:
            tags.append((2, _I16.pack(v.client_tv)))
        out += uvarint(len(tags))
        for tag, data in tags:
            out += uvarint(tag) + uvarint(len(data)) + data
    return bytes(out)


# --- reading ------------------------------------------------------------------------------

class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | memoryview) -> None:
        self.buf = memoryview(buf)
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise CorruptTxnRecord("record runs past its end")
        b = self.buf[self.pos : self.pos + n]
        self.pos += n
        return b

    def fixed(self, s: struct.Struct) -> int:
        return s.unpack(self.take(s.size))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise CorruptTxnRecord("varint too long")


def decode_key(buf: bytes | memoryview) -> str | None:
    """The transactional id, or None for a key of a version we do not know."""
    r = _Reader(buf)
    version = r.fixed(_I16)
    if version != KEY_VERSION:
        return None
    n = r.fixed(_I16)
    return bytes(r.take(n)).decode("utf-8")


def decode_value(buf: bytes | memoryview | None) -> TxnLogValue | None:
    if buf is None:
        return None
    r = _Reader(buf)
    version = r.fixed(_I16)
    if version not in (0, 1):
        raise CorruptTxnRecord(f"unknown TransactionLogValue version {version}")
    flexible = version >= 1
    v = TxnLogValue(producer_id=r.fixed(_I64), producer_epoch=r.fixed(_I16), timeout_ms=r.fixed(_I32),
                    state=r.fixed(_I8))
    n = r.uvarint() - 1 if flexible else r.fixed(_I32)
    for _ in range(max(n, 0)):
        if flexible:
            topic = bytes(r.take(r.uvarint() - 1)).decode("utf-8")
            count = r.uvarint() - 1
        else:
            topic = bytes(r.take(r.fixed(_I16))).decode("utf-8")
            count = r.fixed(_I32)
        for _ in range(max(count, 0)):
            v.partitions.add((topic, r.fixed(_I32)))
        if flexible:
            _skip_tags(r)
    v.last_update_ms = r.fixed(_I64)
    v.start_ms = r.fixed(_I64)
    if flexible:
        for _ in range(r.uvarint()):
            tag = r.uvarint()
            data = r.take(r.uvarint())
            if tag == 0:
                v.prev_producer_id = _I64.unpack(data)[0]
            elif tag == 1:
                v.next_producer_id = _I64.unpack(data)[0]
            elif tag == 2:
                v.client_tv = _I16.unpack(data)[0]
    if v.state == TxnState.EMPTY:
        v.partitions = set()
    return v


def _skip_tags(r: _Reader) -> None:
    for _ in range(r.uvarint()):
        r.uvarint()
        r.take(r.uvarint())


# --- the store ----------------------------------------------------------------------------

class TxnLogStore:
    """Appends and replays the records of __transaction_state (the core's TxnStore)."""

    def __init__(self, broker: Any) -> None:
        config = broker.config
        self.topic_store = InternalTopicStore(
            broker.cluster, TRANSACTION_STATE_TOPIC, clock=now_ms,
            num_partitions=lambda: config["transaction.state.log.num.partitions"],
            configs={"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)})
        self.topic_store.topic()  # OSError when it cannot be created: no transaction coordinator then
        self.version = 1 if config["transaction.version"] >= 1 else 0

    def partition_of(self, transactional_id: str) -> Partition:
        return self.topic_store.partition_of(transactional_id)

    def append(self, transactional_id: str, transit: TxnTransit | None) -> None:
        """The transit's state (None: the id's tombstone), durable when this returns; raises
        CoordinatorWriteError when the write fails."""
        value = None
        if transit is not None:
            value = encode_value(TxnLogValue(
                producer_id=transit.producer_id, producer_epoch=transit.producer_epoch,
                timeout_ms=transit.timeout_ms, state=int(transit.state), partitions=set(transit.partitions),
                last_update_ms=transit.last_update_ms, start_ms=transit.start_ms,
                prev_producer_id=transit.prev_producer_id, next_producer_id=transit.next_producer_id,
                client_tv=transit.client_tv), self.version)
        self.topic_store.append(transactional_id, [(encode_key(transactional_id), value)])

    def load(self) -> dict[str, TxnLogValue | None]:
        """The last value of every transactional id in the topic (None: deleted)."""
        values: dict[str, TxnLogValue | None] = {}

        def on_record(record: StoredRecord) -> None:
            tid = decode_key(record.key)
            if tid is not None:
                values[tid] = decode_value(record.value)

        self.topic_store.replay(on_record)
        return values
