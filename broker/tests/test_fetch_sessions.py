"""Incremental fetch sessions (KIP-227): the session cache with a fake clock, and the Fetch
handler's answers, in-process (broker/tests/handlers/fake.py: the broker's state and handlers,
no process and no socket)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import trio
from kio.schema.errors import ErrorCode

from kafkalite.broker.fetch_sessions import FetchSessionCache, SessionError
from kafkalite.protocol.records import Record, build_batch

from .handlers.fake import InProcessBroker, in_process_broker

# ------------------------------------------------------------------ the cache


def parts(n, topic="t"):
    return [((topic, i), object()) for i in range(n)]


def test_epochs_advance_and_are_checked():
    cache = FetchSessionCache(max_slots=10)
    s = cache.create(False, parts(2), now_ms=0)
    assert s.id != 0 and s.epoch == 1
    assert cache.get(s.id, 1, False, now_ms=1) is s
    with pytest.raises(SessionError) as e:
        cache.get(s.id, 1, False, now_ms=2)
    assert e.value.code == ErrorCode.invalid_fetch_session_epoch
    assert cache.get(s.id, 2, False, now_ms=3).epoch == 3
    with pytest.raises(SessionError) as e:
        cache.get(s.id + 1, 3, False, now_ms=3)
    assert e.value.code == ErrorCode.fetch_session_id_not_found
    with pytest.raises(SessionError) as e:
        cache.get(s.id, 3, True, now_ms=3)
    assert e.value.code == ErrorCode.fetch_session_topic_id_error


def test_a_full_cache_evicts_stale_then_smaller_sessions_or_declines():
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000)
    a = cache.create(False, parts(3), now_ms=0)
    b = cache.create(False, parts(1), now_ms=500)
    # nothing stale, nothing smaller than a 1-partition session: declined
    assert cache.create(False, parts(1), now_ms=600) is None
    # a bigger session evicts the smaller one
    c = cache.create(False, parts(2), now_ms=700)
    assert c is not None and set(cache.sessions) == {a.id, c.id}
    # a is stale at 1000 ms: it goes first, even for a small session
    d = cache.create(False, parts(1), now_ms=1000)
    assert d is not None and set(cache.sessions) == {c.id, d.id}
    assert b.id not in cache.sessions


def test_no_slots_means_no_sessions():
    assert FetchSessionCache(max_slots=0).create(False, parts(1), now_ms=0) is None


# ------------------------------------------------------------------ the Fetch handler


async def create(b: InProcessBroker, name: str, partitions: int) -> uuid.UUID:
    resp = await b.call(19, 7, timeout=5000, validate_only=False, topics=[
        {"name": name, "num_partitions": partitions, "replication_factor": 1}])
    assert resp.topics[0].error_code == ErrorCode.none
    return resp.topics[0].topic_id


async def produce(b: InProcessBroker, name: str, partition: int, n: int) -> None:
    batch = build_batch([Record(value=b"v%d" % i) for i in range(n)])
    resp = await b.call(0, 9, transactional_id=None, acks=-1, timeout=5000, topic_data=[
        {"name": name, "partition_data": [{"index": partition, "records": bytes(batch)}]}])
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.none


async def fetch(b: InProcessBroker, topic_id: uuid.UUID, offsets: list[tuple[int, int]], *, session_id: int = 0,
                epoch: int = 0, forgotten: tuple[int, ...] | list[int] = (), version: int = 17) -> Any:
    return await b.call(1, version, max_wait=0, min_bytes=0, isolation_level=0,
                        session_id=session_id, session_epoch=epoch,
                        topics=[{"topic_id": topic_id, "partitions": [
                            {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20}
                            for p, o in offsets]}] if offsets else [],
                        forgotten_topics_data=[{"topic_id": topic_id, "partitions": list(forgotten)}]
                        if forgotten else [], rack_id="")


def answered(resp: Any) -> set[tuple[int, int, bool]]:
    return {(p.partition_index, p.high_watermark, len(p.records or b"") > 0)
            for t in resp.responses for p in t.partitions}


def test_incremental_fetch_answers_only_what_changed(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            tid = await create(b, "t", 3)
            await produce(b, "t", 0, 2)
            full = await fetch(b, tid, [(0, 0), (1, 0), (2, 0)])
            assert full.error_code == ErrorCode.none and full.session_id != 0
            assert answered(full) == {(0, 2, True), (1, 0, False), (2, 0, False)}
            sid = full.session_id
            # the client moved partition 0 to offset 2: nothing changed anywhere, so nothing is answered
            inc = await fetch(b, tid, [(0, 2)], session_id=sid, epoch=1)
            assert inc.error_code == ErrorCode.none and inc.session_id == sid
            assert answered(inc) == set()
            # new data on partition 2, which the request does not name: the session still reads it
            await produce(b, "t", 2, 3)
            inc = await fetch(b, tid, [], session_id=sid, epoch=2)
            assert answered(inc) == {(2, 3, True)}
            # forgotten: partition 2 leaves the session; new data there is no longer answered
            inc = await fetch(b, tid, [], session_id=sid, epoch=3, forgotten=[2])
            assert answered(inc) == set()
            await produce(b, "t", 2, 1)
            assert answered(await fetch(b, tid, [], session_id=sid, epoch=4)) == set()
            # a partition added later is answered at once (nothing answered for it yet)
            assert answered(await fetch(b, tid, [(2, 4)], session_id=sid, epoch=5)) == {(2, 4, False)}

    trio.run(main)


def test_session_errors_and_close(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            tid = await create(b, "t", 1)
            sid = (await fetch(b, tid, [(0, 0)])).session_id
            wrong = await fetch(b, tid, [], session_id=sid, epoch=7)
            assert (wrong.error_code, wrong.session_id, wrong.responses) == (
                ErrorCode.invalid_fetch_session_epoch, 0, ())
            unknown = await fetch(b, tid, [], session_id=sid ^ 0x5A5A, epoch=1)
            assert unknown.error_code == ErrorCode.fetch_session_id_not_found
            # epoch -1: a sessionless full fetch that closes the session
            closing = await fetch(b, tid, [(0, 0)], session_id=sid, epoch=-1)
            assert closing.error_code == ErrorCode.none and closing.session_id == 0 and answered(closing)
            assert (await fetch(b, tid, [], session_id=sid, epoch=1)).error_code == \
                ErrorCode.fetch_session_id_not_found
            # Fetch v4-v6 know nothing of sessions; v7+ with epoch -1 asks for none
            assert (await fetch(b, tid, [(0, 0)], epoch=-1)).session_id == 0

    trio.run(main)


def test_the_cache_size_is_a_broker_setting(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path, **{"max.incremental.fetch.session.cache.slots": 1}) as b:
            tid = await create(b, "sessions", 2)
            first = await fetch(b, tid, [(0, 0), (1, 0)])
            assert first.session_id != 0
            # no room, and nothing smaller or stale to evict: answered without a session
            second = await fetch(b, tid, [(0, 0)])
            assert second.error_code == ErrorCode.none and second.session_id == 0 and answered(second)
            assert (await fetch(b, tid, [], session_id=first.session_id, epoch=1)).error_code == ErrorCode.none

    trio.run(main)
