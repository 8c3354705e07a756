"""aiokafka adapter: each call runs its own asyncio loop (``asyncio.run``) in the calling thread.

Codecs come from cramjam (aiokafka >= 0.12). Consuming assigns partitions with
``group_id=None``; "latest" is resolved before ``consume`` starts fetching.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from .base import Client, Msg, ProduceResult, Unsupported, refuse_unusable_produce_options

COMPRESSIONS = {"none": None, "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}
ACKS = {"all": "all", "-1": "all", "1": 1, "0": 0}


@dataclass
class AiokafkaClient(Client):
    name: str = field(default="aiokafka", init=False)
    request_timeout_s: float = 10.0
    # more keyword arguments for every client (security_protocol, sasl_mechanism, ssl_context, ...)
    options: dict[str, Any] = field(default_factory=dict)

    def _common(self) -> dict[str, Any]:
        return {
            "bootstrap_servers": self.bootstrap,
            "request_timeout_ms": int(self.request_timeout_s * 1000),
            "retry_backoff_ms": 50,
            **self.options,
        }

    def run(self, coro_fn, *args: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """Run ``coro_fn(*args, **kwargs)`` on a fresh event loop, bounded by a timeout."""

        async def bounded():
            return await asyncio.wait_for(coro_fn(*args, **kwargs), timeout_s or self.request_timeout_s * 3)

        return asyncio.run(bounded())

    # ------------------------------------------------------------------ admin

    async def admin_call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """``await AIOKafkaAdminClient.<op>(*args, **kwargs)`` with a started client."""
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(**self._common(), client_id="kafkalite-compat-admin")
        try:
            await admin.start()
            return await getattr(admin, op)(*args, **kwargs)
        finally:
            await admin.close()

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        from aiokafka.admin import NewTopic

        response = self.run(
            self.admin_call,
            "create_topics",
            [NewTopic(topic, partitions, 1, topic_configs=dict(configs or {}))],
            timeout_ms=int(self.request_timeout_s * 1000),
        )
        _raise_topic_errors(response)
        self.run(self._wait_for_leaders, topic, partitions)

    async def _wait_for_leaders(self, topic: str, partitions: int) -> None:
        from aiokafka import AIOKafkaClient

        client = AIOKafkaClient(**self._common())
        try:
            await client.bootstrap()
            deadline = time.monotonic() + self.request_timeout_s
            while True:
                await client.force_metadata_update()
                parts = client.cluster.partitions_for_topic(topic) or set()
                if len(parts) >= partitions and all(
                    (client.cluster.leader_for_partition(_tp(topic, p)) or -1) >= 0 for p in parts
                ):
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"topic {topic} has no leaders for all {partitions} partitions")
                await asyncio.sleep(0.05)
        finally:
            await client.close()

    # ---------------------------------------------------------------- produce

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
        from aiokafka import codec

        refuse_unusable_produce_options("aiokafka", compression, idempotent, acks,
                                        compressions=COMPRESSIONS, codec_module=codec)
        if any(m.key is None and m.value is None for m in msgs):  # AIOKafkaProducer.send asserts this
            raise Unsupported("aiokafka: a record with neither key nor value cannot be sent")
        return self.run(self._produce, topic, msgs, partition, compression, idempotent, acks)

    async def _produce(self, topic, msgs, partition, compression, idempotent, acks) -> list[ProduceResult]:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(
            **self._common(),
            client_id="kafkalite-compat-producer",
            acks=ACKS[str(acks)],
            compression_type=COMPRESSIONS[compression],
            enable_idempotence=idempotent,
            linger_ms=0,
            max_request_size=16 * 1024 * 1024,
        )
        try:
            await producer.start()
            futures = []
            for m in msgs:
                futures.append(
                    await producer.send(
                        topic,
                        value=m.value,
                        key=m.key,
                        partition=m.partition if m.partition is not None else partition,
                        timestamp_ms=m.timestamp_ms,
                        headers=list(m.headers) if m.headers else None,
                    )
                )
            metadata = await asyncio.gather(*futures)
            results = []
            for m, md in zip(msgs, metadata):
                if md is None:  # acks=0: aiokafka resolves the future with None
                    p = m.partition if m.partition is not None else partition
                    results.append(ProduceResult(partition=-1 if p is None else p, offset=-1))
                else:
                    results.append(ProduceResult(partition=md.partition, offset=md.offset))
            return results
        finally:
            await producer.stop()

    # ---------------------------------------------------------------- consume

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
        return self.run(
            self._consume, topic, partitions, count, start, isolation, timeout_s, timeout_s=timeout_s + 15
        )

    def consumer(self, **options: Any):
        from aiokafka import AIOKafkaConsumer

        base = {
            **self._common(),
            "client_id": "kafkalite-compat-consumer",
            "group_id": None,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "fetch_max_wait_ms": 100,
            "max_partition_fetch_bytes": 4 * 1024 * 1024,
        }
        return AIOKafkaConsumer(**{**base, **options})

    async def _consume(self, topic, partitions, count, start, isolation, timeout_s) -> list[Msg]:
        from aiokafka import TopicPartition

        consumer = self.consumer(isolation_level=isolation)
        try:
            await consumer.start()
            tps = [TopicPartition(topic, p) for p in partitions]
            consumer.assign(tps)
            if start == "earliest":
                await consumer.seek_to_beginning(*tps)
            elif start == "latest":
                await consumer.seek_to_end(*tps)
            elif isinstance(start, dict):
                for tp in tps:
                    consumer.seek(tp, int(start[tp.partition]))
            else:
                for tp in tps:
                    consumer.seek(tp, int(start))
            for tp in tps:  # resolve the start positions now
                await consumer.position(tp)
            out: list[Msg] = []
            deadline = time.monotonic() + timeout_s
            while len(out) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                batch = await consumer.getmany(
                    *tps, timeout_ms=max(1, int(min(remaining, 0.5) * 1000)), max_records=count - len(out)
                )
                for tp in sorted(batch, key=lambda t: t.partition):
                    for r in batch[tp]:
                        out.append(
                            Msg(
                                value=r.value,
                                key=r.key,
                                headers=tuple((k, v) for k, v in (r.headers or ())),
                                timestamp_ms=r.timestamp,
                                partition=r.partition,
                                offset=r.offset,
                            )
                        )
            return out[:count]
        finally:
            await consumer.stop()


def _tp(topic: str, partition: int):
    from aiokafka.structs import TopicPartition

    return TopicPartition(topic, partition)


def _raise_topic_errors(response) -> None:
    from aiokafka.errors import for_code

    for entry in getattr(response, "topic_errors", ()) or ():
        name, code = entry[0], entry[1]
        if code:
            message = entry[2] if len(entry) > 2 else ""
            raise for_code(code)(f"create topic {name}: {message}")


Adapter = AiokafkaClient
