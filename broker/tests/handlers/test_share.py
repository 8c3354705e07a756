"""ShareFetch, in-process: a share group member acquires records, acknowledges them, and a
session is opened only by epoch 0 (KIP-932, Kafka's SharePartitionManager)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode as E

from .fake import InProcessBroker, create_topic, in_process_broker, produce, record_values


async def share_fetch(b: InProcessBroker, member: str, topic_id: Any, epoch: int,
                      acks: tuple[tuple[int, int, int], ...] = ()) -> Any:
    return await b.call(78, 1, group_id="sg", member_id=member, share_session_epoch=epoch, max_wait=100,
                        min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
                        topics=[{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                            {"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in acks]}]}],
                        forgotten_topics_data=[])


def test_share_fetch_acquires_acknowledges_and_keeps_sessions(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            topic_id = await create_topic(b, "t")
            # records before the group's first fetch are skipped unless share.auto.offset.reset=earliest
            r = await b.call(44, 1, validate_only=False, resources=[{
                "resource_type": 32, "resource_name": "sg",
                "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}])
            assert r.responses[0].error_code == E.none
            assert (await produce(b, "t", [b"a", b"b", b"c"])).error_code == E.none
            hb = await b.call(76, 1, group_id="sg", member_id="m1", member_epoch=0, rack_id=None,
                              subscribed_topic_names=["t"])
            assert hb.error_code == E.none
            assert [(tp.topic_id, tuple(tp.partitions)) for tp in hb.assignment.topic_partitions] == [(topic_id, (0,))]
            # only epoch 0 opens a session
            assert (await share_fetch(b, "m1", topic_id, 1)).error_code == E.share_session_not_found
            first = await share_fetch(b, "m1", topic_id, 0)
            part = first.responses[0].partitions[0]
            assert first.error_code == part.error_code == E.none
            assert [(a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records] == [(0, 2, 1)]
            assert record_values(part.records) == [b"a", b"b", b"c"]
            # the next epoch acknowledges them (1: ACCEPT); nothing is left to acquire
            second = await share_fetch(b, "m1", topic_id, 1, acks=((0, 2, 1),))
            part = second.responses[0].partitions[0]
            assert (second.error_code, part.acknowledge_error_code, part.acquired_records) == (E.none, E.none, ())
            # an epoch out of order
            assert (await share_fetch(b, "m1", topic_id, 5)).error_code == E.invalid_share_session_epoch

    trio.run(main)
