"""Producer-state replay: a partition's producer state rebuilt from its log on start and creation.

Rules:
- Replay starts from the newest producer snapshot (written at clean shutdown) when there is
  one and it reads back; a damaged snapshot is ignored with a warning and the log replayed whole.
- Data batches update each producer's epoch, sequences and the first offset of its open
  transaction; a COMMIT/ABORT marker closes that transaction (Kafka's
  ProducerAppendInfo.appendEndTxnMarker).
- An abort missing from the aborted-transaction index (a crash between the marker and the index
  write) is added again, so read_committed consumers never see aborted records after a restart.
"""

from __future__ import annotations

import logging

from kafkalite.protocol.batch import BatchHeader
from kafkalite.protocol.control_records import parse_control_record

from .partition import Partition
from .producers import ProducerStates

log = logging.getLogger("kafkalite.cluster")


def replay_producer_state(part: Partition) -> None:
    """Rebuild the producer state of a partition from its log (on startup and creation).

    Data batches update each producer's epoch, sequences and the first offset of its open
    transaction; a COMMIT/ABORT marker closes that transaction (Kafka's
    ProducerAppendInfo.appendEndTxnMarker). An abort whose entry is missing from the
    aborted-transaction index (a crash between the marker and the index write) is added
    again, so read_committed consumers never see aborted records after a restart. Replay
    starts from the newest producer snapshot (written at clean shutdown) when there is one."""
    start = part.log_start_offset
    snapshot = part.latest_producer_snapshot()
    if snapshot is not None:
        try:
            part.producers = ProducerStates.from_snapshot(snapshot[1])
            start = max(start, snapshot[0])
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("%s-%d: ignoring the producer snapshot at offset %d: %s", part.topic.name, part.index,
                        snapshot[0], exc)
            part.producers = ProducerStates()
    states = part.producers
    for base_offset, batch in part.batches_from(start):
        h = BatchHeader(batch, 0)
        pid = h.producer_id
        if pid < 0:
            continue
        if h.is_control:
            if h.record_count == 0:
                continue  # the transaction was cleaned away
            try:
                commit, coordinator_epoch = parse_control_record(batch, 0)
            except ValueError:
                continue  # not a transaction marker
            first = states.complete_txn(pid, h.producer_epoch, coordinator_epoch, h.max_timestamp)
            if not commit and first is not None and not _has_aborted_entry(part, pid, first, base_offset):
                part.note_aborted_txn(pid, first, base_offset)
            continue
        states.record_batch(pid, h.producer_epoch, h.base_sequence, h.last_sequence, base_offset,
                            base_offset + h.last_offset_delta, h.max_timestamp, transactional=h.is_transactional)


def _has_aborted_entry(part: Partition, producer_id: int, first_offset: int, last_offset: int) -> bool:
    for a in part.aborted_txns(first_offset, last_offset + 1):
        if a.producer_id == producer_id and a.first_offset == first_offset:
            return True
    return False
