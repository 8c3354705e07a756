"""The share-partition state machine (broker/share/partition.py) and its records, with a fake clock."""

from __future__ import annotations

import contextlib
import uuid

import pytest

from kafkalite.broker.share import records as rec
from kafkalite.broker.share.partition import AckError, AckType, Batch, RecordState, SharePartition, StateBatch

LOCK = 1000


def acquire(sp, member, batches, now=0, max_records=100, strict=False, max_locks=2000):
    return sp.acquire(member, batches, now=now, lock_ms=LOCK, max_records=max_records, max_locks=max_locks,
                      strict_limit=strict)


def test_acquire_release_reject_and_start_offset():
    sp = SharePartition(0)
    got, used = acquire(sp, "m1", [Batch(0, 2, False, False)])
    assert [tuple(a) for a in got] == [(0, 2, 1)] and len(used) == 1
    sp.acknowledge("m1", 0, 0, (AckType.ACCEPT,), now=1, lock_ms=LOCK, delivery_limit=5)
    sp.acknowledge("m1", 1, 2, (AckType.RELEASE, AckType.REJECT), now=1, lock_ms=LOCK, delivery_limit=5)
    assert sp.start_offset == 1
    assert sp.next_fetch_offset() == 1
    got, _ = acquire(sp, "m2", [Batch(0, 2, False, False)], now=2)
    assert [tuple(a) for a in got] == [(1, 1, 2)]  # the released record, second delivery; 2 stays archived
    assert sp.in_flight[2].state == RecordState.ARCHIVED


def test_only_the_holder_may_acknowledge():
    sp = SharePartition(0)
    acquire(sp, "m1", [Batch(0, 0, False, False)])
    with pytest.raises(AckError):
        sp.acknowledge("m2", 0, 0, (AckType.ACCEPT,), now=1, lock_ms=LOCK, delivery_limit=5)
    assert sp.in_flight[0].state == RecordState.ACQUIRED


def test_lock_expiry_and_delivery_limit_archive():
    sp = SharePartition(0)
    for attempt in range(1, 3):
        got, _ = acquire(sp, "m1", [Batch(0, 0, False, False)], now=attempt * 10_000)
        assert got[0].delivery_count == attempt
        assert sp.expire_locks(attempt * 10_000 + LOCK, delivery_limit=2)
    assert sp.start_offset == 1 and not sp.in_flight  # archived at the limit, then passed


def test_member_leaving_releases_and_control_and_aborted_are_never_delivered():
    sp = SharePartition(0)
    got, used = acquire(sp, "m1", [Batch(0, 1, False, False), Batch(2, 2, True, False), Batch(3, 4, False, True),
                                   Batch(5, 5, False, False)])
    assert [tuple(a) for a in got] == [(0, 1, 1), (5, 5, 1)]
    assert [b.base_offset for b in used] == [0, 5]
    assert sp.release_member("m1", delivery_limit=5)
    assert sp.next_fetch_offset() == 0


def test_max_records_strict_and_max_locks():
    sp = SharePartition(0)
    got, _ = acquire(sp, "m1", [Batch(0, 9, False, False)], max_records=3, strict=True)
    assert [tuple(a) for a in got] == [(0, 2, 1)] and sp.end_offset == 3
    got, _ = acquire(sp, "m1", [Batch(0, 9, False, False)], max_records=3, max_locks=4)
    assert [tuple(a) for a in got] == [(3, 3, 1)]


def test_state_batches_round_trip_through_snapshot_records():
    sp = SharePartition(10)
    acquire(sp, "m1", [Batch(10, 14, False, False)])
    sp.acknowledge("m1", 10, 10, (AckType.ACCEPT,), now=1, lock_ms=LOCK, delivery_limit=5)
    sp.acknowledge("m1", 12, 12, (AckType.REJECT,), now=1, lock_ms=LOCK, delivery_limit=5)
    batches = sp.state_batches()
    assert batches == [StateBatch(11, 11, 0, 1), StateBatch(12, 12, 4, 1), StateBatch(13, 14, 0, 1)]
    tid = uuid.uuid4()
    key = rec.decode_key(rec.snapshot_key("g", tid, 3))
    assert key == rec.ShareKey(rec.SHARE_SNAPSHOT_KEY, "g", tid, 3)
    value = rec.decode_snapshot_value(rec.snapshot_value(rec.ShareState(0, 1, 0, sp.start_offset, 5, 6,
                                                                        tuple(batches))))
    back = SharePartition.restore(value.start_offset, value.batches, state_epoch=value.state_epoch)
    assert back.start_offset == 11 and back.end_offset == 15
    got, _ = acquire(back, "m2", [Batch(10, 14, False, False)])
    assert [tuple(a) for a in got] == [(11, 11, 2), (13, 14, 2)]


def test_kafka_written_share_state_records_decode():
    """Bytes Apache Kafka 4.4 wrote to __share_group_state (a snapshot when the share-partition was
    initialised, then an update after accept 0 / release 1 / reject 2)."""
    snapshot = bytes.fromhex("0000000000000000000200000000ffffffffffffffff000001a20bcdd832000001a20bcdd8320100")
    st = rec.decode_snapshot_value(snapshot)
    assert (st.snapshot_epoch, st.state_epoch, st.leader_epoch, st.start_offset, st.batches) == (0, 2, 0, -1, ())
    assert st.create_timestamp == st.write_timestamp == 0x1a20bcdd832
    assert rec.snapshot_value(st) == snapshot
    update = bytes.fromhex(
        "00000000000000000000000000000000000004000000000000000000000000000000000200010000000000000000010000000000"
        "00000100000100000000000000000200000000000000020400010001000400000002")
    assert rec.decode_update_value(update) == (0, 0, (StateBatch(0, 0, 2, 1), StateBatch(1, 1, 0, 1),
                                                      StateBatch(2, 2, 4, 1)))
    ours = rec.ShareState(0, 2, 0, 0, 5, 6, (StateBatch(1, 1, 0, 1),), delivery_complete_count=2)
    assert rec.decode_snapshot_value(rec.snapshot_value(ours)) == ours


def _walked(sp: SharePartition) -> tuple:
    """What the share-partition's indexes answer, recomputed by walking every in-flight record."""
    recs = sorted(sp.in_flight.items())
    runs: list[StateBatch] = []
    for off, r in recs:
        state = RecordState.AVAILABLE if r.state == RecordState.ACQUIRED else r.state
        if runs and runs[-1].last_offset == off - 1 and runs[-1][2:] == (state, r.delivery_count):
            runs[-1] = runs[-1]._replace(last_offset=off)
        else:
            runs.append(StateBatch(off, off, int(state), r.delivery_count))
    available = [o for o, r in recs if r.state == RecordState.AVAILABLE]
    locks = [r.lock_deadline for _, r in recs if r.state == RecordState.ACQUIRED]
    return (runs, available[0] if available else sp.end_offset, bool(available),
            sum(r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED) for _, r in recs),
            len(locks), min(locks) if locks else None)


def _answered(sp: SharePartition) -> tuple:
    return (sp.state_batches(), sp.next_fetch_offset(), sp.has_available(), sp.delivery_complete_count(),
            sp.acquired_count(), sp.next_lock_deadline())


def _everything(sp: SharePartition) -> tuple:
    return (sp.start_offset, sp.end_offset, sp.state_epoch,
            [(o, r.state, r.delivery_count, r.member_id, r.lock_deadline) for o, r in sorted(sp.in_flight.items())])


@pytest.mark.parametrize("seed", range(40))
def test_indexes_agree_with_a_walk_of_every_record_and_a_rollback_restores_all(seed, monkeypatch):
    """Random acquisitions, acknowledgements (some rolled back, as after a failed write), lock
    expiries, members leaving, log truncation and offset resets: after each, the counts, heaps and
    cached state batches answer as a walk of every in-flight record does, with blocks of 4 offsets
    so that runs cross blocks."""
    import random

    from kafkalite.broker.share import partition

    monkeypatch.setattr(partition, "RUN_BLOCK", 4)
    rnd = random.Random(seed)
    sp = SharePartition(0)
    log: list[Batch] = []
    now = 0
    for _ in range(300):
        now += rnd.randint(0, 400)
        op = rnd.random()
        if op < 0.2:
            first = log[-1].last_offset + 1 if log else 0
            log.append(Batch(first, first + rnd.randint(0, 7), rnd.random() < 0.1, rnd.random() < 0.1))
        elif op < 0.5:
            start = sp.next_fetch_offset()
            acquire(sp, rnd.choice("ab"), [b for b in log if b.last_offset >= start], now=now,
                    max_records=rnd.randint(1, 20), strict=rnd.random() < 0.5, max_locks=rnd.randint(5, 40))
        elif op < 0.8:
            first = rnd.randint(max(0, sp.start_offset - 2), sp.end_offset + 1)
            last = first + rnd.randint(0, 5)
            types = tuple(rnd.choice((0, 1, 1, 2, 3, 4)) for _ in range(rnd.choice((1, last - first + 1))))
            before, checkpoint = _everything(sp), sp.checkpoint()
            with contextlib.suppress(AckError):
                sp.acknowledge(rnd.choice("ab"), first, last, types, now=now, lock_ms=LOCK, delivery_limit=3)
            if rnd.random() < 0.3:
                sp.rollback(checkpoint)
                assert _everything(sp) == before
            else:
                sp.keep(checkpoint)
        elif op < 0.88:
            sp.expire_locks(now, delivery_limit=3)
        elif op < 0.94:
            sp.release_member(rnd.choice("ab"), delivery_limit=3)
        elif op < 0.97:
            sp.skip_below(rnd.randint(0, log[-1].last_offset + 1 if log else 0))
        else:
            before, checkpoint = _everything(sp), sp.checkpoint()
            sp.reset(rnd.randint(0, sp.end_offset))
            sp.rollback(checkpoint)
            assert _everything(sp) == before
        assert _answered(sp) == _walked(sp)
        assert list(sp.in_flight) == sorted(sp.in_flight)  # walked in order without sorting
