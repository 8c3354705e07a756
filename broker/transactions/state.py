"""Transaction metadata and its state transitions (Kafka's TransactionMetadata).

A transactional id has one `TransactionMetadata`. Every change goes in two steps, as in
Kafka: `prepare_*` computes the next values as a `TxnTransit` and sets `pending_state`
(which makes concurrent requests answer CONCURRENT_TRANSACTIONS); once the transit is
durable in `__transaction_state`, `complete_transition` applies it (or
`abort_transition` drops it when the write failed). Plain Python, no I/O, no clock of its own.

States and the states they may be entered from:
  Empty             <- Empty, CompleteCommit, CompleteAbort            (InitProducerId)
  Ongoing           <- Ongoing, Empty, CompleteCommit, CompleteAbort   (partitions added)
  PrepareCommit     <- Ongoing                                         (EndTxn commit)
  PrepareAbort      <- Ongoing, PrepareEpochFence, and with TV2 also Empty/Complete*
  CompleteCommit    <- PrepareCommit                                   (markers written)
  CompleteAbort     <- PrepareAbort
  PrepareEpochFence <- Ongoing              (never written: a new incarnation or a timeout)
  Dead              <- Empty, CompleteCommit, CompleteAbort            (id expired)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> "TxnState | None":
        return _BY_NAME.get(name)


_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {v: k for k, v in _NAMES.items()}

S = TxnState
VALID_PREVIOUS = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps Short.MAX_VALUE free so that a producer can always be fenced."""
    return epoch >= SHORT_MAX - 1


class TxnError(Exception):
    """A transition refused with a Kafka error code."""

    def __init__(self, code: ErrorCode, message: str = ""):
        super().__init__(message or code.name)
        self.code = code


@dataclass
class TxnTransit:
    """The values a transition leads to: what is written to __transaction_state."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset
    start_ms: int
    last_update_ms: int
    client_tv: int


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: set = field(default_factory=set)  # {(topic, partition)}
    start_ms: int = -1
    last_update_ms: int = -1
    client_tv: int = 0
    pending_state: TxnState | None = None
    has_failed_epoch_fence: bool = False

    # --- queries --------------------------------------------------------------------------
    @property
    def pending_transition(self) -> bool:
        return self.pending_state is not None

    @property
    def epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    # --- transitions ----------------------------------------------------------------------
    def _transit(self, state: TxnState, **changes) -> TxnTransit:
        if self.pending_state is not None:
            raise RuntimeError(f"{self.transactional_id}: transition to {state.kafka_name} while one to "
                               f"{self.pending_state.kafka_name} is pending")
        if self.state not in VALID_PREVIOUS[state]:
            raise RuntimeError(f"{self.transactional_id}: illegal transition {self.state.kafka_name} -> "
                               f"{state.kafka_name}")
        values: dict[str, Any] = dict(producer_id=self.producer_id, prev_producer_id=self.prev_producer_id,
                      next_producer_id=self.next_producer_id, producer_epoch=self.producer_epoch,
                      last_producer_epoch=self.last_producer_epoch, timeout_ms=self.timeout_ms, state=state,
                      partitions=frozenset(self.partitions), start_ms=self.start_ms,
                      last_update_ms=self.last_update_ms, client_tv=self.client_tv)
        values.update(changes)
        self.pending_state = state
        return TxnTransit(**values)

    def prepare_fence_producer_epoch(self) -> TxnTransit:
        if self.producer_epoch == SHORT_MAX:
            raise RuntimeError("cannot fence a producer whose epoch is Short.MAX_VALUE")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._transit(S.PREPARE_EPOCH_FENCE, producer_epoch=bumped)

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None, now: int) -> TxnTransit:
        if self.epoch_exhausted:
            raise RuntimeError(f"no producer epochs left for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            # a retry of an InitProducerId that succeeded: hand out the same epoch again
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise TxnError(ErrorCode.producer_fenced,
                           f"expected epoch {expected_epoch} is neither the current epoch {self.producer_epoch} "
                           f"nor the previous one {self.last_producer_epoch}")
        return self._transit(S.EMPTY, producer_epoch=epoch, last_producer_epoch=last, timeout_ms=timeout_ms,
                             partitions=frozenset(), start_ms=-1, last_update_ms=now)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now: int,
                                     record_last_epoch: bool) -> TxnTransit:
        if self.has_pending_transaction():
            raise RuntimeError("cannot rotate the producer id while a transaction is pending")
        return self._transit(S.EMPTY, producer_id=new_producer_id, prev_producer_id=self.producer_id,
                             producer_epoch=0,
                             last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1, last_update_ms=now)

    def prepare_add_partitions(self, added, now: int, client_tv: int) -> TxnTransit:
        start = now if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) else self.start_ms
        return self._transit(S.ONGOING, partitions=frozenset(self.partitions | set(added)), start_ms=start,
                             last_update_ms=now, client_tv=client_tv)

    def prepare_abort_or_commit(self, state: TxnState, client_tv: int, next_producer_id: int, now: int,
                                no_partition_added: bool) -> TxnTransit:
        if client_tv >= 2:
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        return self._transit(state, producer_epoch=epoch, last_producer_epoch=last,
                             start_ms=now if no_partition_added else self.start_ms,
                             next_producer_id=next_producer_id, last_update_ms=now, client_tv=client_tv)

    def prepare_complete(self, now: int) -> TxnTransit:
        self.has_failed_epoch_fence = False
        state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if self.client_tv >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            pid, epoch, prev = self.next_producer_id, 0, self.producer_id
        else:
            pid, epoch, prev = self.producer_id, self.producer_epoch, self.prev_producer_id
        return self._transit(state, producer_id=pid, producer_epoch=epoch, prev_producer_id=prev,
                             next_producer_id=NO_PRODUCER_ID, partitions=frozenset(), last_update_ms=now)

    def prepare_dead(self) -> TxnTransit:
        return self._transit(S.DEAD, partitions=frozenset())

    def complete_transition(self, t: TxnTransit) -> None:
        """Apply a transit once it is durable."""
        if self.pending_state != t.state:
            raise RuntimeError(f"{self.transactional_id}: completing {t.state.kafka_name} but pending is "
                               f"{self.pending_state}")
        self.producer_id = t.producer_id
        self.prev_producer_id = t.prev_producer_id
        self.next_producer_id = t.next_producer_id
        self.producer_epoch = t.producer_epoch
        self.last_producer_epoch = t.last_producer_epoch
        self.timeout_ms = t.timeout_ms
        self.state = t.state
        self.partitions = set(t.partitions)
        self.start_ms = t.start_ms
        self.last_update_ms = t.last_update_ms
        self.client_tv = t.client_tv
        self.pending_state = None

    def abort_transition(self) -> None:
        self.pending_state = None
