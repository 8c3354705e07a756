"""Per-partition producer state: the idempotence and sequence rules of Kafka's ProducerAppendInfo.

For each producer id the partition remembers the epoch and the last five batches it appended
(first/last sequence, first/last offset). On Produce:
- a batch whose epoch is older than the producer's current one gets INVALID_PRODUCER_EPOCH;
- an exact repeat of one of the last five batches is acknowledged with its original offset
  and is not appended again;
- with a new epoch the first sequence must be 0, with the same epoch it must follow the last
  sequence (int32 wrap-around included), else OUT_OF_ORDER_SEQUENCE_NUMBER; a producer the
  partition has no state for may start at any sequence (state expired or deleted).
Transactional bookkeeping (the first offset of each open transaction, which bounds the last
stable offset) lives here too, since it is per producer and per partition. A transaction
marker (Kafka's ProducerAppendInfo.appendEndTxnMarker) must not carry an epoch older than the
producer's (INVALID_PRODUCER_EPOCH) nor a coordinator epoch older than the last one seen
(TRANSACTION_COORDINATOR_FENCED); it closes the open transaction, takes the marker's epoch
(a newer epoch forgets the retained batches, as the client restarts its sequences at 0) and
reports the first offset of the transaction it closed, if there was one, so an abort can be
recorded in the aborted-transaction index.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from kafkalite.protocol.batch import INT32_MAX

NUM_BATCHES_TO_RETAIN = 5
NO_EPOCH = -1


class ProduceError(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(slots=True)
class BatchMeta:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    epoch: int = NO_EPOCH
    batches: deque = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    # offset of the first batch of the transaction now open on this partition, else None
    current_txn_first_offset: int | None = None
    coordinator_epoch: int = -1
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMeta | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStates:
    """The producer state of one partition."""

    def __init__(self) -> None:
        self.entries: dict[int, ProducerStateEntry] = {}

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> BatchMeta | None:
        """Validate an idempotent batch before it is appended.

        Returns the earlier batch when this one repeats it (acknowledge, do not append);
        raises ProduceError when it must be refused."""
        entry = self.entries.get(producer_id)
        if entry is None:
            return None
        if epoch < entry.epoch:
            raise ProduceError(
                ErrorCode.invalid_producer_epoch,
                f"epoch {epoch} is older than the current epoch {entry.epoch} of producer {producer_id}",
            )
        dup = entry.find_duplicate(epoch, first_seq, last_seq)
        if dup is not None:
            return dup
        if epoch != entry.epoch:
            if first_seq != 0 and entry.epoch != NO_EPOCH:
                raise ProduceError(
                    ErrorCode.out_of_order_sequence_number,
                    f"new epoch {epoch} of producer {producer_id} must start at sequence 0, not {first_seq}",
                )
        elif entry.batches and not in_sequence(entry.last_seq, first_seq):
            raise ProduceError(
                ErrorCode.out_of_order_sequence_number,
                f"producer {producer_id} sent sequence {first_seq} after {entry.last_seq}",
            )
        return None

    def entry(self, producer_id: int) -> ProducerStateEntry:
        e = self.entries.get(producer_id)
        if e is None:
            e = self.entries[producer_id] = ProducerStateEntry(producer_id)
        return e

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> None:
        """Raises ProduceError when a marker for this producer must be refused."""
        entry = self.entries.get(producer_id)
        if entry is None:
            return
        if epoch < entry.epoch:
            raise ProduceError(ErrorCode.invalid_producer_epoch,
                               f"marker epoch {epoch} is older than the current epoch {entry.epoch} of producer {producer_id}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise ProduceError(ErrorCode.transaction_coordinator_fenced,
                               f"marker coordinator epoch {coordinator_epoch} is older than {entry.coordinator_epoch}")

    def complete_txn(self, producer_id: int, epoch: int, coordinator_epoch: int, timestamp: int) -> int | None:
        """Apply a marker (after it is appended); returns the first offset of the transaction
        it closed, or None when the producer had no open transaction on this partition."""
        e = self.entry(producer_id)
        first = e.current_txn_first_offset
        if epoch != e.epoch:
            e.epoch = epoch
            e.batches.clear()
        e.current_txn_first_offset = None
        e.coordinator_epoch = coordinator_epoch
        e.last_timestamp = timestamp
        return first

    def in_transaction(self, producer_id: int) -> bool:
        e = self.entries.get(producer_id)
        return e is not None and e.current_txn_first_offset is not None

    def last_stable_offset(self, high_watermark: int) -> int:
        """Kafka's last stable offset: the first offset of the oldest open transaction, or the
        high watermark when none is open. The one place it is computed."""
        first = self.first_unstable_offset()
        return high_watermark if first is None else first

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction open on this partition."""
        first = None
        for e in self.entries.values():
            f = e.current_txn_first_offset
            if f is not None and (first is None or f < first):
                first = f
        return first

    def expire(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers idle for longer than producer.id.expiration.ms, except those with a
        transaction open on this partition. Returns the producer ids removed."""
        gone = [pid for pid, e in self.entries.items()
                if e.current_txn_first_offset is None and e.last_timestamp >= 0
                and now_ms - e.last_timestamp > expiration_ms]
        for pid in gone:
            del self.entries[pid]
        return gone

    # --- snapshots (written at shutdown, so a restart replays only what came after) --------
    def to_snapshot(self) -> bytes:
        return json.dumps({"version": 1, "entries": [
            [e.producer_id, e.epoch, e.coordinator_epoch, e.last_timestamp, e.current_txn_first_offset,
             [[b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp] for b in e.batches]]
            for e in self.entries.values()]}, separators=(",", ":")).encode()

    @classmethod
    def from_snapshot(cls, blob: bytes) -> "ProducerStates":
        data = json.loads(blob)
        if data.get("version") != 1:
            raise ValueError(f"unknown producer snapshot version {data.get('version')!r}")
        states = cls()
        for pid, epoch, cepoch, ts, txn_first, batches in data["entries"]:
            e = ProducerStateEntry(pid, epoch, coordinator_epoch=cepoch, last_timestamp=ts,
                                   current_txn_first_offset=txn_first)
            for b in batches:
                e.batches.append(BatchMeta(*b))
            states.entries[pid] = e
        return states

    def record_batch(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
                     first_offset: int, last_offset: int, timestamp: int, *,
                     transactional: bool = False) -> ProducerStateEntry:
        """Update after an append (also used when replaying the log on startup). The first
        transactional batch of a producer opens its transaction on this partition at
        `first_offset`, which holds the last stable offset until the marker."""
        e = self.entry(producer_id)
        if epoch != e.epoch:
            e.epoch = epoch
            e.batches.clear()
        if first_seq >= 0:
            e.batches.append(BatchMeta(first_seq, last_seq, first_offset, last_offset, timestamp))
        e.last_timestamp = timestamp
        if transactional and e.current_txn_first_offset is None:
            e.current_txn_first_offset = first_offset
        return e
