"""What a segment keeps in memory (storage.segment): slots and no kept Path objects, the shared
empty index arrays until its first entry, which is never written into them; and the same lookups,
index files and reopen as before."""

from __future__ import annotations

from pathlib import Path

from kafkalite.storage import PartitionLog
from kafkalite.storage import segment as segment_module

from .helpers import batch, read_all, small_config


def _log(pdir: Path, **config) -> PartitionLog:
    return PartitionLog.open(pdir, small_config(**config), now_ms=0)


def test_a_segment_has_no_dict_and_derives_its_file_paths(tmp_path):
    plog = _log(tmp_path / "t-0")
    seg = plog.segments[0]
    assert not hasattr(seg, "__dict__")
    # the directory is one string for the log and its segments, not a Path object each
    assert seg.directory is plog._directory and plog.directory == tmp_path / "t-0"
    assert seg.log_path == tmp_path / "t-0" / "00000000000000000000.log"
    assert seg.index_path.name == "00000000000000000000.index"
    assert seg.time_index_path.name == "00000000000000000000.timeindex"
    assert seg.txn_index_path.name == "00000000000000000000.txnindex"
    assert not seg.log_path.exists()      # made by the log's first write
    plog.append(batch(1), now_ms=0)
    assert seg.log_path.exists()
    plog.close()


def test_empty_indexes_are_shared_and_never_written_into(tmp_path):
    # many logs, one of them with index entries in several segments; the others stay empty
    quiet = [_log(tmp_path / f"quiet-{i}") for i in range(3)]
    busy = _log(tmp_path / "busy-0", segment_bytes=2000, index_interval_bytes=64)
    for i in range(40):
        busy.append(batch(2, tag=str(i), ts=1000 + 5 * i), now_ms=0)
    assert len(busy.segments) > 1
    assert all(len(s.idx_off) == len(s.idx_pos) > 0 and len(s.tidx_ts) == len(s.tidx_off) > 0
               for s in busy.segments)
    assert not any(len(a) for a in (segment_module._NO_INT32, segment_module._NO_INT64))
    for plog in quiet:
        seg = plog.segments[0]
        assert seg.idx_off is segment_module._NO_INT32 and seg.idx_pos is segment_module._NO_INT64
        assert seg.tidx_ts is segment_module._NO_INT64 and seg.tidx_off is segment_module._NO_INT32
    # each busy segment's arrays are its own
    owners = {id(a) for s in busy.segments for a in (s.idx_off, s.idx_pos, s.tidx_ts, s.tidx_off)}
    assert len(owners) == 4 * len(busy.segments)
    entries = {s.base_offset: (list(s.idx_off), list(s.idx_pos), list(s.tidx_ts)) for s in busy.segments}
    records = read_all(busy)
    stamp = busy.offset_for_timestamp(1101)
    busy.close()
    for plog in quiet:
        plog.close()

    # reopened (clean: index files loaded), the entries, lookups and records are the same, and an
    # empty log reopens on the shared arrays again
    busy = _log(tmp_path / "busy-0", segment_bytes=2000, index_interval_bytes=64)
    assert {s.base_offset: (list(s.idx_off), list(s.idx_pos), list(s.tidx_ts)) for s in busy.segments} == entries
    assert read_all(busy) == records and busy.offset_for_timestamp(1101) == stamp
    again = _log(tmp_path / "quiet-0")
    assert again.segments[0].idx_off is segment_module._NO_INT32
    assert again.segments[0].tidx_ts is segment_module._NO_INT64
    # the first append past the index interval gives a reopened empty segment arrays of its own
    small = _log(tmp_path / "quiet-1", index_interval_bytes=0)
    small.append(batch(1), now_ms=0)
    small.append(batch(1), now_ms=0)
    seg = small.segments[0]
    assert list(seg.idx_off) == [1] and seg.idx_off is not segment_module._NO_INT32
    assert not len(segment_module._NO_INT32) and not len(segment_module._NO_INT64)
    for plog in (busy, again, small):
        plog.close()

