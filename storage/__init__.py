"""Partition logs on disk: segments, indexes, recovery, retention, compaction.

The broker sees storage through `PartitionStorage` (storage.interface), one documented
method per operation; `PartitionLog` (storage.log) implements it on Kafka's on-disk layout.

Synchronous code with no sockets and no trio; the broker calls the slow parts (flush,
large recoveries, compaction) through a worker thread. The record-batch header view comes
from kafkalite.protocol (batch, batch_patches, records), the only thing this package imports
from outside itself.
"""

from .config import LogConfig
from .headers import BatchLocation, SegmentSummary
from .interface import PartitionStorage
from .log import AppendInfo, OffsetOutOfRange, PartitionLog
from .segment import AbortedTxn

__all__ = ["PartitionStorage", "PartitionLog", "LogConfig", "OffsetOutOfRange", "AppendInfo", "AbortedTxn",
           "BatchLocation", "SegmentSummary"]
