"""Broker configuration by Kafka's own key names, with test-friendly defaults.

`BrokerConfig` holds every setting in one dict keyed by Kafka's name (`num.partitions`,
`auto.create.topics.enable`, ...). Unknown keys are an error, never silently ignored.
Topic-level defaults come from the broker keys Kafka derives them from (`log.retention.ms`
-> `retention.ms`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ValueError(f"not a boolean: {v!r}")


def _fsync(v: Any) -> str:
    s = str(v).strip().lower()
    if s not in ("always", "interval", "never"):
        raise ValueError(f"fsync must be always, interval or never, not {v!r}")
    return s


# key -> (parser, default, what it is)
BROKER_KEYS: dict[str, tuple[Callable[[Any], Any], Any, str]] = {
    "node.id": (int, 1, "this broker's node id"),
    "cluster.id": (str, "kafkalite-cluster-000001", "cluster id reported in Metadata/DescribeCluster"),
    "num.partitions": (int, 1, "partitions of an auto-created topic"),
    "default.replication.factor": (int, 1, "accepted for compatibility; there is one replica"),
    "auto.create.topics.enable": (_bool, True, "create unknown topics on Metadata"),
    "delete.topic.enable": (_bool, True, "allow DeleteTopics"),
    "message.max.bytes": (int, 1048588, "largest record batch (topic max.message.bytes default)"),
    "socket.request.max.bytes": (int, 104857600, "largest request frame; larger closes the connection"),
    "log.segment.bytes": (int, 1 << 30, "segment.bytes default"),
    "log.roll.ms": (int, 7 * 24 * 3600 * 1000, "segment.ms default"),
    "log.retention.ms": (int, 7 * 24 * 3600 * 1000, "retention.ms default (-1 keeps forever)"),
    "log.retention.bytes": (int, -1, "retention.bytes default"),
    "log.index.interval.bytes": (int, 4096, "index.interval.bytes default"),
    "log.cleanup.policy": (str, "delete", "cleanup.policy default"),
    "log.message.timestamp.type": (str, "CreateTime", "message.timestamp.type default"),
    "log.retention.check.interval.ms": (int, 60_000, "how often retention and compaction run"),
    "log.flush.interval.ms": (int, 1000, "fsync period with fsync=interval"),
    "fsync": (_fsync, "interval", "always: fsync before acknowledging; interval; never"),
    "offsets.topic.num.partitions": (int, 1, "partitions of __consumer_offsets"),
    "offsets.retention.minutes": (int, 7 * 24 * 60, "committed offsets of empty groups expire after this"),
    "group.initial.rebalance.delay.ms": (int, 0, "delay before the first rebalance of a new group"),
    "group.min.session.timeout.ms": (int, 100, "smallest session timeout a member may ask for"),
    "group.max.session.timeout.ms": (int, 1_800_000, "largest session timeout a member may ask for"),
    "group.consumer.heartbeat.interval.ms": (int, 5000, "KIP-848 heartbeat interval"),
    "group.consumer.session.timeout.ms": (int, 45000, "KIP-848 session timeout"),
    "transaction.state.log.num.partitions": (int, 1, "partitions of __transaction_state"),
    "transaction.max.timeout.ms": (int, 900_000, "largest transaction.timeout.ms a producer may ask for"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (int, 10_000, "timeout scan period"),
    "transactional.id.expiration.ms": (int, 604_800_000, "idle transactional ids expire after this"),
    "producer.id.expiration.ms": (int, 86_400_000, "idle producer state expires after this"),
    "transaction.version": (int, 2, "finalized transaction.version feature level (KIP-890): 0, 1 or 2"),
}

# topic config -> broker key that supplies its default
TOPIC_DEFAULTS_FROM = {
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "cleanup.policy": "log.cleanup.policy",
    "message.timestamp.type": "log.message.timestamp.type",
    "max.message.bytes": "message.max.bytes",
}


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    @staticmethod
    def parse(text: str, default_name: str = "PLAINTEXT") -> "Listener":
        """`NAME://host:port`, `host:port` or `[::1]:port`."""
        name = default_name
        if "://" in text:
            name, text = text.split("://", 1)
        host, _, port = text.rpartition(":")
        host = host.strip("[]")
        if not port.isdigit():
            raise ValueError(f"listener {text!r} has no port")
        return Listener(name.upper(), host, int(port))

    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


class UnknownConfig(ValueError):
    pass


@dataclass
class BrokerConfig:
    data_dir: Path
    listeners: list[Listener]
    advertised_listeners: list[Listener] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        merged = {k: d for k, (_p, d, _w) in BROKER_KEYS.items()}
        for k, v in self.values.items():
            merged[k] = parse_value(k, v)
        self.values = merged

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


def parse_value(key: str, value: Any) -> Any:
    if key not in BROKER_KEYS:
        raise UnknownConfig(f"unknown broker config {key!r}")
    parser = BROKER_KEYS[key][0]
    try:
        return parser(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad value for {key}: {value!r} ({exc})") from None
