"""The producer state of one partition (broker.producers): Kafka's ProducerAppendInfo rules for
sequences, epochs and duplicates, and the transaction bookkeeping behind the last stable offset."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode as E

from kafkalite.broker.producers import INT32_MAX, NUM_BATCHES_TO_RETAIN, ProduceError, ProducerStates

PID = 1000


def append(states: ProducerStates, seq: int, n: int = 1, *, epoch: int = 0, offset: int = 0, pid: int = PID,
           transactional: bool = False):
    """Check then record a batch of n records, as Partition.append does; returns the duplicate
    the check found, or None when the batch was recorded."""
    last = (seq + n - 1) % (INT32_MAX + 1)
    dup = states.check(pid, epoch, seq, last)
    if dup is None:
        states.record_batch(pid, epoch, seq, last, offset, offset + n - 1, 1000, transactional=transactional)
    return dup


def refused(states: ProducerStates, seq: int, n: int = 1, *, epoch: int = 0) -> E:
    with pytest.raises(ProduceError) as info:
        append(states, seq, n, epoch=epoch)
    return info.value.code


def test_an_unknown_producer_may_start_at_any_sequence():
    states = ProducerStates()
    assert append(states, 42) is None      # state expired or deleted: accepted
    assert states.entries[PID].last_seq == 42


def test_sequences_must_follow_on():
    states = ProducerStates()
    append(states, 0, 3)
    assert append(states, 3, 2, offset=3) is None
    assert refused(states, 6) == E.out_of_order_sequence_number      # gap
    assert refused(states, 4) == E.out_of_order_sequence_number      # overlaps, not a repeat
    assert append(states, 5, offset=5) is None


def test_sequence_wraps_from_int32_max_to_zero():
    states = ProducerStates()
    append(states, INT32_MAX - 1, 2)       # INT32_MAX-1 .. INT32_MAX
    assert append(states, 0, offset=2) is None
    assert refused(states, 2) == E.out_of_order_sequence_number


def test_a_repeat_of_one_of_the_last_five_batches_is_a_duplicate():
    states = ProducerStates()
    for i in range(7):
        append(states, 2 * i, 2, offset=10 * i)
    # batches 2..6 are retained: each repeat gets the offsets it was written at
    for i in range(7 - NUM_BATCHES_TO_RETAIN, 7):
        dup = append(states, 2 * i, 2)
        assert dup is not None and (dup.first_offset, dup.last_offset) == (10 * i, 10 * i + 1)
    # an older batch is no longer known: it is out of order, not a duplicate
    assert refused(states, 2) == E.out_of_order_sequence_number
    assert refused(states, 0) == E.out_of_order_sequence_number
    # nothing was recorded by the duplicates
    assert states.entries[PID].last_seq == 13 and len(states.entries[PID].batches) == NUM_BATCHES_TO_RETAIN


def test_a_duplicate_must_match_both_ends_and_the_epoch():
    states = ProducerStates()
    append(states, 0, 4)
    assert refused(states, 0, 2) == E.out_of_order_sequence_number
    assert append(states, 0, 4) is not None
    # the same sequences under a newer epoch are a new batch (the epoch restarts at 0)
    assert append(states, 0, 4, epoch=1, offset=4) is None
    assert states.entries[PID].epoch == 1


def test_epoch_rules():
    states = ProducerStates()
    append(states, 0, 2, epoch=3)
    assert refused(states, 2, epoch=2) == E.invalid_producer_epoch          # fenced
    assert refused(states, 5, epoch=4) == E.out_of_order_sequence_number    # a bump restarts at 0
    assert append(states, 0, epoch=4, offset=2) is None
    e = states.entries[PID]
    assert e.epoch == 4 and [b.first_seq for b in e.batches] == [0]         # older batches forgotten


def test_transaction_first_offset_bounds_the_last_stable_offset():
    states = ProducerStates()
    assert states.first_unstable_offset() is None and states.last_stable_offset(7) == 7
    append(states, 0, 2, pid=1, offset=10, transactional=True)
    append(states, 0, 1, pid=2, offset=12, transactional=True)
    append(states, 2, 1, pid=1, offset=13, transactional=True)    # same transaction: first stays 10
    assert states.entries[1].current_txn_first_offset == 10
    assert states.in_transaction(1) and states.in_transaction(2) and not states.in_transaction(3)
    assert states.first_unstable_offset() == 10 and states.last_stable_offset(14) == 10
    # producer 1 commits: producer 2's transaction now holds the LSO
    assert states.complete_txn(1, 0, 0, 2000) == 10
    assert states.last_stable_offset(15) == 12
    assert states.complete_txn(2, 0, 0, 2000) == 12
    assert states.last_stable_offset(16) == 16
    # a marker with no open transaction closes nothing
    assert states.complete_txn(2, 0, 0, 2000) is None


def test_markers_are_fenced_by_producer_and_coordinator_epoch():
    states = ProducerStates()
    append(states, 0, epoch=5, transactional=True)
    states.complete_txn(PID, 5, 3, 1000)
    with pytest.raises(ProduceError) as info:
        states.check_marker(PID, 4, 3)
    assert info.value.code == E.invalid_producer_epoch
    with pytest.raises(ProduceError) as info:
        states.check_marker(PID, 5, 2)
    assert info.value.code == E.transaction_coordinator_fenced
    states.check_marker(PID, 6, 3)
    # a marker with a newer epoch (an abort on a fence) takes it and forgets the retained batches
    states.complete_txn(PID, 6, 3, 1000)
    assert states.entries[PID].epoch == 6 and not states.entries[PID].batches


def test_expiry_keeps_producers_with_an_open_transaction():
    states = ProducerStates()
    states.record_batch(1, 0, 0, 0, 0, 0, 1000)
    states.record_batch(2, 0, 0, 0, 1, 1, 1000, transactional=True)
    states.record_batch(3, 0, 0, 0, 2, 2, 5000)
    assert states.expire(now_ms=7000, expiration_ms=3000) == [1]
    assert set(states.entries) == {2, 3}


def test_snapshot_round_trip():
    states = ProducerStates()
    for i in range(3):
        append(states, i, offset=i, pid=7)
    append(states, 0, 2, pid=8, epoch=2, offset=3, transactional=True)
    states.complete_txn(7, 0, 4, 1234)
    again = ProducerStates.from_snapshot(states.to_snapshot())
    for pid in (7, 8):
        a, b = states.entries[pid], again.entries[pid]
        assert (a.epoch, a.coordinator_epoch, a.last_timestamp, a.current_txn_first_offset, list(a.batches)) == \
               (b.epoch, b.coordinator_epoch, b.last_timestamp, b.current_txn_first_offset, list(b.batches))
    assert again.first_unstable_offset() == 3
    with pytest.raises(ValueError):
        ProducerStates.from_snapshot(b'{"version": 9, "entries": []}')
