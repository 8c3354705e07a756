"""Transactions through aiokafka (asyncio; TxnOffsetCommit with the group id only, as aiokafka
sends it: no KIP-447 group metadata)."""

from __future__ import annotations

import asyncio
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError

from compat_tests.waiting import wait_for_path

# What this client surfaces on Apache Kafka 4.4 (and kafkalite) for the fenced producer's next
# write, and for a commit after the broker aborted the transaction for its timeout.
FENCED_ERRORS = {"ProducerFenced"}
TIMEOUT_ERRORS = {"ProducerFenced"}


def _producer(bootstrap: str, transactional_id: str, **extra) -> AIOKafkaProducer:
    return AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id,
                            enable_idempotence=True, linger_ms=5, request_timeout_ms=15000, **extra)


def _name(exc: BaseException) -> str:
    return type(exc).__name__


def run_plan(bootstrap: str, transactional_id: str, txns: list[dict]) -> None:
    async def go():
        p = _producer(bootstrap, transactional_id)
        await p.start()
        try:
            for txn in txns:
                await p.begin_transaction()
                futs = [await p.send(topic, value.encode(), partition=partition)
                        for topic, partition, value in txn["records"]]
                await asyncio.gather(*futs)
                if txn["end"] == "commit":
                    await p.commit_transaction()
                else:
                    await p.abort_transaction()
        finally:
            await p.stop()

    asyncio.run(go())


async def _error_of_last_steps(p, *steps) -> str:
    """Await each step (a coroutine function) in turn; the name of the Kafka error that stopped
    them, "NONE" if none did. The producer is stopped either way (a fenced one may refuse)."""
    name = "NONE"
    try:
        for step in steps:
            await step()
    except KafkaError as exc:
        name = _name(exc)
    try:
        await p.stop()
    except KafkaError:
        pass
    return name


def fence(bootstrap: str, transactional_id: str, topic: str) -> str:
    async def go():
        a = _producer(bootstrap, transactional_id)
        await a.start()
        await a.begin_transaction()
        await a.send_and_wait(topic, b"zombie-1", partition=0)
        b = _producer(bootstrap, transactional_id)
        await b.start()
        async with b.transaction():
            await b.send_and_wait(topic, b"winner", partition=0)
        await b.stop()
        return await _error_of_last_steps(a, lambda: a.send_and_wait(topic, b"zombie-2", partition=0),
                                          a.commit_transaction)

    return asyncio.run(go())


def time_out(bootstrap: str, transactional_id: str, topic: str, timeout_ms: int, until: str) -> str:
    async def go():
        p = _producer(bootstrap, transactional_id, transaction_timeout_ms=timeout_ms)
        await p.start()
        await p.begin_transaction()
        await p.send_and_wait(topic, b"late", partition=0)
        await asyncio.to_thread(wait_for_path, until)
        return await _error_of_last_steps(p, p.commit_transaction)

    return asyncio.run(go())


def copy(bootstrap: str, transactional_id: str, group: str, source: str, sink: str, count: int,
         timeout_s: float = 60.0) -> int:
    async def go():
        consumer = AIOKafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group,
                                    isolation_level="read_committed", enable_auto_commit=False,
                                    auto_offset_reset="earliest", session_timeout_ms=10000,
                                    heartbeat_interval_ms=1000)
        producer = _producer(bootstrap, transactional_id)
        await consumer.start()
        await producer.start()
        copied = 0
        deadline = time.monotonic() + timeout_s
        try:
            while copied < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500, max_records=100)
                records = [r for rs in batches.values() for r in rs]
                if not records:
                    continue
                async with producer.transaction():
                    futs = [await producer.send(sink, b"copied:" + r.value, key=r.key, partition=r.partition)
                            for r in records]
                    await asyncio.gather(*futs)
                    offsets = {tp: rs[-1].offset + 1 for tp, rs in batches.items()}
                    await producer.send_offsets_to_transaction(offsets, group)
                copied += len(records)
        finally:
            await consumer.stop()
            await producer.stop()
        return copied

    return asyncio.run(go())
