"""Partition logs on disk: segments, indexes, recovery, retention, compaction.

The broker sees storage through `PartitionStorage` (storage.interface), one documented
method per operation; `PartitionLog` (storage.log) implements it on Kafka's on-disk layout.

Synchronous code with no sockets and no trio; the broker calls the slow parts (flush,
large recoveries, compaction) through a worker thread. The record-batch modules of
kafkalite.protocol (batch, batch_patches, records, regions, codecs) are the only thing this package
imports from outside itself (kafkalite/tests/test_package_rules.py).
"""

if __name__ != "kafkalite.storage":  # the repository's storage/ folder is the package's kafkalite/storage
    raise ImportError(f"{__name__} is kafkalite.storage: import it by that name (one name, one copy of its modules)")

from .config import LogConfig  # noqa: E402
from .headers import BatchLocation, SegmentSummary  # noqa: E402
from .interface import AppendInfo, OffsetOutOfRange, PartitionStorage  # noqa: E402
from .log import PartitionLog  # noqa: E402
from .segment import AbortedTxn  # noqa: E402

__all__ = ["PartitionStorage", "PartitionLog", "LogConfig", "OffsetOutOfRange", "AppendInfo", "AbortedTxn",
           "BatchLocation", "SegmentSummary"]
