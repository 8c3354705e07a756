"""Dynamic broker configs (KIP-226): what AlterConfigs and IncrementalAlterConfigs set on a BROKER
resource, per broker (the resource named by a node id) or as the cluster default (the resource
named "", `kafka-configs.sh --entity-default`), and how DescribeConfigs then reports them.

Which keys may change at run time is Kafka 4.4's list (broker.dynamic_config_keys, taken from
DynamicBrokerConfig): a change is validated as Kafka's DynamicBrokerConfig.validateConfigs does,
in its order and with its messages (INVALID_REQUEST on the wire):
- a key Kafka knows but does not change at run time: "Cannot update these configs dynamically: [k]";
- a keystore or truststore setting without a listener prefix ("listener.name.L.ssl.keystore...");
- a value that does not parse as the key's type (ConfigDef's message);
- at the cluster default, a key that only a single broker can take (listeners, SASL and SSL
  settings): "Cannot update these configs at default cluster level, broker id must be specified".
Keys Kafka does not know are kept, as Kafka keeps them, and never described.

Values are applied where they mean something to kafkalite: the broker settings it has (topic
defaults such as log.retention.ms and log.segment.bytes, message.max.bytes, min.insync.replicas,
producer.id.expiration.ms, log.flush.interval.ms) take the per-broker value of the first node, else
the cluster default, else the static setting, at once and for every node, and every existing topic
takes the changed defaults where it has no value of its own (Kafka's DynamicLogConfig reconfigures
every log: log.cleaner.max.compaction.lag.ms set at run time makes an existing compacted topic due
for cleaning), at start too. Listener, SASL and SSL
settings, thread counts, the cleaner's (but log.cleaner.backoff.ms, which the next pass of the log
cleaner reads) and the replication throttles are stored and described only: kafkalite has one process, no replication traffic and no log cleaner threads to resize.
Everything persists in `__cluster_metadata/broker_configs.json` (Kafka's metadata log) and is
applied again at start. All or nothing: a change is saved as the sets will be before memory
changes or anything is applied; a save that fails (a full disk) raises OSError with both as they
were (broker.all_or_nothing).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Callable, Mapping

from kafkalite.storage.files import write_atomic

from .dynamic_config_keys import KAFKA_DYNAMIC_BROKER_CONFIGS, KAFKA_STATIC_BROKER_CONFIGS
from .java_text import set_text
from .settings.broker_config import BrokerConfig
from .settings.broker_keys import BROKER_KEYS
from .settings.broker_keys import parse_value as parse_setting
from .settings.describe import ConfigEntry, DynamicLayers, describe_topic_configs
from .settings.values import ConfigError, ConfigSource, ConfigType, parse_value

log = logging.getLogger("kafkalite.dynamic_configs")

# DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS: per listener only
SECURITY_CONFIGS = frozenset({
    "ssl.key.password", "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.keystore.location",
    "ssl.keystore.password", "ssl.keystore.type", "ssl.truststore.certificates", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.type"})
LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)")
# kafkalite settings a dynamic value changes at once (the rest are read at start only)
APPLIED = frozenset(k for k, (_t, _d, _listed, per_broker) in KAFKA_DYNAMIC_BROKER_CONFIGS.items()
                    if k in BROKER_KEYS and not per_broker and k not in SECURITY_CONFIGS)


class DynamicConfigError(Exception):
    """A change Kafka refuses; `invalid_config` marks INVALID_CONFIG, else INVALID_REQUEST."""

    def __init__(self, message: str, *, invalid_config: bool = False):
        super().__init__(message)
        self.message = message
        self.invalid_config = invalid_config


def is_list_config(key: str) -> bool:
    spec = KAFKA_DYNAMIC_BROKER_CONFIGS.get(key)
    return spec is not None and spec[0] == "LIST"


def kafka_default(key: str) -> str | None:
    """Kafka's KafkaConfig default of a dynamic key, as text: what IncrementalAlterConfigs' APPEND and
    SUBTRACT start from when the resource has no value for it (the controller's
    ConfigurationControlManager.getParts asks KafkaConfigSchema.getDefault, never the static
    setting or the cluster default)."""
    spec = KAFKA_DYNAMIC_BROKER_CONFIGS.get(key)
    return None if spec is None else spec[1]


def validate(props: Mapping[str, str], per_broker: bool) -> None:
    """DynamicBrokerConfig.validateConfigs for the complete new set of one resource."""
    static = [k for k in props if k in KAFKA_STATIC_BROKER_CONFIGS]
    if static:
        raise DynamicConfigError(f"Cannot update these configs dynamically: {set_text(static)}")
    security = [k for k in props if k in SECURITY_CONFIGS]
    if security:
        raise DynamicConfigError("These security configs can be dynamically updated only per-listener using the "
                                 f"listener prefix: {set_text(security)}")
    for key, value in props.items():
        match = LISTENER_CONFIG.fullmatch(key)
        spec = KAFKA_DYNAMIC_BROKER_CONFIGS.get(match.group(1) if match else key)
        if spec is not None:
            try:
                parse_value(key, ConfigType[spec[0]], value)
            except ConfigError as exc:
                raise DynamicConfigError(str(exc)) from None
    if not per_broker:
        per = [k for k in props if (k in KAFKA_DYNAMIC_BROKER_CONFIGS and KAFKA_DYNAMIC_BROKER_CONFIGS[k][3])
               or LISTENER_CONFIG.fullmatch(k)]
        if per:
            raise DynamicConfigError("Cannot update these configs at default cluster level, broker id must be "
                                     f"specified: {set_text(per)}")


class DynamicBrokerConfigs:
    def __init__(self, meta_dir: Path, config: BrokerConfig, first_node: int,
                 applied: Callable[[], None] = lambda: None):
        self.path = meta_dir / "broker_configs.json"
        self.config = config
        self.first_node = first_node
        # called once values are applied: the topics take the changed defaults
        self.applied = applied
        # the settings as started (what a deleted dynamic value falls back to)
        self.static_values: dict[str, Any] = dict(config.values)
        self.defaults: dict[str, str] = {}
        self.per_broker: dict[int, dict[str, str]] = {}
        if self.path.exists():
            saved = json.loads(self.path.read_text())
            self.defaults = dict(saved.get("default", {}))
            self.per_broker = {int(n): dict(v) for n, v in saved.get("brokers", {}).items()}
            self._apply()

    def current(self, node: int | None) -> dict[str, str]:
        """The stored set of one resource: a node's (node id) or the cluster default (None)."""
        return dict(self.defaults if node is None else self.per_broker.get(node, {}))

    def replace(self, node: int | None, props: dict[str, str], *, validate_only: bool) -> None:
        """Validate `props` as the resource's complete new set and store it."""
        validate(props, node is not None)
        if validate_only:
            return
        defaults, per_broker = self.defaults, dict(self.per_broker)
        if node is None:
            defaults = dict(props)
        elif props:
            per_broker[node] = dict(props)
        else:
            per_broker.pop(node, None)
        self._write(defaults, per_broker)
        self.defaults, self.per_broker = defaults, per_broker
        self._apply()
        log.info("dynamic broker configs of %s now %s", "the cluster default" if node is None else f"broker {node}",
                 {k: v for k, v in props.items() if not _sensitive(k)})

    def _apply(self) -> None:
        mine = self.per_broker.get(self.first_node, {})
        for key in APPLIED:
            text = mine.get(key, self.defaults.get(key))
            try:
                self.config.values[key] = self.static_values[key] if text is None else parse_setting(key, text)
            except ValueError as exc:  # a value Kafka's type allows but kafkalite's setting does not
                log.warning("dynamic %s=%s is stored but not applied: %s", key, text, exc)
        self.applied()

    def _write(self, defaults: dict[str, str], per_broker: dict[int, dict[str, str]]) -> None:
        """Save the sets as they will be, before memory changes (a failure raises OSError)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"default": defaults, "brokers": {str(n): v for n, v in per_broker.items()}}
        write_atomic(self.path, json.dumps(data, sort_keys=True).encode(), fsync=True)

    # --- DescribeConfigs ------------------------------------------------------------------

    def describe_topic(self, overrides: Mapping[str, str], names: list[str] | None) -> list[ConfigEntry]:
        """A topic's configs (DescribeConfigs, CreateTopics v5+): the values in effect, with the
        dynamic broker configs as the sources of those that fall back to them. The dynamic set
        of the first node is the one in effect (`_apply`), so it is the one named."""
        return describe_topic_configs(overrides, self.config.values, static_values=self.static_values,
                                      dynamic=DynamicLayers(self.per_broker.get(self.first_node, {}), self.defaults),
                                      names=names)

    def describe_default(self, names: list[str] | None) -> list[ConfigEntry]:
        """The cluster-default resource: the dynamic defaults that are set, of keys Kafka knows."""
        out = []
        for key, value in sorted(self.defaults.items()):
            spec = KAFKA_DYNAMIC_BROKER_CONFIGS.get(key)
            if spec is None or (names is not None and key not in names):
                continue
            sensitive = spec[0] == "PASSWORD"
            shown = None if sensitive else value
            out.append(ConfigEntry(key, shown, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, ConfigType[spec[0]], None,
                                   read_only=False, sensitive=sensitive,
                                   synonyms=[(key, shown, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]))
        return out

    def overlay(self, node: int, entries: list[ConfigEntry], names: list[str] | None) -> list[ConfigEntry]:
        """A broker's entries (described from its static settings) with Kafka's dynamic keys
        writable, their dynamic values and sources first in the synonym chain, and the dynamic
        keys kafkalite has no setting for listed at Kafka's defaults."""
        by_name = {e.name: e for e in entries}
        mine = self.per_broker.get(node, {})
        for key, (ctype, default, listed, _per) in KAFKA_DYNAMIC_BROKER_CONFIGS.items():
            if names is not None and key not in names:
                continue
            entry = by_name.get(key)
            dynamic = [(key, mine[key], ConfigSource.DYNAMIC_BROKER_CONFIG)] if key in mine else []
            if key in self.defaults:
                dynamic.append((key, self.defaults[key], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
            if entry is None:
                if not listed and not dynamic:
                    continue
                text = None if ctype == "PASSWORD" else default  # the table holds Kafka's printed defaults
                base = [] if default is None or not listed else [(key, text, ConfigSource.DEFAULT_CONFIG)]
                entry = ConfigEntry(key, text, ConfigSource.DEFAULT_CONFIG, ConfigType[ctype], None, synonyms=base)
                by_name[key] = entry
            entry.read_only = False
            if dynamic:
                sensitive = entry.sensitive or ctype == "PASSWORD"
                chain = [(n, None if sensitive else v, s) for n, v, s in dynamic] + list(entry.synonyms)
                entry.value, entry.source, entry.synonyms = chain[0][1], dynamic[0][2], chain
        return sorted(by_name.values(), key=lambda e: e.name)


def _sensitive(key: str) -> bool:
    match = LISTENER_CONFIG.fullmatch(key)
    spec = KAFKA_DYNAMIC_BROKER_CONFIGS.get(match.group(1) if match else key)
    return spec is not None and spec[0] == "PASSWORD" or "password" in key or "jaas" in key
