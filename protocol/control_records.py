"""Control records: the end-transaction markers (COMMIT, ABORT) a transaction coordinator
writes into each partition it touched.

Rules:
- A marker batch is transactional and control, base sequence -1, and holds one record whose key
  is (version 0, type) and whose value is (version 0, coordinator epoch), as Kafka's
  MemoryRecords.withEndTransactionMarker writes it.
- Types are Kafka's ControlRecordType: 0 ABORT, 1 COMMIT; 2 and up belong to KRaft and are not
  transaction markers.
"""

from __future__ import annotations

import struct

from .batch import NO_SEQUENCE, BatchHeader, CorruptBatch, ReadableBuffer
from .records import decode_records, encode_batch

CONTROL_ABORT = 0
CONTROL_COMMIT = 1

_CONTROL_KEY = struct.Struct(">hh")        # version 0, type
_END_TXN_VALUE = struct.Struct(">hi")      # version 0, coordinator epoch


def build_control_batch(commit: bool, *, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                        timestamp_ms: int, base_offset: int = 0, partition_leader_epoch: int = 0) -> bytearray:
    """An end-transaction marker batch, as Kafka's MemoryRecords.withEndTransactionMarker:
    transactional + control attributes, base sequence -1, one record whose key is
    (version 0, type ABORT=0 | COMMIT=1) and value (version 0, coordinator epoch)."""
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _END_TXN_VALUE.pack(0, coordinator_epoch)
    return encode_batch([(0, timestamp_ms, key, value, ())], base_offset=base_offset,
                        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE,
                        transactional=True, control=True, partition_leader_epoch=partition_leader_epoch)


def control_record_type(batch: ReadableBuffer, pos: int = 0) -> int:
    """The type id of the first record of a control batch (ABORT 0, COMMIT 1, others KRaft)."""
    recs = decode_records(batch, pos)
    if not recs or recs[0].key is None or len(recs[0].key) < 4:
        raise CorruptBatch("control record without a 4-byte key", pos)
    version, ctype = _CONTROL_KEY.unpack_from(recs[0].key)
    if version < 0:
        raise CorruptBatch(f"invalid control record key version {version}", pos)
    return ctype


def parse_control_record(batch: ReadableBuffer, pos: int = 0) -> tuple[bool, int]:
    """(is_commit, coordinator_epoch) of an end-transaction marker batch. Raises ValueError
    for a batch that is not a COMMIT/ABORT marker."""
    h = BatchHeader(batch, pos)
    if not h.is_control:
        raise ValueError("not a control batch")
    recs = decode_records(batch, pos)
    if len(recs) != 1 or recs[0].key is None or len(recs[0].key) < 4:
        raise ValueError("a transaction marker batch holds exactly one record with a 4-byte key")
    version, ctype = _CONTROL_KEY.unpack_from(recs[0].key)
    if version < 0:
        raise ValueError(f"invalid control record key version {version}")
    if ctype not in (CONTROL_ABORT, CONTROL_COMMIT):
        raise ValueError(f"control record type {ctype} is not a transaction marker")
    value = recs[0].value
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise ValueError("end transaction marker value is shorter than 6 bytes")
    vversion, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    if vversion < 0:
        raise ValueError(f"invalid end transaction marker version {vversion}")
    return ctype == CONTROL_COMMIT, coordinator_epoch
