"""One admin interface over the clients' admin APIs (Java Admin, confluent-kafka AdminClient), so
admin tests are written once. Errors the broker returns are raised as BrokerError with Kafka's
error name (TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import Unsupported


class BrokerError(Exception):
    """An admin call failed with Kafka error `code` (its name, as in Kafka's Errors enum)."""

    def __init__(self, code: str, message: str = ""):
        self.code = code
        super().__init__(f"{code}: {message}")


@dataclass(frozen=True)
class ConfigValue:
    value: str | None
    source: str  # Kafka's ConfigSource name: DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, ...
    is_default: bool
    read_only: bool


class Admin:
    """Subclasses implement these with their client's admin API; the rest raises Unsupported."""

    name = "base"

    def create_topic(self, name: str, partitions: int | None = 1, configs: dict[str, str] | None = None,
                     validate_only: bool = False, replication_factor: int | None = None) -> dict[str, Any]:
        """CreateTopics (None: the broker's default); returns what the broker answered:
        {"partitions", "topic_id"?}."""
        raise Unsupported(f"{self.name}: create_topic")

    def delete_topics(self, names: list[str]) -> None:
        raise Unsupported(f"{self.name}: delete_topics")

    def delete_topics_by_id(self, topic_ids: list[str]) -> None:
        raise Unsupported(f"{self.name}: delete_topics_by_id")

    def list_topics(self) -> set[str]:
        raise Unsupported(f"{self.name}: list_topics")

    def describe_topics(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """name -> {"topic_id": str, "partitions": [partition ids], "leaders": [node ids]}."""
        raise Unsupported(f"{self.name}: describe_topics")

    def describe_topics_by_id(self, topic_ids: list[str]) -> dict[str, dict[str, Any]]:
        raise Unsupported(f"{self.name}: describe_topics_by_id")

    def describe_cluster(self) -> dict[str, Any]:
        """{"cluster_id", "controller", "nodes": [{"id", "host", "port"}]}."""
        raise Unsupported(f"{self.name}: describe_cluster")

    def describe_configs(self, kind: str, name: str) -> dict[str, ConfigValue]:
        """kind is "topic" or "broker"."""
        raise Unsupported(f"{self.name}: describe_configs")

    def alter_configs(self, kind: str, name: str, configs: dict[str, str]) -> None:
        """The legacy AlterConfigs: replaces every dynamic config of the resource."""
        raise Unsupported(f"{self.name}: alter_configs")

    def incremental_alter_configs(self, kind: str, name: str, ops: list[tuple[str, str, str | None]],
                                  validate_only: bool = False) -> None:
        """ops: (op, config name, value) with op SET, DELETE, APPEND or SUBTRACT."""
        raise Unsupported(f"{self.name}: incremental_alter_configs")

    def create_partitions(self, topic: str, total: int, validate_only: bool = False) -> None:
        raise Unsupported(f"{self.name}: create_partitions")

    def list_offsets(self, topic: str, partitions: list[int], spec: str | int,
                     isolation: str = "read_uncommitted") -> dict[int, tuple[int, int]]:
        """spec: "earliest", "latest", "max_timestamp" or a timestamp (ms). -> {p: (offset, timestamp)}."""
        raise Unsupported(f"{self.name}: list_offsets")

    def delete_records(self, topic: str, before: dict[int, int]) -> dict[int, int]:
        """Deletes records before the offsets; returns the new low watermarks."""
        raise Unsupported(f"{self.name}: delete_records")

    # ACLs are tuples (resource type, name, pattern type, principal, host, operation, permission)
    # with Kafka's enum names, e.g. ("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW");
    # a filter has the same shape with None for any name, principal or host and ANY/MATCH codes.

    def create_acls(self, acls: list[tuple]) -> None:
        raise Unsupported(f"{self.name}: create_acls")

    def describe_acls(self, flt: tuple) -> set[tuple]:
        raise Unsupported(f"{self.name}: describe_acls")

    def delete_acls(self, filters: list[tuple]) -> set[tuple]:
        """Deletes what the filters match; returns the ACLs deleted."""
        raise Unsupported(f"{self.name}: delete_acls")
