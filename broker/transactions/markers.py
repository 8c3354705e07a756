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
import time
from typing import Iterable

from kio.schema.errors import ErrorCode

from protocol.records import build_control_batch

from ..producers import ProduceError

log = logging.getLogger("kafkalite.transactions")

OFFSETS_TOPIC = "__consumer_offsets"


def _now_ms() -> int:
    return int(time.time() * 1000)


def write_marker(broker, part, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                 commit: bool, now_ms: int | None = None) -> ErrorCode:
    """Append one marker to `part`. No await: atomic on the trio loop."""
    states = part.producers
    try:
        states.check_marker(producer_id, producer_epoch, coordinator_epoch)
    except ProduceError as exc:
        log.info("marker for producer %d on %s-%d refused: %s", producer_id, part.topic.name, part.index,
                 exc.message)
        return exc.code
    now = _now_ms() if now_ms is None else now_ms
    batch = build_control_batch(commit, producer_id=producer_id, producer_epoch=producer_epoch,
                                coordinator_epoch=coordinator_epoch, timestamp_ms=now)
    try:
        info = part.log.append(batch, leader_epoch=part.leader_epoch, now_ms=now)
    except OSError:
        log.exception("cannot append a marker to %s-%d", part.topic.name, part.index)
        return ErrorCode.kafka_storage_error
    first = states.complete_txn(producer_id, producer_epoch, coordinator_epoch, now)
    if not commit and first is not None:
        part.log.append_aborted_txn(producer_id, first, info.base_offset, part.last_stable_offset)
    part.wake()
    if part.topic.name == OFFSETS_TOPIC:
        groups = broker.services.get("groups") if broker is not None else None
        if groups is not None:
            groups.complete_txn_offsets(producer_id, commit)
    return ErrorCode.none


def write_markers(broker, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                  partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
    """Write one marker to each (topic, partition); returns the error per partition."""
    cluster = broker.cluster
    now = _now_ms()
    out = {}
    for tp in partitions:
        part = cluster.partition(tp[0], tp[1])
        if part is None:
            out[tp] = ErrorCode.unknown_topic_or_partition
            continue
        out[tp] = write_marker(broker, part, producer_id, producer_epoch, coordinator_epoch, commit, now)
    return out
