"""Dispatch asks the hooks test controls register before the handler (broker.hooks,
broker.dispatch), in-process: a fault answers in the handler's place until its count runs out, a
delayed or dropped answer lets the handler run, and clearing leaves no hook behind."""

from __future__ import annotations

from pathlib import Path

import trio
from kio.schema.errors import ErrorCode as E

from compat_tests.differ.core import request as build_request
from kafkalite.broker.controls import invoke
from kafkalite.broker.dispatch import dispatch
from kafkalite.broker.hooks import Interception

from .fake import create_topic, in_process_broker

METADATA = {"topics": [{"name": "t"}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}


def test_a_fault_answers_in_the_handlers_place_until_its_count_runs_out(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            await create_topic(b, "t")
            broker = b.broker
            armed = await invoke(broker, "fail-requests", {"api": "Metadata", "error": "NOT_CONTROLLER",
                                                           "count": 2, "topic": "t"})
            assert armed["remaining"] == 2 and bool(broker.hooks)
            request = build_request(3, 12, **METADATA)
            for _ in range(2):
                response, interception = await dispatch(b.context(3, 12), request)
                assert isinstance(interception, Interception) and interception.answer is not None
                assert response.topics[0].error_code == E.not_controller
            # its count ran out: the hook removed itself and the handler answers again
            assert not broker.hooks and await invoke(broker, "list-faults", {}) == []
            response, interception = await dispatch(b.context(3, 12), request)
            assert interception is None and response.topics[0].error_code == E.none

    trio.run(main)


def test_a_delayed_answer_is_the_handlers_and_clearing_removes_every_hook(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            await create_topic(b, "t")
            broker = b.broker
            await invoke(broker, "delay-responses", {"api": 1, "ms": 300, "count": None})
            await invoke(broker, "drop-responses", {"api": "Produce", "client_id": "someone-else"})
            # the delay hook lets Fetch run (its answer is the handler's) and says how long to hold it
            request = build_request(1, 12, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=1024,
                                    isolation_level=0, session_id=0, session_epoch=-1, topics=[
                                        {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                                       "partition_max_bytes": 1024}]}])
            response, interception = await dispatch(b.context(1, 12), request)
            assert interception == Interception(delay_ms=300)
            assert (response.error_code, response.responses[0].partitions[0].high_watermark) == (E.none, 0)
            # a fault whose client id does not match lets the request through
            produce_request = build_request(0, 9, transactional_id=None, acks=1, timeout=1000, topic_data=[])
            assert (await dispatch(b.context(0, 9), produce_request))[1] is None
            assert len(await invoke(broker, "list-faults", {})) == 2
            assert await invoke(broker, "clear-faults", {}) == 2
            assert not broker.hooks

    trio.run(main)
