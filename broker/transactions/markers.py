"""Transaction markers: the one piece of code that writes COMMIT/ABORT control batches.

Used by the coordinator for its own transactions and by the WriteTxnMarkers handler (which
admin tools such as kafka-transactions.sh use to abort hanging transactions). Per partition:
the marker is checked against the producer state (an older producer epoch gets
INVALID_PRODUCER_EPOCH, an older coordinator epoch TRANSACTION_COORDINATOR_FENCED), appended
as a control batch (transactional + control attributes, base sequence -1, one record: key
version 0 + type ABORT 0 / COMMIT 1, value version 0 + coordinator epoch), then the
producer's open transaction on the partition is closed; an abort of a transaction that wrote
data is recorded in the aborted-transaction index with the last stable offset after it. The
last stable offset moves, so waiting read_committed fetches are woken. A marker on a
`__consumer_offsets` partition also makes the group coordinator apply (commit) or drop
(abort) the producer's pending transactional offsets.
"""

from __future__ import annotations

import logging
from typing import Iterable

from kio.schema.errors import ErrorCode

from ..clock import now_ms as wall_now_ms
from ..partition import flush_appended
from ..internal_topics import OFFSETS_TOPIC
from ..producers import ProduceError

log = logging.getLogger("kafkalite.transactions")

def write_marker(broker, part, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                 commit: bool, now_ms: int | None = None) -> ErrorCode:
    """Append one marker to `part` (Partition.append_marker). No await: atomic on the trio loop."""
    now = wall_now_ms() if now_ms is None else now_ms
    try:
        part.append_marker(producer_id, producer_epoch, coordinator_epoch, commit, now_ms=now)
    except ProduceError as exc:
        log.info("marker for producer %d on %s-%d refused: %s", producer_id, part.topic.name, part.index,
                 exc.message)
        return exc.code
    except OSError:
        log.exception("cannot append a marker to %s-%d", part.topic.name, part.index)
        return ErrorCode.kafka_storage_error
    if part.topic.name == OFFSETS_TOPIC:
        broker.services.groups.complete_txn_offsets(producer_id, commit)
    return ErrorCode.none


def write_markers(broker, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                  partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
    """Write one marker to each (topic, partition); returns the error per partition."""
    cluster = broker.cluster
    now = wall_now_ms()
    out = {}
    for tp in partitions:
        part = cluster.partition(tp[0], tp[1])
        if part is None:
            out[tp] = ErrorCode.unknown_topic_or_partition
            continue
        out[tp] = write_marker(broker, part, producer_id, producer_epoch, coordinator_epoch, commit, now)
    return out


async def write_markers_durably(broker, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                                commit: bool, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
    """write_markers, then with fsync=always the fsync of the partitions written: a marker counts
    as written only once it is durable, so a failed fsync turns its partitions' answers into
    KAFKA_STORAGE_ERROR (the coordinator retries; a WriteTxnMarkers caller sees the error)."""
    results = write_markers(broker, producer_id, producer_epoch, coordinator_epoch, commit, partitions)
    cluster = broker.cluster
    written = [tp for tp, err in results.items() if err == ErrorCode.none]
    failure = await flush_appended(p for p in (cluster.partition(*tp) for tp in written) if p is not None)
    if failure is not None:
        log.error("markers for producer %d are not durable: %s", producer_id, failure)
        for tp in written:
            results[tp] = ErrorCode.kafka_storage_error
    return results


class MarkerChannel:
    """Delivers the markers of a prepared transaction for the coordinator (the part Kafka's
    TransactionMarkerChannelManager plays): one marker per partition, then, with fsync=always,
    the fsync of the partitions written, so CompleteCommit/CompleteAbort is only written once
    every marker is durable. Built by the broker's wiring (broker.services.Wiring)."""

    def __init__(self, broker):
        self.broker = broker

    async def send(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                   partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        return await write_markers_durably(self.broker, producer_id, producer_epoch, coordinator_epoch, commit,
                                           partitions)
