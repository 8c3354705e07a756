"""In-place patches of a v2 batch header: what a broker stamps on a batch it appends.

Rules:
- Base offset and partition leader epoch sit before the CRC-covered range: stamping them leaves
  the CRC alone. LogAppendTime changes attributes and maxTimestamp, which are covered, so that
  patch rewrites the CRC (as Kafka's DefaultRecordBatch.setMaxTimestamp).
- Patches write into the caller's buffer and copy nothing; `buf` holds the batch at `pos`.
"""

from __future__ import annotations

import struct

from . import batch as _batch
from .batch import (ATTRIBUTES_OFFSET, BASE_OFFSET_OFFSET, CRC_OFFSET, LENGTH_OFFSET, LOG_OVERHEAD,
                    MAX_TIMESTAMP_OFFSET, PARTITION_LEADER_EPOCH_OFFSET, TIMESTAMP_TYPE_MASK, WritableBuffer)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")


def set_base_offset(buf: WritableBuffer, pos: int, offset: int) -> None:
    """Assign the batch's base offset (outside the CRC)."""
    _I64.pack_into(buf, pos + BASE_OFFSET_OFFSET, offset)


def set_partition_leader_epoch(buf: WritableBuffer, pos: int, epoch: int) -> None:
    """Stamp the partition leader epoch (outside the CRC)."""
    _I32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_max_timestamp_and_log_append_time(buf: WritableBuffer, pos: int, timestamp_ms: int) -> None:
    """message.timestamp.type=LogAppendTime: set the timestamp-type bit and maxTimestamp,
    then rewrite the CRC (as Kafka's DefaultRecordBatch.setMaxTimestamp). Consumers then
    read every record's timestamp as the batch's maxTimestamp."""
    attrs = _I16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)[0]
    if attrs & TIMESTAMP_TYPE_MASK and _I64.unpack_from(buf, pos + MAX_TIMESTAMP_OFFSET)[0] == timestamp_ms:
        return
    _I16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attrs | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    rewrite_crc(buf, pos)


def rewrite_crc(buf: WritableBuffer, pos: int) -> None:
    """Recompute the CRC-32C of the batch at `pos` (attributes to its end) and store it."""
    length = _I32.unpack_from(buf, pos + LENGTH_OFFSET)[0]
    crc = _batch.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET:pos + LOG_OVERHEAD + length])
    _U32.pack_into(buf, pos + CRC_OFFSET, crc)
