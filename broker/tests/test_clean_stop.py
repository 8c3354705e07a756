"""A clean stop costs what changed: a broker stopped after a run that wrote to one partition of
two topics leaves the files of every other partition as they were (no marker, index, snapshot or
fsync for them), and a run that wrote nothing leaves every file as it was; the data and the
producer state written before are all there afterwards."""

from __future__ import annotations

from kio.schema.errors import ErrorCode as E

from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import build_batch

from .test_admin import create_topics
from .test_produce_storage_errors import _with_broker
from .test_wire import fetch, produce, records


def _files(data_dir, prefix: str) -> dict[str, tuple[int, int]]:
    """Every file of the partition directories whose names start with `prefix`: size and mtime."""
    return {f"{d.name}/{p.name}": (p.stat().st_size, p.stat().st_mtime_ns)
            for d in sorted(data_dir.iterdir()) if d.name.startswith(prefix) for p in d.iterdir()}


def test_a_clean_stop_writes_only_what_changed(tmp_path):
    def first(address):
        with WireClient(address) as c:
            assert [r.error_code for r in create_topics(c, {"name": "busy", "partitions": 4},
                                                        {"name": "idle", "partitions": 4})] == [E.none, E.none]
            assert produce(c, "busy", build_batch(records(3))).error_code == E.none
        return True

    assert _with_broker(tmp_path, {}, first)
    busy_after_first = _files(tmp_path, "busy-0")
    assert "busy-0/.kafka_cleanshutdown" in busy_after_first
    idle = _files(tmp_path, "idle-") | _files(tmp_path, "busy-1") | _files(tmp_path, "busy-2")
    assert not any(name.endswith((".kafka_cleanshutdown", ".snapshot")) for name in idle)

    def second(address):   # writes to busy-1 only
        with WireClient(address) as c:
            assert produce(c, "busy", build_batch(records(2)), partition=1).error_code == E.none
        return True

    assert _with_broker(tmp_path, {}, second)
    assert _files(tmp_path, "busy-0") == busy_after_first       # unchanged since its open: untouched
    assert _files(tmp_path, "idle-") | _files(tmp_path, "busy-2") == {
        k: v for k, v in idle.items() if not k.startswith("busy-1")}
    assert "busy-1/.kafka_cleanshutdown" in _files(tmp_path, "busy-1")
    everything = _files(tmp_path, "")

    def third(address):    # reads only
        with WireClient(address) as c:
            assert fetch(c, "busy", 0).high_watermark == 3      # partition 0
        return True

    assert _with_broker(tmp_path, {}, third)
    assert {k: v for k, v in _files(tmp_path, "").items() if not k.startswith("__")} == {
        k: v for k, v in everything.items() if not k.startswith("__")}
