"""The interface every client adapter implements, and the record shape they exchange."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Msg:
    """A record as produced or as consumed (offset/partition are filled in on consume)."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None
    partition: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class ProduceResult:
    partition: int
    offset: int


class Unsupported(Exception):
    """The client has no way to do what the test asks (not a broker failure). It becomes a skip
    only when its message is a documented limit in CLIENT_LIMITS; any other is a test failure."""


# The documented client limits: the exact message an adapter raises Unsupported with -> the reason,
# naming what the client's API lacks. The one place a client limit turns a test into a skip.
CLIENT_LIMITS: dict[str, str] = {
    "java: Admin.alterConfigs was removed in kafka-clients 4.0":
        "kafka-clients 4.x Admin has incrementalAlterConfigs only (KIP-339); the legacy AlterConfigs is gone",
    "librdkafka: describe_topics_by_id":
        "confluent-kafka's AdminClient.describe_topics takes a TopicCollection of names; no TopicId lookup",
    "librdkafka: delete_topics_by_id":
        "confluent-kafka's AdminClient.delete_topics takes names only",
    "sarama: describe_topics_by_id":
        "sarama's ClusterAdmin.DescribeTopics takes names; its MetadataRequest has no topic ids",
    "sarama: delete_topics_by_id":
        "sarama's ClusterAdmin.DeleteTopic takes a name; its DeleteTopicsRequest has no topic ids",
    "kafka-python: a record with neither key nor value cannot be sent":
        "KafkaProducer.send asserts that key or value is set",
    "kafka-python: header values must be bytes, a null header value cannot be sent":
        "kafka-python's record builder encodes header values with len(), None is refused",
    "aiokafka: a record with neither key nor value cannot be sent":
        "AIOKafkaProducer.send raises ValueError when key and value are both None",
    "kafkajs: a header with a null value cannot be sent":
        "kafkajs's record encoder measures header values with Buffer.byteLength, which throws on null",
    "kafkajs: headers are a JS object, this header order cannot be sent (interleaved duplicate or integer-like keys)":
        "kafkajs takes headers as an object {key: value | [values]}: key order follows JS property order",
    "kcat cannot set record timestamps when producing":
        "kcat -P has no option for a record's timestamp",
    "kcat: unkeyed records on a multi-partition topic go to a random partition, and its delivery reports do not "
    "say which record was which":
        "kcat -P has no per-record partition and its delivery reports carry no record identity",
    "kcat takes header values as command-line text (-H name=value)":
        "kcat -H takes text; a header value that is not UTF-8 cannot be given",
    "kcat consumes one partition or all of them":
        "kcat -C takes one -p or none",
    "kcat starts every partition at the same offset":
        "kcat -C takes one -o for every partition",
    "kcat cannot send an empty key with a null value (-Z makes both null)":
        "kcat -Z turns every empty key or value into null",
    "kcat skips an input record that has neither key nor value bytes":
        "kcat -P drops an empty input line",
}


def documented_limit(exc: Unsupported) -> str | None:
    """The documented reason for this Unsupported, or None when it is not a documented limit."""
    return CLIENT_LIMITS.get(str(exc))


class ShortConsume(TimeoutError):
    """A consume that got fewer records than asked within its timeout: one failure for every adapter."""


def check_consumed(client: str, topic: str, partitions: list[int], count: int, timeout_s: float,
                   got: list["Msg"]) -> list["Msg"]:
    if len(got) < count:
        raise ShortConsume(f"{client}: {len(got)} of {count} records from {topic} {list(partitions)} "
                           f"within {timeout_s}s")
    return got


@dataclass
class Client:
    """Base adapter. Subclasses implement what their client can do; the rest raises Unsupported."""

    bootstrap: str
    name: str = field(default="base", init=False)

    def __init_subclass__(cls, **kwargs):
        # every adapter's consume fails the same way when it comes back short (ShortConsume)
        super().__init_subclass__(**kwargs)
        inner = cls.__dict__.get("consume")
        if inner is None or getattr(inner, "checks_count", False):
            return

        @functools.wraps(inner)
        def consume(self, topic, partitions, count, *args, **kw):
            got = inner(self, topic, partitions, count, *args, **kw)
            return check_consumed(self.name, topic, partitions, count, kw.get("timeout_s", 30.0), got)

        consume.checks_count = True
        cls.consume = consume

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        raise Unsupported(f"{self.name}: create_topic")

    def produce(
        self,
        topic: str,
        msgs: list[Msg],
        *,
        partition: int | None = None,
        compression: str = "none",
        idempotent: bool = False,
        acks: str = "all",
    ) -> list[ProduceResult]:
        """Produce in order and wait for every acknowledgement; returns one result per message."""
        raise Unsupported(f"{self.name}: produce")

    def consume(
        self,
        topic: str,
        partitions: list[int],
        count: int,
        *,
        start: str = "earliest",
        isolation: str = "read_uncommitted",
        timeout_s: float = 30.0,
    ) -> list[Msg]:
        """Assign the partitions (no group), read `count` records from `start`, in offset order per
        partition; fewer within `timeout_s` raises ShortConsume."""
        raise Unsupported(f"{self.name}: consume")


def refuse_unusable_produce_options(client: str, compression: str, idempotent: bool, acks: str, *,
                                    compressions, codec_module=None) -> None:
    """Raise Unsupported for produce options the client cannot honour: an unknown codec, a codec
    whose library is missing (``codec_module`` has kafka-python's ``has_gzip()``... checks), or
    idempotence without acks=all."""
    if compression not in compressions:
        raise Unsupported(f"{client}: compression {compression}")
    check = getattr(codec_module, f"has_{compression}", None) if codec_module is not None else None
    if check is not None and not check():
        raise Unsupported(f"{client}: no {compression} codec library installed")
    if idempotent and str(acks) not in ("all", "-1"):
        raise Unsupported(f"{client}: an idempotent producer needs acks=all")


def driver_consume_start(start, isolation: str):
    """The `start` argument of a consume as a JSON driver takes it ("earliest", "latest", an offset,
    or {partition: offset}), after checking the isolation level is one Kafka names."""
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ValueError(f"isolation {isolation!r}")
    if isinstance(start, dict):
        return {str(p): int(o) for p, o in start.items()}
    if start in ("earliest", "latest"):
        return start
    return int(start)
