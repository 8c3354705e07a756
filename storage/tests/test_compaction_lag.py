"""min.compaction.lag.ms and max.compaction.lag.ms as Kafka's LogCleanerManager applies them, on
a log whose segments are rolled by hand with chosen record timestamps: the cleaner's time is the
`now_ms` each pass is given (the broker's clock)."""

from __future__ import annotations

from pathlib import Path

from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.storage import LogConfig, PartitionLog


def open_log(tmp_path: Path, **cfg: object) -> PartitionLog:
    config = LogConfig(cleanup_policy="compact", fsync="never", index_interval_bytes=64, **cfg)  # type: ignore[arg-type]
    return PartitionLog.open(tmp_path / "lag-0", config, now_ms=0)


def put(plog: PartitionLog, *records: tuple[str, str, int]) -> None:
    """One batch a record: (key, value, timestamp)."""
    for key, value, ts in records:
        plog.append(build_batch([Record(key.encode(), value.encode(), (), ts)]), now_ms=ts)


def kept(plog: PartitionLog) -> list[list[tuple[str, str]]]:
    """The records of each segment, oldest first."""
    out = []
    for seg in plog.segments:
        recs: list[tuple[str, str]] = []
        for _pos, h in seg.iter_batches():
            recs += [(r.key.decode(), r.value.decode()) for r in decode_records(h.buf, h.pos)
                     if r.key is not None and r.value is not None]
        out.append(recs)
    return out


def test_min_lag_holds_back_the_first_young_segment_and_all_after_it(tmp_path):
    """The first uncleanable offset stops at the first dirty segment whose largest timestamp is
    later than now - min.compaction.lag.ms; the segments below it are cleaned among themselves."""
    plog = open_log(tmp_path, min_compaction_lag_ms=1000, min_cleanable_dirty_ratio=0.01)
    put(plog, ("a", "a1", 0), ("b", "b1", 1), ("a", "a2", 2))
    plog.roll(2)
    put(plog, ("a", "a3", 5000), ("b", "b2", 5000))
    plog.roll(5000)
    put(plog, ("c", "c1", 5000))

    assert plog.compact(5500, first_unstable_offset=None) == 1
    assert kept(plog) == [[("b", "b1"), ("a", "a2")], [("a", "a3"), ("b", "b2")], [("c", "c1")]]
    assert plog.first_dirty_offset == plog.segments[1].base_offset
    # the second segment's largest timestamp, 5000, is later than now - lag until now is 6000
    assert plog.compact(5999, first_unstable_offset=None) == 0
    assert plog.compact(6000, first_unstable_offset=None) == 1  # the first segment loses both
    assert kept(plog) == [[], [("a", "a3"), ("b", "b2")], [("c", "c1")]]
    plog.close()


def test_min_lag_reads_the_largest_timestamp_not_the_first(tmp_path):
    """A segment that starts old but holds one young record is held back whole."""
    plog = open_log(tmp_path, min_compaction_lag_ms=1000, min_cleanable_dirty_ratio=0.01)
    put(plog, ("a", "a1", 0), ("a", "a2", 4800))
    plog.roll(4800)
    put(plog, ("c", "c1", 5000))
    assert plog.compact(5000, first_unstable_offset=None) == 0
    assert plog.compact(5800, first_unstable_offset=None) == 1
    assert kept(plog)[0] == [("a", "a2")]
    plog.close()


def test_max_lag_cleans_a_log_below_its_dirty_ratio(tmp_path):
    """min.cleanable.dirty.ratio=1 never lets a log be cleaned by its ratio; a dirty segment whose
    first batch is older than now - max.compaction.lag.ms makes it a log that must be cleaned."""
    plog = open_log(tmp_path, max_compaction_lag_ms=1000, min_cleanable_dirty_ratio=1.0)
    put(plog, ("a", "a1", 100), ("a", "a2", 150))
    plog.roll(150)
    put(plog, ("b", "b1", 2000))
    assert plog.compact(1100, first_unstable_offset=None) == 0  # now - lag = 100: not older than it
    assert plog.compact(1101, first_unstable_offset=None) == 1
    assert kept(plog) == [[("a", "a2")], [("b", "b1")]]
    # the next dirty segment waits for its own deadline, by its first batch (2000)
    put(plog, ("b", "b2", 2100))
    plog.roll(2100)
    put(plog, ("c", "c1", 2200))
    assert plog.compact(3000, first_unstable_offset=None) == 0
    assert plog.compact(3001, first_unstable_offset=None) == 1
    assert kept(plog) == [[("a", "a2")], [("b", "b2")], [("c", "c1")]]
    plog.close()


def test_max_lag_cleans_nothing_that_min_lag_holds_back(tmp_path):
    """A log past max.compaction.lag.ms whose every dirty segment is within min.compaction.lag.ms
    has no cleanable bytes: it is not cleaned (Kafka: needCompactionNow and cleanableBytes > 0)."""
    plog = open_log(tmp_path, min_compaction_lag_ms=500, max_compaction_lag_ms=1000, min_cleanable_dirty_ratio=1.0)
    put(plog, ("a", "a1", 1), ("a", "a2", 10_000))
    plog.roll(10_000)
    put(plog, ("c", "c1", 10_000))
    assert plog.compact(10_200, first_unstable_offset=None) == 0
    assert kept(plog)[0] == [("a", "a1"), ("a", "a2")]
    assert plog.compact(10_500, first_unstable_offset=None) == 1
    assert kept(plog)[0] == [("a", "a2")]
    plog.close()


def test_the_last_stable_offset_bounds_a_must_clean_log(tmp_path):
    """An open transaction's data stays uncleaned whatever the lags say: the segment holding the
    last stable offset is the first one left alone."""
    plog = open_log(tmp_path, max_compaction_lag_ms=1, min_cleanable_dirty_ratio=1.0)
    put(plog, ("a", "a1", 0), ("a", "a2", 1))
    plog.roll(1)
    put(plog, ("a", "a3", 2), ("a", "a4", 3))
    plog.roll(3)
    put(plog, ("c", "c1", 4))
    second = plog.segments[1].base_offset
    assert plog.compact(10_000, first_unstable_offset=second + 1) == 1
    assert kept(plog)[:2] == [[("a", "a2")], [("a", "a3"), ("a", "a4")]]
    plog.close()


def test_truncation_below_the_checkpoint_makes_the_new_records_dirty(tmp_path):
    """A log truncated below the cleaner's checkpoint (the first dirty offset) takes the checkpoint
    down with it (Kafka's maybeTruncateCheckpoint): the records written after the truncation are
    dirty and compacted, not counted as clean."""
    plog = open_log(tmp_path, min_cleanable_dirty_ratio=0.5)
    put(plog, ("a", "a1", 1), ("b", "b1", 2))
    plog.roll(2)
    put(plog, ("c", "c1", 3), ("d", "d1", 4))
    plog.roll(4)
    put(plog, ("e", "e1", 5))
    assert plog.compact(10, first_unstable_offset=None) == 0  # nothing to drop, the checkpoint moves on
    assert plog.first_dirty_offset == 4
    plog.truncate_to(2)
    assert plog.first_dirty_offset == 2
    put(plog, ("a", "a2", 6), ("a", "a3", 7), ("a", "a4", 8), ("a", "a5", 9))
    plog.roll(9)
    put(plog, ("f", "f1", 10))
    assert plog.compact(20, first_unstable_offset=None) == 2
    assert kept(plog)[:2] == [[("b", "b1")], [("a", "a5")]]
    plog.close()


def test_a_segment_without_timestamps_is_as_young_as_its_file(tmp_path):
    """Records without a timestamp (-1): the segment's largest timestamp is its file's modification
    time (Kafka's LogSegment.largestTimestamp), which min.compaction.lag.ms is measured from."""
    plog = open_log(tmp_path, min_compaction_lag_ms=1000, min_cleanable_dirty_ratio=0.01)
    put(plog, ("a", "a1", -1), ("a", "a2", -1))
    plog.roll(0)
    put(plog, ("c", "c1", -1))
    modified = plog.segments[0].log_path.stat().st_mtime_ns // 1_000_000
    assert plog.compact(modified + 999, first_unstable_offset=None) == 0
    assert plog.compact(modified + 1000, first_unstable_offset=None) == 1
    assert kept(plog)[0] == [("a", "a2")]
    plog.close()
