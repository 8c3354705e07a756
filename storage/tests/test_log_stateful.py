"""Rule-based tests: random appends, reads, truncations, DeleteRecords, retention and reopens
(clean, after kill -9, with a torn tail, without index files) against a plain model.

Invariants: an acknowledged batch is never lost or reordered (unless truncated or deleted
on purpose); reads return whole, CRC-valid batches with the right offsets and contents;
timestamp lookups agree with a brute-force search of the model."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kafkalite.protocol.batch import BatchHeader, iter_batches
from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.storage import LogConfig, PartitionLog

from .helpers import crash, last_log_file


@dataclass
class MBatch:
    base: int
    stamps: list[int]
    tag: int

    @property
    def count(self) -> int:
        return len(self.stamps)

    @property
    def last(self) -> int:
        return self.base + len(self.stamps) - 1

    def value(self, i: int) -> bytes:
        return b"b%d:%d" % (self.tag, i)


class LogMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="kafkalite-stateful-"))
        self.dir = self.tmp / "t-0"
        self.plog: PartitionLog | None = None
        self.model: list[MBatch] = []
        self.log_start_offset = 0
        self.leo = 0
        self.tags = 0

    @initialize(segment_bytes=st.integers(150, 1500), interval=st.integers(0, 300),
                log_append=st.booleans())
    def setup(self, segment_bytes, interval, log_append):
        self.cfg = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval, fsync="never",
                             retention_ms=-1,
                             timestamp_type="LogAppendTime" if log_append else "CreateTime")
        self.log_append = log_append
        self.now = 10_000
        self.plog = PartitionLog.open(self.dir, self.cfg, now_ms=0)

    def teardown(self):
        if self.plog is not None and not self.plog._closed:
            self.plog.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- operations ---------------------------------------------------------------------------------
    @rule(shapes=st.lists(st.lists(st.integers(0, 2000), min_size=1, max_size=5), min_size=1, max_size=3),
          pad=st.integers(0, 200), tick=st.integers(0, 50))
    def append(self, shapes, pad, tick):
        self.now += tick
        buf = bytearray()
        new = []
        base = self.leo
        for stamps in shapes:
            tag = self.tags
            self.tags += 1
            mb = MBatch(base, list(stamps) if not self.log_append else [self.now] * len(stamps), tag)
            recs = [Record(b"k%d" % (i % 3), mb.value(i) + b"." * pad, (("h", b"x"),), ts)
                    for i, ts in enumerate(stamps)]
            buf += build_batch(recs)
            new.append(mb)
            base += len(stamps)
        info = self.plog.append(buf, leader_epoch=3, now_ms=self.now)
        assert info.base_offset == self.leo and info.last_offset == base - 1
        self.model.extend(new)
        self.leo = base
        self.pad = pad

    @rule(data=st.data())
    def read(self, data):
        offset = data.draw(st.integers(self.log_start_offset, self.leo))
        max_bytes = data.draw(st.sampled_from([1, 100, 500, 4000, 1 << 20]))
        ub = data.draw(st.one_of(st.none(), st.integers(offset, self.leo)))
        min_one = data.draw(st.booleans())
        got = self.plog.read(offset, max_bytes, upper_bound=ub, min_one=min_one)
        limit = self.leo if ub is None else ub
        # a fetch at the bound itself is empty (Kafka's LocalLog.read); the bound is a batch
        # boundary for real callers (high watermark, LSO)
        expected = [] if offset >= limit else [b for b in self.model if b.last >= offset and b.base < limit]
        buf = bytes(got)
        if not expected:
            assert buf == b""
            return
        hs = [(pos, h) for pos, h in iter_batches(buf, check_crc=True)]
        if not hs:
            first_size = self._batch_size(expected[0])
            assert not min_one and first_size > max_bytes
            return
        assert len(buf) <= max_bytes or len(hs) == 1
        assert len(hs) <= len(expected)
        for (pos, h), mb in zip(hs, expected):
            assert h.base_offset == mb.base and h.record_count == mb.count
            assert h.partition_leader_epoch == 3
            recs = decode_records(buf, pos)
            assert [r.offset for r in recs] == list(range(mb.base, mb.last + 1))
            assert [r.value[:len(mb.value(i))] for i, r in enumerate(recs)] == [mb.value(i) for i in range(mb.count)]
            assert [r.timestamp for r in recs] == mb.stamps

    def _batch_size(self, mb: MBatch) -> int:
        for _off, data in self.plog.batches_from(mb.base):
            return len(data)
        raise AssertionError("batch missing")

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def truncate(self, data):
        cuts = [b.base for b in self.model if b.base >= self.log_start_offset] + [self.leo]
        o = data.draw(st.sampled_from(cuts))
        self.plog.truncate_to(o)
        self.model = [b for b in self.model if b.base < o]
        self.leo = o

    @rule(data=st.data())
    def delete_records(self, data):
        o = data.draw(st.integers(self.log_start_offset, self.leo))
        assert self.plog.delete_records_before(o) == max(o, self.log_start_offset)
        self.log_start_offset = max(o, self.log_start_offset)

    @rule(keep=st.integers(0, 3000), floor=st.one_of(st.none(), st.integers(0, 200)))
    def retention(self, keep, floor):
        old = self.log_start_offset
        self.plog.retention_floor = floor
        self.plog.update_config(LogConfig(**{**self.cfg.__dict__, "retention_bytes": keep}))
        self.plog.apply_retention(now_ms=self.now)
        self.plog.update_config(self.cfg)
        self.plog.retention_floor = None
        new = self.plog.log_start_offset
        assert new >= old
        if floor is not None:
            assert new <= max(floor, old)
        assert new <= self.leo
        self.log_start_offset = new

    @rule()
    def flush(self):
        self.plog.flush()

    @rule()
    def reopen_clean(self):
        self.plog.close()
        self.plog = PartitionLog.open(self.dir, self.cfg, now_ms=self.now)

    @rule(tail=st.sampled_from(["none", "partial", "zeros", "garbage"]), cut=st.integers(1, 60))
    def reopen_after_kill(self, tail, cut):
        crash(self.plog)
        if tail != "none" and self.dir.exists():   # a log never written has no file to tear
            with open(last_log_file(self.dir), "ab") as f:
                if tail == "partial":
                    b = build_batch([Record(b"torn", b"x" * 30)])
                    f.write(b[:max(1, len(b) - cut)])
                elif tail == "zeros":
                    f.write(b"\x00" * cut)
                else:
                    f.write(os.urandom(cut))
        self.plog = PartitionLog.open(self.dir, self.cfg, now_ms=self.now)

    @rule(which=st.sampled_from(["index", "timeindex", "both"]))
    def reopen_without_indexes(self, which):
        self.plog.close()
        for p in self.dir.glob("*"):     # none in a log never written
            if (which in ("index", "both") and p.suffix == ".index") or \
                    (which in ("timeindex", "both") and p.suffix == ".timeindex"):
                p.unlink()
        self.plog = PartitionLog.open(self.dir, self.cfg, now_ms=self.now)

    @rule(target_ts=st.integers(-1, 2100))
    def offset_for_timestamp(self, target_ts):
        expect = None
        for b in self.model:
            for i, ts in enumerate(b.stamps):
                off = b.base + i
                if off >= self.log_start_offset and ts >= target_ts:
                    expect = (off, ts)
                    break
            if expect:
                break
        assert self.plog.offset_for_timestamp(target_ts) == expect

    @rule()
    def max_timestamp(self):
        best = None
        for b in self.model:
            for i, ts in enumerate(b.stamps):
                off = b.base + i
                if off >= self.log_start_offset and ts >= 0 and (best is None or ts > best[1]):
                    best = (off, ts)
        assert self.plog.max_timestamp_offset() == best

    # --- invariants --------------------------------------------------------------------------------------
    @invariant()
    def offsets_match(self):
        if self.plog is None:
            return
        assert self.plog.log_end_offset == self.leo
        assert self.plog.log_start_offset == self.log_start_offset

    @invariant()
    def every_acknowledged_batch_is_there(self):
        if self.plog is None:
            return
        got = [(base, BatchHeader(d).record_count) for base, d in self.plog.batches_from(self.log_start_offset)]
        assert got == [(b.base, b.count) for b in self.model if b.last >= self.log_start_offset]
        segs = self.plog.segments
        assert [s.base_offset for s in segs] == sorted(s.base_offset for s in segs)
        assert segs[-1].base_offset <= self.leo


LogMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestPartitionLogStateful = LogMachine.TestCase
