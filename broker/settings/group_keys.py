"""Group configs: the settings Kafka keeps per group id (config resource type GROUP, KIP-848 /
KIP-932 / KIP-1071), set with IncrementalAlterConfigs and read with DescribeConfigs.

Rules:
- The keys are Kafka 4.4's GroupConfig (its internal ones left out): consumer.*, share.*,
  streams.* and the share dead-letter-queue keys, each with its type, default and the broker
  setting that supplies the default when the group sets none (GroupConfig.ALL_GROUP_CONFIG_SYNONYMS).
- `validate_group_configs` is GroupConfig.validate, on the group's whole new set and with its
  messages (INVALID_CONFIG, `GroupConfigError`): unknown names ("Unknown group config name: k"),
  values that do not parse or break the key's ConfigDef validator, then the bounds the broker
  settings put on them (group.consumer.min/max.session.timeout.ms and the like: "k must be in the
  range a to b inclusive."), and a session timeout not above the heartbeat interval.
- What takes effect: the share keys (`share.auto.offset.reset`, `share.isolation.level`,
  `share.record.lock.duration.ms`, `share.delivery.count.limit`) change what the share coordinator
  does; the consumer and streams keys are kept and described only (their groups use the broker
  settings). broker.group_configs keeps the values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .values import ConfigError, ConfigType, parse_value

# a broker setting's value by name (the broker's, else Kafka's default: GroupConfigs.broker_value)
BrokerValue = Callable[[str], Any]


@dataclass(frozen=True)
class GroupKey:
    type_name: str  # settings.values.ConfigType member name
    default: str | None
    broker_synonym: str | None  # the broker setting that supplies the default
    doc: str
    at_least: int | None = None  # the ConfigDef validator's lower bound
    choices: tuple[str, ...] = ()  # the ConfigDef validator's values
    # GroupConfig.validateValues: the broker settings bounding the value (min, max)
    bounds: tuple[str | None, str | None] = (None, None)


def _ms(prefix: str, what: str, default: str, at_least: int, doc: str) -> GroupKey:
    return GroupKey("INT", default, f"group.{prefix}.{what}", doc, at_least,
                    bounds=(f"group.{prefix}.min.{what}", f"group.{prefix}.max.{what}"))


GROUP_KEYS: dict[str, GroupKey] = {
    "consumer.session.timeout.ms": _ms("consumer", "session.timeout.ms", "45000", 1,
                                       "KIP-848 member session timeout"),
    "consumer.heartbeat.interval.ms": _ms("consumer", "heartbeat.interval.ms", "5000", 1,
                                          "KIP-848 heartbeat interval"),
    "consumer.assignment.interval.ms": _ms("consumer", "assignment.interval.ms", "1000", 0,
                                           "shortest time between two assignments of the group"),
    "errors.deadletterqueue.copy.record.enable": GroupKey("BOOLEAN", "false", None,
                                                          "whether the share group's DLQ gets the original record"),
    "errors.deadletterqueue.topic.name": GroupKey("STRING", "", None, "the share group's dead-letter queue topic"),
    "share.assignment.interval.ms": _ms("share", "assignment.interval.ms", "1000", 0,
                                        "shortest time between two assignments of the group"),
    "share.auto.offset.reset": GroupKey("STRING", "latest", None,
                                        "where a share group starts consuming a partition with no state",
                                        choices=("latest", "earliest")),
    "share.delivery.count.limit": GroupKey("INT", "5", "group.share.delivery.count.limit",
                                           "deliveries of a record before it is archived", 2,
                                           bounds=("group.share.min.delivery.count.limit",
                                                   "group.share.max.delivery.count.limit")),
    "share.heartbeat.interval.ms": _ms("share", "heartbeat.interval.ms", "5000", 1, "share group heartbeat interval"),
    "share.isolation.level": GroupKey("STRING", "read_uncommitted", None, "which records a share group reads",
                                      choices=("read_committed", "read_uncommitted")),
    "share.partition.max.record.locks": GroupKey("INT", "2000", "group.share.partition.max.record.locks",
                                                 "acquired records per share-partition at most", 100,
                                                 bounds=("group.share.min.partition.max.record.locks",
                                                         "group.share.max.partition.max.record.locks")),
    "share.record.lock.duration.ms": _ms("share", "record.lock.duration.ms", "30000", 1000,
                                         "acquisition lock duration of the group's records"),
    "share.renew.acknowledge.enable": GroupKey("BOOLEAN", "true", None, "whether RENEW acknowledgements are allowed"),
    "share.session.timeout.ms": _ms("share", "session.timeout.ms", "45000", 1, "share group member session timeout"),
    "streams.assignment.interval.ms": _ms("streams", "assignment.interval.ms", "1000", 0,
                                          "shortest time between two assignments of the group"),
    "streams.assignor.name": GroupKey("STRING", None, "group.streams.assignors", "the group's task assignor"),
    "streams.heartbeat.interval.ms": _ms("streams", "heartbeat.interval.ms", "5000", 1,
                                         "streams group heartbeat interval"),
    "streams.initial.rebalance.delay.ms": GroupKey("INT", "3000", "group.streams.initial.rebalance.delay.ms",
                                                   "delay of a new streams group's first assignment", 0),
    "streams.num.standby.replicas": GroupKey("INT", "0", "group.streams.num.standby.replicas",
                                             "standby replicas of each stateful task", 0,
                                             bounds=(None, "group.streams.max.standby.replicas")),
    "streams.rack.aware.assignment.tags": GroupKey("LIST", "", "group.streams.rack.aware.assignment.tags",
                                                   "client tags the streams assignor spreads standbys over"),
    "streams.session.timeout.ms": _ms("streams", "session.timeout.ms", "45000", 1, "streams group member session timeout"),
}
# Kafka 4.4's defaults of the broker settings above that kafkalite has no setting for
KAFKA_BROKER_DEFAULTS: dict[str, Any] = {
    "group.consumer.assignment.interval.ms": 1000, "group.consumer.max.assignment.interval.ms": 15000,
    "group.consumer.min.assignment.interval.ms": 0, "group.consumer.max.heartbeat.interval.ms": 15000,
    "group.consumer.max.session.timeout.ms": 60000,
    "group.share.assignment.interval.ms": 1000, "group.share.max.assignment.interval.ms": 15000,
    "group.share.min.assignment.interval.ms": 0, "group.share.max.delivery.count.limit": 10,
    "group.share.min.delivery.count.limit": 2, "group.share.max.heartbeat.interval.ms": 15000,
    "group.share.min.heartbeat.interval.ms": 5000, "group.share.max.partition.max.record.locks": 4000,
    "group.share.min.partition.max.record.locks": 100, "group.share.max.record.lock.duration.ms": 60000,
    "group.share.min.record.lock.duration.ms": 15000, "group.share.max.session.timeout.ms": 60000,
    "group.share.min.session.timeout.ms": 45000,
    "group.streams.assignment.interval.ms": 1000, "group.streams.max.assignment.interval.ms": 15000,
    "group.streams.min.assignment.interval.ms": 0, "group.streams.max.heartbeat.interval.ms": 15000,
    "group.streams.max.session.timeout.ms": 60000, "group.streams.max.standby.replicas": 2,
    "group.streams.assignors": "sticky", "group.streams.rack.aware.assignment.tags": "",
}
# GroupConfig.validate: each session timeout must exceed its heartbeat interval
SESSION_HEARTBEAT = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                     ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
                     ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))


class GroupConfigError(ValueError):
    pass


def group_key_default(key: str, broker_value: BrokerValue) -> str | None:
    """The value of a key a group does not set: its broker setting's, else Kafka's default."""
    spec = GROUP_KEYS[key]
    value = None if spec.broker_synonym is None else broker_value(spec.broker_synonym)
    if value is None:
        return spec.default
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return str(value).split(",")[0] if key == "streams.assignor.name" else str(value)


def validate_group_configs(props: Mapping[str, str], changed: list[str], broker_value: BrokerValue) -> None:
    """GroupConfig.validate of a group's complete set."""
    for key in changed:
        if key not in GROUP_KEYS:
            raise GroupConfigError(f"Unknown group config name: {key}")
    parsed: dict[str, Any] = {}
    for key, text in props.items():
        spec = GROUP_KEYS[key]
        try:
            value = parse_value(key, ConfigType[spec.type_name], text)
        except ConfigError as exc:
            raise GroupConfigError(str(exc)) from None
        if spec.at_least is not None and value < spec.at_least:
            raise GroupConfigError(f"Invalid value {value} for configuration {key}: Value must be at least "
                                   f"{spec.at_least}")
        if spec.choices and value not in spec.choices:
            raise GroupConfigError(f"Invalid value {value} for configuration {key}: String must be one of: "
                                   + ", ".join(spec.choices))
        if key == "errors.deadletterqueue.topic.name" and value.startswith("__"):
            raise GroupConfigError("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
        parsed[key] = value
    for key, spec in GROUP_KEYS.items():
        if key not in parsed or spec.bounds == (None, None):
            continue
        lo_key, hi_key = spec.bounds
        lo = None if lo_key is None else int(broker_value(lo_key))
        hi = None if hi_key is None else int(broker_value(hi_key))
        value = parsed[key]
        if lo is not None and hi is not None and not lo <= value <= hi:
            raise GroupConfigError(f"{key} must be in the range {lo} to {hi} inclusive.")
        if lo is None and hi is not None and value > hi:
            raise GroupConfigError(f"{key} must be less than or equal to {hi}")
    for session_key, heartbeat_key in SESSION_HEARTBEAT:
        if session_key in parsed or heartbeat_key in parsed:
            session = parsed.get(session_key, int(group_key_default(session_key, broker_value) or 0))
            heartbeat = parsed.get(heartbeat_key, int(group_key_default(heartbeat_key, broker_value) or 0))
            if session <= heartbeat:
                raise GroupConfigError(f"{session_key} must be greater than {heartbeat_key}")
