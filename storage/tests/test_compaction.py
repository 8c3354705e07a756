"""Property test of compaction against a model: latest record per key in the cleaned range,
aborted transactional data gone, markers and everything past the cleaned range untouched."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.protocol.batch import BatchHeader
from kafkalite.protocol.control_records import build_control_batch
from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.storage import LogConfig, PartitionLog

_put = st.tuples(st.just("put"), st.integers(0, 5), st.one_of(st.none(), st.binary(min_size=1, max_size=30)))
_txn = st.tuples(st.just("txn"), st.integers(1, 3), st.lists(st.integers(0, 5), min_size=1, max_size=3),
                 st.booleans())
_multi = st.tuples(st.just("multi"), st.lists(st.integers(0, 5), min_size=2, max_size=4), st.integers(0, 4))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.one_of(_put, _txn, _multi), min_size=1, max_size=40),
       segment_bytes=st.integers(120, 800), fuo_frac=st.one_of(st.none(), st.floats(0, 1)),
       reopen=st.booleans())
def test_compaction_matches_model(ops, segment_bytes, fuo_frac, reopen):
    tmp = Path(tempfile.mkdtemp(prefix="kafkalite-compact-"))
    try:
        cfg = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=64, cleanup_policy="compact",
                        fsync="never")
        plog = PartitionLog.open(tmp / "c-0", cfg, now_ms=0)
        model = []      # (offset, key, value, kind)
        seqs = {}
        n = 0
        for op in ops:
            if op[0] == "put":
                _, k, v = op
                off = plog.append(build_batch([Record(b"k%d" % k, v, (), n)]), now_ms=0).base_offset
                model.append((off, b"k%d" % k, v, "plain"))
            elif op[0] == "multi":
                _, keys, codec = op
                recs = [Record(b"k%d" % k, b"m%d" % n, (), n) for k in keys]
                off = plog.append(build_batch(recs, compression=codec), now_ms=0).base_offset
                model.extend((off + i, r.key, r.value, "plain") for i, r in enumerate(recs))
            else:
                _, pid, keys, commit = op
                first = None
                for k in keys:
                    seq = seqs.get(pid, 0)
                    seqs[pid] = seq + 1
                    off = plog.append(build_batch([Record(b"k%d" % k, b"t%d" % n, (), n)], producer_id=pid,
                                                  producer_epoch=0, base_sequence=seq, transactional=True),
                                      now_ms=0).base_offset
                    first = off if first is None else first
                    model.append((off, b"k%d" % k, b"t%d" % n, "committed" if commit else "aborted"))
                marker = plog.append(build_control_batch(commit, producer_id=pid, producer_epoch=0,
                                                         coordinator_epoch=0, timestamp_ms=n), now_ms=0).base_offset
                model.append((marker, None, None, "marker"))
                if not commit:
                    plog.append_aborted_txn(pid, first, marker, marker + 1)
            n += 1
        leo = plog.log_end_offset
        fuo = None if fuo_frac is None else int(leo * fuo_frac)
        limit = leo if fuo is None else fuo
        segs = plog.segments
        cleaned_end = segs[0].base_offset
        for i in range(len(segs) - 1):
            if segs[i + 1].base_offset <= limit:
                cleaned_end = segs[i + 1].base_offset
            else:
                break

        plog.compact(0, first_unstable_offset=fuo)
        if reopen:
            plog.close()
            plog = PartitionLog.open(tmp / "c-0", cfg, now_ms=0)

        latest = {}
        for off, key, _v, kind in model:
            if off < cleaned_end and kind in ("plain", "committed"):
                latest[key] = off
        expected = []
        for off, key, value, kind in model:
            if kind == "marker":
                continue
            if off >= cleaned_end or (kind != "aborted" and latest.get(key) == off):
                expected.append((off, key, value))
        got = []
        markers = []
        for base, data in plog.batches_from(0):
            h = BatchHeader(data)
            assert h.crc_ok() and h.base_offset == base
            if h.is_control:
                markers.append(base)
                continue
            got.extend((r.offset, r.key, r.value) for r in decode_records(data))
        assert got == expected
        assert markers == [off for off, _k, _v, kind in model if kind == "marker"]
        assert plog.log_end_offset == leo
        plog.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_tombstone_delete_horizon_and_dirty_ratio(tmp_path):
    """KIP-534: the first pass keeps a tombstone and stamps its batch with the delete horizon
    (now + delete.retention.ms); a pass at or after the horizon removes it. A pass runs only when
    the dirty ratio is above min.cleanable.dirty.ratio."""
    cfg = LogConfig(segment_bytes=200, index_interval_bytes=64, cleanup_policy="compact", fsync="never",
                    delete_retention_ms=1000, min_cleanable_dirty_ratio=0.01)
    plog = PartitionLog.open(tmp_path / "c-0", cfg, now_ms=0)

    def put(key: bytes, value: bytes | None) -> None:
        plog.append(build_batch([Record(key, value, (), 5)]), now_ms=0)

    def kept() -> list[tuple[bytes | None, bytes | None]]:
        out = []
        for seg in plog.segments:
            for _pos, h in seg.iter_batches():
                out += [(r.key, r.value) for r in decode_records(h.buf, h.pos)]
        return out

    for key, value in [(b"a", b"1"), (b"b", b"1"), (b"a", None), (b"b", b"2")]:
        put(key, value)
    for i in range(12):  # later records that roll segments
        put(b"f%d" % (i % 3), b"x" * 40)
    assert plog.compact(100, first_unstable_offset=None) > 0
    assert kept()[:2] == [(b"a", None), (b"b", b"2")]
    horizons = [h.base_timestamp for seg in plog.segments for _p, h in seg.iter_batches() if h.has_delete_horizon]
    assert horizons == [1100]
    # nothing dirty since: no pass, even past the horizon
    assert plog.compact(5000, first_unstable_offset=None) == 0
    for i in range(12):
        put(b"g%d" % (i % 3), b"y" * 40)
    plog.compact(1099, first_unstable_offset=None)
    assert kept()[:2] == [(b"a", None), (b"b", b"2")]  # before the horizon
    for i in range(12):
        put(b"h%d" % (i % 3), b"z" * 40)
    plog.compact(1100, first_unstable_offset=None)
    assert kept()[0] == (b"b", b"2")
    plog.close()
