"""librdkafka through confluent-kafka, in-process."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (OFFSET_BEGINNING, OFFSET_END, Consumer, IsolationLevel, KafkaError, KafkaException,
                             Producer, TopicCollection, TopicPartition)
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewPartitions, NewTopic, OffsetSpec, ResourceType)

from . import start_offset
from .admin import Admin, BrokerError, ConfigValue
from .base import Client, Msg, ProduceResult


class DeliveryError(Exception):
    """A record was not acknowledged; `error` is the confluent_kafka.KafkaError."""

    def __init__(self, error: KafkaError, index: int):
        self.error = error
        self.index = index
        self.code = kafka_error_name(error)  # Kafka's error name, as JavaError.code
        super().__init__(f"record {index}: {error.name()} ({error.code()}): {error.str()}")


@dataclass
class LibrdkafkaClient(Client):
    """confluent-kafka (librdkafka). `config` adds properties to every producer, consumer and admin."""

    config: dict[str, Any] = field(default_factory=dict)
    name: str = field(default="librdkafka", init=False)
    _admin: AdminClient | None = field(default=None, init=False, repr=False)

    def _leaders_serve(self, topic: str, partitions: int) -> bool:
        """ListOffsets (latest) answers without error for every partition of `topic`."""
        fs = self.admin_client().list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)},
                                              request_timeout=10)
        try:
            for f in fs.values():
                f.result(timeout=15)
        except KafkaException:
            return False
        return True

    def _conf(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, "broker.address.family": "v4", "log_level": 5,
                **self.config, **extra}

    def admin_client(self) -> AdminClient:
        """This adapter's AdminClient (one per adapter; it must outlive the futures it returns)."""
        if self._admin is None:
            self._admin = AdminClient(self._conf())
        return self._admin

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        fs = self.admin_client().create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=-1, config=configs or {})],
            request_timeout=20, operation_timeout=20)
        fs[topic].result(timeout=30)
        self.wait_for_leaders(topic, partitions)

    def wait_for_leaders(self, topic: str, partitions: int, timeout: float = 30.0) -> None:
        """Until Metadata shows every partition of `topic` with a leader and ListOffsets is
        answered for each. Kafka answers CreateTopics once the controller has committed the topic;
        the broker serving a client learns of it a little later, and until then a ListOffsets or
        Fetch gets UNKNOWN_TOPIC_OR_PARTITION or no leader; its metadata cache names the leader a
        moment before its replica manager serves the partition (NOT_LEADER_OR_FOLLOWER meanwhile,
        for seconds on a loaded machine)."""
        deadline = time.monotonic() + timeout
        while True:
            t = self.admin_client().list_topics(topic, timeout=10).topics.get(topic)
            if t is not None and t.error is None and len(t.partitions) == partitions \
                    and all(p.leader >= 0 for p in t.partitions.values()) and self._leaders_serve(topic, partitions):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {topic}: no leader for every partition {timeout:g} s after creation")
            time.sleep(0.05)

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """(log start offset, high watermark) as a consumer sees them (ListOffsets)."""
        c = Consumer(self._conf(**{"group.id": "kafkalite-compat-watermarks"}))
        try:
            return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=20, cached=False)
        finally:
            c.close()

    def produce(self, topic, msgs, *, partition=None, compression="none", idempotent=False, acks="all",
                config: dict[str, Any] | None = None, timeout: float = 40.0) -> list[ProduceResult]:
        largest = max((len(m.value or b"") + len(m.key or b"") for m in msgs), default=0)
        conf = self._conf(**{
            "acks": acks,
            "compression.codec": compression,
            "enable.idempotence": bool(idempotent),
            "linger.ms": 20,
            "message.max.bytes": max(1_000_000, largest + 64 * 1024),
            "message.timeout.ms": int(timeout * 1000),
        })
        conf.update(config or {})
        producer = Producer(conf)
        results: list[ProduceResult | None] = [None] * len(msgs)
        errors: list[DeliveryError] = []

        def delivered(index: int):
            def cb(err, m):
                if err is not None:
                    errors.append(DeliveryError(err, index))
                else:
                    results[index] = ProduceResult(m.partition(), m.offset())
            return cb

        for i, m in enumerate(msgs):
            kwargs: dict[str, Any] = {"value": m.value, "key": m.key, "on_delivery": delivered(i)}
            p = m.partition if m.partition is not None else partition
            if p is not None:
                kwargs["partition"] = p
            if m.headers:
                kwargs["headers"] = list(m.headers)
            if m.timestamp_ms is not None:
                kwargs["timestamp"] = m.timestamp_ms
            while True:
                try:
                    producer.produce(topic, **kwargs)
                    break
                except BufferError:  # local queue full: let deliveries drain
                    producer.poll(0.05)
            producer.poll(0)
        remaining = producer.flush(timeout + 5)
        if errors:
            raise errors[0]
        if remaining:
            raise TimeoutError(f"librdkafka: {remaining} records not delivered to {topic} in {timeout}s")
        return results  # type: ignore[return-value]

    def consume(self, topic, partitions, count, *, start="earliest", isolation="read_uncommitted",
                timeout_s=30.0, config: dict[str, Any] | None = None) -> list[Msg]:
        conf = self._conf(**{
            "group.id": f"kafkalite-compat-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": isolation,
            "fetch.wait.max.ms": 200,
            "fetch.message.max.bytes": 4 * 1024 * 1024,
            "receive.message.max.bytes": 64 * 1024 * 1024,
        })
        conf.update(config or {})
        s = start_offset(start)
        if isinstance(s, dict):
            offsets = {p: s[p] for p in partitions}
        else:
            o = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}.get(s, s)  # type: ignore[call-overload]
            offsets = {p: o for p in partitions}
        consumer = Consumer(conf)
        out: list[Msg] = []
        try:
            consumer.assign([TopicPartition(topic, p, offsets[p]) for p in partitions])
            deadline = time.monotonic() + timeout_s
            while len(out) < count and time.monotonic() < deadline:
                for m in consumer.consume(count - len(out), timeout=min(0.5, max(0.01, deadline - time.monotonic()))):
                    if m.error() is not None:
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            continue
                        raise KafkaException(m.error())
                    _, ts = m.timestamp()
                    out.append(Msg(value=m.value(), key=m.key(), headers=tuple(m.headers() or ()),
                                   timestamp_ms=ts, partition=m.partition(), offset=m.offset()))
        finally:
            consumer.close()
        return out  # fewer than count: base.Client raises ShortConsume


def kafka_error_name(err: KafkaError) -> str:
    """Kafka's name for a broker error code (librdkafka abbreviates some: UNKNOWN_TOPIC_OR_PART);
    librdkafka's own name, with its leading underscore, for local errors."""
    if err.code() >= 0:
        try:
            from kio.schema.errors import ErrorCode

            return ErrorCode(err.code()).name.upper()
        except ValueError:
            pass
    return err.name()


def _result(future, timeout: float = 30):
    try:
        return future.result(timeout=timeout)
    except KafkaException as e:
        err = e.args[0] if e.args else None
        if isinstance(err, KafkaError):
            raise BrokerError(kafka_error_name(err), err.str()) from e
        raise


def _resource(kind: str, name: str, **kwargs: Any) -> ConfigResource:
    return ConfigResource({"topic": ResourceType.TOPIC, "broker": ResourceType.BROKER}[kind], name, **kwargs)


class LibrdkafkaAdmin(Admin):
    """compat_tests.clients.admin.Admin through confluent-kafka's AdminClient."""

    name = "librdkafka"

    def __init__(self, bootstrap: str, config: dict[str, Any] | None = None):
        self.client = LibrdkafkaClient(bootstrap, config=dict(config or {}))
        self.admin = self.client.admin_client()

    def create_topic(self, name, partitions=1, configs=None, validate_only=False, replication_factor=None):
        fs = self.admin.create_topics(
            [NewTopic(name, num_partitions=-1 if partitions is None else partitions,
                      replication_factor=-1 if replication_factor is None else replication_factor,
                      config=configs or {})],
            validate_only=validate_only, request_timeout=20, operation_timeout=20)
        _result(fs[name])
        # confluent-kafka's future resolves to None: the CreateTopics answer (partitions, topic id,
        # configs) is not exposed, so nothing is reported rather than the caller's own arguments
        return {"partitions": None, "topic_id": None}

    def delete_topics(self, names):
        fs = self.admin.delete_topics(list(names), request_timeout=20, operation_timeout=20)
        for f in fs.values():
            _result(f)

    def list_topics(self):
        return set(self.admin.list_topics(timeout=20).topics)

    def describe_topics(self, names):
        fs = self.admin.describe_topics(TopicCollection(list(names)), request_timeout=20)
        out = {}
        for name, f in fs.items():
            d = _result(f)
            out[name] = {"topic_id": None if d.topic_id is None else str(d.topic_id),
                         "partitions": [p.id for p in d.partitions],
                         "leaders": [None if p.leader is None else p.leader.id for p in d.partitions]}
        return out

    def describe_cluster(self):
        d = _result(self.admin.describe_cluster(request_timeout=20))
        return {"cluster_id": d.cluster_id, "controller": None if d.controller is None else d.controller.id,
                "nodes": [{"id": n.id, "host": n.host, "port": n.port} for n in d.nodes]}

    def describe_configs(self, kind, name):
        fs = self.admin.describe_configs([_resource(kind, name)], request_timeout=20)
        (f,) = fs.values()
        return {k: ConfigValue(e.value, ConfigSource(e.source).name, e.is_default, e.is_read_only)
                for k, e in _result(f).items()}

    def alter_configs(self, kind, name, configs):
        fs = self.admin.alter_configs([_resource(kind, name, set_config=dict(configs))], request_timeout=20)
        for f in fs.values():
            _result(f)

    def incremental_alter_configs(self, kind, name, ops, validate_only=False):
        entries = [ConfigEntry(n, v, incremental_operation=AlterConfigOpType[op.upper()]) for op, n, v in ops]
        fs = self.admin.incremental_alter_configs([_resource(kind, name, incremental_configs=entries)],
                                                  validate_only=validate_only, request_timeout=20)
        for f in fs.values():
            _result(f)

    def create_partitions(self, topic, total, validate_only=False):
        fs = self.admin.create_partitions([NewPartitions(topic, total)], validate_only=validate_only,
                                          request_timeout=20, operation_timeout=20)
        for f in fs.values():
            _result(f)

    def list_offsets(self, topic, partitions, spec, isolation="read_uncommitted"):
        if isinstance(spec, int):
            s = OffsetSpec.for_timestamp(spec)
        else:
            s = {"earliest": OffsetSpec.earliest, "latest": OffsetSpec.latest,
                 "max_timestamp": OffsetSpec.max_timestamp}[spec]()
        level = IsolationLevel.READ_COMMITTED if isolation == "read_committed" else IsolationLevel.READ_UNCOMMITTED
        fs = self.admin.list_offsets({TopicPartition(topic, p): s for p in partitions}, isolation_level=level,
                                     request_timeout=20)
        out = {}
        for tp, f in fs.items():
            info = _result(f)
            out[tp.partition] = (info.offset, info.timestamp)
        return out

    def delete_records(self, topic, before):
        fs = self.admin.delete_records([TopicPartition(topic, p, o) for p, o in before.items()],
                                       request_timeout=20, operation_timeout=20)
        return {tp.partition: _result(f).low_watermark for tp, f in fs.items()}

    def create_acls(self, acls):
        fs = self.admin.create_acls([_acl_binding(a) for a in acls], request_timeout=20)
        for f in fs.values():
            _result(f)

    def describe_acls(self, flt):
        return {_acl_tuple(b) for b in _result(self.admin.describe_acls(_acl_filter(flt), request_timeout=20))}

    def delete_acls(self, filters):
        fs = self.admin.delete_acls([_acl_filter(f) for f in filters], request_timeout=20)
        return {_acl_tuple(b) for f in fs.values() for b in _result(f)}


def _acl_args(a: tuple) -> list:
    from confluent_kafka.admin import AclOperation, AclPermissionType, ResourcePatternType
    from confluent_kafka.admin import ResourceType as RT

    rt, name, pt, principal, host, op, perm = a
    # librdkafka calls Kafka's CLUSTER resource type (4) BROKER
    return [RT["BROKER" if rt == "CLUSTER" else rt], name, ResourcePatternType[pt], principal, host, AclOperation[op], AclPermissionType[perm]]


def _acl_binding(a: tuple):
    from confluent_kafka.admin import AclBinding

    return AclBinding(*_acl_args(a))


def _acl_filter(a: tuple):
    from confluent_kafka.admin import AclBindingFilter

    return AclBindingFilter(*_acl_args(a))


def _acl_tuple(b) -> tuple:
    return ("CLUSTER" if b.restype.name == "BROKER" else b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name,
            b.permission_type.name)
