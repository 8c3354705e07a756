"""The runtime topic and partition: the one door to a partition's storage, for writes, reads and waits.

Rules:
- Nothing outside this module touches a partition's `PartitionStorage` (its `log`): handlers,
  coordinators, housekeeping and the console ask the `Partition`, whose reads and maintenance
  calls each delegate to one storage operation (broker/tests/test_partition_door.py checks the
  product modules for any other `.log`).
- Every write to a partition goes through `Partition.append` (data batches) or
  `Partition.append_marker` (COMMIT/ABORT): they check and update the producer state, keep the
  open transaction's first offset (and with it the last stable offset), apply the fsync policy
  and wake waiting fetches, in that order and without an await, so each write is atomic on the
  trio loop.
- A partition loaded at start may open its storage later (`Partition(..., opener=...)`): on
  first use (any read, write or maintenance call, its producer state included) or from
  broker.server's background pass after the broker answers, so that a start answers Metadata in
  a time that does not grow with the partition count. Opening is under one lock, so a worker
  thread and the loop that want the same partition at once open it once; the partition counts as
  open only once its producer state is replayed. Closing, flushing, snapshotting or reconfiguring
  a partition never opened does nothing (its files are as the last stop left them; it reads its
  topic's config when it opens).
- Leaders, ISR and epochs live in memory (broker.cluster moves them); a leader change bumps the
  leader epoch and wakes waiting fetches.
- `flush_appended` fsyncs (fsync=always) in a worker thread what a request appended, before
  the request is answered.
"""

from __future__ import annotations

import enum
import errno
import logging
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

import trio
from kio.schema.errors import ErrorCode

from kafkalite.protocol.batch import BatchHeader
from kafkalite.protocol.control_records import build_control_batch
from kafkalite.protocol.regions import FileRegion
from kafkalite.storage import AbortedTxn, BatchLocation, LogConfig, PartitionStorage, SegmentSummary
from kafkalite.storage.copies import save_partition

from .changes import StateChanges
from .internal_topics import INTERNAL_TOPICS
from .produce_validation import ProducePolicy
from .producers import ProduceError, ProducerStates
from .settings.broker_keys import BROKER_KEYS

log = logging.getLogger("kafkalite.cluster")

# held while a partition's storage is opened and its producer state replayed (see the rules);
# re-entrant, as the replay reads the partition it opens
_OPENING = threading.RLock()


class AppendOrigin(enum.Enum):
    """Who writes a batch (Kafka's AppendOrigin): a client's batches follow the sequence and
    transaction rules of the producer state; the coordinators' own batches (group metadata,
    transactional offsets, transaction state) carry no sequences and skip those checks."""

    CLIENT = "client"
    COORDINATOR = "coordinator"


class Appended(NamedTuple):
    """What an append tells its caller (the fields of a Produce partition response)."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 with CreateTime; for a duplicate, the timestamp kept for its batch
    log_start_offset: int
    duplicate: bool = False  # a repeat of one of the producer's last five batches: not written again


class Partition:
    """One partition: its log, its producer state, and the fetches waiting for new data.

    Every write goes through `append` (data batches) or `append_marker` (COMMIT/ABORT), which
    check and update the producer state, keep the open transaction's first offset (and with
    it the last stable offset), apply the fsync policy and wake waiting fetches, in that order
    and without an await, so each write is atomic on the trio loop."""

    def __init__(self, topic: Topic, index: int, plog: PartitionStorage | None, replicas: list[int] | None = None,
                 changes: StateChanges | None = None, *, opener: Callable[[Partition], None] | None = None):
        self.topic = topic
        self.index = index
        # the only way to this partition's bytes on disk (None until `opener` opens it)
        self._log: PartitionStorage | None = plog
        # opens the storage (attach_storage) and replays the producer state; None once open
        self._opener = opener if plog is None else None
        self._producers = ProducerStates()
        self.leader_epoch = 0
        # logical replicas: the first is the preferred leader (default: the default node id alone)
        self.replicas = replicas if replicas is not None else [BROKER_KEYS["node.id"].default]
        self.isr = list(self.replicas)
        self.leader = self.replicas[0]
        # (leader epoch, its start offset) for every epoch after the first, in order
        # (OffsetForLeaderEpoch); epoch 0 began at the log start offset
        self.epoch_starts: list[tuple[int, int]] = []
        # fetches waiting for data: made by the first one (most partitions never have one)
        self._waiters: set[trio.Event] | None = None
        # the cluster's state changes, which the controls' waits sleep on
        self.changes = changes

    @property
    def opened(self) -> bool:
        """Whether the storage is open (a partition loaded at start may not be yet)."""
        return self._opener is None

    @property
    def log(self) -> PartitionStorage:
        """The partition's storage, opened now if it is not yet."""
        if self._opener is None:
            return self._log  # type: ignore[return-value]  # set whenever _opener is None
        return self._open()

    @property
    def producers(self) -> ProducerStates:
        """Each producer's epoch, sequences and open transaction (replayed from the log on open)."""
        if self._opener is not None:
            self._open()
        return self._producers

    @producers.setter
    def producers(self, states: ProducerStates) -> None:
        self._producers = states

    def _open(self) -> PartitionStorage:
        with _OPENING:
            opener = self._opener
            if opener is None or self._log is not None:
                # open, or being opened by this thread (the replay reads what it opens)
                return self._log  # type: ignore[return-value]
            try:
                opener(self)  # attach_storage, then the producer state's replay through it
            except BaseException:
                if self._log is not None:
                    self._log.close()
                    self._log = None
                raise
            self._opener = None
            return self._log  # type: ignore[return-value]

    def attach_storage(self, plog: PartitionStorage) -> None:
        """The storage an opener opened (see `_open`)."""
        self._log = plog

    def open_now(self) -> None:
        """Open the storage if it is not yet (broker.cluster's background pass)."""
        if self._opener is not None:
            self._open()

    def set_leader(self, node: int) -> None:
        """A new leader (or -1, none): the leader epoch grows by one, as Kafka's controller bumps it
        on every leader change; batches appended from now on carry the new epoch. A coordinator
        whose partition this is hears of it (StateChanges.on_leader_change)."""
        previous = self.leader
        self.leader = node
        self.leader_epoch += 1
        self.epoch_starts.append((self.leader_epoch, self.log.log_end_offset))
        # fetches waiting on this partition answer now (their next request finds the new leader)
        self.wake()
        if self.changes is not None:
            self.changes.leader_changed(self.topic.name, self.index, node, previous)

    @property
    def high_watermark(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, or the high watermark."""
        return self.producers.last_stable_offset(self.high_watermark)

    def first_unstable_offset(self) -> int | None:
        return self.producers.first_unstable_offset()

    # --- reads (each one storage operation; see storage.interface) --------------------------
    @property
    def log_start_offset(self) -> int:
        """The first readable offset (moved by DeleteRecords and retention)."""
        return self.log.log_start_offset

    @property
    def size_bytes(self) -> int:
        """Bytes the partition's batches take on disk (DescribeLogDirs, the console, metrics)."""
        return self.log.size_bytes

    @property
    def compact_enabled(self) -> bool:
        """cleanup.policy includes compact."""
        return self.log.config.compact_enabled

    def read(self, offset: int, max_bytes: int, *, upper_bound: int | None = None,
             min_one: bool = True) -> bytes | memoryview:
        """Whole batches from the one holding `offset` below `upper_bound` (KIP-74: the first
        whole with min_one); OffsetOutOfRange outside [log start, log end]."""
        return self.log.read(offset, max_bytes, upper_bound=upper_bound, min_one=min_one)

    def read_region(self, offset: int, max_bytes: int, *, upper_bound: int | None = None,
                    min_one: bool = True) -> FileRegion | bytes:
        """What `read` returns, as a file region to send without copying (Fetch; the caller
        releases it)."""
        return self.log.read_region(offset, max_bytes, upper_bound=upper_bound, min_one=min_one)

    def aborted_txns(self, start_offset: int, end_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start_offset, end_offset) (read_committed reads)."""
        return self.log.aborted_txns(start_offset, end_offset)

    def batches_from(self, offset: int) -> Iterator[tuple[int, bytes]]:
        """(base offset, bytes) of every batch whose last offset is >= offset, in order (replays,
        the console's records of one batch)."""
        return self.log.batches_from(offset)

    def batch_headers_from(self, offset: int) -> Iterator[tuple[int, BatchHeader, BatchLocation]]:
        """(base offset, header, location) of every batch from `offset`, headers only (the console)."""
        return self.log.batch_headers_from(offset)

    def segment_summaries(self) -> list[SegmentSummary]:
        """Every segment's base offset, next offset and size, oldest first (the console)."""
        return self.log.segment_summaries()

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after the log start whose timestamp is
        >= timestamp_ms, or None (ListOffsets by time)."""
        return self.log.offset_for_timestamp(timestamp_ms)

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp, or None
        (ListOffsets MAX_TIMESTAMP)."""
        return self.log.max_timestamp_offset()

    def latest_producer_snapshot(self) -> tuple[int, bytes] | None:
        """(offset, blob) of the newest producer-state snapshot (replay on open)."""
        return self.log.latest_producer_snapshot()

    # --- writes ----------------------------------------------------------------------------
    @property
    def fsync_always(self) -> bool:
        """fsync=always: an acknowledged write has been fsynced before its answer."""
        return self.log.config.fsync == "always"

    def append(self, batch: bytes | bytearray, *, now_ms: int, origin: AppendOrigin = AppendOrigin.CLIENT,
               header: BatchHeader | None = None, fsync_now: bool = False) -> Appended:
        """Append one record batch (already validated as a batch). Raises ProduceError when the
        producer state refuses it. With fsync_now and fsync=always the log is fsynced before
        returning, on the loop (the coordinators' small writes); callers that write to many
        partitions fsync them together afterwards with `flush_appended`."""
        f = (header if header is not None else BatchHeader(batch, 0)).fields()  # one unpack
        states = self.producers
        pid = f.producer_id
        if pid >= 0:
            epoch, first_seq, last_seq, transactional = (f.producer_epoch, f.base_sequence, f.last_sequence,
                                                         f.is_transactional)
            if origin is AppendOrigin.CLIENT:
                dup = states.check(pid, epoch, first_seq, last_seq)
                if dup is not None:
                    # Kafka answers a duplicate with the original batch's offset and, as its log
                    # append time, the timestamp kept for that batch
                    return Appended(dup.first_offset, dup.last_offset, dup.timestamp, self.log.log_start_offset,
                                    True)
                if not transactional and states.in_transaction(pid):
                    raise ProduceError(ErrorCode.invalid_txn_state,
                                       f"producer {pid} has an open transaction on this partition")
        # bytes go to the log as they are (it stamps the header without copying the batch)
        info = self.log.append(batch, leader_epoch=self.leader_epoch, now_ms=now_ms)
        if pid >= 0:
            states.record_batch(pid, epoch, first_seq, last_seq, info.base_offset, info.last_offset,
                                info.max_timestamp, transactional=transactional)
        if fsync_now and self.fsync_always:
            self.log.flush()
        # read_uncommitted fetches see the new data at once; read_committed ones when the LSO moves
        self.wake()
        return Appended(info.base_offset, info.last_offset, info.log_append_time_ms, info.log_start_offset)

    def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, *,
                      now_ms: int) -> Appended:
        """Append a COMMIT/ABORT marker and close the producer's transaction on this partition
        (Kafka's ProducerAppendInfo.appendEndTxnMarker). Raises ProduceError when the marker is
        fenced. An abort of a transaction that wrote here goes into the aborted-transaction
        index with the last stable offset after it. The LSO moves: waiting fetches wake."""
        states = self.producers
        states.check_marker(producer_id, producer_epoch, coordinator_epoch)
        batch = build_control_batch(commit, producer_id=producer_id, producer_epoch=producer_epoch,
                                    coordinator_epoch=coordinator_epoch, timestamp_ms=now_ms)
        info = self.log.append(batch, leader_epoch=self.leader_epoch, now_ms=now_ms)
        first = states.complete_txn(producer_id, producer_epoch, coordinator_epoch, now_ms)
        if not commit and first is not None:
            self.log.append_aborted_txn(producer_id, first, info.base_offset, self.last_stable_offset)
        self.wake()
        return Appended(info.base_offset, info.last_offset, info.log_append_time_ms, info.log_start_offset)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to `offset`, persisted; returns it."""
        return self.log.delete_records_before(offset)

    def note_aborted_txn(self, producer_id: int, first_offset: int, last_offset: int) -> None:
        """Index an aborted transaction whose ABORT marker is at `last_offset` (the replay of a
        log whose index lost it), with the last stable offset after the marker."""
        self.log.append_aborted_txn(producer_id, first_offset, last_offset,
                                    self.producers.last_stable_offset(last_offset + 1))

    # --- maintenance (housekeeping, the cluster) ---------------------------------------------
    def flush(self) -> None:
        """fsync what was written (the fsync policy decides when); housekeeping's worker thread."""
        if self.opened:
            self.log.flush()

    def plan_retention(self) -> None:
        """On the loop: keep the open transactions' data through retention (`apply_retention`
        then runs in a thread)."""
        self.log.retention_floor = self.first_unstable_offset()

    def apply_retention(self, now_ms: int) -> None:
        """In a worker thread: delete the segments retention.ms and retention.bytes let go."""
        self.log.apply_retention(now_ms)

    def apply_compaction(self, now_ms: int, last_stable_offset: int) -> None:
        """In a worker thread: the log cleaner's pass when cleanup.policy includes compact, below
        `last_stable_offset` (read on the loop: an open transaction's data is not cleaned)."""
        if self.log.config.compact_enabled:
            self.log.compact(now_ms, first_unstable_offset=last_stable_offset)

    def update_config(self, config: LogConfig) -> None:
        """The topic's configs changed (AlterConfigs, a dynamic broker default). A partition not
        opened yet takes its topic's config as it is when it opens."""
        if self.opened:
            self.log.update_config(config)

    def write_producer_snapshot(self) -> None:
        """Keep the producer state as a snapshot at the log end (at shutdown), so the next start
        replays only what comes after it. A log unchanged since it was opened is left as it is:
        the next start replays the same state from the same files."""
        if not self.opened or not self.log.changed_since_open:
            return
        self.log.write_producer_snapshot(self.log.log_end_offset, self.producers.to_snapshot())

    def close(self) -> None:
        """Persist, fsync (unless fsync=never) and mark a clean shutdown (storage: only what changed)."""
        if self.opened:
            self.log.close()

    def save_copy(self, dest: Path, now_ms: int) -> int:
        """A copy of the partition in the new directory `dest` that opens as after a clean
        shutdown, its producer state included (the snapshot control; storage.copies); returns the
        bytes copied, the rest being links."""
        return save_partition(self.log, dest, now_ms, end_offset=self.high_watermark,
                              producer_state=self.producers.to_snapshot())

    def delete(self, *, trash: Path | None = None) -> None:
        """Close and remove the partition's data (DeleteTopics, a topic that could not be created);
        with `trash`, its directory is moved there for the caller to remove (the reset control)."""
        self.log.delete(trash=trash)

    # --- fetches waiting for data ------------------------------------------------------------
    def add_waiter(self, event: trio.Event) -> None:
        if self._waiters is None:
            self._waiters = set()
        self._waiters.add(event)

    def remove_waiter(self, event: trio.Event) -> None:
        if self._waiters:
            self._waiters.discard(event)

    def wake(self) -> None:
        """New data or a moved LSO: wake every fetch waiting on this partition, and the controls'
        waits."""
        if self.changes is not None:
            self.changes.notify()
        if self._waiters:
            for ev in self._waiters:
                ev.set()
            self._waiters.clear()


async def flush_appended(parts: Iterable[Partition]) -> str | None:
    """fsync=always: fsync the partitions a request appended to, in a worker thread, before
    the request is answered. Partitions deleted meanwhile are passed over. Returns the first
    failure's text (those writes are not durable: the caller must not acknowledge them), or None."""
    todo = list({id(p): p for p in parts if p.fsync_always}.values())
    if not todo:
        return None
    return await trio.to_thread.run_sync(_flush_logs, todo)


def _flush_logs(parts: list[Partition]) -> str | None:
    failed = None
    for p in parts:
        try:
            p.log.flush()
        except ValueError:
            pass  # its file was closed: deleted meanwhile
        except OSError as exc:
            if exc.errno == errno.EBADF:
                continue  # deleted meanwhile
            log.warning("fsync of %s-%d failed: %s", p.topic.name, p.index, exc)
            failed = failed or (exc.strerror or str(exc))
    return failed


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str] = field(default_factory=dict)
    partitions: list[Partition] = field(default_factory=list)
    policy: ProducePolicy = field(default_factory=ProducePolicy)
    # the log config its partitions share (broker.cluster's log_config keeps it): one object per
    # topic, not one per partition, however and whenever each opens
    shared_log_config: LogConfig | None = field(default=None, compare=False, repr=False)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS
