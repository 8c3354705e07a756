"""Kafka's topic configs: names, types, defaults, validators, and how they are reported.

Every topic config that Kafka 4.2's LogConfig defines is here, with its type, its default,
its validator and the broker settings it falls back to (Kafka's ServerTopicConfigSynonyms).
CreateTopics, AlterConfigs and IncrementalAlterConfigs validate through `validate_topic_configs`
exactly as Kafka's LogConfig.validate does: an unknown key fails with
"Unknown topic config name: x", a value that does not parse or is out of range fails with
ConfigDef's "Invalid value v for configuration k: <reason>", and the cross-field checks
(min.compaction.lag.ms <= max.compaction.lag.ms, no tiered storage) follow. All of these are
INVALID_CONFIG on the wire.

`describe_topic_configs` computes what DescribeConfigs and CreateTopics (v5+) report for a
topic: the effective value, its source (TOPIC_CONFIG for an override, STATIC_BROKER_CONFIG
when the broker setting it falls back to was set, DEFAULT_CONFIG otherwise) and the synonym
chain, as Kafka's ConfigHelper builds it. `describe_broker_configs` does the same for the
broker resource. A broker setting counts as "set" (STATIC_BROKER_CONFIG) when its value
differs from Kafka's own default, since that is what a server.properties line would produce.

Values are kept as Kafka prints them (ConfigDef.convertToString of the parsed value), so an
override given as " 100 " or "TRUE" is stored and reported as "100" and "true".
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


class ConfigType(enum.IntEnum):
    """DescribeConfigsResponse.ConfigType ids."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """DescribeConfigsResponse.ConfigSource ids."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigError(ValueError):
    """A config that Kafka refuses; `str(exc)` is Kafka's message (INVALID_CONFIG)."""


# --- parsing (ConfigDef.parseType for string input) ---------------------------------------

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?))[fFdD]?\Z")
_LIST_SPLIT = re.compile(r"\s*,\s*")


def _invalid(name: str, value: Any, reason: str | None) -> ConfigError:
    return ConfigError(f"Invalid value {value} for configuration {name}" + (f": {reason}" if reason else ""))


def _parse_integer(name: str, raw: str, lo: int, hi: int, type_name: str) -> int:
    text = raw.strip()
    if not _INTEGER.match(text):
        raise _invalid(name, raw, f"Not a number of type {type_name}")
    value = int(text)
    if not lo <= value <= hi:
        raise _invalid(name, raw, f"Not a number of type {type_name}")
    return value


def parse_value(name: str, ctype: ConfigType, raw: str) -> Any:
    """Parse a string the way Kafka's ConfigDef does; raises ConfigError with Kafka's message."""
    text = raw.strip()
    if ctype == ConfigType.BOOLEAN:
        low = text.lower()
        if low == "true":
            return True
        if low == "false":
            return False
        raise _invalid(name, raw, "Expected value to be either true or false")
    if ctype in (ConfigType.STRING, ConfigType.PASSWORD, ConfigType.CLASS):
        return text
    if ctype == ConfigType.INT:
        return _parse_integer(name, raw, -(2**31), INT_MAX, "INT")
    if ctype == ConfigType.SHORT:
        return _parse_integer(name, raw, -(2**15), 2**15 - 1, "SHORT")
    if ctype == ConfigType.LONG:
        return _parse_integer(name, raw, -(2**63), LONG_MAX, "LONG")
    if ctype == ConfigType.DOUBLE:
        if not _DOUBLE.match(text):
            raise _invalid(name, raw, "Not a number of type DOUBLE")
        body = text.rstrip("fFdD") if not text.endswith("Infinity") else text
        return float(body.replace("Infinity", "inf"))
    if ctype == ConfigType.LIST:
        if not text:
            return []
        return _LIST_SPLIT.split(text)
    raise _invalid(name, raw, None)


def _java_double(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == int(value) and abs(value) < 1e7:
        return f"{int(value)}.0"
    text = repr(value)
    if "e" in text:
        mantissa, exp = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}E{int(exp)}"
    return text


def to_string(ctype: ConfigType, value: Any) -> str | None:
    """ConfigDef.convertToString: how Kafka prints a parsed value."""
    if value is None:
        return None
    if ctype == ConfigType.BOOLEAN or isinstance(value, bool):
        return "true" if value else "false"
    if ctype == ConfigType.LIST:
        if isinstance(value, str):
            return value
        return ",".join(str(v) for v in value)
    if ctype == ConfigType.DOUBLE:
        return _java_double(float(value))
    return str(value)


def _java_repr(value: Any) -> str:
    """How a parsed value prints inside a ConfigException message."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


# --- validators ----------------------------------------------------------------------------

Validator = Callable[[str, Any], None]


def at_least(lo: int | float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < lo:
            raise _invalid(name, _java_repr(value), f"Value must be at least {lo}")
    return check


def between(lo: int | float, hi: int | float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < lo:
            raise _invalid(name, _java_repr(value), f"Value must be at least {lo}")
        if value > hi:
            raise _invalid(name, _java_repr(value), f"Value must be no more than {hi}")
    return check


def one_of(*valid: str) -> Validator:
    def check(name: str, value: Any) -> None:
        if value not in valid:
            raise _invalid(name, value, "String must be one of: " + ", ".join(valid))
    return check


def list_of(*valid: str, empty_allowed: bool = True) -> Validator:
    """ConfigDef.ValidList (Kafka 4.2): no duplicates, no empty entries, each one of `valid`."""

    def check(name: str, value: list[str]) -> None:
        if not value and not empty_allowed:
            raise ConfigError(f"Configuration '{name}' must not be empty. Valid values include: "
                              "[" + ", ".join(valid) + "]")
        if len(set(value)) != len(value):
            raise ConfigError(f"Configuration '{name}' values must not be duplicated.")
        for item in value:
            if item == "":
                raise ConfigError(f"Configuration '{name}' values must not be empty.")
            if valid and item not in valid:
                raise _invalid(name, item, "String must be one of: " + ", ".join(valid))
    return check


def compression_level(lo: int, hi: int, default: int) -> Validator:
    """GZIP's level validator: a range, or the codec's "default" marker."""

    def check(name: str, value: int) -> None:
        if value > hi or (value < lo and value != default):
            raise _invalid(name, value, f"Value must be between {lo} and {hi} or equal to {default}")
    return check


_THROTTLED = re.compile(r"([0-9]+:[0-9]+)?\Z")


def throttled_replicas(name: str, value: list[str]) -> None:
    items = [v.strip() for v in value]
    if not (all(_THROTTLED.match(v) for v in items) or "".join(items) == "*"):
        raise _invalid(name, _java_repr(value), name + " must be the literal '*' or a list of replicas in the "
                       "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


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


# --- describing ----------------------------------------------------------------------------

# one entry of a DescribeConfigs synonym chain: (name, value, source)
SynonymEntry = tuple[str, str | None, ConfigSource]


@dataclass
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    type: ConfigType
    doc: str | None
    read_only: bool = False
    sensitive: bool = False
    synonyms: list[SynonymEntry] = field(default_factory=list)


def _broker_value_string(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return None if value is None else str(value)


def _static_synonyms(d: ConfigDef, broker_values: Mapping[str, Any]) -> list[SynonymEntry]:
    """Kafka's configSynonyms for a topic config's broker synonyms, static sources only."""
    found: list[tuple[str, str | None, ConfigSource]] = []
    primary = d.synonyms[0]
    if primary.name in broker_values:
        text = _broker_value_string(broker_values[primary.name])
        if text != d.default_string:
            found.append((primary.name, text, ConfigSource.STATIC_BROKER_CONFIG))
    for syn in d.synonyms:
        if syn.kafka_default is not None:
            found.append((syn.name, syn.kafka_default, ConfigSource.DEFAULT_CONFIG))
    # ConfigHelper drops everything before the first entry named like the primary synonym
    while found and found[0][0] != primary.name:
        found.pop(0)
    return found


def describe_topic_configs(overrides: Mapping[str, str], broker_values: Mapping[str, Any], *,
                           names: Iterable[str] | None = None) -> list[ConfigEntry]:
    """Every topic config (or those in `names`) with value, source and synonyms, sorted by name."""
    wanted = None if names is None else set(names)
    entries = []
    for d in sorted(TOPIC_CONFIG_DEFS, key=lambda d: d.name):
        if wanted is not None and d.name not in wanted:
            continue
        if d.internal and d.name not in overrides:
            continue
        synonyms = _static_synonyms(d, broker_values) if d.synonyms else []
        value: str | None
        if d.name in overrides:
            value = overrides[d.name]
            synonyms.insert(0, (d.name, value, ConfigSource.TOPIC_CONFIG))
        elif d.synonyms and d.synonyms[0].name in broker_values:
            value = _broker_value_string(broker_values[d.synonyms[0].name])
            try:
                value = to_string(d.type, parse_value(d.name, d.type, value or ""))
            except ConfigError:
                pass
        else:
            value = d.default_string
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append(ConfigEntry(d.name, value, source, d.type, d.doc, synonyms=synonyms))
    return entries


# --- broker settings -----------------------------------------------------------------------


class BrokerKeyLike(Protocol):
    """What describe_broker_configs reads of a broker setting (broker.config.BrokerKey)."""

    default: Any
    doc: str
    type: ConfigType
    kafka_default: str | None
    synonyms: tuple[Synonym, ...]
    default_via_synonym: bool


def _type_of_broker_value(value: Any) -> ConfigType:
    if isinstance(value, bool):
        return ConfigType.BOOLEAN
    if isinstance(value, int):
        return ConfigType.LONG if abs(value) > INT_MAX else ConfigType.INT
    if isinstance(value, float):
        return ConfigType.DOUBLE
    if isinstance(value, (list, tuple)):
        return ConfigType.LIST
    return ConfigType.STRING


def describe_broker_configs(values: Mapping[str, Any], keys: Mapping[str, BrokerKeyLike], *,
                            names: Iterable[str] | None = None) -> list[ConfigEntry]:
    """The broker resource as DescribeConfigs reports it, sorted by name.

    `values` are the broker's settings, `keys` their definitions (broker.config.BROKER_KEYS:
    kafkalite's default is the reference for settings Kafka does not have; the doc line is
    reported). Every entry is read-only: kafkalite does not change broker settings at runtime."""
    wanted = None if names is None else set(names)
    out = []
    for name, (ctype, default, doc) in kafka_topic_default_settings().items():
        # Kafka's broker settings that only supply topic defaults, at Kafka's defaults
        if name in values or (wanted is not None and name not in wanted):
            continue
        defaults: list[SynonymEntry] = [] if default is None else [(name, default, ConfigSource.DEFAULT_CONFIG)]
        out.append(ConfigEntry(name, default, ConfigSource.DEFAULT_CONFIG, ctype, doc, read_only=True,
                               synonyms=defaults))
    for name in sorted(values):
        if wanted is not None and name not in wanted:
            continue
        value = values[name]
        info = keys.get(name)
        text = _broker_value_string(value)
        if info is not None:
            ctype = info.type
            reference = info.kafka_default
            if info.kafka_default is None and name not in ("node.id",):
                reference = _broker_value_string(info.default)
        else:
            ctype = _type_of_broker_value(value)
            reference = None
        synonyms: list[SynonymEntry] = []
        if text != reference:
            synonyms.append((name, text, ConfigSource.STATIC_BROKER_CONFIG))
        if reference is not None and not (info is not None and info.default_via_synonym):
            synonyms.append((name, reference, ConfigSource.DEFAULT_CONFIG))
        if info is not None:
            for syn in info.synonyms:
                if syn.kafka_default is not None:
                    synonyms.append((syn.name, syn.kafka_default, ConfigSource.DEFAULT_CONFIG))
        while synonyms and synonyms[0][0] != name:
            synonyms.pop(0)
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        sensitive = ctype == ConfigType.PASSWORD
        if sensitive:  # passwords, keys, SCRAM users: Kafka reports them as null
            text, synonyms = None, [(n, None, src) for n, _v, src in synonyms]
        out.append(ConfigEntry(name, text, source, ctype, info.doc if info is not None else None, read_only=True,
                               sensitive=sensitive, synonyms=synonyms))
    out.sort(key=lambda e: e.name)
    return out


def kafka_topic_default_settings() -> dict[str, tuple[ConfigType, str | None, str]]:
    """The broker settings Kafka derives topic defaults from (log.retention.hours, ...), with
    their type, Kafka's default and a line of documentation."""
    out = {}
    for d in TOPIC_CONFIG_DEFS:
        for syn in d.synonyms:
            ctype = ConfigType.INT if syn.scale != 1 else d.type
            out[syn.name] = (ctype, syn.kafka_default, f"The broker-wide default of the topic config {d.name}.")
    return out
