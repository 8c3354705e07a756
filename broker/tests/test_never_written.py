"""A partition never written costs no file (storage.log): CreateTopics writes topics.json and makes
no partition directory; Fetch, ListOffsets and DescribeLogDirs answer it as the empty partition it
is (high watermark 0, earliest and latest 0, size 0) without making one; it survives a stop and a
restart, and DeleteTopics removes it; its first write makes its directory, and a first write the
disk refuses answers KAFKA_STORAGE_ERROR with a log line, the next one working once the disk does."""

from __future__ import annotations

import logging
import uuid

from kio.schema.errors import ErrorCode as E

from kafkalite.protocol.client import WireClient
from kafkalite.protocol.messages import make
from kafkalite.protocol.records import build_batch

from .test_admin import create_one, delete_topics, describe_log_dirs, rmod
from .test_produce_storage_errors import _with_broker
from .test_wire import fetch, produce, records


def _offsets(c: WireClient, topic: str, partitions: int) -> list[tuple[int, int]]:
    """(earliest, latest) of each partition (ListOffsets v9)."""
    m = rmod(2, 9)
    out = []
    for ts in (-2, -1):
        req = make(m.ListOffsetsRequest, replica_id=-1, isolation_level=0, topics=(
            make(m.ListOffsetsTopic, name=topic, partitions=tuple(
                make(m.ListOffsetsPartition, partition_index=i, current_leader_epoch=-1, timestamp=ts)
                for i in range(partitions))),))
        parts = c.request(req).topics[0].partitions
        assert all(p.error_code == E.none for p in parts), parts
        out.append([p.offset for p in sorted(parts, key=lambda p: p.partition_index)])
    return list(zip(*out))


def _dirs(data_dir, topic: str) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir() if p.name.startswith(f"{topic}-"))


def test_a_never_written_partition_answers_as_an_empty_one_and_makes_no_file(tmp_path):
    name = f"n-{uuid.uuid4().hex[:8]}"

    def first_run(address):
        with WireClient(address) as c:
            assert create_one(c, name, partitions=3).error_code == E.none
            assert _dirs(tmp_path, name) == []
            p = fetch(c, name, 0)
            assert (p.error_code, p.high_watermark, p.log_start_offset) == (E.none, 0, 0) and not p.records
            assert _offsets(c, name, 3) == [(0, 0)] * 3
            (result,) = describe_log_dirs(c, [(name, [0, 1, 2])]).results
            (topic,) = result.topics
            assert [(p.partition_index, p.partition_size) for p in topic.partitions] == [(0, 0), (1, 0), (2, 0)]
            assert _dirs(tmp_path, name) == []
            # the first write makes its partition's directory, and only that one
            assert produce(c, name, build_batch(records(2)), partition=1).error_code == E.none
            assert _dirs(tmp_path, name) == [f"{name}-1"]
        return True

    def after_restart(address):
        with WireClient(address) as c:
            assert _offsets(c, name, 3) == [(0, 0), (0, 2), (0, 0)]
            assert _dirs(tmp_path, name) == [f"{name}-1"]
            assert [r.error_code for r in delete_topics(c, name)] == [E.none]
            assert create_one(c, name, partitions=3).error_code == E.none   # the name is free again
            assert _offsets(c, name, 3) == [(0, 0)] * 3
            assert _dirs(tmp_path, name) == []
        return True

    assert _with_broker(tmp_path, {}, first_run)
    assert _with_broker(tmp_path, {}, after_restart)


def test_a_first_write_whose_directory_cannot_be_made_is_a_storage_error(tmp_path, caplog):
    name = f"w-{uuid.uuid4().hex[:8]}"
    blocker = tmp_path / f"{name}-0"

    def exchange(address):
        with WireClient(address) as c:
            assert create_one(c, name, partitions=1).error_code == E.none
            blocker.write_bytes(b"")    # a file where the partition's directory goes
            with caplog.at_level(logging.WARNING, logger="kafkalite"):
                refused = produce(c, name, build_batch(records(2)))
            assert refused.error_code == E.kafka_storage_error, refused
            assert any(f"append to {name}-0 failed" in r.getMessage() for r in caplog.records)
            blocker.unlink()
            done = produce(c, name, build_batch(records(2, 2)))
            assert (done.error_code, done.base_offset) == (E.none, 0)
            p = fetch(c, name, 0)
            assert p.high_watermark == 2 and blocker.is_dir()
        return True

    assert _with_broker(tmp_path, {}, exchange)
