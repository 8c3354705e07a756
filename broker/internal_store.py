"""The store the coordinators keep their state in: one internal topic (`__consumer_offsets`,
`__transaction_state`, `__share_group_state`), written and read back by `InternalTopicStore`.
The group, transaction and share coordinators each own one; each keeps its own record format.

Rules:
- The topic is created on first use (`topic`, `partition_of`, `append`) with the partition count
  and configs its coordinator names, read when it is created. A topic that cannot be created
  (full disk) raises OSError and leaves nothing behind (Cluster.create_topic); the callers
  answer COORDINATOR_NOT_AVAILABLE (broker.handlers.leadership) and a later call tries again.
- A key (group id, transactional id, share-partition key) lives on partition
  `Utils.abs(key.hashCode()) % partitions` (broker.internal_topics.partition_for), as in Kafka.
- `append` writes its records as one uncompressed batch with AppendOrigin.COORDINATOR (no
  sequence or transaction checks of a client's batch), stamped with the coordinator's clock,
  and fsynced before it returns when the broker runs with fsync=always. It returns only once
  the batch is in the log: a coordinator applies a change after `append` returned.
- A write or fsync that fails is Kafka's KAFKA_STORAGE_ERROR append: `append` logs it and
  raises CoordinatorWriteError; the coordinator applies nothing and answers NOT_COORDINATOR
  (Kafka's coordinators map that append error so), and clients look again and retry.
- `replay` reads every partition from its log start in offset order, the records of each
  batch in order; the coordinator folds them, the last record of a key winning. A batch that
  does not decode, a marker that does not parse and a record the coordinator cannot read are
  logged and skipped: a damaged record never stops the broker from starting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from kafkalite.protocol.batch import BatchHeader
from kafkalite.protocol.control_records import parse_control_record
from kafkalite.protocol.records import Record, build_batch, decode_records

from .partition import AppendOrigin
from .internal_topics import partition_for

if TYPE_CHECKING:
    from .cluster import Cluster, Partition, Topic

log = logging.getLogger("kafkalite.coordinators")


class CoordinatorWriteError(Exception):
    """An append to a coordinator's internal topic failed (full disk, I/O error, failed fsync):
    Kafka's KAFKA_STORAGE_ERROR append, which its coordinators answer with NOT_COORDINATOR so
    that clients look the coordinator up again and retry."""


@dataclass(frozen=True)
class StoredRecord:
    """A keyed data record read back from the topic."""

    partition: int
    offset: int
    key: bytes
    value: bytes | None  # None: a tombstone
    producer_id: int
    transactional: bool  # part of a transaction, decided by a later marker of `producer_id`


@dataclass(frozen=True)
class StoredMarker:
    """A transaction marker (COMMIT/ABORT) of `producer_id` in one partition of the topic."""

    partition: int
    producer_id: int
    commit: bool


class InternalTopicStore:
    """One internal topic, as a coordinator's store: get-or-create, key to partition, append, replay."""

    def __init__(self, cluster: Cluster, name: str, *, num_partitions: Callable[[], int],
                 configs: Mapping[str, str], clock: Callable[[], int]) -> None:
        self.cluster = cluster
        self.name = name
        self._num_partitions = num_partitions  # read when the topic is created
        self._configs = dict(configs)
        self.clock = clock

    def existing(self) -> Topic | None:
        """The topic, or None while it was never created (nothing to replay then)."""
        return self.cluster.topics.get(self.name)

    def topic(self) -> Topic:
        """The topic, created now if it does not exist yet. Raises OSError when it cannot be."""
        topic = self.cluster.topics.get(self.name)
        if topic is None:
            topic = self.cluster.create_topic(self.name, self._num_partitions(), dict(self._configs))
        return topic

    def partition_of(self, key: str) -> Partition:
        """The partition that holds `key` (the topic is created on first use; OSError when it
        cannot be)."""
        topic = self.topic()
        return topic.partitions[partition_for(key, len(topic.partitions))]

    def append(self, key: str, records: Sequence[tuple[bytes, bytes | None]], *, producer_id: int = -1,
               producer_epoch: int = -1, transactional: bool = False) -> None:
        """Append `records` ((record key, value or None for a tombstone)) to the partition of
        `key` as one batch, durable before this returns; a transactional batch carries the
        producer's id and epoch. Nothing is written for no records. Raises CoordinatorWriteError
        when the write or fsync fails (and OSError when the topic cannot be created)."""
        if not records:
            return
        part = self.partition_of(key)
        now = self.clock()
        batch = build_batch([Record(k, v) for k, v in records], producer_id=producer_id,
                            producer_epoch=producer_epoch, transactional=transactional, timestamp_ms=now)
        try:
            part.append(batch, now_ms=now, origin=AppendOrigin.COORDINATOR, fsync_now=True)
        except OSError as exc:
            log.warning("%r: write to %s-%d failed: %s", key, self.name, part.index, exc)
            raise CoordinatorWriteError(f"write to {self.name}-{part.index} failed: {exc}") from exc

    def replay(self, on_record: Callable[[StoredRecord], None],
               on_marker: Callable[[StoredMarker], None] | None = None, *, only: int | None = None) -> None:
        """Feed every keyed record of the topic (of partition `only`, when given) to `on_record`,
        and, when `on_marker` is given, every transaction marker to it, partition by partition in
        offset order. A record `on_record` cannot read (it raises) is logged and skipped, as is
        an undecodable batch."""
        topic = self.existing()
        if topic is None:
            return
        for part in topic.partitions if only is None else topic.partitions[only:only + 1]:
            for _base, batch in part.batches_from(part.log_start_offset):
                header = BatchHeader(batch, 0)
                if header.is_control:
                    if on_marker is not None:
                        try:
                            commit, _epoch = parse_control_record(batch)
                        except ValueError:
                            continue  # not a transaction marker
                        on_marker(StoredMarker(part.index, header.producer_id, commit))
                    continue
                try:
                    decoded = decode_records(batch)
                except Exception:
                    log.exception("skipping an undecodable batch in %s-%d", self.name, part.index)
                    continue
                for r in decoded:
                    if r.key is None:
                        continue
                    try:
                        on_record(StoredRecord(part.index, r.offset, r.key, r.value, header.producer_id,
                                               header.is_transactional))
                    except Exception as exc:
                        log.warning("skipping an undecodable record at offset %d of %s-%d: %s", r.offset,
                                    self.name, part.index, exc)
