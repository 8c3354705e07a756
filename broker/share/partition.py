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
from dataclasses import dataclass, replace
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


class Checkpoint(NamedTuple):
    start_offset: int
    end_offset: int
    state_epoch: int
    in_flight: dict[int, InFlight]


class AckError(Exception):
    pass


class SharePartition:
    def __init__(self, start_offset: int, *, state_epoch: int = 0):
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.state_epoch = state_epoch
        self.in_flight: dict[int, InFlight] = {}
        self.persisted: tuple | None = None  # what the coordinator last wrote for it

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
        sp._advance_start()
        return sp

    def state_batches(self) -> list[StateBatch]:
        """The in-flight offsets as ranges of equal state and delivery count, for persistence.
        Acquired records are written as available: a lock does not survive a restart."""
        out: list[StateBatch] = []
        for off in sorted(self.in_flight):
            rec = self.in_flight[off]
            state = RecordState.AVAILABLE if rec.state == RecordState.ACQUIRED else rec.state
            if out and out[-1].last_offset == off - 1 and out[-1].state == state \
                    and out[-1].delivery_count == rec.delivery_count:
                out[-1] = out[-1]._replace(last_offset=off)
            else:
                out.append(StateBatch(off, off, int(state), rec.delivery_count))
        return out

    # --- queries ---------------------------------------------------------------------------
    def next_fetch_offset(self) -> int:
        """Where the log must be read from: the first available redelivery, else end_offset."""
        for off in sorted(self.in_flight):
            if self.in_flight[off].state == RecordState.AVAILABLE:
                return off
        return self.end_offset

    def delivery_complete_count(self) -> int:
        """Records from the start offset on that are done with (acknowledged or archived)."""
        return sum(1 for r in self.in_flight.values() if r.state in DONE)

    def acquired_count(self) -> int:
        return sum(1 for r in self.in_flight.values() if r.state == RecordState.ACQUIRED)

    def has_available(self) -> bool:
        return any(r.state == RecordState.AVAILABLE for r in self.in_flight.values())

    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline for r in self.in_flight.values() if r.state == RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    # --- acquisition -----------------------------------------------------------------------
    def acquire(self, member_id: str, batches: Iterable[Batch], *, now: int, lock_ms: int, max_records: int,
                max_locks: int, strict_limit: bool) -> tuple[list[Acquired], list[Batch]]:
        """Acquire records of `batches` (consecutive log batches from next_fetch_offset) for the
        member: (acquired ranges, the batches holding them). Stops after max_records (at the end
        of a batch unless strict_limit) and when max_locks records are acquired in all."""
        acquired: list[Acquired] = []
        used: list[Batch] = []
        taken = 0
        locks = self.acquired_count()
        for b in batches:
            if taken >= max_records or locks >= max_locks:
                break
            took_here = False
            for off in range(max(b.base_offset, self.start_offset), b.last_offset + 1):
                if (strict_limit and taken >= max_records) or locks >= max_locks:
                    break
                rec = self.in_flight.get(off)
                if rec is None:
                    if off < self.end_offset:
                        continue  # below end_offset but unknown: done with (a gap, or already moved past)
                    if b.is_control or b.aborted:
                        self.in_flight[off] = InFlight(RecordState.ARCHIVED, 0)
                        self.end_offset = off + 1
                        continue
                    rec = InFlight(RecordState.AVAILABLE, 0)
                    self.in_flight[off] = rec
                    self.end_offset = off + 1
                elif rec.state != RecordState.AVAILABLE:
                    continue
                rec.state = RecordState.ACQUIRED
                rec.delivery_count += 1
                rec.member_id = member_id
                rec.lock_deadline = now + lock_ms
                taken += 1
                locks += 1
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
        kinds: list[tuple[int, InFlight | None, int]] = []
        for i, off in enumerate(range(first, last + 1)):
            t = types[0] if len(types) == 1 else types[i]
            if t not in AckType._value2member_map_:
                raise AckError(f"unknown acknowledge type {t}")
            rec = self.in_flight.get(off)
            if t == AckType.GAP and (rec is None or rec.state != RecordState.ACQUIRED):
                kinds.append((off, None, t))  # a gap the member saw no record for
                continue
            if rec is None or rec.state != RecordState.ACQUIRED or rec.member_id != member_id:
                raise AckError(f"offset {off} is not acquired by member {member_id}")
            kinds.append((off, rec, t))
        for _off, rec, t in kinds:
            if rec is None:
                continue
            if t == AckType.RENEW:
                rec.lock_deadline = now + lock_ms
            elif t == AckType.ACCEPT:
                self._settle(rec, RecordState.ACKNOWLEDGED)
            elif t == AckType.RELEASE:
                self._release(rec, delivery_limit)
            else:  # REJECT, GAP
                self._settle(rec, RecordState.ARCHIVED)
        self._advance_start()

    @staticmethod
    def _settle(rec: InFlight, state: RecordState) -> None:
        rec.state = state
        rec.member_id = None
        rec.lock_deadline = 0

    def _release(self, rec: InFlight, delivery_limit: int) -> None:
        self._settle(rec, RecordState.ARCHIVED if rec.delivery_count >= delivery_limit else RecordState.AVAILABLE)

    def release_member(self, member_id: str, delivery_limit: int) -> bool:
        """Release every record the member holds (it left, or its session closed)."""
        changed = False
        for rec in self.in_flight.values():
            if rec.state == RecordState.ACQUIRED and rec.member_id == member_id:
                self._release(rec, delivery_limit)
                changed = True
        self._advance_start()
        return changed

    def expire_locks(self, now: int, delivery_limit: int) -> bool:
        changed = False
        for rec in self.in_flight.values():
            if rec.state == RecordState.ACQUIRED and rec.lock_deadline <= now:
                self._release(rec, delivery_limit)
                changed = True
        self._advance_start()
        return changed

    # --- start offset ----------------------------------------------------------------------
    def skip_below(self, log_start_offset: int) -> None:
        """Records the log no longer has (retention, DeleteRecords) are done with."""
        if self.start_offset < log_start_offset:
            for off in [o for o in self.in_flight if o < log_start_offset]:
                del self.in_flight[off]
            self.start_offset = log_start_offset
            self.end_offset = max(self.end_offset, log_start_offset)

    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets: forget everything in flight and start at start_offset."""
        self.in_flight.clear()
        self.start_offset = self.end_offset = start_offset
        self.state_epoch += 1

    # --- undo ------------------------------------------------------------------------------
    def checkpoint(self) -> Checkpoint:
        """The state now, for `rollback` (acknowledgements whose write failed are undone, as
        Kafka's SharePartition rolls back a state change its persister could not write)."""
        return Checkpoint(self.start_offset, self.end_offset, self.state_epoch,
                          {off: replace(r) for off, r in self.in_flight.items()})

    def rollback(self, checkpoint: Checkpoint) -> None:
        self.start_offset, self.end_offset, self.state_epoch = (checkpoint.start_offset, checkpoint.end_offset,
                                                                checkpoint.state_epoch)
        self.in_flight = checkpoint.in_flight

    def _advance_start(self) -> None:
        while self.start_offset < self.end_offset:
            rec = self.in_flight.get(self.start_offset)
            if rec is not None and rec.state not in DONE:
                break
            self.in_flight.pop(self.start_offset, None)
            self.start_offset += 1
