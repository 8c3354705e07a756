"""Recovery of segments damaged in places the CRC does not cover (inputs found by fault_tests' fuzzer)."""

from __future__ import annotations

import struct

from kafkalite.protocol.records import Record, build_batch
from kafkalite.storage import LogConfig, PartitionLog

from .helpers import read_all


def test_damaged_base_offset_beyond_the_segment_range_is_truncated_not_kept(tmp_path):
    first = build_batch([Record(b"a", b"1", (), 1)], base_offset=0, timestamp_ms=1)
    second = bytearray(build_batch([Record(b"b", b"2", (), 2)], base_offset=1, timestamp_ms=1))
    third = build_batch([Record(b"c", b"3", (), 3)], base_offset=2, timestamp_ms=1)
    # the base offset is outside the CRC: this batch still passes its check
    struct.pack_into(">q", second, 0, 2**62)
    (tmp_path / "00000000000000000000.log").write_bytes(bytes(first + second + third))
    plog = PartitionLog.open(tmp_path, LogConfig())
    try:
        assert plog.log_end_offset == 1
        assert read_all(plog) == [(0, b"1")]
        # the log goes on: a roll past the damage point no longer overflows its indexes
        plog.roll(now_ms=5)
        info = plog.append(build_batch([Record(b"n", b"new", (), 5)], timestamp_ms=5), now_ms=5)
        assert info.base_offset == 1
    finally:
        plog.close()
