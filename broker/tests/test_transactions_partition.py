"""Transactional bookkeeping of a partition: the last stable offset, the aborted-transaction
index written by markers, and the replay of both from the log after a restart."""

from __future__ import annotations

from types import SimpleNamespace

from kio.schema.errors import ErrorCode as E

from kafkalite.broker.partition import Partition
from kafkalite.broker.producer_replay import replay_producer_state
from kafkalite.broker.transactions.markers import write_marker
from kafkalite.protocol.records import Record, build_batch
from kafkalite.storage import LogConfig, PartitionLog

NOW = 1_700_000_000_000


def _partition(path, name="t"):
    plog = PartitionLog.open(path, LogConfig(), now_ms=NOW)
    topic = SimpleNamespace(name=name, internal=False)
    part = Partition(topic, 0, plog)
    replay_producer_state(part)
    return part


def _append(part, pid, epoch, seq, n=1, transactional=True):
    batch = build_batch([Record(value=b"v%d" % i) for i in range(n)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, transactional=transactional, timestamp_ms=NOW)
    done = part.append(batch, now_ms=NOW)
    assert not done.duplicate
    return done.base_offset


def test_lso_and_aborted_index(tmp_path):
    part = _partition(tmp_path / "t-0")
    broker = SimpleNamespace(services=SimpleNamespace())
    assert part.last_stable_offset == 0
    _append(part, 1, 0, 0, transactional=False)                 # 0: plain
    a = _append(part, 10, 0, 0, n=2)                            # 1-2: txn of producer 10
    b = _append(part, 11, 0, 0)                                 # 3: txn of producer 11
    _append(part, 10, 0, 2)                                     # 4: producer 10 again
    assert (a, b) == (1, 3)
    assert part.last_stable_offset == 1 and part.high_watermark == 5
    # producer 11 aborts first: the LSO stays at producer 10's first offset
    assert write_marker(broker, part, 11, 0, 0, False, NOW) == E.none   # marker at 5
    assert part.last_stable_offset == 1
    (ab,) = part.log.aborted_txns(0, part.high_watermark)
    assert (ab.producer_id, ab.first_offset, ab.last_offset, ab.last_stable_offset) == (11, 3, 5, 1)
    # producer 10 commits: everything is stable
    assert write_marker(broker, part, 10, 0, 0, True, NOW) == E.none    # marker at 6
    assert part.last_stable_offset == part.high_watermark == 7
    assert len(part.log.aborted_txns(0, 7)) == 1
    # a marker from an older epoch or coordinator epoch is refused
    _append(part, 10, 1, 0)
    assert write_marker(broker, part, 10, 0, 0, False, NOW) == E.invalid_producer_epoch
    assert write_marker(broker, part, 10, 1, 0, False, NOW) == E.none
    assert write_marker(broker, part, 10, 1, -1, False, NOW) == E.transaction_coordinator_fenced
    # a marker with no transaction open closes nothing and indexes nothing
    assert write_marker(broker, part, 99, 0, 0, False, NOW) == E.none
    assert len(part.log.aborted_txns(0, part.high_watermark)) == 2
    part.log.close()


def test_replay_restores_open_transactions_and_index(tmp_path):
    part = _partition(tmp_path / "t-0")
    broker = SimpleNamespace(services=SimpleNamespace())
    _append(part, 10, 0, 0, n=3)                                 # 0-2
    write_marker(broker, part, 10, 0, 0, False, NOW)             # 3
    _append(part, 10, 0, 3)                                      # 4 (same epoch, TV1)
    _append(part, 20, 5, 0)                                      # 5 (left open)
    write_marker(broker, part, 10, 0, 0, True, NOW)              # 6
    part.log.close()
    again = _partition(tmp_path / "t-0")
    assert again.last_stable_offset == 5
    e10, e20 = again.producers.entries[10], again.producers.entries[20]
    assert e10.current_txn_first_offset is None and e10.last_seq == 3 and e10.epoch == 0
    assert e20.current_txn_first_offset == 5 and e20.epoch == 5
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in again.log.aborted_txns(0, 7)] == [(10, 0, 3)]
    # the next batch of producer 10 must follow its sequence
    assert again.producers.check(10, 0, 4, 4) is None
    again.log.close()


def test_replay_rebuilds_a_missing_abort_entry(tmp_path):
    """A crash after the ABORT marker reached the log but before its index entry: the replay
    adds the entry, so read_committed readers still skip the aborted records."""
    part = _partition(tmp_path / "t-0")
    _append(part, 7, 2, 0, n=2)
    from kafkalite.protocol.control_records import build_control_batch
    part.log.append(build_control_batch(False, producer_id=7, producer_epoch=2, coordinator_epoch=0,
                                        timestamp_ms=NOW), leader_epoch=0, now_ms=NOW)
    part.log.close()
    again = _partition(tmp_path / "t-0")
    assert [(a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
            for a in again.log.aborted_txns(0, 3)] == [(7, 0, 2, 3)]
    assert again.last_stable_offset == 3
    again.log.close()


def test_replay_starts_from_the_producer_snapshot(tmp_path):
    part = _partition(tmp_path / "t-0")
    broker = SimpleNamespace(services=SimpleNamespace())
    _append(part, 10, 0, 0, n=2)                                 # 0-1 open
    _append(part, 11, 3, 0)                                      # 2
    write_marker(broker, part, 11, 3, 0, False, NOW)             # 3
    part.log.write_producer_snapshot(part.log.log_end_offset, part.producers.to_snapshot())
    _append(part, 12, 0, 0)                                      # 4, after the snapshot
    write_marker(broker, part, 10, 0, 0, True, NOW)              # 5
    before = {pid: (e.epoch, e.last_seq, e.current_txn_first_offset, e.coordinator_epoch)
              for pid, e in part.producers.entries.items()}
    part.log.close()
    again = _partition(tmp_path / "t-0")
    after = {pid: (e.epoch, e.last_seq, e.current_txn_first_offset, e.coordinator_epoch)
             for pid, e in again.producers.entries.items()}
    assert after == before
    assert again.last_stable_offset == 4  # producer 12's transaction is still open
    assert [(a.producer_id, a.first_offset) for a in again.log.aborted_txns(0, 6)] == [(11, 2)]
    again.log.close()
