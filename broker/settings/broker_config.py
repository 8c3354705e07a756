"""BrokerConfig: the settings one broker runs with, every key parsed, defaults filled in.

Rules:
- `values` holds every broker key (settings.broker_keys) by Kafka's name, parsed; keys given as
  `listener.name.<listener>.<key>` go to `listener_values` instead.
- With --kafka-version, transaction.version follows that release unless set, and a set value
  must be one the release supports.
- Where each value came from (file, env, cli) is kept for the startup log; the layering itself
  is settings.layering's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .broker_keys import BROKER_KEYS, TOPIC_DEFAULTS_FROM, UnknownConfig, parse_value
from .listeners import Listener, SecurityConfigError, SelfSigned, split_listener_key

@dataclass
class BrokerConfig:
    data_dir: Path
    listeners: list[Listener]
    advertised_listeners: list[Listener] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    # where each non-default value came from ("file", "env", "cli"), for the startup log
    origins: dict[str, str] = field(default_factory=dict)
    # the Kafka release to imitate (--kafka-version; broker.kafka_versions), None: the newest
    kafka_version: str | None = None
    # the throwaway CA and certificate of --tls-self-signed (broker.security makes them)
    self_signed: SelfSigned | None = None
    # `listener.name.<listener>.<key>` settings: listener name (upper case) -> key -> text
    listener_values: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        merged = {k: key.default for k, key in BROKER_KEYS.items()}
        for k, v in self.values.items():
            try:
                prefixed = split_listener_key(k)
            except SecurityConfigError as exc:
                raise UnknownConfig(str(exc)) from None
            if prefixed is not None:
                self.listener_values.setdefault(prefixed[0], {})[prefixed[1]] = str(v)
                continue
            merged[k] = parse_value(k, v)
        if self.kafka_version is not None:
            self._imitate(merged)
        # Kafka's KafkaConfig.validateValues: a bound below one largest frame could never grant it
        queued, largest = merged["queued.max.request.bytes"], merged["socket.request.max.bytes"]
        if 0 < queued < largest:
            raise UnknownConfig(f"queued.max.request.bytes must be larger or equal to socket.request.max.bytes "
                                f"({queued} < {largest})")
        self.values = merged

    def _imitate(self, merged: dict[str, Any]) -> None:
        """transaction.version follows the release unless set; set, it must be one it supports."""
        from ..kafka_versions import release

        try:
            rel = release(self.kafka_version or "")
        except ValueError as exc:
            raise UnknownConfig(str(exc)) from None
        top = rel.supported_features.get("transaction.version", (0, 0))[1]
        if "transaction.version" not in self.values:
            merged["transaction.version"] = rel.feature("transaction.version")
        elif merged["transaction.version"] > top:
            raise UnknownConfig(f"transaction.version={merged['transaction.version']} is above what Kafka "
                                f"{rel.name} supports ({top})")

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def advertised_for(self, listener_name: str) -> Listener:
        """The address a client connected to `listener_name` is told to use."""
        for adv in self.advertised_listeners:
            if adv.name == listener_name:
                return adv
        for lis in self.listeners:
            if lis.name == listener_name:
                return lis
        return self.listeners[0]

    def topic_defaults(self) -> dict[str, Any]:
        return {topic_key: self.values[broker_key] for topic_key, broker_key in TOPIC_DEFAULTS_FROM.items()}
