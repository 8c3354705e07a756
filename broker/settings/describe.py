"""How settings are reported: DescribeConfigs (topics and the broker) and CreateTopics v5+.

Rules:
- A topic config's entry carries the effective value, its source and the synonym chain, as
  Kafka's ConfigHelper builds it: TOPIC_CONFIG for an override, then for each broker synonym its
  dynamic value of the answering broker (DYNAMIC_BROKER_CONFIG), the dynamic cluster default
  (DYNAMIC_DEFAULT_BROKER_CONFIG), the broker setting as started when it was set
  (STATIC_BROKER_CONFIG) and Kafka's default (DEFAULT_CONFIG); the source is the first's.
- A broker setting counts as "set" (STATIC_BROKER_CONFIG) when its value differs from Kafka's
  own default, since that is what a server.properties line would produce. Every broker entry
  is read-only: kafkalite does not change broker settings at runtime. Passwords are null.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol

from .topic_keys import TOPIC_CONFIG_DEFS, ConfigDef, Synonym
from .values import INT_MAX, ConfigError, ConfigSource, ConfigType, parse_value, to_string

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


_DYNAMIC = (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)


@dataclass(frozen=True)
class DynamicLayers:
    """The dynamic broker configs a topic config's synonyms are read from (broker.dynamic_configs),
    as stored text: the answering broker's own set and the cluster default."""

    per_broker: Mapping[str, str] = field(default_factory=dict)
    cluster_default: Mapping[str, str] = field(default_factory=dict)


def _broker_synonyms(d: ConfigDef, static_values: Mapping[str, Any], dynamic: DynamicLayers) -> list[SynonymEntry]:
    """Kafka's ConfigHelper.configSynonyms for a topic config's broker synonyms."""
    found: list[tuple[str, str | None, ConfigSource]] = []
    for source, values in ((ConfigSource.DYNAMIC_BROKER_CONFIG, dynamic.per_broker),
                           (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, dynamic.cluster_default)):
        found.extend((syn.name, values[syn.name], source) for syn in d.synonyms if syn.name in values)
    primary = d.synonyms[0]
    if primary.name in static_values:
        text = _broker_value_string(static_values[primary.name])
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
                           static_values: Mapping[str, Any] | None = None, dynamic: DynamicLayers = DynamicLayers(),
                           names: Iterable[str] | None = None) -> list[ConfigEntry]:
    """Every topic config (or those in `names`) with value, source and synonyms, sorted by name:
    `broker_values` the broker's settings in effect (dynamic ones applied), `static_values` as it
    started (default: the same), `dynamic` the dynamic sets the synonyms name."""
    static = broker_values if static_values is None else static_values
    wanted = None if names is None else set(names)
    entries = []
    for d in sorted(TOPIC_CONFIG_DEFS, key=lambda d: d.name):
        if wanted is not None and d.name not in wanted:
            continue
        if d.internal and d.name not in overrides:
            continue
        synonyms = _broker_synonyms(d, static, dynamic) if d.synonyms else []
        dynamic_first = bool(synonyms) and synonyms[0][2] in _DYNAMIC and synonyms[0][0] == d.synonyms[0].name
        value: str | None
        if d.name in overrides:
            value = overrides[d.name]
            synonyms.insert(0, (d.name, value, ConfigSource.TOPIC_CONFIG))
        elif dynamic_first or (d.synonyms and d.synonyms[0].name in broker_values):
            # the dynamic value (in effect, as far as a client can tell, even for a Kafka key
            # kafkalite has no setting for), else the setting in effect
            value = synonyms[0][1] if dynamic_first else _broker_value_string(broker_values[d.synonyms[0].name])
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
    """What describe_broker_configs reads of a broker setting (settings.broker_keys.BrokerKey)."""

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

    `values` are the broker's settings, `keys` their definitions (settings.broker_keys.BROKER_KEYS:
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
