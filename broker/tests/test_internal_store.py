"""The coordinators' internal-topic store (broker/internal_store.py), in-process over the
in-memory partition logs of test_groups_coordinator: the topic made on first use with its
coordinator's settings, keys on Kafka's partition, one coordinator batch per append, a failed
write as CoordinatorWriteError with nothing applied, and a replay that skips what it cannot
read and goes on."""

from __future__ import annotations

import errno

import pytest

from kafkalite.broker.internal_store import CoordinatorWriteError, InternalTopicStore, StoredMarker, StoredRecord
from kafkalite.broker.internal_topics import partition_for
from kafkalite.protocol.records import BatchHeader

from .test_groups_coordinator import Clock, FakeCluster


def _store(cluster=None, partitions=3):
    return InternalTopicStore(cluster or FakeCluster(), "__example_state", num_partitions=lambda: partitions,
                              configs={"cleanup.policy": "compact"}, clock=Clock())


def test_topic_made_on_first_use_and_keys_on_kafkas_partition():
    store = _store()
    assert store.existing() is None
    part = store.partition_of("group-7")
    topic = store.existing()
    assert topic is not None and len(topic.partitions) == 3 and topic.configs == {"cleanup.policy": "compact"}
    assert part.index == partition_for("group-7", 3)
    assert store.topic() is topic  # made once


def test_append_is_one_coordinator_batch_and_replay_reads_it_back():
    store = _store()
    store.append("g", [])  # nothing to write: no topic, no batch
    assert store.existing() is None
    store.append("g", [(b"k1", b"v1"), (b"k2", None)])
    store.append("g", [(b"k3", b"v3")], producer_id=7, producer_epoch=2, transactional=True)
    part = store.partition_of("g")
    batches = [BatchHeader(data, 0) for _base, data in part.log.batches]
    assert [(h.record_count, h.producer_id, h.is_transactional) for h in batches] == [(2, -1, False), (1, 7, True)]
    assert {h.max_timestamp for h in batches} == {1_000_000}  # the coordinator's clock
    part.append_marker(7, 2, 0, True, now_ms=1)
    seen: list[StoredRecord | StoredMarker] = []
    store.replay(seen.append, seen.append)
    assert seen == [StoredRecord(part.index, 0, b"k1", b"v1", -1, False),
                    StoredRecord(part.index, 1, b"k2", None, -1, False),
                    StoredRecord(part.index, 2, b"k3", b"v3", 7, True),
                    StoredMarker(part.index, 7, True)]


def test_a_failed_write_is_a_coordinator_write_error(monkeypatch):
    store = _store()
    part = store.partition_of("g")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(part.log, "append", full)
    with pytest.raises(CoordinatorWriteError):
        store.append("g", [(b"k", b"v")])
    assert part.log.batches == []


def test_replay_skips_what_it_cannot_read_and_goes_on(caplog):
    store = _store(partitions=1)
    store.append("g", [(b"bad", b"x"), (b"good", b"y")])
    (part,) = store.topic().partitions
    part.log.batches.append((2, b"\0" * 70))  # not a batch at all
    store.append("g", [(b"later", b"z")])
    read: list[bytes] = []

    def on_record(record: StoredRecord) -> None:
        if record.key == b"bad":
            raise ValueError("damaged")
        read.append(record.key)

    store.replay(on_record)
    assert read == [b"good", b"later"]
    assert "skipping an undecodable record at offset 0 of __example_state-0" in caplog.text
    assert "skipping an undecodable batch in __example_state-0" in caplog.text
