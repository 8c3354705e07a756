"""Topic configs: every one Kafka 4.2's LogConfig defines, and LogConfig.validate.

Rules:
- Each topic config is one `ConfigDef`: type, default, validator and the broker settings it
  falls back to (Kafka's ServerTopicConfigSynonyms), the first synonym supplying its default.
- CreateTopics, AlterConfigs and IncrementalAlterConfigs validate through
  `validate_topic_configs` exactly as Kafka's LogConfig.validate does: an unknown key fails with
  "Unknown topic config name: x", a bad value with ConfigDef's message, and the cross-field
  checks (min.compaction.lag.ms <= max.compaction.lag.ms, no tiered storage) follow. All of
  these are INVALID_CONFIG on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .values import (LONG_MAX, ConfigError, ConfigType, Validator, at_least, between, compression_level,
                     list_of, one_of, parse_value, throttled_replicas, to_string)

# --- the definitions -----------------------------------------------------------------------


@dataclass(frozen=True)
class Synonym:
    """A broker setting a topic config falls back to, with Kafka's default for it (None: no
    default, as for log.retention.ms whose default comes from log.retention.hours)."""

    name: str
    kafka_default: str | None
    # how the broker value converts to the topic value (hours -> ms and the like)
    scale: int = 1


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: Any
    validator: Validator | None
    doc: str
    synonyms: tuple[Synonym, ...] = ()
    internal: bool = False

    @property
    def default_string(self) -> str | None:
        return to_string(self.type, self.default)

    def parse(self, raw: str) -> Any:
        value = parse_value(self.name, self.type, raw)
        if self.validator is not None:
            self.validator(self.name, value)
        return value


DAY_MS = 24 * 3600 * 1000
WEEK_MS = 7 * DAY_MS
HOUR_MS = 3600 * 1000

T = ConfigType
_s = Synonym

# In Kafka's LogConfig definition order (the order ConfigDef.parse reports the first error in).
TOPIC_CONFIG_DEFS: tuple[ConfigDef, ...] = (
    ConfigDef("segment.bytes", T.INT, 1 << 30, at_least(1024 * 1024),
              "Size of one log segment file; retention and cleaning work a whole segment at a time.",
              (_s("log.segment.bytes", str(1 << 30)),)),
    ConfigDef("segment.ms", T.LONG, WEEK_MS, at_least(1),
              "Time after which a segment is rolled even if it is not full, so that retention and compaction "
              "can act on it.",
              (_s("log.roll.ms", None), _s("log.roll.hours", "168", HOUR_MS))),
    ConfigDef("segment.jitter.ms", T.LONG, 0, at_least(0),
              "Largest random amount subtracted from the segment roll time, to spread rolls out.",
              (_s("log.roll.jitter.ms", None), _s("log.roll.jitter.hours", "0", HOUR_MS))),
    ConfigDef("segment.index.bytes", T.INT, 10 * 1024 * 1024, at_least(4),
              "Size of the offset index of a segment.",
              (_s("log.index.size.max.bytes", str(10 * 1024 * 1024)),)),
    ConfigDef("flush.messages", T.LONG, LONG_MAX, at_least(1),
              "Number of records after which the log is fsynced.",
              (_s("log.flush.interval.messages", str(LONG_MAX)),)),
    ConfigDef("flush.ms", T.LONG, LONG_MAX, at_least(0),
              "Time after which the log is fsynced.",
              (_s("log.flush.interval.ms", None), _s("log.flush.scheduler.interval.ms", str(LONG_MAX)))),
    ConfigDef("retention.bytes", T.LONG, -1, None,
              "Largest size a partition's log may grow to before old segments are discarded under the "
              "\"delete\" policy; -1 means no size limit.",
              (_s("log.retention.bytes", "-1"),)),
    ConfigDef("retention.ms", T.LONG, WEEK_MS, at_least(-1),
              "Longest time a segment is kept before it is discarded under the \"delete\" policy; -1 means "
              "no time limit.",
              (_s("log.retention.ms", None), _s("log.retention.minutes", None, 60_000),
               _s("log.retention.hours", "168", HOUR_MS))),
    ConfigDef("max.message.bytes", T.INT, 1048588, at_least(0),
              "Largest record batch (after compression) the topic accepts.",
              (_s("message.max.bytes", "1048588"),)),
    ConfigDef("index.interval.bytes", T.INT, 4096, at_least(0),
              "Bytes of log between two offset index entries.",
              (_s("log.index.interval.bytes", "4096"),)),
    ConfigDef("delete.retention.ms", T.LONG, DAY_MS, at_least(0),
              "How long tombstones are kept on a compacted topic.",
              (_s("log.cleaner.delete.retention.ms", str(DAY_MS)),)),
    ConfigDef("min.compaction.lag.ms", T.LONG, 0, at_least(0),
              "Shortest time a record stays uncompacted.",
              (_s("log.cleaner.min.compaction.lag.ms", "0"),)),
    ConfigDef("max.compaction.lag.ms", T.LONG, LONG_MAX, at_least(1),
              "Longest time a record may stay ineligible for compaction.",
              (_s("log.cleaner.max.compaction.lag.ms", str(LONG_MAX)),)),
    ConfigDef("file.delete.delay.ms", T.LONG, 60_000, at_least(0),
              "Time to wait before a deleted segment file is removed from the filesystem.",
              (_s("log.segment.delete.delay.ms", "60000"),)),
    ConfigDef("min.cleanable.dirty.ratio", T.DOUBLE, 0.5, between(0, 1),
              "Share of the log that must be uncompacted before the compactor cleans it.",
              (_s("log.cleaner.min.cleanable.ratio", "0.5"),)),
    ConfigDef("cleanup.policy", T.LIST, ["delete"], list_of("compact", "delete"),
              "Retention policy for old segments: \"delete\" discards them by time or size, \"compact\" keeps "
              "the latest record per key; both may be given.",
              (_s("log.cleanup.policy", "delete"),)),
    ConfigDef("unclean.leader.election.enable", T.BOOLEAN, False, None,
              "Whether a replica outside the ISR may become leader as a last resort.",
              (_s("unclean.leader.election.enable", "false"),)),
    ConfigDef("min.insync.replicas", T.INT, 1, at_least(1),
              "Fewest in-sync replicas that must acknowledge an acks=all write.",
              (_s("min.insync.replicas", "1"),)),
    ConfigDef("compression.type", T.STRING, "producer",
              one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
              "Final compression codec of the topic; \"producer\" keeps what the producer sent.",
              (_s("compression.type", "producer"),)),
    ConfigDef("compression.gzip.level", T.INT, -1, compression_level(1, 9, -1),
              "Compression level when compression.type is gzip.",
              (_s("compression.gzip.level", "-1"),)),
    ConfigDef("compression.lz4.level", T.INT, 9, between(1, 17),
              "Compression level when compression.type is lz4.",
              (_s("compression.lz4.level", "9"),)),
    ConfigDef("compression.zstd.level", T.INT, 3, between(-131072, 22),
              "Compression level when compression.type is zstd.",
              (_s("compression.zstd.level", "3"),)),
    ConfigDef("preallocate", T.BOOLEAN, False, None,
              "Whether segment files are preallocated on disk.",
              (_s("log.preallocate", "false"),)),
    ConfigDef("message.timestamp.type", T.STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
              "Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime).",
              (_s("log.message.timestamp.type", "CreateTime"),)),
    ConfigDef("message.timestamp.before.max.ms", T.LONG, LONG_MAX, at_least(0),
              "How far a CreateTime timestamp may lie before the broker's clock.",
              (_s("log.message.timestamp.before.max.ms", str(LONG_MAX)),)),
    ConfigDef("message.timestamp.after.max.ms", T.LONG, HOUR_MS, at_least(0),
              "How far a CreateTime timestamp may lie after the broker's clock.",
              (_s("log.message.timestamp.after.max.ms", str(HOUR_MS)),)),
    ConfigDef("leader.replication.throttled.replicas", T.LIST, [], throttled_replicas,
              "Replicas whose replication is throttled on the leader side: partitionId:brokerId pairs or '*'."),
    ConfigDef("follower.replication.throttled.replicas", T.LIST, [], throttled_replicas,
              "Replicas whose replication is throttled on the follower side: partitionId:brokerId pairs or '*'."),
    ConfigDef("remote.storage.enable", T.BOOLEAN, False, None,
              "Whether the topic uses tiered storage."),
    ConfigDef("local.retention.ms", T.LONG, -2, at_least(-2),
              "Local retention time with tiered storage; -2 means retention.ms.",
              (_s("log.local.retention.ms", "-2"),)),
    ConfigDef("local.retention.bytes", T.LONG, -2, at_least(-2),
              "Local retention size with tiered storage; -2 means retention.bytes.",
              (_s("log.local.retention.bytes", "-2"),)),
    ConfigDef("remote.log.copy.disable", T.BOOLEAN, False, None,
              "Whether copying to tiered storage is stopped (tiered data becomes read-only)."),
    ConfigDef("remote.log.delete.on.disable", T.BOOLEAN, False, None,
              "Whether tiered data is deleted when tiered storage is turned off for the topic."),
    ConfigDef("internal.segment.bytes", T.INT, None, None,
              "Segment size below segment.bytes' minimum, for tests only.", internal=True),
)

TOPIC_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in TOPIC_CONFIG_DEFS}


def is_list_config(name: str) -> bool:
    d = TOPIC_CONFIGS.get(name)
    return d is not None and d.type == ConfigType.LIST


def topic_config_default(name: str) -> str | None:
    """The static default of a topic config (what IncrementalAlterConfigs APPEND starts from)."""
    d = TOPIC_CONFIGS.get(name)
    return None if d is None else d.default_string


# --- validation ----------------------------------------------------------------------------


def validate_topic_configs(overrides: Mapping[str, str | None], *,
                           broker_values: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Kafka's LogConfig.validate for a topic's complete override set.

    Returns the overrides as Kafka prints them. Raises ConfigError with Kafka's message."""
    nulls = [k for k, v in overrides.items() if v is None]
    if nulls:
        raise ConfigError("Null value not supported for topic configs: " + ",".join(nulls))
    for name in overrides:
        if name not in TOPIC_CONFIGS:
            raise ConfigError(f"Unknown topic config name: {name}")
    parsed: dict[str, Any] = {}
    for d in TOPIC_CONFIG_DEFS:  # ConfigDef.parse walks keys in definition order
        if d.name in overrides:
            parsed[d.name] = d.parse(overrides[d.name])  # type: ignore[arg-type]
    effective = {d.name: d.default for d in TOPIC_CONFIG_DEFS}
    effective.update(_broker_topic_defaults(broker_values or {}))
    effective.update(parsed)
    min_lag, max_lag = effective["min.compaction.lag.ms"], effective["max.compaction.lag.ms"]
    if min_lag > max_lag:
        raise ConfigError("conflict topic config setting min.compaction.lag.ms "
                          f"({min_lag}) > max.compaction.lag.ms ({max_lag})")
    if effective["remote.storage.enable"]:
        raise ConfigError("Tiered Storage functionality is disabled in the broker. "
                          "Topic cannot be configured with remote log storage.")
    return {name: to_string(TOPIC_CONFIGS[name].type, value) for name, value in parsed.items()}  # type: ignore[misc]


def _broker_topic_defaults(broker_values: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for d in TOPIC_CONFIG_DEFS:
        if d.synonyms and d.synonyms[0].name in broker_values:
            raw = to_string(d.type, broker_values[d.synonyms[0].name])
            try:
                out[d.name] = parse_value(d.name, d.type, raw) if raw is not None else d.default
            except ConfigError:
                pass
    return out
