"""The transaction coordinator service: `broker.services.transactions`.

Owns the `__transaction_state` topic (created on first start, compacted, one record per
state change in Kafka's TransactionLogKey/TransactionLogValue format, keyed by
transactional id and partitioned by Java's hash of it), replays it on startup, and then:
- completes every transaction it finds in PrepareCommit/PrepareAbort (writes the markers,
  then CompleteCommit/CompleteAbort), so a crash between prepare and markers loses nothing;
- writes the markers of each EndTxn in its own trio task right after the prepare is durable
  and the client has its answer (requests in between get CONCURRENT_TRANSACTIONS), through
  the marker channel the broker's wiring gives it (markers.MarkerChannel);
- every transaction.abort.timed.out.transaction.cleanup.interval.ms fences and aborts the
  transactions open longer than their transaction.timeout.ms, and expires idle ids.
The request handlers (broker.handlers.transactions) and the produce path call into the
coordinator without awaiting anything, so each state change is atomic on the trio loop.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections import deque

import trio
from kio.schema.errors import ErrorCode

from ..clock import CLOCK, JumpTimer
from .core import TxnCoordinatorCore
from .log import TxnLogStore
from .markers import MarkerChannel
from .state import TxnState

log = logging.getLogger("kafkalite.transactions")

E = ErrorCode

# Produce errors the partition leader sends back for a failed transaction check, by
# coordinator error (Kafka's ReplicaManager / AddPartitionsToTxnManager conversions).
_RETRIABLE_FOR_PRODUCE = {E.concurrent_transactions, E.coordinator_load_in_progress, E.coordinator_not_available,
                          E.not_coordinator, E.network_exception}


_OPEN_STATES = frozenset({TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                          TxnState.PREPARE_EPOCH_FENCE})


class TransactionCoordinator:
    def __init__(self, broker, *, marker_channel: MarkerChannel, clock=None):
        self.broker = broker
        self.marker_channel = marker_channel
        config = broker.config
        self.clock = clock or CLOCK
        self.store = TxnLogStore(broker)
        self.pids = broker.services.producer_ids
        self.core = TxnCoordinatorCore(
            store=self.store, producer_ids=self.pids, clock=self.clock,
            max_timeout_ms=config["transaction.max.timeout.ms"], server_tv=config["transaction.version"],
            coordinator_epoch=self.store.coordinator_epoch, on_prepared=self._on_prepared,
            id_expiration_ms=config["transactional.id.expiration.ms"])
        t0 = time.monotonic()
        self._to_complete: list[str] = self.core.load(self.store.load())
        log.info("loaded %d transactional id(s) in %.3f s; %d transaction(s) to complete",
                 len(self.core.txns), time.monotonic() - t0, len(self._to_complete))
        self._nursery: trio.Nursery | None = None
        self._completing: set[str] = set()
        # EndTxn arrival -> markers written, per transaction (the commit latency)
        self.marker_latency_ms: deque = deque(maxlen=10_000)
        self._started: dict[str, float] = {}
        self._arrival: float | None = None

    # --- service ------------------------------------------------------------------------------
    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for tid in self._to_complete:
                self._spawn(tid)
            self._to_complete = []
            nursery.start_soon(self._timeouts)
            task_status.started()

    def close(self) -> None:
        if self.marker_latency_ms:
            data = sorted(self.marker_latency_ms)
            log.info("EndTxn to markers written: %d transactions, median %.2f ms, p99 %.2f ms", len(data),
                     statistics.median(data), data[min(len(data) - 1, int(len(data) * 0.99))])

    async def _timeouts(self) -> None:
        """The timeout scan every cleanup interval, and at once whenever the broker's clock jumps
        (so an advance past a transaction's timeout aborts it now); the expiration scans are due
        by the broker's clock, so an advance past them runs them too."""
        config = self.broker.config
        every = config["transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000
        expire_every_ms = 3_600_000
        next_expire = self.clock() + expire_every_ms
        with JumpTimer(self.clock) as timer:
            while True:
                await timer.sleep(every)
                self.core.abort_timed_out()
                if self.clock() >= next_expire:
                    next_expire = self.clock() + expire_every_ms
                    self.core.expire_transactional_ids()
                    self._expire_producers()

    def _expire_producers(self) -> None:
        expiration = self.broker.config["producer.id.expiration.ms"]
        now = self.clock()
        for part in self.broker.cluster.all_partitions():
            part.producers.expire(now, expiration)

    def open_transaction_count(self) -> int:
        """Transactions begun and not yet complete (Ongoing, PrepareCommit/Abort, PrepareEpochFence)."""
        return sum(1 for md in self.core.txns.values() if md.state in _OPEN_STATES)

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, client_tv: int):
        self._arrival = time.perf_counter()
        try:
            return self.core.end_txn(transactional_id, producer_id, producer_epoch, commit, client_tv)
        finally:
            self._arrival = None

    def _on_prepared(self, transactional_id: str) -> None:
        self._started[transactional_id] = self._arrival or time.perf_counter()
        if self._nursery is None:
            self._to_complete.append(transactional_id)
        else:
            self._spawn(transactional_id)

    def _spawn(self, transactional_id: str) -> None:
        if transactional_id not in self._completing:
            self._completing.add(transactional_id)
            assert self._nursery is not None  # _on_prepared queues ids until run() starts
            self._nursery.start_soon(self._complete, transactional_id)

    async def _complete(self, transactional_id: str) -> None:
        """Write the markers of a prepared transaction, retrying failed partitions."""
        delay = 0.05
        try:
            while True:
                job = self.core.markers_due(transactional_id)
                if job is None:
                    return
                # markers first (and their fsync), then CompleteCommit/CompleteAbort
                results = {}
                if job.partitions:
                    results = await self.marker_channel.send(job.producer_id, job.producer_epoch,
                                                             job.coordinator_epoch, job.commit, job.partitions)
                if self.core.finish_markers(transactional_id, results):
                    started = self._started.pop(transactional_id, None)
                    if started is not None:
                        self.marker_latency_ms.append((time.perf_counter() - started) * 1000)
                    return
                await trio.sleep(delay)
                delay = min(delay * 2, 1.0)
        finally:
            self._completing.discard(transactional_id)
            self._started.pop(transactional_id, None)

    # --- the write paths (Produce, TxnOffsetCommit) ---------------------------------------------
    def add_or_verify_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                tp: tuple[str, int], *, add: bool, knows_abortable: bool) -> ErrorCode:
        """A transactional write to `tp` is about to happen. A transactions-v2 client (Produce
        v12+, TxnOffsetCommit v5+; KIP-890 part 2) adds the partition to its transaction by
        writing; older clients added it themselves, and the write only verifies that (KIP-890
        part 1). A client too old to know TRANSACTION_ABORTABLE (Produce < v11, TxnOffsetCommit
        < v4) is told INVALID_TXN_STATE instead. Returns the coordinator's error; each API
        maps it to its own codes."""
        if add:
            return self.core.add_partitions(transactional_id, producer_id, producer_epoch, [tp], client_tv=2)
        err = self.core.verify_partitions(transactional_id, producer_id, producer_epoch, [tp])[tp]
        if err == E.transaction_abortable and not knows_abortable:
            err = E.invalid_txn_state
        return err

    def check_produce(self, ctx, transactional_id, part, header):
        """A transactional batch is about to be appended to `part`: is its partition part of the
        producer's ongoing transaction? Produce v12+ (KIP-890 transactions v2) adds it to the
        transaction; older versions only verify (KIP-890 part 1). Returns None or
        (ErrorCode, message) as the partition's produce error."""
        pid, epoch = header.producer_id, header.producer_epoch
        entry = part.producers.entries.get(pid)
        if entry is not None and entry.current_txn_first_offset is not None and entry.epoch == epoch:
            return None  # already part of the transaction open on this partition
        if transactional_id is None:
            return E.invalid_txn_state, "transactional batches need a transactional id"
        version = ctx.api_version
        err = self.add_or_verify_partition(transactional_id, pid, epoch, (part.topic.name, part.index),
                                           add=version >= 12, knows_abortable=version >= 11)
        if err == E.none:
            return None
        if err == E.producer_fenced:
            return E.invalid_producer_epoch, f"producer {pid} epoch {epoch} is fenced for {transactional_id!r}"
        if err in _RETRIABLE_FOR_PRODUCE:
            return E.not_enough_replicas, f"cannot verify the partition is in the transaction: {err.name}"
        if err == E.invalid_txn_state:
            return err, "partition was not added to the transaction"
        return err, None
