"""Group configs: the settings Kafka keeps per group id (config resource type GROUP, KIP-848 /
KIP-932), set with IncrementalAlterConfigs and read with DescribeConfigs.

Rules:
- Only the share group keys that change what the broker does are served:
  `share.auto.offset.reset` (where a new share-partition starts: latest or earliest),
  `share.isolation.level` (read_uncommitted or read_committed), `share.record.lock.duration.ms`
  and `share.delivery.count.limit`. Any other key is INVALID_CONFIG (`GroupConfigError`).
- An unset key falls back to the broker setting named in `broker_default`, or `default`, as
  Kafka's GroupConfig does (broker.group_configs keeps the values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

@dataclass(frozen=True)
class GroupKey:
    check: Callable[[str], bool]
    broker_default: str | None  # the broker setting that supplies the default
    default: str
    type_name: str  # settings.values.ConfigType member name
    doc: str


def _int_between(lo: int, hi: int) -> Callable[[str], bool]:
    def check(v: str) -> bool:
        try:
            return lo <= int(v) <= hi
        except ValueError:
            return False
    return check


GROUP_KEYS: dict[str, GroupKey] = {
    "share.auto.offset.reset": GroupKey(lambda v: v in ("latest", "earliest"), None, "latest", "STRING",
                                        "where a share group starts consuming a partition with no state"),
    "share.isolation.level": GroupKey(lambda v: v in ("read_uncommitted", "read_committed"), None,
                                      "read_uncommitted", "STRING", "which records a share group reads"),
    "share.record.lock.duration.ms": GroupKey(_int_between(1000, 3_600_000), "group.share.record.lock.duration.ms",
                                              "30000", "INT", "acquisition lock duration of the group's records"),
    "share.delivery.count.limit": GroupKey(_int_between(2, 10), "group.share.delivery.count.limit", "5", "INT",
                                           "deliveries of a record before it is archived"),
}


class GroupConfigError(ValueError):
    pass
