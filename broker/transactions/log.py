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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from ..clock import now_ms
from ..coordinator_codec import Reader, Writer
from ..internal_store import InternalTopicStore, StoredRecord
from ..internal_topics import TRANSACTION_STATE_TOPIC
from .state import TxnState, TxnTransit

if TYPE_CHECKING:
    from ..cluster import Partition

KEY_VERSION = 0

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
    return Writer().i16(KEY_VERSION).string(transactional_id).done()


def _grouped(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    return [(t, sorted(ps)) for t, ps in sorted(by_topic.items())]


def encode_value(v: TxnLogValue | None, version: int = 1) -> bytes | None:
    if v is None:
        return None
    w = Writer().i16(version).i64(v.producer_id).i16(v.producer_epoch).i32(v.timeout_ms).i8(v.state)
    groups = None if v.state == TxnState.EMPTY else _grouped(v.partitions)  # Kafka writes null for Empty
    if version >= 1:
        w.carray_len(None if groups is None else len(groups))
        for topic, ids in groups or ():
            w.cstring(topic).carray_len(len(ids))
            for i in ids:
                w.i32(i)
            w.no_tags()  # tagged fields of the element
    else:
        w.i32(-1 if groups is None else len(groups))
        for topic, ids in groups or ():
            w.string(topic).i32(len(ids))
            for i in ids:
                w.i32(i)
    w.i64(v.last_update_ms).i64(v.start_ms)
    if version >= 1:
        tags: dict[int, bytes] = {}
        if v.prev_producer_id != -1:
            tags[0] = Writer().i64(v.prev_producer_id).done()
        if v.next_producer_id != -1:
            tags[1] = Writer().i64(v.next_producer_id).done()
        if v.client_tv != 0:
            tags[2] = Writer().i16(v.client_tv).done()
        w.tags(tags)
    return w.done()


# --- reading ------------------------------------------------------------------------------

def decode_key(buf: bytes | memoryview) -> str | None:
    """The transactional id, or None for a key of a version we do not know."""
    r = Reader(buf)
    if r.i16() != KEY_VERSION:
        return None
    return r.string_not_null()


def decode_value(buf: bytes | memoryview | None) -> TxnLogValue | None:
    """The value (None for a tombstone); ValueError for a damaged one."""
    if buf is None:
        return None
    r = Reader(buf)
    version = r.i16()
    if version not in (0, 1):
        raise CorruptTxnRecord(f"unknown TransactionLogValue version {version}")
    flexible = version >= 1
    v = TxnLogValue(producer_id=r.i64(), producer_epoch=r.i16(), timeout_ms=r.i32(), state=r.i8())
    n = (r.carray_len() or 0) if flexible else r.i32()
    for _ in range(max(n, 0)):
        topic = r.cstring_not_null() if flexible else r.string_not_null()
        count = (r.carray_len() or 0) if flexible else r.i32()
        for _ in range(max(count, 0)):
            v.partitions.add((topic, r.i32()))
        if flexible:
            r.tags()
    v.last_update_ms = r.i64()
    v.start_ms = r.i64()
    if flexible:
        for tag, data in r.tags().items():
            if tag == 0:
                v.prev_producer_id = Reader(data).i64()
            elif tag == 1:
                v.next_producer_id = Reader(data).i64()
            elif tag == 2:
                v.client_tv = Reader(data).i16()
    if v.state == TxnState.EMPTY:
        v.partitions = set()
    return v


# --- the store ----------------------------------------------------------------------------

class TxnLogStore:
    """Appends and replays the records of __transaction_state (the core's TxnStore)."""

    def __init__(self, broker: Any) -> None:
        config = broker.config
        self.topic_store = InternalTopicStore(
            broker.cluster, TRANSACTION_STATE_TOPIC, clock=now_ms,
            num_partitions=lambda: config["transaction.state.log.num.partitions"],
            # Kafka's TransactionLog configs (min.insync.replicas aside)
            configs={"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024),
                     "compression.type": "uncompressed", "unclean.leader.election.enable": "false"})
        self.topic_store.topic()  # OSError when it cannot be created: no transaction coordinator then
        self.version = 1 if config["transaction.version"] >= 1 else 0

    def partition_of(self, transactional_id: str) -> Partition:
        return self.topic_store.partition_of(transactional_id)

    def coordinator_epoch(self, transactional_id: str) -> int:
        """Kafka's coordinatorEpoch for the id: the leader epoch of its __transaction_state
        partition, which the coordinator takes when it loads the partition on becoming its
        leader (TransactionStateManager.loadTransactionsForTxnTopicPartition). Its markers
        carry it; a partition fences markers of an older one, and DescribeProducers shows it."""
        return self.partition_of(transactional_id).leader_epoch

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
