"""Per-partition log configuration (Kafka topic config names in the comments)."""

from __future__ import annotations

from dataclasses import dataclass

LONG_MAX = (1 << 63) - 1     # Java's Long.MAX_VALUE, Kafka's "no limit"


@dataclass
class LogConfig:
    segment_bytes: int = 1 << 30                 # segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000       # segment.ms
    retention_ms: int = 7 * 24 * 3600 * 1000     # retention.ms (-1 = forever)
    retention_bytes: int = -1                    # retention.bytes (-1 = unlimited)
    index_interval_bytes: int = 4096             # index.interval.bytes
    cleanup_policy: str = "delete"               # cleanup.policy: delete | compact | compact,delete
    delete_retention_ms: int = 24 * 3600 * 1000  # delete.retention.ms: how long the cleaner keeps tombstones
    min_cleanable_dirty_ratio: float = 0.5       # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0               # min.compaction.lag.ms: how long a record stays uncleaned
    max_compaction_lag_ms: int = LONG_MAX        # max.compaction.lag.ms: how long a dirty segment may wait
    timestamp_type: str = "CreateTime"           # message.timestamp.type: CreateTime | LogAppendTime
    fsync: str = "interval"                      # always | interval | never (broker-level --fsync)

    @property
    def log_append_time(self) -> bool:
        return self.timestamp_type == "LogAppendTime"

    @property
    def delete_enabled(self) -> bool:
        return "delete" in _policies(self.cleanup_policy)

    @property
    def compact_enabled(self) -> bool:
        return "compact" in _policies(self.cleanup_policy)


def _policies(value: str) -> set[str]:
    return {p.strip().lower() for p in value.replace(";", ",").split(",") if p.strip()}
