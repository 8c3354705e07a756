"""Example-based tests of PartitionLog."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kafkalite.protocol.batch import BatchHeader, iter_batches
from kafkalite.protocol.control_records import build_control_batch
from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.storage import AbortedTxn, LogConfig, OffsetOutOfRange, PartitionLog

from .helpers import batch, crash, last_log_file, read_all, small_config, values


@pytest.fixture
def pdir(tmp_path) -> Path:
    return tmp_path / "topic-0"


def open_log(pdir, cfg=None, now_ms=0):
    return PartitionLog.open(pdir, cfg or small_config(), now_ms=now_ms)


# --- append and read ----------------------------------------------------------------------------

def test_new_log_is_empty(pdir):
    plog = open_log(pdir)
    assert (plog.log_start_offset, plog.log_end_offset, plog.size_bytes) == (0, 0, 0)
    assert plog.read(0, 1000) == b"" and plog.read_region(0, 1000) == b""
    with pytest.raises(OffsetOutOfRange):
        plog.read(1, 1000)
    assert plog.offset_for_timestamp(0) is None and plog.max_timestamp_offset() is None
    assert list(plog.batches_from(0)) == [] and plog.segment_summaries() == [(0, 0, 0)]
    plog.close()


def test_a_new_log_makes_its_files_on_its_first_write(pdir):
    """Creating a partition costs no file: its directory and first segment are made by its first
    write; reads, lookups, flush, retention and close of a log never written touch no file, and it
    opens again as a new log."""
    for _ in range(2):
        plog = open_log(pdir, small_config(fsync="always", retention_ms=0))
        assert plog.read(0, 1000) == b"" and plog.offset_for_timestamp(0) is None
        plog.flush()
        assert plog.apply_retention(10**12) == 0
        plog.close()
        assert not pdir.exists()
    plog = open_log(pdir)
    plog.append(batch(2, tag="a"), now_ms=0)
    assert sorted(os.listdir(pdir)) == ["00000000000000000000.log"]
    assert [v.rstrip(b".") for _o, v in read_all(plog)] == [b"a:0", b"a:1"]
    plog.close()
    plog = open_log(pdir)
    assert plog.log_end_offset == 2 and not plog.created
    plog.close()


def test_a_first_write_the_disk_refuses_leaves_a_new_log(tmp_path):
    """The directory cannot be made (a file stands where it goes): the append raises OSError and
    the log is as it was, and the first write after the cause is gone makes it."""
    pdir = tmp_path / "data" / "topic-0"
    plog = open_log(pdir)
    (tmp_path / "data").write_bytes(b"")
    with pytest.raises(OSError):
        plog.append(batch(1, tag="x"), now_ms=0)
    assert (plog.log_end_offset, plog.size_bytes, plog.changed_since_open) == (0, 0, False)
    (tmp_path / "data").unlink()
    assert plog.append(batch(1, tag="y"), now_ms=0).base_offset == 0
    assert [v.rstrip(b".") for _o, v in read_all(plog)] == [b"y:0"]
    plog.close()


def test_the_first_flush_fsyncs_the_new_directory_entry(pdir, monkeypatch):
    """fsync=always: the directory made by the first write is fsynced in the data dir too, once."""
    import kafkalite.storage.log as log_module

    synced: list[Path] = []
    monkeypatch.setattr(log_module, "fsync_path", lambda p: synced.append(Path(p)))
    plog = open_log(pdir, small_config(fsync="always"))
    plog.append(batch(1, tag="x"), now_ms=0)
    plog.flush()
    assert synced == [pdir, pdir.parent]
    plog.append(batch(1, tag="y"), now_ms=0)
    plog.flush()
    assert synced == [pdir, pdir.parent]
    plog.close()


def test_append_assigns_offsets_and_epoch(pdir):
    plog = open_log(pdir)
    b1 = batch(3, tag="a")
    info = plog.append(b1, leader_epoch=4, now_ms=50)
    assert (info.base_offset, info.last_offset, info.max_timestamp, info.log_append_time_ms) == (0, 2, 1002, -1)
    info = plog.append(batch(2, tag="b"), leader_epoch=5, now_ms=51)
    assert (info.base_offset, info.last_offset, info.log_start_offset) == (3, 4, 0)
    assert BatchHeader(b1).base_offset == 0 and BatchHeader(b1).partition_leader_epoch == 4
    assert plog.log_end_offset == 5
    data = plog.read(0, 10_000)
    hs = [h for _p, h in iter_batches(bytes(data), check_crc=True)]
    assert [(h.base_offset, h.partition_leader_epoch) for h in hs] == [(0, 4), (3, 5)]
    assert values(data) == [(0, b"a:0......."), (1, b"a:1......."), (2, b"a:2......."),
                            (3, b"b:0......."), (4, b"b:1.......")]
    plog.close()


def test_append_accepts_memoryview_and_bytes(pdir):
    plog = open_log(pdir)
    plog.append(memoryview(batch(1)), now_ms=0)
    plog.append(bytes(batch(1)), now_ms=0)
    assert plog.log_end_offset == 2
    assert [o for o, _ in read_all(plog)] == [0, 1]
    plog.close()


def test_log_append_time(pdir):
    plog = open_log(pdir, small_config(timestamp_type="LogAppendTime"))
    info = plog.append(batch(2, ts=5), now_ms=777)
    assert info.log_append_time_ms == 777 and info.max_timestamp == 777
    data = bytes(plog.read(0, 1000))
    h = BatchHeader(data)
    assert h.timestamp_type == 1 and h.max_timestamp == 777 and h.crc_ok()
    assert [r.timestamp for r in decode_records(data)] == [777, 777]
    assert plog.offset_for_timestamp(700) == (0, 777)
    plog.close()


def test_several_batches_in_one_append(pdir):
    plog = open_log(pdir)
    buf = batch(2, tag="x") + batch(3, tag="y")
    info = plog.append(buf, now_ms=0)
    assert (info.base_offset, info.last_offset) == (0, 4)
    assert [h.base_offset for _p, h in iter_batches(buf)] == [0, 2]
    plog.close()


def test_read_inside_a_batch_returns_the_whole_batch(pdir):
    plog = open_log(pdir, LogConfig(fsync="never"))
    for i in range(5):
        plog.append(batch(10, tag=str(i)), now_ms=0)
    data = plog.read(23, 1 << 20)
    first = BatchHeader(bytes(data))
    assert first.base_offset == 20 and first.record_count == 10
    assert [h.base_offset for _p, h in iter_batches(bytes(data))] == [20, 30, 40]
    assert plog.read(50, 100) == b""
    plog.close()


def test_read_limits(pdir):
    plog = open_log(pdir, LogConfig(fsync="never"))
    for i in range(10):
        plog.append(batch(2, tag=str(i)), now_ms=0)
    size = BatchHeader(bytes(plog.read(0, 1))).total_size
    # max_bytes smaller than a batch: min_one returns it whole, else nothing
    assert len(plog.read(0, 1)) == size
    assert plog.read(0, 1, min_one=False) == b""
    # whole batches only, never a partial one
    assert len(plog.read(0, size * 3 + size // 2)) == size * 3
    # upper bound (an LSO) stops before the batch starting at it
    assert [h.base_offset for _p, h in iter_batches(bytes(plog.read(0, 1 << 20, upper_bound=6)))] == [0, 2, 4]
    assert [h.base_offset for _p, h in iter_batches(bytes(plog.read(4, 1 << 20, upper_bound=5)))] == [4]
    assert plog.read(6, 1 << 20, upper_bound=6) == b""
    assert plog.read(20, 1 << 20) == b""
    with pytest.raises(OffsetOutOfRange):
        plog.read(21, 100)
    with pytest.raises(OffsetOutOfRange):
        plog.read(-1, 100)
    plog.close()


def test_read_stays_within_one_segment_and_moves_on(pdir):
    plog = open_log(pdir, small_config(segment_bytes=400))
    for i in range(20):
        plog.append(batch(1, tag=str(i)), now_ms=0)
    assert len(plog.segments) > 2
    assert read_all(plog) == [(i, f"{i}:0".encode().ljust(10, b".")) for i in range(20)]
    plog.close()


# --- rolling ---------------------------------------------------------------------------------------

def test_roll_by_size(pdir):
    plog = open_log(pdir, small_config(segment_bytes=300))
    sizes = []
    for _i in range(10):
        plog.append(batch(1), now_ms=0)
        sizes.append(len(plog.segments))
    assert all(s.size <= 300 for s in plog.segments)
    assert [s.base_offset for s in plog.segments] == sorted({s.base_offset for s in plog.segments})
    assert len(plog.segments) >= 3
    names = sorted(p.name for p in pdir.glob("*.log"))
    assert names[0] == "00000000000000000000.log"
    assert all(len(n) == len("00000000000000000000.log") for n in names)
    plog.close()


def test_oversized_batch_goes_into_its_own_segment(pdir):
    plog = open_log(pdir, small_config(segment_bytes=200))
    plog.append(batch(1), now_ms=0)
    plog.append(batch(1, size=1000), now_ms=0)
    plog.append(batch(1), now_ms=0)
    assert [s.base_offset for s in plog.segments] == [0, 1, 2]
    plog.close()


def test_roll_by_time_uses_record_timestamps(pdir):
    plog = open_log(pdir, small_config(segment_bytes=1 << 20, segment_ms=1000))
    plog.append(batch(1, ts=10_000), now_ms=0)
    plog.append(batch(1, ts=10_900), now_ms=0)
    assert len(plog.segments) == 1
    plog.append(batch(1, ts=11_001), now_ms=0)
    assert [s.base_offset for s in plog.segments] == [0, 2]
    plog.close()


def test_roll_by_time_without_timestamps_uses_creation_time(pdir):
    plog = open_log(pdir, small_config(segment_bytes=1 << 20, segment_ms=1000), now_ms=0)
    plog.append(batch(1, ts=-1), now_ms=10)
    plog.append(batch(1, ts=-1), now_ms=900)
    assert len(plog.segments) == 1
    plog.append(batch(1, ts=-1), now_ms=1001)
    assert len(plog.segments) == 2
    plog.close()


# --- recovery --------------------------------------------------------------------------------------

def _fill(plog, n, **kw):
    for i in range(n):
        plog.append(batch(2, tag=f"r{i}", ts=1000 + 10 * i, **kw), now_ms=0)


def test_reopen_after_clean_close(pdir):
    plog = open_log(pdir)
    _fill(plog, 30)
    before = read_all(plog)
    nseg = len(plog.segments)
    plog.close()
    assert (pdir / ".kafka_cleanshutdown").exists()
    plog = open_log(pdir)
    # the marker stays while the log is unchanged, and goes before its first write
    assert (pdir / ".kafka_cleanshutdown").exists() and not plog.changed_since_open
    assert plog.log_end_offset == 60 and len(plog.segments) == nseg
    assert read_all(plog) == before
    plog.append(batch(1, tag="after"), now_ms=0)
    assert not (pdir / ".kafka_cleanshutdown").exists() and plog.changed_since_open
    assert plog.log_end_offset == 61
    plog.close()


def _tree(pdir):
    """Every file of the partition directory with its size and modification time."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in pdir.iterdir()}


def test_close_of_an_unchanged_log_writes_nothing(pdir):
    plog = open_log(pdir)
    _fill(plog, 10)
    plog.close()
    files = _tree(pdir)
    for _ in range(3):     # open, read, close: not a byte written, the marker kept
        plog = open_log(pdir)
        assert len(read_all(plog)) == 20
        plog.close()
        assert _tree(pdir) == files
    assert (pdir / ".kafka_cleanshutdown").exists()


def test_close_of_a_new_empty_log_writes_no_marker(pdir):
    plog = open_log(pdir)
    assert not plog.changed_since_open
    plog.close()
    assert not (pdir / ".kafka_cleanshutdown").exists()
    plog = open_log(pdir)      # nothing to recover in an empty log
    assert plog.log_end_offset == 0
    plog.append(batch(1, tag="x"), now_ms=0)
    plog.close()
    assert (pdir / ".kafka_cleanshutdown").exists()


def test_torn_tail_written_after_a_clean_open_is_cut(pdir):
    """The marker of the last clean stop goes before the first write: a crash after writes that
    followed a clean open recovers the tail with CRC checks."""
    plog = open_log(pdir)
    _fill(plog, 5)
    plog.close()
    plog = open_log(pdir)
    _fill(plog, 1)
    before = read_all(plog)
    crash(plog)
    assert not (pdir / ".kafka_cleanshutdown").exists()
    extra = batch(3, tag="torn")
    with open(last_log_file(pdir), "ab") as f:
        f.write(extra[:8] + b"\xff" * (len(extra) - 8))     # a whole-looking batch with a bad CRC
    plog = open_log(pdir)
    assert plog.log_end_offset == 12
    assert read_all(plog) == before
    plog.close()


def test_kill9_keeps_every_acknowledged_append(pdir):
    """A real kill -9 of a process that appended: every append that returned is there."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from kafkalite.storage import PartitionLog, LogConfig
        from kafkalite.protocol.records import Record, build_batch
        plog = PartitionLog.open({str(pdir)!r}, LogConfig(segment_bytes=2000, index_interval_bytes=100), now_ms=0)
        for i in range(200):
            plog.append(build_batch([Record(b"k", b"v%d" % i, (), i)]), now_ms=i)
            print(i, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == -9, out.stderr
    acked = [int(x) for x in out.stdout.split()]
    assert acked == list(range(200))
    plog = open_log(pdir, LogConfig(segment_bytes=2000, index_interval_bytes=100))
    assert plog.log_end_offset == 200
    assert [v for _o, v in read_all(plog)] == [b"v%d" % i for i in range(200)]
    plog.close()


@pytest.mark.parametrize("tail", ["partial", "garbage", "zeros", "bad_crc", "short_header"])
def test_torn_tail_is_truncated(pdir, tail, caplog):
    plog = open_log(pdir)
    _fill(plog, 12)
    before = read_all(plog)
    crash(plog)
    path = last_log_file(pdir)
    good_size = path.stat().st_size
    extra = batch(3, tag="torn")
    with open(path, "ab") as f:
        if tail == "partial":
            f.write(extra[:len(extra) - 5])
        elif tail == "garbage":
            f.write(os.urandom(500))
        elif tail == "zeros":
            f.write(b"\x00" * 4096)
        elif tail == "bad_crc":
            bad = bytearray(extra)
            struct.pack_into(">q", bad, 0, 24)
            bad[-1] ^= 0x55
            f.write(bad)
        else:
            f.write(extra[:7])
    caplog.set_level("WARNING", logger="kafkalite.storage")
    plog = open_log(pdir)
    assert path.stat().st_size == good_size
    assert plog.log_end_offset == 24
    assert read_all(plog) == before
    assert any("truncating" in r.message for r in caplog.records)
    info = plog.append(batch(1, tag="next"), now_ms=0)
    assert info.base_offset == 24
    plog.close()


@pytest.mark.parametrize("torn", [False, True], ids=["whole", "torn"])
def test_recovery_walks_batches_larger_than_its_read_chunk(pdir, torn):
    """Recovery reads segments in SCAN_CHUNK pieces: a batch larger than a piece is read whole,
    and one cut short at the end of the file is still a torn tail."""
    from kafkalite.storage.segment import SCAN_CHUNK

    plog = open_log(pdir, small_config(segment_bytes=16 << 20))
    plog.append(batch(2, tag="small"), now_ms=0)
    plog.append(batch(1, tag="big", size=SCAN_CHUNK + 1000), now_ms=0)
    plog.append(batch(2, tag="after"), now_ms=0)
    before = read_all(plog)
    crash(plog)
    path = last_log_file(pdir)
    good_size = path.stat().st_size
    if torn:
        big = batch(1, tag="torn", size=2 * SCAN_CHUNK)
        with open(path, "ab") as f:
            f.write(big[:SCAN_CHUNK + 100])
    plog = open_log(pdir, small_config(segment_bytes=16 << 20))
    assert path.stat().st_size == good_size
    assert plog.log_end_offset == 5
    assert read_all(plog) == before
    assert [o for o, _b in plog.batches_from(0)] == [0, 2, 3]
    plog.close()


def test_torn_tail_after_clean_marker_is_still_cut(pdir):
    plog = open_log(pdir)
    _fill(plog, 5)
    plog.close()
    with open(last_log_file(pdir), "ab") as f:
        f.write(b"\x00\x00\x00")
    plog = open_log(pdir)
    assert plog.log_end_offset == 10
    plog.close()


@pytest.mark.parametrize("damage", ["delete", "truncate", "garble"])
def test_index_files_are_rebuilt(pdir, damage):
    cfg = small_config(segment_bytes=2000, index_interval_bytes=64)
    plog = open_log(pdir, cfg)
    _fill(plog, 40)
    before = read_all(plog)
    expected_index = {s.base_offset: (list(s.idx_off), list(s.idx_pos)) for s in plog.segments}
    plog.close()
    for p in list(pdir.glob("*.index")) + list(pdir.glob("*.timeindex")):
        if damage == "delete":
            p.unlink()
        elif damage == "truncate":
            with open(p, "r+b") as f:
                f.truncate(max(p.stat().st_size - 3, 0))
        else:
            data = bytearray(p.read_bytes())
            if data:
                data[:8] = b"\x7f" * 8
                p.write_bytes(data)
    plog = open_log(pdir, cfg)
    assert {s.base_offset: (list(s.idx_off), list(s.idx_pos)) for s in plog.segments} == expected_index
    assert read_all(plog) == before
    assert plog.offset_for_timestamp(1055) == (12, 1060)
    for off in (0, 7, 33, 79):
        assert BatchHeader(bytes(plog.read(off, 1))).base_offset == off - off % 2
    plog.close()
    assert all(p.stat().st_size % 8 == 0 for p in pdir.glob("*.index"))


def test_unclean_reopen_rebuilds_last_segment_indexes(pdir):
    cfg = small_config(segment_bytes=1 << 20, index_interval_bytes=64)
    plog = open_log(pdir, cfg)
    _fill(plog, 50)
    idx = list(plog.segments[-1].idx_off)
    crash(plog)
    plog = open_log(pdir, cfg)
    assert list(plog.segments[-1].idx_off) == idx
    assert plog.offset_for_timestamp(1245) == (50, 1250)
    plog.close()


def test_checkpoint_beyond_recovered_end_starts_over_there(pdir):
    plog = open_log(pdir)
    _fill(plog, 3)
    plog.delete_records_before(6)
    crash(plog)
    last = last_log_file(pdir)
    with open(last, "r+b") as f:
        f.truncate(0)
    plog = open_log(pdir)
    assert plog.log_start_offset == plog.log_end_offset == 6
    assert plog.append(batch(1), now_ms=0).base_offset == 6
    plog.close()


# --- timestamps ------------------------------------------------------------------------------------

def test_offset_for_timestamp(pdir):
    plog = open_log(pdir, small_config(segment_bytes=600, index_interval_bytes=50))
    # timestamps not monotonic across batches
    stamps = [100, 300, 200, 400, 350, 500, 450, 600]
    for _i, ts in enumerate(stamps):
        plog.append(build_batch([Record(b"k", b"v", (), ts), Record(b"k", b"v", (), ts + 5)]), now_ms=0)
    assert len(plog.segments) > 1
    assert plog.offset_for_timestamp(0) == (0, 100)
    assert plog.offset_for_timestamp(101) == (1, 105)
    assert plog.offset_for_timestamp(201) == (2, 300)
    assert plog.offset_for_timestamp(401) == (7, 405)     # the ts=400 batch holds 400, 405
    assert plog.offset_for_timestamp(605) == (15, 605)
    assert plog.offset_for_timestamp(606) is None
    assert plog.max_timestamp_offset() == (15, 605)
    plog.delete_records_before(3)
    assert plog.offset_for_timestamp(0) == (3, 305)
    plog.close()
    plog = open_log(pdir, small_config(segment_bytes=600, index_interval_bytes=50))
    assert plog.offset_for_timestamp(201) == (3, 305)
    assert plog.max_timestamp_offset() == (15, 605)
    plog.close()


def test_max_timestamp_offset_picks_first_record_with_max(pdir):
    plog = open_log(pdir)
    plog.append(build_batch([Record(b"k", b"", (), 5), Record(b"k", b"", (), 9), Record(b"k", b"", (), 9)]), now_ms=0)
    plog.append(build_batch([Record(b"k", b"", (), 9)]), now_ms=0)
    assert plog.max_timestamp_offset() == (1, 9)
    plog.close()


def test_offset_for_timestamp_in_compressed_batches(pdir):
    pytest.importorskip("cramjam")
    plog = open_log(pdir)
    for codec in (1, 2, 3, 4):
        plog.append(build_batch([Record(b"k", b"v" * 50, (), codec * 100 + i) for i in range(10)],
                                compression=codec), now_ms=0)
    assert plog.offset_for_timestamp(305) == (25, 305)
    assert plog.offset_for_timestamp(410) is None
    plog.close()


# --- DeleteRecords, truncation ---------------------------------------------------------------------

def test_delete_records_before(pdir):
    plog = open_log(pdir, small_config(segment_bytes=400))
    _fill(plog, 20)
    nseg = len(plog.segments)
    second_base = plog.segments[1].base_offset
    assert plog.delete_records_before(second_base + 1) == second_base + 1
    assert plog.segments[0].base_offset == second_base and len(plog.segments) == nseg - 1
    assert not (pdir / "00000000000000000000.log").exists()
    with pytest.raises(OffsetOutOfRange):
        plog.read(second_base, 100)
    data = plog.read(second_base + 1, 1 << 20)
    assert BatchHeader(bytes(data)).base_offset <= second_base + 1
    assert read_all(plog)[0][0] == second_base + 1
    assert plog.delete_records_before(3) == second_base + 1   # never moves back
    with pytest.raises(OffsetOutOfRange):
        plog.delete_records_before(41)
    plog.close()
    plog = open_log(pdir, small_config(segment_bytes=400))
    assert plog.log_start_offset == second_base + 1
    assert plog.delete_records_before(40) == 40
    assert len(plog.segments) == 1 and plog.read(40, 100) == b""
    plog.close()


def test_truncate_to(pdir):
    plog = open_log(pdir, small_config(segment_bytes=400))
    _fill(plog, 20)
    plog.write_producer_snapshot(30, b"late")
    plog.write_producer_snapshot(10, b"early")
    plog.truncate_to(21)                           # inside batch 20-21: the batch goes whole
    assert plog.log_end_offset == 21
    assert [o for o, _ in read_all(plog)] == list(range(20))
    assert plog.latest_producer_snapshot() == (10, b"early")
    assert plog.append(batch(1, tag="new"), now_ms=0).base_offset == 21
    plog.truncate_to(8)
    assert plog.log_end_offset == 8 and [o for o, _ in read_all(plog)] == list(range(8))
    assert all(s.base_offset <= 8 for s in plog.segments)
    plog.close()
    plog = open_log(pdir, small_config(segment_bytes=400))
    assert plog.log_end_offset == 8 and [o for o, _ in read_all(plog)] == list(range(8))
    plog.truncate_to(100)                          # beyond the end: nothing
    assert plog.log_end_offset == 8
    plog.close()


def test_truncate_below_start_restarts_the_log(pdir):
    plog = open_log(pdir)
    _fill(plog, 5)
    plog.delete_records_before(6)
    plog.truncate_to(4)
    assert (plog.log_start_offset, plog.log_end_offset) == (4, 4)
    assert [s.base_offset for s in plog.segments] == [4]
    assert plog.append(batch(1), now_ms=0).base_offset == 4
    plog.close()


# --- retention --------------------------------------------------------------------------------------

def test_retention_by_time(pdir):
    cfg = small_config(segment_bytes=300, retention_ms=1000)
    plog = open_log(pdir, cfg)
    for i in range(12):
        plog.append(batch(1, ts=i * 100), now_ms=0)
    nseg = len(plog.segments)
    maxes = [s.max_timestamp for s in plog.segments]
    deleted = plog.apply_retention(now_ms=maxes[1] + 1001)
    assert deleted == 2 and len(plog.segments) == nseg - 2
    assert plog.log_start_offset == plog.segments[0].base_offset
    # everything expired: the active segment goes too (Kafka rolls an empty one first), and
    # the log start reaches the end
    assert plog.apply_retention(now_ms=10**9) == nseg - 2
    assert len(plog.segments) == 1 and plog.segments[0].size == 0
    assert plog.log_start_offset == plog.log_end_offset == 12
    assert plog.apply_retention(now_ms=10**9) == 0     # an empty active segment stays
    plog.append(batch(1, ts=10**9), now_ms=0)
    assert read_all(plog) and plog.log_end_offset == 13
    plog.close()
    plog = open_log(pdir, cfg)
    assert plog.log_start_offset == 12 and plog.log_end_offset == 13
    plog.close()


def test_retention_by_size(pdir):
    cfg = small_config(segment_bytes=300, retention_ms=-1, retention_bytes=600)
    plog = open_log(pdir, cfg)
    for _i in range(20):
        plog.append(batch(1), now_ms=0)
    deleted = plog.apply_retention(now_ms=0)
    assert deleted > 0
    assert plog.size_bytes - plog.segments[0].size < 600 <= plog.size_bytes or plog.size_bytes <= 600
    assert plog.log_start_offset == plog.segments[0].base_offset
    plog.close()


def test_retention_respects_floor_and_policy(pdir):
    cfg = small_config(segment_bytes=300, retention_ms=1)
    plog = open_log(pdir, cfg)
    for i in range(12):
        plog.append(batch(1, ts=i), now_ms=0)
    bases = [s.base_offset for s in plog.segments]
    plog.retention_floor = bases[2]           # an open transaction starts in the third segment
    assert plog.apply_retention(now_ms=10**9) == 2
    assert plog.segments[0].base_offset == bases[2]
    plog.retention_floor = bases[2] + 1       # still inside the (now first) segment
    assert plog.apply_retention(now_ms=10**9) == 0
    plog.update_config(small_config(segment_bytes=300, retention_ms=1, cleanup_policy="compact"))
    plog.retention_floor = None
    assert plog.apply_retention(now_ms=10**9) == 0
    plog.close()


# --- transaction index -------------------------------------------------------------------------------

def test_txn_index_round_trip(pdir):
    plog = open_log(pdir, small_config(segment_bytes=400))
    _fill(plog, 10)
    plog.append_aborted_txn(7, 2, 5, 6)
    plog.append_aborted_txn(7, 2, 5, 6)              # idempotent
    _fill(plog, 10)
    plog.append_aborted_txn(9, 12, 30, 31)
    plog.append_aborted_txn(8, 35, 38, 39)
    assert plog.aborted_txns(0, 100) == [AbortedTxn(7, 2, 5, 6), AbortedTxn(9, 12, 30, 31), AbortedTxn(8, 35, 38, 39)]
    assert plog.aborted_txns(6, 12) == []
    assert plog.aborted_txns(6, 13) == [AbortedTxn(9, 12, 30, 31)]
    assert plog.aborted_txns(31, 36) == [AbortedTxn(8, 35, 38, 39)]
    raw = b"".join(p.read_bytes() for p in sorted(pdir.glob("*.txnindex")))
    assert len(raw) == 3 * 34 and struct.unpack_from(">hqqqq", raw, 0) == (0, 7, 2, 5, 6)
    plog.close()
    plog = open_log(pdir, small_config(segment_bytes=400))
    assert [t.producer_id for t in plog.aborted_txns(0, 100)] == [7, 9, 8]
    plog.truncate_to(32)
    assert [t.producer_id for t in plog.aborted_txns(0, 100)] == [7, 9]
    crash(plog)
    plog = open_log(pdir, small_config(segment_bytes=400))
    assert [t.producer_id for t in plog.aborted_txns(0, 100)] == [7, 9]
    plog.close()


# --- producer snapshots -------------------------------------------------------------------------------

def test_producer_snapshots(pdir):
    plog = open_log(pdir)
    assert plog.latest_producer_snapshot() is None
    _fill(plog, 5)
    plog.write_producer_snapshot(2, b"two")
    plog.write_producer_snapshot(6, b"six")
    plog.write_producer_snapshot(10, b"ten")
    assert sorted(p.name for p in pdir.glob("*.snapshot")) == [
        "00000000000000000006.snapshot", "00000000000000000010.snapshot"]
    assert plog.latest_producer_snapshot() == (10, b"ten")
    plog.close()
    plog = open_log(pdir)
    assert plog.latest_producer_snapshot() == (10, b"ten")
    # a damaged newest snapshot falls back to the older one
    p = pdir / "00000000000000000010.snapshot"
    data = bytearray(p.read_bytes())
    data[-1] ^= 1
    p.write_bytes(data)
    assert plog.latest_producer_snapshot() == (6, b"six")
    plog.close()


def test_snapshot_past_recovered_end_is_dropped(pdir):
    plog = open_log(pdir)
    _fill(plog, 5)
    plog.write_producer_snapshot(10, b"ten")
    plog.write_producer_snapshot(4, b"four")
    crash(plog)
    path = last_log_file(pdir)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - 3)                            # the last batch is torn
    plog = open_log(pdir)
    assert plog.log_end_offset == 8
    assert plog.latest_producer_snapshot() == (4, b"four")
    assert not (pdir / "00000000000000000010.snapshot").exists()
    plog.close()


# --- compaction ----------------------------------------------------------------------------------------

def keyed(key: bytes, value: bytes | None, ts: int = 0, **kw) -> bytearray:
    return build_batch([Record(key, value, (), ts)], **kw)


def test_compaction_keeps_latest_per_key(pdir):
    cfg = small_config(segment_bytes=500, cleanup_policy="compact")
    plog = open_log(pdir, cfg)
    expected = {}
    for i in range(60):
        k = b"key%d" % (i % 7)
        plog.append(keyed(k, b"v%d" % i), now_ms=0)
        expected[k] = i
    plog.append(keyed(b"key0", None), now_ms=0)        # a tombstone
    before_size = plog.size_bytes
    plog.compact(0, first_unstable_offset=None)
    assert plog.size_bytes < before_size
    closed_end = plog.segments[-1].base_offset
    seen = {}
    offsets = []
    for _off, data in plog.batches_from(0):
        for r in decode_records(data):
            offsets.append(r.offset)
            if r.offset < closed_end:
                assert r.key not in seen, "two records of one key survived in the cleaned range"
                seen[r.key] = r.offset
    assert offsets == sorted(offsets)
    # every key's latest record is still there, with its original offset
    all_recs = {r.offset: r for _o, d in plog.batches_from(0) for r in decode_records(d)}
    for k, off in expected.items():
        assert off in all_recs or off >= closed_end or k == b"key0"
    assert all_recs[60].value is None                  # the tombstone survives
    plog.close()
    plog = open_log(pdir, cfg)
    assert {r.offset for _o, d in plog.batches_from(0) for r in decode_records(d)} == set(all_recs)
    assert read_all(plog) == [(o, all_recs[o].value) for o in sorted(all_recs)]
    plog.close()


def test_compaction_respects_first_unstable_offset_and_markers(pdir):
    cfg = small_config(segment_bytes=300, cleanup_policy="compact")
    plog = open_log(pdir, cfg)
    # aborted transaction of producer 5 at offsets 0-1, marker at 2
    plog.append(build_batch([Record(b"a", b"aborted")], producer_id=5, producer_epoch=0, base_sequence=0,
                            transactional=True), now_ms=0)
    plog.append(build_batch([Record(b"b", b"aborted")], producer_id=5, producer_epoch=0, base_sequence=1,
                            transactional=True), now_ms=0)
    plog.append(build_control_batch(False, producer_id=5, producer_epoch=0, coordinator_epoch=1, timestamp_ms=0),
                now_ms=0)
    plog.append_aborted_txn(5, 0, 2, 3)
    # committed transaction of producer 6 at 3, marker at 4
    plog.append(build_batch([Record(b"a", b"committed")], producer_id=6, producer_epoch=0, base_sequence=0,
                            transactional=True), now_ms=0)
    plog.append(build_control_batch(True, producer_id=6, producer_epoch=0, coordinator_epoch=1, timestamp_ms=0),
                now_ms=0)
    for i in range(10):
        plog.append(keyed(b"c", b"plain%d" % i), now_ms=0)
    assert len(plog.segments) > 3
    unstable = plog.segments[2].base_offset
    plog.compact(0, first_unstable_offset=unstable)
    recs = [(r.offset, r.key, r.value) for _o, d in plog.batches_from(0) for r in decode_records(d)]
    # aborted data gone, committed kept, both markers kept
    assert (0, b"a", b"aborted") not in recs and (1, b"b", b"aborted") not in recs
    assert (3, b"a", b"committed") in recs
    markers = [BatchHeader(d).base_offset for _o, d in plog.batches_from(0) if BatchHeader(d).is_control]
    assert markers == [2, 4]
    # producer 5's last batch stays as an empty batch so its sequence survives
    hdrs = {BatchHeader(d).base_offset: BatchHeader(d) for _o, d in plog.batches_from(0)}
    assert hdrs[1].record_count == 0 and hdrs[1].producer_id == 5 and hdrs[1].last_sequence == 1
    assert 0 not in hdrs
    # nothing at or above the first unstable offset was touched
    tail = [(o, v) for o, _k, v in recs if o >= unstable]
    assert tail == [(o, b"plain%d" % (o - 5)) for o in range(unstable, 15)]
    plog.close()


def test_compaction_rewrites_partial_batches_with_original_offsets(pdir):
    cfg = small_config(segment_bytes=250, cleanup_policy="compact")
    plog = open_log(pdir, cfg)
    plog.append(build_batch([Record(b"x", b"1", (), 10), Record(b"y", b"2", (), 11), Record(b"z", b"3", (), 12)],
                            producer_id=3, producer_epoch=1, base_sequence=0), now_ms=0)
    plog.append(keyed(b"y", b"new", ts=20), now_ms=0)
    plog.append(keyed(b"q", b"pad" * 40), now_ms=0)
    plog.append(keyed(b"r", b"pad" * 40), now_ms=0)
    assert len(plog.segments) >= 2
    plog.compact(0, first_unstable_offset=None)
    d = bytes(plog.read(0, 1 << 20))
    h = BatchHeader(d)
    assert (h.base_offset, h.last_offset_delta, h.record_count, h.producer_id, h.base_sequence) == (0, 2, 2, 3, 0)
    assert h.crc_ok() and h.last_sequence == 2
    assert [(r.offset, r.key, r.timestamp) for r in decode_records(d)] == [(0, b"x", 10), (2, b"z", 12)]
    # a read of the removed offset 1 returns the batch holding it
    assert BatchHeader(bytes(plog.read(1, 10))).base_offset == 0
    plog.close()


# --- misc ------------------------------------------------------------------------------------------------

def test_batches_from(pdir):
    plog = open_log(pdir, small_config(segment_bytes=300))
    _fill(plog, 10)
    got = list(plog.batches_from(5))
    assert [b for b, _ in got] == [4, 6, 8, 10, 12, 14, 16, 18]
    assert all(BatchHeader(d).crc_ok() and BatchHeader(d).base_offset == b for b, d in got)
    assert list(plog.batches_from(20)) == []
    plog.close()


def test_flush_and_delete(pdir):
    plog = open_log(pdir, small_config(fsync="always"))
    _fill(plog, 10)
    plog.flush()
    assert all(p.stat().st_size % 8 == 0 for p in pdir.glob("*.index"))
    plog.delete()
    assert not pdir.exists()


def test_append_then_read_is_cheap(pdir):
    """Hot path sanity: 16 KiB appends and 1 MiB reads stay far from per-record work."""
    plog = open_log(pdir, LogConfig(fsync="never"))
    big = build_batch([Record(None, os.urandom(160), (), 1)] * 100)   # ~16 KiB, 100 records
    assert 15_000 < len(big) < 20_000
    n = 500
    t0 = time.perf_counter()
    for _ in range(n):
        plog.append(bytearray(big), now_ms=0)
    t_append = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    total = 0
    reads = 0
    offset = 0
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1 << 20)
        total += len(data)
        reads += 1
        offset += (len(data) // len(big)) * 100
    t_read = (time.perf_counter() - t0) / reads
    assert total == n * len(big)
    assert t_append < 0.002, t_append
    assert t_read < 0.01, t_read
    plog.close()


# --- threads: flush, compaction and retention run in workers while the loop appends and reads -----------

def test_maintenance_in_a_thread_while_appending_and_reading(pdir):
    import threading

    cfg = small_config(segment_bytes=600, index_interval_bytes=0, cleanup_policy="compact,delete",
                       retention_ms=-1)
    plog = open_log(pdir, cfg)
    stop = threading.Event()
    errors = []

    def worker():
        i = 0
        while not stop.is_set():
            try:
                plog.flush()
                plog.compact(0, first_unstable_offset=None)
                if i % 5 == 0:
                    plog.delete_records_before(max(plog.log_start_offset, plog.log_end_offset - 200))
                    plog.apply_retention(0)
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)
            i += 1
            time.sleep(0.001)

    t = threading.Thread(target=worker)
    t.start()
    try:
        for i in range(800):
            plog.append(build_batch([Record(b"k%d" % (i % 10), b"v%d" % i, (), i)]), now_ms=0)
            if i % 7 == 0:
                start = plog.log_start_offset
                try:
                    data = bytes(plog.read(start, 4096))
                except OffsetOutOfRange as e:
                    # DeleteRecords or retention moved the start between the two lines: the answer
                    # a Fetch from below the log start gets
                    assert e.log_start_offset > start
                    continue
                for _pos, h in iter_batches(data, check_crc=True):
                    assert h.next_offset > start
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    expected = read_all(plog)
    assert expected and expected[-1][0] == 799
    plog.close()
    plog = open_log(pdir, cfg)
    assert read_all(plog) == expected
    plog.close()
