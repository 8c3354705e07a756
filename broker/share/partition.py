"""One share-partition: the delivery state of a topic partition's records for one share group
(KIP-932), as Kafka's SharePartition keeps it.

The share-partition start offset (SPSO) is the first offset not yet done with; every offset
below `end_offset` and at or above the start offset that was ever handed out is in flight,
with a state (Kafka's RecordState ids: AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVED 4)
and a delivery count. Offsets at or past `end_offset` have never been acquired.

- acquire: available in-flight offsets first (redeliveries), then new records read from the
  log; each acquisition adds one to the delivery count and locks the record for the member
  until `lock_ms` passes. Control records, and under read_committed the records of aborted
  transactions, are archived without being delivered; the caller reads the log only up to the
  last stable offset under read_committed, so open transactions are never handed out.
- acknowledge: only the member holding the lock may acknowledge: ACCEPT -> ACKNOWLEDGED,
  RELEASE -> AVAILABLE (ARCHIVED once the delivery count reached the limit), REJECT and GAP ->
  ARCHIVED, RENEW restarts the lock. Anything else is INVALID_RECORD_STATE for the batch.
- a lock that expires, or a member that leaves, releases its records as RELEASE would.
- the start offset moves past every leading ACKNOWLEDGED / ARCHIVED offset (and past offsets
  the log no longer has); those leave the in-flight map.

No I/O and no clock of its own: the coordinator passes `now` and the log's batch headers, and
persists `state_batches()` after a change.
"""

from __future__ import annotations

import enum
import heapq
from dataclasses import dataclass
from typing import Iterable, NamedTuple


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int
    member_id: str | None = None
    lock_deadline: int = 0


class Batch(NamedTuple):
    """What acquisition needs of a log batch header."""
    base_offset: int
    last_offset: int
    is_control: bool
    aborted: bool  # a transactional batch of an aborted transaction (read_committed only)


class Acquired(NamedTuple):
    first_offset: int
    last_offset: int
    delivery_count: int


class StateBatch(NamedTuple):
    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
AVAILABLE, ACQUIRED = int(RecordState.AVAILABLE), int(RecordState.ACQUIRED)
RUN_BLOCK = 256  # offsets per block of state_batches' cache


class Checkpoint(NamedTuple):
    start_offset: int
    end_offset: int
    state_epoch: int
    in_flight: dict[int, InFlight | None]  # each record changed since, as it was (None: it was not in flight)


class AckError(Exception):
    pass


class SharePartition:
    """Indexes kept beside `in_flight` so that no request walks every in-flight record: the
    counts of acquired and of done records, the available offsets (a heap, next_fetch_offset)
    and the acquisition locks (a heap by deadline, expire_locks). Both heaps are lazy: an entry
    whose record has changed since is dropped when it reaches the top. `in_flight` holds its
    offsets in ascending order (records are added at `end_offset` and leave from the start
    offset), so it is walked in order without sorting. Every change of a record's state goes
    through `_set_state`, the one owner of those indexes."""

    def __init__(self, start_offset: int, *, state_epoch: int = 0):
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.state_epoch = state_epoch
        self.in_flight: dict[int, InFlight] = {}
        self.persisted: tuple | None = None  # what the coordinator last wrote for it
        self._acquired = 0
        self._done = 0
        self._available: list[int] = []  # heap of offsets made available (lazy)
        self._locks: list[tuple[int, int]] = []  # heap of (lock deadline, offset) of acquisitions (lazy)
        self._journal: dict[int, InFlight | None] | None = None  # records before an open checkpoint changed them
        # state_batches by blocks of RUN_BLOCK offsets: a block's runs are recomputed only after a
        # record of it changed state or delivery count, came or left
        self._runs: dict[int, list[StateBatch]] = {}
        self._stale: set[int] = set()
        self._batches: list[StateBatch] | None = None

    # --- restore -------------------------------------------------------------------------
    @classmethod
    def restore(cls, start_offset: int, batches: Iterable[StateBatch], *, state_epoch: int = 0) -> "SharePartition":
        sp = cls(start_offset, state_epoch=state_epoch)
        for b in batches:
            for off in range(max(b.first_offset, start_offset), b.last_offset + 1):
                # an acquisition lock does not survive a restart: acquired records come back available
                state = RecordState(b.state) if b.state != RecordState.ACQUIRED else RecordState.AVAILABLE
                sp.in_flight[off] = InFlight(state, b.delivery_count)
            sp.end_offset = max(sp.end_offset, b.last_offset + 1)
        sp.in_flight = dict(sorted(sp.in_flight.items()))
        sp._reindex()
        sp._advance_start()
        return sp

    def state_batches(self) -> list[StateBatch]:
        """The in-flight offsets as ranges of equal state and delivery count, for persistence.
        Acquired records are written as available: a lock does not survive a restart."""
        if self._batches is None:
            for block in self._stale:
                runs = self._block_runs(block)
                if runs:
                    self._runs[block] = runs
                else:
                    self._runs.pop(block, None)
            self._stale.clear()
            out: list[StateBatch] = []
            for block in sorted(self._runs):
                for run in self._runs[block]:
                    if out and out[-1].last_offset + 1 == run.first_offset and out[-1][2:] == run[2:]:
                        out[-1] = out[-1]._replace(last_offset=run.last_offset)  # a run across blocks
                    else:
                        out.append(run)
            self._batches = out
        return list(self._batches)

    def _block_runs(self, block: int) -> list[StateBatch]:
        out: list[StateBatch] = []
        get = self.in_flight.get
        first = last = state = count = -1
        for off in range(block * RUN_BLOCK, (block + 1) * RUN_BLOCK):
            rec = get(off)
            if rec is None:
                continue
            s = AVAILABLE if rec.state == ACQUIRED else rec.state
            if off == last + 1 and s == state and rec.delivery_count == count:
                last = off
                continue
            if first >= 0:
                out.append(StateBatch(first, last, int(state), count))
            first = last = off
            state, count = s, rec.delivery_count
        if first >= 0:
            out.append(StateBatch(first, last, int(state), count))
        return out

    def _changed(self, off: int) -> None:
        """The record at `off` changed what state_batches says of it."""
        self._stale.add(off // RUN_BLOCK)
        self._batches = None

    # --- queries ---------------------------------------------------------------------------
    def next_fetch_offset(self) -> int:
        """Where the log must be read from: the first available redelivery, else end_offset."""
        heap = self._available
        while heap:
            rec = self.in_flight.get(heap[0])
            if rec is not None and rec.state == RecordState.AVAILABLE:
                return heap[0]
            heapq.heappop(heap)
        return self.end_offset

    def delivery_complete_count(self) -> int:
        """Records from the start offset on that are done with (acknowledged or archived)."""
        return self._done

    def acquired_count(self) -> int:
        return self._acquired

    def has_available(self) -> bool:
        return self.next_fetch_offset() < self.end_offset

    def next_lock_deadline(self) -> int | None:
        heap = self._locks
        while heap:
            deadline, off = heap[0]
            rec = self.in_flight.get(off)
            if rec is not None and rec.state == RecordState.ACQUIRED and rec.lock_deadline == deadline:
                return deadline
            heapq.heappop(heap)
        return None

    # --- acquisition -----------------------------------------------------------------------
    def acquire(self, member_id: str, batches: Iterable[Batch], *, now: int, lock_ms: int, max_records: int,
                max_locks: int, strict_limit: bool) -> tuple[list[Acquired], list[Batch]]:
        """Acquire records of `batches` (consecutive log batches from next_fetch_offset) for the
        member: (acquired ranges, the batches holding them). Stops after max_records (at the end
        of a batch unless strict_limit) and when max_locks records are acquired in all."""
        acquired: list[Acquired] = []
        used: list[Batch] = []
        taken = 0
        deadline = now + lock_ms
        for b in batches:
            if taken >= max_records or self._acquired >= max_locks:
                break
            took_here = False
            for off in range(max(b.base_offset, self.start_offset), b.last_offset + 1):
                if (strict_limit and taken >= max_records) or self._acquired >= max_locks:
                    break
                rec = self.in_flight.get(off)
                if rec is None:
                    if off < self.end_offset:
                        continue  # below end_offset but unknown: done with (a gap, or already moved past)
                    self._note(off, None)
                    if b.is_control or b.aborted:
                        self.in_flight[off] = InFlight(RecordState.ARCHIVED, 0)
                        self._done += 1
                        self._changed(off)
                        self.end_offset = off + 1
                        continue
                    rec = InFlight(RecordState.AVAILABLE, 0)
                    self.in_flight[off] = rec
                    self.end_offset = off + 1
                elif rec.state != RecordState.AVAILABLE:
                    continue
                else:
                    self._note(off, rec)
                self._set_state(off, rec, RecordState.ACQUIRED)
                rec.delivery_count += 1
                rec.member_id = member_id
                self._lock(off, rec, deadline)
                taken += 1
                took_here = True
                last = acquired[-1] if acquired else None
                if last and last.last_offset == off - 1 and last.delivery_count == rec.delivery_count:
                    acquired[-1] = last._replace(last_offset=off)
                else:
                    acquired.append(Acquired(off, off, rec.delivery_count))
            else:
                # the whole batch was looked at: offsets up to its end are now known
                self.end_offset = max(self.end_offset, b.last_offset + 1)
            if took_here:
                used.append(b)
        self._advance_start()
        return acquired, used

    # --- acknowledgement -------------------------------------------------------------------
    def acknowledge(self, member_id: str, first: int, last: int, types: tuple[int, ...], *, now: int,
                    lock_ms: int, delivery_limit: int) -> None:
        """Apply one acknowledgement batch; raises AckError (nothing changed) when a record of it
        is not acquired by this member, or a type is unknown."""
        if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
            raise AckError("invalid acknowledgement batch")
        known = AckType._value2member_map_
        kinds: list[tuple[int, InFlight, int]] = []
        in_flight = self.in_flight
        for i, off in enumerate(range(first, last + 1)):
            t = types[0] if len(types) == 1 else types[i]
            if t not in known:
                raise AckError(f"unknown acknowledge type {t}")
            rec = in_flight.get(off)
            if t == AckType.GAP and (rec is None or rec.state != RecordState.ACQUIRED):
                continue  # a gap the member saw no record for
            if rec is None or rec.state != RecordState.ACQUIRED or rec.member_id != member_id:
                raise AckError(f"offset {off} is not acquired by member {member_id}")
            kinds.append((off, rec, t))
        for off, rec, t in kinds:
            self._note(off, rec)
            if t == AckType.RENEW:
                self._lock(off, rec, now + lock_ms)
            elif t == AckType.ACCEPT:
                self._settle(off, rec, RecordState.ACKNOWLEDGED)
            elif t == AckType.RELEASE:
                self._release(off, rec, delivery_limit)
            else:  # REJECT, GAP
                self._settle(off, rec, RecordState.ARCHIVED)
        self._advance_start()

    def _settle(self, off: int, rec: InFlight, state: RecordState) -> None:
        self._set_state(off, rec, state)
        rec.member_id = None
        rec.lock_deadline = 0

    def _release(self, off: int, rec: InFlight, delivery_limit: int) -> None:
        self._settle(off, rec, RecordState.ARCHIVED if rec.delivery_count >= delivery_limit else RecordState.AVAILABLE)

    def release_member(self, member_id: str, delivery_limit: int) -> bool:
        """Release every record the member holds (it left, or its session closed)."""
        changed = False
        if self._acquired:
            for off, rec in self.in_flight.items():
                if rec.state == RecordState.ACQUIRED and rec.member_id == member_id:
                    self._note(off, rec)
                    self._release(off, rec, delivery_limit)
                    changed = True
        self._advance_start()
        return changed

    def expire_locks(self, now: int, delivery_limit: int) -> bool:
        changed = False
        heap = self._locks
        while heap and heap[0][0] <= now:
            deadline, off = heapq.heappop(heap)
            rec = self.in_flight.get(off)
            if rec is not None and rec.state == RecordState.ACQUIRED and rec.lock_deadline == deadline:
                self._note(off, rec)
                self._release(off, rec, delivery_limit)
                changed = True
        self._advance_start()
        return changed

    # --- the indexes -----------------------------------------------------------------------
    def _set_state(self, off: int, rec: InFlight, state: RecordState) -> None:
        """The one way a record's state changes (an acquisition adds to its delivery count too)."""
        self._changed(off)
        old = rec.state
        if old == RecordState.ACQUIRED:
            self._acquired -= 1
        elif old in DONE:
            self._done -= 1
        rec.state = state
        if state == RecordState.ACQUIRED:
            self._acquired += 1
        elif state in DONE:
            self._done += 1
        else:
            heapq.heappush(self._available, off)

    def _lock(self, off: int, rec: InFlight, deadline: int) -> None:
        rec.lock_deadline = deadline
        heapq.heappush(self._locks, (deadline, off))

    def _reindex(self) -> None:
        """The indexes rebuilt from `in_flight` (after a restore or a rollback)."""
        self._acquired = self._done = 0
        self._available, self._locks = [], []
        self._runs, self._stale, self._batches = {}, {off // RUN_BLOCK for off in self.in_flight}, None
        for off, rec in self.in_flight.items():
            if rec.state == RecordState.ACQUIRED:
                self._acquired += 1
                self._locks.append((rec.lock_deadline, off))
            elif rec.state in DONE:
                self._done += 1
            else:
                self._available.append(off)
        heapq.heapify(self._locks)  # _available is ascending already: a heap

    # --- start offset ----------------------------------------------------------------------
    def skip_below(self, log_start_offset: int) -> None:
        """Records the log no longer has (retention, DeleteRecords) are done with."""
        if self.start_offset < log_start_offset:
            for off in [o for o in self.in_flight if o < log_start_offset]:
                rec = self.in_flight.pop(off)
                self._note(off, rec)
                self._changed(off)
                if rec.state == RecordState.ACQUIRED:
                    self._acquired -= 1
                elif rec.state in DONE:
                    self._done -= 1
            self.start_offset = log_start_offset
            self.end_offset = max(self.end_offset, log_start_offset)

    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets: forget everything in flight and start at start_offset."""
        for off, rec in self.in_flight.items():
            self._note(off, rec)
        self.in_flight.clear()
        self.start_offset = self.end_offset = start_offset
        self.state_epoch += 1
        self._reindex()

    # --- undo ------------------------------------------------------------------------------
    def checkpoint(self) -> Checkpoint:
        """The state now, for `rollback` (acknowledgements whose write failed are undone, as
        Kafka's SharePartition rolls back a state change its persister could not write); ended
        by `rollback` or `keep`. Only the records changed after it are copied, when they change."""
        self._journal = {}
        return Checkpoint(self.start_offset, self.end_offset, self.state_epoch, self._journal)

    def keep(self, checkpoint: Checkpoint) -> None:
        """The changes since the checkpoint stand."""
        if self._journal is checkpoint.in_flight:
            self._journal = None

    def rollback(self, checkpoint: Checkpoint) -> None:
        self.keep(checkpoint)
        self.start_offset, self.end_offset, self.state_epoch = (checkpoint.start_offset, checkpoint.end_offset,
                                                                checkpoint.state_epoch)
        for off, before in checkpoint.in_flight.items():
            if before is None:
                self.in_flight.pop(off, None)
            else:
                self.in_flight[off] = before
        self.in_flight = dict(sorted(self.in_flight.items()))
        self._reindex()

    def _note(self, off: int, rec: InFlight | None) -> None:
        """Keep the record as it is before a change, while a checkpoint is open."""
        journal = self._journal
        if journal is not None and off not in journal:
            journal[off] = None if rec is None else InFlight(rec.state, rec.delivery_count, rec.member_id,
                                                             rec.lock_deadline)

    def _advance_start(self) -> None:
        in_flight = self.in_flight
        while self.start_offset < self.end_offset:
            off = self.start_offset
            rec = in_flight.get(off)
            if rec is not None:
                if rec.state not in DONE:
                    break
                self._note(off, rec)
                del in_flight[off]
                self._done -= 1
                self._changed(off)
            self.start_offset += 1
