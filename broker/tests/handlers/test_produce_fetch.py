"""Produce and Fetch handlers, in-process against the broker's state on a temporary data dir."""

from __future__ import annotations

from pathlib import Path

import trio
from kio.schema.errors import ErrorCode as E

from .fake import create_topic, fetch, in_process_broker, produce, record_values


def test_produced_batches_are_fetched_back_whole(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            await create_topic(b, "t")
            first = await produce(b, "t", [b"a", b"b", b"c"])
            second = await produce(b, "t", [b"d", b"e"])
            assert (first.error_code, first.base_offset) == (E.none, 0)
            assert (second.error_code, second.base_offset) == (E.none, 3)
            part = await fetch(b, "t", 0)
            assert (part.error_code, part.high_watermark, part.last_stable_offset) == (E.none, 5, 5)
            assert record_values(part.records) == [b"a", b"b", b"c", b"d", b"e"]
            # a fetch inside a batch gets the whole batch, as Kafka's log read does
            assert record_values((await fetch(b, "t", 4)).records) == [b"d", b"e"]
            # at the end: nothing, no error; past it: OFFSET_OUT_OF_RANGE
            assert record_values((await fetch(b, "t", 5)).records) == []
            assert (await fetch(b, "t", 6)).error_code == E.offset_out_of_range

    trio.run(main)


def test_produce_to_a_missing_topic_or_partition(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            assert (await produce(b, "missing", [b"x"])).error_code == E.unknown_topic_or_partition
            await create_topic(b, "t")
            assert (await produce(b, "t", [b"x"], partition=3)).error_code == E.unknown_topic_or_partition
            assert (await fetch(b, "t", 0)).high_watermark == 0

    trio.run(main)


def test_an_idempotent_duplicate_is_acknowledged_with_its_first_offset(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            await create_topic(b, "t")
            init = await b.call(22, 4, transactional_id=None, transaction_timeout=60000, producer_id=-1,
                                producer_epoch=-1)
            ids = {"producer_id": init.producer_id, "producer_epoch": init.producer_epoch}
            assert (await produce(b, "t", [b"a"], base_sequence=0, **ids)).base_offset == 0
            again = await produce(b, "t", [b"a"], base_sequence=0, **ids)
            assert (again.error_code, again.base_offset) == (E.none, 0)
            assert (await fetch(b, "t", 0)).high_watermark == 1
            # a gap in the sequence: Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER
            gap = await produce(b, "t", [b"b"], base_sequence=5, **ids)
            assert gap.error_code == E.out_of_order_sequence_number

    trio.run(main)
