"""JoinGroup and ConsumerGroupHeartbeat handlers, in-process; the expected answers are those of
Kafka's GroupMetadataManager (classic joins, KIP-394 member ids, KIP-848 heartbeats)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import trio
from kio.schema.errors import ErrorCode as E

from .fake import InProcessBroker, create_topic, in_process_broker

PROTOCOLS = [{"name": "range", "metadata": b"\x00\x01"}]


async def join(b: InProcessBroker, version: int, group: str, member_id: str = "") -> Any:
    return await b.call(11, version, group_id=group, session_timeout=10000, rebalance_timeout=10000,
                        member_id=member_id, group_instance_id=None, protocol_type="consumer",
                        protocols=PROTOCOLS, reason=None)


async def heartbeat(b: InProcessBroker, version: int, group: str, member_id: str, epoch: int,
                    topics: list[str] | None = None) -> Any:
    return await b.call(68, version, group_id=group, member_id=member_id, member_epoch=epoch, instance_id=None,
                        rack_id=None, rebalance_timeout=300000, subscribed_topic_names=topics,
                        subscribed_topic_regex=None, server_assignor=None,
                        # Kafka: empty (not null) when joining, null when unchanged
                        topic_partitions=[] if epoch == 0 else None)


def test_join_group_asks_for_a_member_id_from_v4_and_joins_at_once_before(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path) as b:
            # KIP-394: v4+ without a member id is told its id with MEMBER_ID_REQUIRED, and nothing else
            asked = await join(b, 5, "g")
            assert asked.error_code == E.member_id_required
            assert asked.member_id and asked.generation_id == -1
            joined = await join(b, 5, "g", asked.member_id)
            assert (joined.error_code, joined.generation_id) == (E.none, 1)
            assert joined.leader == joined.member_id == asked.member_id
            assert [(m.member_id, m.metadata) for m in joined.members] == [(asked.member_id, b"\x00\x01")]
            assert joined.protocol_name == "range"
            # before v4 the member gets its id in a completed join
            old = await join(b, 3, "g-old")
            assert (old.error_code, old.generation_id) == (E.none, 1)
            assert old.member_id and old.leader == old.member_id
            # an id the group never gave out
            assert (await join(b, 5, "g", "stranger")).error_code == E.unknown_member_id

    trio.run(main)


def test_consumer_group_heartbeat_joins_assigns_and_leaves(tmp_path: Path) -> None:
    async def main() -> None:
        async with in_process_broker(tmp_path, **{"group.consumer.heartbeat.interval.ms": 3000}) as b:
            await create_topic(b, "t", partitions=2)
            first = await heartbeat(b, 0, "cg", "", 0, ["t"])
            assert first.error_code == E.none
            assert first.member_id and first.member_epoch >= 1
            # group.consumer.heartbeat.interval.ms, or sooner while the new group assigns
            assert timedelta(0) < first.heartbeat_interval <= timedelta(milliseconds=3000)
            member, epoch, response = first.member_id, first.member_epoch, first
            with trio.fail_after(5):
                while response.assignment is None:
                    await trio.sleep(0.01)
                    response = await heartbeat(b, 0, "cg", member, epoch)
                    assert response.error_code == E.none
                    epoch = response.member_epoch
            assigned = {(tp.topic_id, p) for tp in response.assignment.topic_partitions for p in tp.partitions}
            topic_id = b.broker.cluster.topics["t"].topic_id
            assert assigned == {(topic_id, 0), (topic_id, 1)}
            # an unknown member of an existing group, with an epoch: UNKNOWN_MEMBER_ID
            assert (await heartbeat(b, 0, "cg", "stranger", 3)).error_code == E.unknown_member_id
            # v1: the member brings its own id, and must
            assert (await heartbeat(b, 1, "cg", "", 0, ["t"])).error_code == E.invalid_request
            # leaving (epoch -1) is answered with epoch -1
            left = await heartbeat(b, 0, "cg", member, -1)
            assert (left.error_code, left.member_id, left.member_epoch) == (E.none, member, -1)

    trio.run(main)
