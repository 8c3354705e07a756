"""append() of immutable bytes: the header is stamped on the way to the file, the input stays
as it was, and what is read back is what a stamped bytearray gives."""

from __future__ import annotations

import os

from kafkalite.protocol.batch import BatchHeader, iter_batches
from kafkalite.storage import PartitionLog
from kafkalite.storage.files import writev_all

from .helpers import batch, read_all, small_config, values


def test_bytes_and_bytearray_appends_store_the_same(tmp_path):
    a = PartitionLog.open(tmp_path / "a", small_config(segment_bytes=1 << 20), now_ms=0)
    b = PartitionLog.open(tmp_path / "b", small_config(segment_bytes=1 << 20), now_ms=0)
    for i in range(20):
        two = bytes(batch(3, tag=f"x{i}")) + bytes(batch(2, tag=f"y{i}"))   # several batches at once
        kept = bytes(two)
        a.append(two, leader_epoch=7, now_ms=0)
        b.append(bytearray(two), leader_epoch=7, now_ms=0)
        assert two == kept
    data_a, data_b = bytes(a.read(0, 1 << 20)), bytes(b.read(0, 1 << 20))
    assert data_a == data_b
    heads = [h for _pos, h in iter_batches(data_a, check_crc=True)]
    assert [h.base_offset for h in heads[:4]] == [0, 3, 5, 8]
    assert all(BatchHeader(data_a, pos).partition_leader_epoch == 7 for pos, _h in iter_batches(data_a))
    assert values(data_a) == read_all(b)
    a.close()
    b.close()


def test_writev_all_finishes_partial_writes(tmp_path, monkeypatch):
    real = os.writev
    calls = []

    def short_writev(fd, views):
        calls.append(len(views))
        return real(fd, [bytes(views[0])[:3]])     # three bytes at a time

    monkeypatch.setattr(os, "writev", short_writev)
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        writev_all(fd, [b"abcdefg", b"", memoryview(b"hij"), bytearray(b"klmnop")])
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"abcdefghijklmnop"
    assert len(calls) > 3
