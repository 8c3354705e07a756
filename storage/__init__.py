"""Partition logs on disk: segments, indexes, recovery, retention, compaction.

Synchronous code with no sockets and no trio; the broker calls the slow parts (flush,
large recoveries, compaction) through a worker thread. The record-batch header view comes
from kafkalite.protocol (batch, batch_patches, records), the only thing this package imports
from outside itself.
"""

from .config import LogConfig
from .log import AppendInfo, OffsetOutOfRange, PartitionLog
from .segment import AbortedTxn

__all__ = ["PartitionLog", "LogConfig", "OffsetOutOfRange", "AppendInfo", "AbortedTxn"]
