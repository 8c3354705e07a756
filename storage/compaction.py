"""Log compaction for cleanup.policy=compact (a simple, whole-segment cleaner).

Scope: the closed segments below the first uncleanable offset (storage.cleanable, Kafka's
LogCleanerManager: the last stable offset, the active segment and min.compaction.lag.ms bound it)
- the active segment, anything an open transaction could still abort or commit and the segments
min.compaction.lag.ms still holds back are never touched. A log is cleaned when its dirty ratio
is above min.cleanable.dirty.ratio or max.compaction.lag.ms has passed for a dirty segment
(storage.cleanable); after a pass the checkpoint (the first dirty offset) is the end of the
cleaned range.

Rules, after Kafka's LogCleaner:
- the latest record of each key (over the cleaned range) is kept; older ones go;
- records without a key are dropped (Kafka refuses them on compacted topics anyway);
- control batches (transaction markers) are always kept;
- data of aborted transactions is dropped: a transactional batch of producer P at offset
  o is aborted when the .txnindex holds an entry for P with first <= o <= last; such
  records also take no part in deciding which record of a key is the latest;
- a batch that loses some records is rewritten with the same base offset, last offset
  delta, producer id/epoch, base sequence, attributes and codec, its records keeping their
  offsets; a batch that loses all of them is dropped, except the last batch of each
  producer in the range, which is kept empty so producer sequence state survives a restart;
- tombstones (null values) are kept as the latest record of their key until their delete
  horizon (KIP-534): the first pass that keeps a tombstone in a batch without a horizon
  rewrites the batch with horizon = now + delete.retention.ms (the batch's base timestamp,
  with the delete-horizon attribute); a later pass at or past the horizon removes the
  tombstones of that batch. Control batches are kept (Kafka also removes the markers of
  transactions left empty; kafkalite does not).

Each segment is rewritten to `<base>.log.cleaned`, its index files are removed, and the
new file replaces the old by rename; a crash at any point leaves either the old or the new
log, and missing indexes are rebuilt on open. This module only reads segments and writes
their replacements; the log (PartitionLog.compact) swaps them into its segment list.
"""

from __future__ import annotations

import logging
import os
from typing import Sequence

from kafkalite.protocol.batch import (COMPRESSION_MASK, CONTROL_MASK, DELETE_HORIZON_MASK, LOG_OVERHEAD, TIMESTAMP_TYPE_MASK,
                                      TRANSACTIONAL_MASK, CorruptBatch, HeaderFields)
from kafkalite.protocol.records import DecodedRecord, decode_records, encode_batch
from kafkalite.protocol.codecs import UnsupportedCompression

from .cleanable import cleanable
from .config import LogConfig
from .files import unlink, write_new
from .segment import Segment

log = logging.getLogger("kafkalite.storage")


def compact_segments(segs: Sequence[Segment], log_end_offset: int, first_unstable_offset: int | None, *,
                     first_dirty_offset: int, now_ms: int, config: LogConfig) -> tuple[dict[int, Segment], int]:
    """Compact the cleanable closed segments of a log (`segs`, oldest first, the last one active)
    when the cleaner cleans it now (storage.cleanable: the lags, the dirty ratio). Returns the
    replacement of each rewritten segment by its index in `segs` (the caller, holding the log's
    lock, swaps them in and retires the old ones) and the cleaner's new first dirty offset."""
    last_stable = log_end_offset if first_unstable_offset is None else min(first_unstable_offset, log_end_offset)
    plan = cleanable(segs, last_stable, first_dirty_offset, now_ms, config)
    if not plan.should_clean(config.min_cleanable_dirty_ratio):
        return {}, first_dirty_offset
    eligible = segs[:plan.segment_count]
    delete_retention_ms = config.delete_retention_ms

    aborted: dict[int, list[tuple[int, int]]] = {}
    for seg in segs:
        for t in seg.txns:
            aborted.setdefault(t.producer_id, []).append((t.first_offset, t.last_offset))

    def is_aborted(pid: int, offset: int) -> bool:
        for first, last in aborted.get(pid, ()):
            if first <= offset <= last:
                return True
        return False

    latest: dict[bytes, int] = {}
    last_batch_of: dict[int, int] = {}
    for seg in eligible:
        for _pos, h in seg.iter_batches():
            f = h.fields()
            if f.attributes & CONTROL_MASK:
                continue
            if f.producer_id >= 0:
                last_batch_of[f.producer_id] = f.base_offset
            if f.attributes & TRANSACTIONAL_MASK and is_aborted(f.producer_id, f.base_offset):
                continue
            try:
                recs = decode_records(h.buf, h.pos)
            except (CorruptBatch, UnsupportedCompression) as e:
                log.warning("%s: cannot decode the batch at offset %d (%s); keeping it as is",
                            seg.log_path, f.base_offset, e)
                continue
            for rec in recs:
                if rec.key is not None:
                    latest[rec.key] = rec.offset

    replaced: dict[int, Segment] = {}
    for idx, seg in enumerate(eligible):
        out = bytearray()
        changed = False
        for _pos, h in seg.iter_batches():
            f = h.fields()
            total = f.batch_length + LOG_OVERHEAD
            raw = memoryview(h.buf)[h.pos:h.pos + total]
            if f.attributes & CONTROL_MASK:
                out += raw
                continue
            horizon = f.base_timestamp if f.attributes & DELETE_HORIZON_MASK else None
            set_horizon = False
            if f.attributes & TRANSACTIONAL_MASK and is_aborted(f.producer_id, f.base_offset):
                kept = []
            else:
                try:
                    recs = decode_records(h.buf, h.pos)
                except (CorruptBatch, UnsupportedCompression):
                    out += raw
                    continue
                kept = [r for r in recs if r.key is not None and latest.get(r.key) == r.offset
                        and (r.value is not None or horizon is None or now_ms < horizon)]
                set_horizon = horizon is None and any(r.value is None for r in kept)
                if len(kept) == len(recs) and not set_horizon:
                    out += raw
                    continue
            changed = True
            keep_empty = f.producer_id >= 0 and last_batch_of.get(f.producer_id) == f.base_offset
            if not kept and not keep_empty:
                continue
            out += _rebuild_batch(f, kept, now_ms + delete_retention_ms if set_horizon else horizon)
        if changed:
            replaced[idx] = _replace_segment(seg, out, config.index_interval_bytes, config.fsync != "never")
    return replaced, max(first_dirty_offset, plan.first_uncleanable_offset)


def _rebuild_batch(f: HeaderFields, kept: list[DecodedRecord], delete_horizon_ms: int | None) -> bytearray:
    log_append = f.max_timestamp if f.attributes & TIMESTAMP_TYPE_MASK else None
    return encode_batch(
        [(r.offset - f.base_offset, r.timestamp, r.key, r.value, r.headers) for r in kept],
        base_offset=f.base_offset, producer_id=f.producer_id, producer_epoch=f.producer_epoch,
        base_sequence=f.base_sequence, transactional=bool(f.attributes & TRANSACTIONAL_MASK),
        partition_leader_epoch=f.partition_leader_epoch, compression=f.attributes & COMPRESSION_MASK,
        last_offset_delta=f.last_offset_delta, log_append_time_ms=log_append, base_timestamp=f.base_timestamp,
        delete_horizon_ms=delete_horizon_ms,
    )


def _replace_segment(seg: Segment, data: bytearray, index_interval_bytes: int, fsync: bool) -> Segment:
    tmp = seg.log_path.with_name(seg.log_path.name + ".cleaned")
    write_new(tmp, data, fsync)
    unlink(seg.index_path)
    unlink(seg.time_index_path)
    seg.hold_file()   # the old segment is read from its own file until the log retires it
    os.replace(tmp, seg.log_path)
    new = Segment(seg.directory, seg.base_offset, seg.created_ms)
    new.size = os.stat(new.log_path).st_size
    new.txns = list(seg.txns)
    new.rebuild(index_interval_bytes, check_crc=False)
    new.persist_indexes()
    return new
