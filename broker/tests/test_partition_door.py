"""The partition is the only door to a partition's storage: every product module outside
broker/partition.py and storage/ reads and maintains a partition through `Partition`, and each of
its read operations answers what the storage holds."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

from kafkalite.broker.console.state import timeline
from kafkalite.broker.partition import Partition
from kafkalite.protocol.records import Record, build_batch
from kafkalite.storage import LogConfig, PartitionLog
from kafkalite.tests.test_import_graph import product_modules

NOW = 1_700_000_000_000
# a partition's storage (`Partition.log`) and the storage engine's own fields
STORAGE_ATTRIBUTES = {"log", "segments", "retention_floor"}
DOOR = "kafkalite.broker.partition"


def storage_reaches(source: str) -> list[str]:
    """Every `x.log` (and storage-internal attribute) a module's source reaches, as written."""
    return [ast.unparse(node) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr in STORAGE_ATTRIBUTES]


def test_the_scan_finds_a_reach_into_storage() -> None:
    assert storage_reaches("def f(part):\n    return part.log.read(0, 10)\n") == ["part.log"]
    assert sorted(storage_reaches("n = len(plog.segments)\nx.retention_floor = 1\n")) == [
        "plog.segments", "x.retention_floor"]
    assert storage_reaches("log.info('x'); part.read(0, 1)\n") == []


def test_no_product_module_but_the_partition_touches_its_storage() -> None:
    modules = product_modules()
    assert DOOR in modules and len(modules) > 100
    reaches = {name: found for name, path in modules.items()
               if name != DOOR and not name.startswith("kafkalite.storage")
               and (found := storage_reaches(path.read_text()))}
    assert not reaches, f"modules reaching a partition's storage past broker.partition: {reaches}"


def _partition(path: Path) -> Partition:
    plog = PartitionLog.open(path, LogConfig(segment_bytes=400), now_ms=NOW)
    return Partition(SimpleNamespace(name="t", internal=False), 0, plog)  # type: ignore[arg-type]


def test_the_partition_reads_what_its_storage_holds(tmp_path: Path) -> None:
    part = _partition(tmp_path / "t-0")
    batches = [build_batch([Record(b"k%d" % i, b"v" * 100, (), NOW + i)] * 2) for i in range(4)]
    for b in batches:
        part.append(b, now_ms=NOW)
    assert (part.log_start_offset, part.high_watermark) == (0, 8)
    assert part.size_bytes == sum(len(b) for b in batches)
    # segment_bytes=400 rolls a segment after about every second batch
    summaries = part.segment_summaries()
    assert len(summaries) >= 2 and summaries[0].base_offset == 0 and summaries[-1].next_offset == 8
    assert sum(s.size_bytes for s in summaries) == part.size_bytes
    assert [base for base, _data in part.batches_from(3)] == [2, 4, 6]
    headers = list(part.batch_headers_from(3))
    assert [(base, h.record_count) for base, h, _at in headers] == [(2, 2), (4, 2), (6, 2)]
    # a header's location reads its batch whole: the bytes batches_from gives
    assert headers[1][2].read() == dict(part.batches_from(4))[4]
    assert bytes(part.read(4, 1 << 20, upper_bound=6)) == dict(part.batches_from(4))[4]
    region = part.read_region(0, 1, min_one=True)   # KIP-74: the first batch whole
    try:
        assert len(region) == len(batches[0])
    finally:
        if not isinstance(region, bytes):
            region.release()
    assert part.offset_for_timestamp(NOW + 2) == (4, NOW + 2)
    assert part.max_timestamp_offset() == (6, NOW + 3)
    assert part.aborted_txns(0, 8) == []
    assert part.delete_records_before(5) == 5 == part.log_start_offset
    assert [base for base, _h, _at in part.batch_headers_from(0)] == [4, 6]


def test_the_console_timeline_through_the_partition(tmp_path: Path) -> None:
    """The console reads a partition's batches (headers only, markers whole) and segments through
    the partition: every kind of batch is told apart, and the segments add up to the size."""
    part = _partition(tmp_path / "t-0")
    part.append(build_batch([Record(b"k", b"plain")], timestamp_ms=NOW), now_ms=NOW)
    for seq, commit in ((0, True), (1, False)):
        part.append(build_batch([Record(b"k", b"txn")], producer_id=7, producer_epoch=0, base_sequence=seq,
                                transactional=True, timestamp_ms=NOW), now_ms=NOW)
        part.append_marker(7, 0, 0, commit, now_ms=NOW)
    view = timeline(SimpleNamespace(services={}), part)
    assert [b["kind"] for b in view["batches"]] == ["plain", "committed", "commit", "aborted", "abort"]
    assert [b["base_offset"] for b in view["batches"]] == [0, 1, 2, 3, 4]
    assert sum(s["size_bytes"] for s in view["segments"]) == view["size_bytes"] == part.size_bytes
    assert view["segments"][0]["base_offset"] == 0 and view["segments"][-1]["next_offset"] == 5
    # paging from an offset inside the log
    assert [b["base_offset"] for b in timeline(SimpleNamespace(services={}), part, start=3)["batches"]] == [3, 4]
