"""kafka-python adapter (in-process, synchronous).

Works with kafka-python 2.x and 3.x: options one line does not know are dropped (see
``_known``). Codecs come from the test extras (python-snappy / cramjam, lz4, zstandard).
Consuming assigns partitions with ``group_id=None``; "latest" is resolved before ``consume``
starts polling, so records produced afterwards are read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .base import Client, Msg, ProduceResult, Unsupported, refuse_unusable_produce_options

COMPRESSIONS = {"none": None, "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}
ACKS = {"all": "all", "-1": "all", "1": 1, "0": 0}


def kafka_python_version() -> tuple[int, ...]:
    import kafka

    return tuple(int(p) for p in kafka.__version__.split(".")[:3] if p.isdigit())


def _known(cls: type, options: dict[str, Any]) -> dict[str, Any]:
    """The options this kafka-python version accepts (2.x and 3.x differ in a few names)."""
    defaults = getattr(cls, "DEFAULT_CONFIG", None)
    if defaults is None:
        return options
    return {k: v for k, v in options.items() if k in defaults}


@dataclass
class KafkaPythonClient(Client):
    name: str = field(default="kafka_python", init=False)
    request_timeout_s: float = 10.0
    api_version: tuple[int, ...] | None = None  # None: negotiate with ApiVersions
    # more keyword arguments for every client (security_protocol, sasl_mechanism, ssl_cafile, ...)
    options: dict[str, Any] = field(default_factory=dict)

    def _common(self) -> dict[str, Any]:
        ms = int(self.request_timeout_s * 1000)
        options: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap,
            "request_timeout_ms": ms,
            "api_version_auto_timeout_ms": ms,  # 2.x
            "bootstrap_timeout_ms": ms,  # 3.x
            "reconnect_backoff_max_ms": 1000,
            "retry_backoff_ms": 50,
        }
        if self.api_version is not None:
            options["api_version"] = self.api_version
        options.update(self.options)
        return options

    def admin_client(self):
        from kafka import KafkaAdminClient

        return KafkaAdminClient(**_known(KafkaAdminClient, {**self._common(), "client_id": "kafkalite-compat-admin"}))

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        admin = self.admin_client()
        try:
            timeout_ms = int(self.request_timeout_s * 1000)
            if kafka_python_version() >= (3,):
                admin.create_topics(
                    {topic: {"num_partitions": partitions, "replication_factor": 1, "configs": dict(configs or {})}},
                    timeout_ms=timeout_ms,
                    wait_for_metadata=True,
                )
            else:
                from kafka.admin import NewTopic

                response = admin.create_topics(
                    [NewTopic(topic, partitions, 1, topic_configs=dict(configs or {}))], timeout_ms=timeout_ms
                )
                _raise_topic_errors(response)
        finally:
            admin.close()

    def producer(self, **options: Any):
        from kafka import KafkaProducer

        return KafkaProducer(**_known(KafkaProducer, {**self._common(), **options}))

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
        from kafka import codec

        refuse_unusable_produce_options("kafka-python", compression, idempotent, acks,
                                        compressions=COMPRESSIONS, codec_module=codec)
        from kafka import KafkaProducer

        if idempotent and "enable_idempotence" not in KafkaProducer.DEFAULT_CONFIG:
            raise Unsupported("kafka-python: this version has no idempotent producer")
        for m in msgs:  # KafkaProducer.send refuses these before anything is sent
            if m.key is None and m.value is None:
                raise Unsupported("kafka-python: a record with neither key nor value cannot be sent")
            if any(v is None for _, v in m.headers):
                raise Unsupported("kafka-python: header values must be bytes, a null header value cannot be sent")
        options: dict[str, Any] = {
            "acks": ACKS[str(acks)],
            "compression_type": COMPRESSIONS[compression],
            "enable_idempotence": idempotent,
            "linger_ms": 0,
            "max_request_size": 16 * 1024 * 1024,
            "max_block_ms": int(self.request_timeout_s * 1000),
            "delivery_timeout_ms": int(self.request_timeout_s * 1000) + 1000,
            "client_id": "kafkalite-compat-producer",
        }
        if not idempotent:
            options["max_in_flight_requests_per_connection"] = 1  # keep order across retries
        producer = self.producer(**options)
        try:
            futures = [
                producer.send(
                    topic,
                    value=m.value,
                    key=m.key,
                    headers=list(m.headers) if m.headers else None,
                    partition=m.partition if m.partition is not None else partition,
                    timestamp_ms=m.timestamp_ms,
                )
                for m in msgs
            ]
            producer.flush(timeout=self.request_timeout_s)
            results = []
            for f in futures:
                md = f.get(timeout=self.request_timeout_s)
                results.append(ProduceResult(partition=md.partition, offset=md.offset))
            return results
        finally:
            producer.close(timeout=2)

    def consumer(self, **options: Any):
        from kafka import KafkaConsumer

        base = {
            **self._common(),
            "group_id": None,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "fetch_max_wait_ms": 100,
            "max_partition_fetch_bytes": 4 * 1024 * 1024,
            "client_id": "kafkalite-compat-consumer",
        }
        return KafkaConsumer(**_known(KafkaConsumer, {**base, **options}))

    def consume(
        self,
        topic: str,
        partitions: list[int],
        count: int,
        *,
        start: str | int = "earliest",
        isolation: str = "read_uncommitted",
        timeout_s: float = 30.0,
    ) -> list[Msg]:
        from kafka import TopicPartition

        consumer = self.consumer(isolation_level=isolation)
        try:
            tps = [TopicPartition(topic, p) for p in partitions]
            consumer.assign(tps)
            if start == "earliest":
                consumer.seek_to_beginning(*tps)
            elif start == "latest":
                consumer.seek_to_end(*tps)
            elif isinstance(start, dict):
                for tp in tps:
                    consumer.seek(tp, int(start[tp.partition]))
            else:
                for tp in tps:
                    consumer.seek(tp, int(start))
            for tp in tps:  # resolve the start positions now, not at the first poll
                consumer.position(tp)
            out: list[Msg] = []
            deadline = time.monotonic() + timeout_s
            while len(out) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                batch = consumer.poll(timeout_ms=int(min(remaining, 0.5) * 1000) or 1, max_records=count - len(out))
                for tp in sorted(batch, key=lambda t: t.partition):
                    for r in batch[tp]:
                        out.append(_msg(r))
            return out[:count]
        finally:
            consumer.close()


def _msg(r) -> Msg:
    return Msg(
        value=r.value,
        key=r.key,
        headers=tuple((k, v) for k, v in (r.headers or ())),
        timestamp_ms=r.timestamp,
        partition=r.partition,
        offset=r.offset,
    )


def _raise_topic_errors(response) -> None:
    from kafka.errors import for_code

    for entry in getattr(response, "topic_errors", ()) or ():
        name, code = entry[0], entry[1]
        if code:
            message = entry[2] if len(entry) > 2 else ""
            raise for_code(code)(f"create topic {name}: {message}")


Adapter = KafkaPythonClient
