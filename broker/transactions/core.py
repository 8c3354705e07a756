"""The transaction coordinator's logic (Kafka's TransactionCoordinator), without trio.

Every method runs to completion without awaiting, so a state change is atomic on the trio
loop. Durability comes from `store.append` (a synchronous append to `__transaction_state`,
fsynced inline when the broker runs with fsync=always) before `complete_transition` applies
it. Markers are not written here: when a PrepareCommit/PrepareAbort is durable the core
calls `on_prepared(transactional_id)`; the caller (the trio service, or a test) then asks
`markers_due(transactional_id)`, writes those markers, and reports them to
`finish_markers`, which moves the transaction to CompleteCommit/CompleteAbort once every
partition has its marker. Between the two, requests for the id get CONCURRENT_TRANSACTIONS,
as in Kafka.

Client transaction version (`client_tv`): 2 when the request is KIP-890 part 2 (EndTxn v5+,
Produce v12+, TxnOffsetCommit v5+), else 0. With 2, every EndTxn bumps the epoch and its
answer carries the epoch to use next; the EndTxn tables are Kafka's (`_end_txn_v2`,
`_end_txn_v1`). Aborts the coordinator starts itself (timeouts, a new incarnation taking over
an ongoing transaction) use the broker's finalized transaction.version.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol

from kio.schema.errors import ErrorCode

from ..internal_store import CoordinatorWriteError
from .log import TxnLogValue
from .producer_ids import ProducerIdManager
from .state import (NO_PRODUCER_EPOCH, NO_PRODUCER_ID, SHORT_MAX, TransactionMetadata, TxnError, TxnState,
                    TxnTransit)

log = logging.getLogger("kafkalite.transactions")

S = TxnState
E = ErrorCode
TopicPartition = tuple  # (topic, partition)


def idempotent_producer_id(pids: ProducerIdManager) -> tuple[ErrorCode, int, int]:
    """InitProducerId without a transactional id: a new producer id at epoch 0, and no
    transaction state (the handler calls this without building the transaction coordinator)."""
    try:
        return E.none, pids.generate(), 0
    except OSError as exc:
        return _no_producer_id_block(exc)


def _no_producer_id_block(exc: OSError) -> tuple[ErrorCode, int, int]:
    # a new producer id block could not be saved: Kafka's producer id manager answers
    # COORDINATOR_LOAD_IN_PROGRESS while it has no block, and the client retries
    log.warning("cannot save a producer id block: %s", exc)
    return E.coordinator_load_in_progress, NO_PRODUCER_ID, NO_PRODUCER_EPOCH


class TxnStore(Protocol):
    def append(self, transactional_id: str, transit: TxnTransit | None) -> None:
        """Durable when it returns; raises CoordinatorWriteError (or OSError) when the write fails."""


@dataclass(frozen=True)
class MarkerJob:
    """The markers a prepared transaction needs: one per partition, for this producer."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: list[TopicPartition]


@dataclass
class EndTxnResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


# marker errors after which a partition is given up rather than retried (as Kafka's
# TransactionMarkerRequestCompletionHandler does)
_MARKER_GIVE_UP = {E.unknown_topic_or_partition, E.invalid_producer_epoch, E.transaction_coordinator_fenced,
                   E.unknown_topic_id}


class TxnCoordinatorCore:
    def __init__(self, *, store: TxnStore, producer_ids: ProducerIdManager, clock: Callable[[], int],
                 max_timeout_ms: int = 900_000, server_tv: int = 2,
                 coordinator_epoch: Callable[[str], int] = lambda transactional_id: 0,
                 on_prepared: Callable[[str], None] | None = None,
                 id_expiration_ms: int = 604_800_000):
        self.store = store
        self.pids = producer_ids
        self.clock = clock
        self.max_timeout_ms = max_timeout_ms
        self.server_tv = server_tv
        # transactional id -> the epoch its markers carry: Kafka's coordinatorEpoch, the leader
        # epoch of the id's __transaction_state partition (TransactionStateManager)
        self.coordinator_epoch = coordinator_epoch
        self.on_prepared = on_prepared or (lambda tid: None)
        self.id_expiration_ms = id_expiration_ms
        self.txns: dict[str, TransactionMetadata] = {}

    # --- loading ----------------------------------------------------------------------------
    def load(self, values: dict[str, TxnLogValue | None]) -> list[str]:
        """Install the state read from __transaction_state (last value per id); returns the
        ids whose transaction is in PrepareCommit/PrepareAbort and needs its markers."""
        pending = []
        for tid, v in values.items():
            if v is None or v.state == S.DEAD:
                self.txns.pop(tid, None)
                continue
            for pid in (v.producer_id, v.prev_producer_id, v.next_producer_id):
                if pid >= 0:
                    self.pids.ensure_above(pid)
            try:
                state = TxnState(v.state)
            except ValueError:
                log.warning("transactional id %r has unknown state %d in __transaction_state", tid, v.state)
                continue
            md = TransactionMetadata(tid, v.producer_id, prev_producer_id=v.prev_producer_id,
                                     next_producer_id=v.next_producer_id, producer_epoch=v.producer_epoch,
                                     timeout_ms=v.timeout_ms, state=state,
                                     partitions=set() if state == S.EMPTY else set(v.partitions),
                                     start_ms=v.start_ms, last_update_ms=v.last_update_ms, client_tv=v.client_tv)
            self.txns[tid] = md
            if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                pending.append(tid)
        return pending

    # --- persistence --------------------------------------------------------------------------
    def _write(self, md: TransactionMetadata, transit: TxnTransit) -> ErrorCode:
        """Make the transit durable, then apply it. The transit's state is pending meanwhile."""
        try:
            self.store.append(md.transactional_id, transit)
        except (CoordinatorWriteError, OSError) as exc:
            # a failed write or fsync is Kafka's KAFKA_STORAGE_ERROR append, which its
            # TransactionStateManager answers with NOT_COORDINATOR: the client looks again and retries
            log.warning("cannot write the state of transactional id %r to __transaction_state: %s",
                        md.transactional_id, exc)
            md.abort_transition()
            return E.not_coordinator
        except Exception:
            log.exception("cannot write the state of transactional id %r to __transaction_state",
                          md.transactional_id)
            md.abort_transition()
            return E.coordinator_not_available
        md.complete_transition(transit)
        return E.none

    # --- InitProducerId -----------------------------------------------------------------------
    def init_producer_id(self, transactional_id: str | None, timeout_ms: int,
                         expected: tuple[int, int] | None = None) -> tuple[ErrorCode, int, int]:
        try:
            return self._init_producer_id(transactional_id, timeout_ms, expected)
        except OSError as exc:
            return _no_producer_id_block(exc)

    def _init_producer_id(self, transactional_id: str | None, timeout_ms: int,
                          expected: tuple[int, int] | None) -> tuple[ErrorCode, int, int]:
        if transactional_id is None:
            return idempotent_producer_id(self.pids)
        if transactional_id == "":
            return E.invalid_request, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return E.invalid_transaction_timeout, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        now = self.clock()
        md = self.txns.get(transactional_id)
        if md is None:
            md = TransactionMetadata(transactional_id, self.pids.generate(), timeout_ms=timeout_ms,
                                     last_update_ms=now)
            self.txns[transactional_id] = md
        if md.pending_transition:
            return E.concurrent_transactions, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if expected is not None and not self._valid_expected(md, expected):
            return E.producer_fenced, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if md.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return E.concurrent_transactions, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if md.state == S.ONGOING:
            # Abort the open transaction under a fenced epoch, then make the client retry:
            # the retry bumps the epoch again (or rotates the producer id when exhausted).
            fence = md.prepare_fence_producer_epoch()
            res = self._end_txn(transactional_id, fence.producer_id, fence.producer_epoch, False,
                                self.server_tv, from_client=False)
            if md.pending_state == S.PREPARE_EPOCH_FENCE:
                md.abort_transition()
            return (res.error if res.error != E.none else E.concurrent_transactions), NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if md.state not in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            return E.invalid_txn_state, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        try:
            if md.epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
                transit = md.prepare_producer_id_rotation(self.pids.generate(), timeout_ms, now, expected is not None)
            else:
                transit = md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1], now)
        except TxnError as exc:
            return exc.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        err = self._write(md, transit)
        if err != E.none:
            return err, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        log.info("initialized transactional id %r: producer id %d epoch %d", transactional_id,
                 md.producer_id, md.producer_epoch)
        return E.none, md.producer_id, md.producer_epoch

    @staticmethod
    def _valid_expected(md: TransactionMetadata, expected: tuple[int, int]) -> bool:
        pid, epoch = expected
        return (md.producer_epoch == NO_PRODUCER_EPOCH or pid == md.producer_id
                or (pid == md.prev_producer_id and epoch >= SHORT_MAX - 1))

    # --- AddPartitionsToTxn / AddOffsetsToTxn / implicit adds ----------------------------------
    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition], client_tv: int = 0) -> ErrorCode:
        if not transactional_id:
            return E.invalid_request
        md = self.txns.get(transactional_id)
        if md is None or md.producer_id != producer_id:
            return E.invalid_producer_id_mapping
        if md.producer_epoch != producer_epoch:
            return E.producer_fenced
        if md.pending_transition or md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return E.concurrent_transactions
        parts = set(partitions)
        if md.state == S.ONGOING and parts <= md.partitions:
            return E.none
        if md.state not in (S.EMPTY, S.ONGOING, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            return E.invalid_txn_state
        transit = md.prepare_add_partitions(parts, self.clock(), client_tv)
        return self._write(md, transit)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """KIP-890 part 1: is each partition part of the ongoing transaction? (VerifyOnly)"""
        parts = list(partitions)
        md = self.txns.get(transactional_id) if transactional_id else None
        if not transactional_id:
            err = E.invalid_request
        elif md is None or md.producer_id != producer_id:
            err = E.invalid_producer_id_mapping
        elif md.producer_epoch != producer_epoch:
            err = E.producer_fenced
        elif md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            err = E.concurrent_transactions
        else:
            return {tp: (E.none if tp in md.partitions and md.state == S.ONGOING else E.transaction_abortable)
                    for tp in parts}
        return {tp: err for tp in parts}

    # --- EndTxn --------------------------------------------------------------------------------
    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                client_tv: int = 0) -> EndTxnResult:
        return self._end_txn(transactional_id, producer_id, producer_epoch, commit, client_tv, from_client=True)

    def _end_txn(self, tid: str, pid: int, epoch: int, commit: bool, client_tv: int, *,
                 from_client: bool, timed_out: bool = False) -> EndTxnResult:
        if not tid:
            return EndTxnResult(E.invalid_request)
        md = self.txns.get(tid)
        if md is None:
            return EndTxnResult(E.invalid_producer_id_mapping)
        if client_tv >= 2:
            return self._end_txn_v2(md, pid, epoch, commit, client_tv, from_client, timed_out)
        return self._end_txn_v1(md, pid, epoch, commit, from_client)

    def _end_txn_v1(self, md, pid, epoch, commit, from_client) -> EndTxnResult:
        if md.producer_id != pid:
            return EndTxnResult(E.invalid_producer_id_mapping)
        if (from_client and epoch != md.producer_epoch) or epoch < md.producer_epoch:
            return EndTxnResult(E.producer_fenced)
        if md.pending_transition and md.pending_state != S.PREPARE_EPOCH_FENCE:
            return EndTxnResult(E.concurrent_transactions)
        st = md.state
        if st == S.ONGOING:
            is_fence = False
            nxt = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            if nxt == S.PREPARE_ABORT and md.pending_state == S.PREPARE_EPOCH_FENCE:
                is_fence = True
                md.pending_state = None
                md.producer_epoch = epoch
                md.last_producer_epoch = NO_PRODUCER_EPOCH
            transit = md.prepare_abort_or_commit(nxt, 0, NO_PRODUCER_ID, self.clock(), False)
            return self._prepared(md, transit, is_fence, tv2=False)
        if st == S.COMPLETE_COMMIT:
            return EndTxnResult(E.none if commit else E.invalid_txn_state)
        if st == S.COMPLETE_ABORT:
            return EndTxnResult(E.invalid_txn_state if commit else E.none)
        if st == S.PREPARE_COMMIT:
            return EndTxnResult(E.concurrent_transactions if commit else E.invalid_txn_state)
        if st == S.PREPARE_ABORT:
            return EndTxnResult(E.invalid_txn_state if commit else E.concurrent_transactions)
        return EndTxnResult(E.invalid_txn_state)

    def _end_txn_v2(self, md, pid, epoch, commit, client_tv, from_client, timed_out=False) -> EndTxnResult:
        is_fence = md.pending_state == S.PREPARE_EPOCH_FENCE
        retry_on_overflow = (not is_fence and md.prev_producer_id == pid and epoch == SHORT_MAX - 1
                             and md.producer_epoch == 0)
        retry_on_bump = not is_fence and md.producer_epoch == epoch + 1
        st = md.state
        if is_fence:
            valid = (not from_client or epoch == md.producer_epoch) and epoch >= md.producer_epoch
        elif st in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid = retry_on_bump
        elif st in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow or epoch == md.producer_epoch
        else:
            valid = epoch == md.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if md.producer_id != pid and not retry_on_overflow:
            return EndTxnResult(E.invalid_producer_id_mapping)
        if not valid:
            return EndTxnResult(E.producer_fenced)
        if md.pending_transition and md.pending_state != S.PREPARE_EPOCH_FENCE:
            return EndTxnResult(E.concurrent_transactions)

        def complete(nxt: TxnState, no_partition_added: bool) -> EndTxnResult:
            next_pid = NO_PRODUCER_ID
            if not is_fence and md.epoch_exhausted:
                next_pid = self.pids.generate()
            if nxt == S.PREPARE_ABORT and is_fence:
                md.pending_state = None
                if not timed_out:
                    md.producer_epoch = epoch
                    md.last_producer_epoch = NO_PRODUCER_EPOCH
                # A transaction aborted for its timeout is bumped once, by the v2 abort itself, as on
                # Kafka 4.4: the producer's EndTxn(commit) then reads as a retry after that bump and
                # gets INVALID_TXN_STATE (measured: Java and franz-go clients), not PRODUCER_FENCED.
            transit = md.prepare_abort_or_commit(nxt, client_tv, next_pid, self.clock(), no_partition_added)
            return self._prepared(md, transit, is_fence, tv2=True)

        ok = EndTxnResult(E.none, md.producer_id, md.producer_epoch)
        its = EndTxnResult(E.invalid_txn_state)
        if st == S.ONGOING:
            return complete(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, False)
        if st == S.COMPLETE_COMMIT:
            if commit:
                return ok if is_retry else its
            return its if is_retry else complete(S.PREPARE_ABORT, True)
        if st == S.COMPLETE_ABORT:
            if not commit:
                return ok if is_retry else complete(S.PREPARE_ABORT, True)
            return its
        if st == S.PREPARE_COMMIT:
            return EndTxnResult(E.concurrent_transactions) if commit else its
        if st == S.PREPARE_ABORT:
            return its if commit else EndTxnResult(E.concurrent_transactions)
        if st == S.EMPTY:
            return its if commit else complete(S.PREPARE_ABORT, True)
        return its

    def _prepared(self, md: TransactionMetadata, transit: TxnTransit, is_fence: bool, *, tv2: bool) -> EndTxnResult:
        err = self._write(md, transit)
        if err != E.none:
            if is_fence:
                md.has_failed_epoch_fence = True
            return EndTxnResult(err)
        log.debug("transactional id %r: %s with producer id %d epoch %d, partitions %s", md.transactional_id,
                  md.state.kafka_name, md.producer_id, md.producer_epoch, sorted(md.partitions))
        self.on_prepared(md.transactional_id)
        if not tv2:
            return EndTxnResult(E.none)
        if md.next_producer_id != NO_PRODUCER_ID:
            return EndTxnResult(E.none, md.next_producer_id, 0)
        return EndTxnResult(E.none, md.producer_id, md.producer_epoch)

    # --- markers -------------------------------------------------------------------------------
    def markers_due(self, transactional_id: str) -> MarkerJob | None:
        """The markers a prepared transaction still needs, or None when it needs none now (no
        longer prepared, or a state write is in flight)."""
        md = self.txns.get(transactional_id)
        if md is None or md.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT) or md.pending_transition:
            return None
        return MarkerJob(md.producer_id, md.producer_epoch, self.coordinator_epoch(transactional_id),
                         md.state == S.PREPARE_COMMIT,
                         sorted(md.partitions))

    def finish_markers(self, transactional_id: str, results: dict) -> bool:
        """Account for the markers written (`results`: error per partition); once every
        partition has its marker, move to CompleteCommit/CompleteAbort."""
        md = self.txns.get(transactional_id)
        if md is None or md.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT) or md.pending_transition:
            return True
        what = "COMMIT" if md.state == S.PREPARE_COMMIT else "ABORT"
        for tp, err in results.items():
            if err == E.none:
                md.partitions.discard(tp)
            elif err in _MARKER_GIVE_UP:
                log.warning("transactional id %r: %s marker for %s-%d not written: %s", transactional_id,
                            what, tp[0], tp[1], err.name)
                md.partitions.discard(tp)
            else:
                log.warning("transactional id %r: %s marker for %s-%d failed (%s); will retry",
                            transactional_id, what, tp[0], tp[1], err.name)
        if md.partitions:
            return False
        return self._write(md, md.prepare_complete(self.clock())) == E.none

    # --- timeouts and expiry ---------------------------------------------------------------------
    def abort_timed_out(self) -> list[str]:
        """Fence and abort every Ongoing transaction older than its timeout (Kafka measures
        from the transaction's start). Returns the ids aborted."""
        now = self.clock()
        aborted = []
        for tid, md in list(self.txns.items()):
            if md.state != S.ONGOING or md.pending_transition or md.start_ms + md.timeout_ms >= now:
                continue
            fence = md.prepare_fence_producer_epoch()
            res = self._end_txn(tid, fence.producer_id, fence.producer_epoch, False, self.server_tv, from_client=False,
                                timed_out=True)
            if md.pending_state == S.PREPARE_EPOCH_FENCE:
                md.abort_transition()
            if res.error == E.none:
                log.info("aborted transactional id %r (producer id %d): open for more than %d ms", tid,
                         md.producer_id, md.timeout_ms)
                aborted.append(tid)
        return aborted

    def expire_transactional_ids(self) -> list[str]:
        """Remove ids idle (Empty/Complete*) for longer than transactional.id.expiration.ms."""
        now = self.clock()
        expired = []
        for tid, md in list(self.txns.items()):
            if (md.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and not md.pending_transition
                    and md.last_update_ms + self.id_expiration_ms <= now):
                md.prepare_dead()  # pending: no request can change it meanwhile
                try:
                    self.store.append(tid, None)  # the tombstone
                except Exception:
                    md.abort_transition()
                    continue
                del self.txns[tid]
                expired.append(tid)
        return expired

    # --- visibility -------------------------------------------------------------------------------
    def describe(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        if not transactional_id:
            return E.invalid_request, None
        md = self.txns.get(transactional_id)
        if md is None or md.state == S.DEAD:
            return E.transactional_id_not_found, None
        return E.none, md

    def list(self, states: Iterable[str] = (), producer_ids: Iterable[int] = (), duration_ms: int = -1,
             pattern=None) -> tuple[list[TransactionMetadata], list[str]]:
        """Transactions matching the filters, and the state names we do not know."""
        wanted, unknown = set(), []
        for name in states:
            st = TxnState.from_name(name)
            if st is None:
                unknown.append(name)
            else:
                wanted.add(st)
        if unknown and not wanted:
            return [], unknown
        pids = set(producer_ids)
        now = self.clock()
        out = []
        for md in self.txns.values():
            if md.state == S.DEAD:
                continue
            if pids and md.producer_id not in pids:
                continue
            if states and md.state not in wanted:
                continue
            if duration_ms >= 0 and now - md.start_ms <= duration_ms:
                continue
            if pattern is not None and not pattern.fullmatch(md.transactional_id):
                continue
            out.append(md)
        return out, unknown
