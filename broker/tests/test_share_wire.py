"""Share group APIs at the protocol level: session epochs, who may acknowledge, the delivery limit,
and the share state surviving a restart of the broker process."""

from __future__ import annotations

import uuid
from datetime import timedelta

from kio.schema.errors import ErrorCode

from kafkalite.protocol.client import WireClient
from compat_tests.differ.core import request as req  # requests from plain values
from kafkalite.protocol.records import Record, build_batch
from kafkalite.tests import suite_brokers


def create_and_produce(w: WireClient, topic: str, n: int) -> uuid.UUID:
    r = w.request(req(19, 7, topics=[{"name": topic, "num_partitions": 1, "replication_factor": 1,
                                                     "assignments": [], "configs": []}],
                      timeout=10000, validate_only=False))
    tid = r.topics[0].topic_id
    batch = bytes(build_batch([Record(None, f"v{i}".encode()) for i in range(n)]))
    p = w.request(req(0, 13, transactional_id=None, acks=-1, timeout=10000, topic_data=[
        {"name": "", "topic_id": tid, "partition_data": [{"index": 0, "records": batch}]}]))
    assert p.responses[0].partition_responses[0].error_code == ErrorCode.none
    return tid


def earliest(w: WireClient, group: str, **more: str) -> None:
    configs = {"share.auto.offset.reset": "earliest", **more}
    r = w.request(req(44, 1, validate_only=False, resources=[
        {"resource_type": 32, "resource_name": group,
         "configs": [{"name": k, "config_operation": 0, "value": v} for k, v in configs.items()]}]))
    assert r.responses[0].error_code == ErrorCode.none


def join(w: WireClient, group: str, member: str, topic: str):
    r = w.request(req(76, 1, group_id=group, member_id=member, member_epoch=0, rack_id=None,
                      subscribed_topic_names=[topic]))
    assert r.error_code == ErrorCode.none
    return r


def fetch(w: WireClient, group: str, member: str, tid, epoch: int, acks=(), max_records: int = 10):
    return w.request(req(78, 2, group_id=group, member_id=member, share_session_epoch=epoch,
                         max_wait=timedelta(milliseconds=200), min_bytes=1, max_bytes=1 << 20,
                         max_records=max_records, batch_size=max_records, share_acquire_mode=0, is_renew_ack=False,
                         topics=[{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                             {"first_offset": f, "last_offset": last, "acknowledge_types": [t]}
                             for f, last, t in acks]}]}], forgotten_topics_data=[]))


def acquired(resp) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in resp.responses for p in t.partitions for a in p.acquired_records]


def test_sessions_holders_and_delivery_limit(tmp_path):
    with suite_brokers.running(data_dir=tmp_path) as b, WireClient(b.bootstrap) as w, WireClient(b.bootstrap) as w2:
        topic, group = f"s-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
        tid = create_and_produce(w, topic, 2)
        earliest(w, group, **{"share.delivery.count.limit": "2"})
        hb = join(w, group, "m1", topic)
        assert [(tp.topic_id, tuple(tp.partitions)) for tp in hb.assignment.topic_partitions] == [(tid, (0,))]
        join(w2, group, "m2", topic)
        # no session yet: only epoch 0 opens one
        assert fetch(w, group, "m1", tid, 1).error_code == ErrorCode.share_session_not_found
        assert acquired(fetch(w, group, "m1", tid, 0)) == [(0, 1, 1)]
        assert fetch(w, group, "m1", tid, 5).error_code == ErrorCode.invalid_share_session_epoch
        # m2 does not hold the records: its acknowledgement fails for the partition
        r = fetch(w2, group, "m2", tid, 0, acks=[(0, 0, 1)])
        assert r.responses[0].partitions[0].acknowledge_error_code == ErrorCode.invalid_record_state
        assert acquired(r) == []
        # release both: second delivery; release again at the limit (2): archived, never again
        assert acquired(fetch(w, group, "m1", tid, 1, acks=[(0, 1, 2)])) == [(0, 1, 2)]
        r = fetch(w, group, "m1", tid, 2, acks=[(0, 0, 2), (1, 1, 1)])
        assert r.responses[0].partitions[0].acknowledge_error_code == ErrorCode.none
        assert acquired(r) == []
        off = w.request(req(90, 1, groups=[
            {"group_id": group, "topics": [{"topic_name": topic, "partitions": [0]}]}]))
        part = off.groups[0].topics[0].partitions[0]
        assert (part.start_offset, part.lag) == (2, 0)


def test_state_survives_a_restart(tmp_path):
    topic, group = f"s-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    with suite_brokers.running(data_dir=tmp_path) as b, WireClient(b.bootstrap) as w:
        tid = create_and_produce(w, topic, 3)
        earliest(w, group)
        join(w, group, "m1", topic)
        assert acquired(fetch(w, group, "m1", tid, 0)) == [(0, 2, 1)]
        r = w.request(req(79, 2, group_id=group, member_id="m1", share_session_epoch=1,
                          is_renew_ack=False, topics=[{"topic_id": tid, "partitions": [
                              {"partition_index": 0, "acknowledgement_batches": [
                                  {"first_offset": o, "last_offset": o, "acknowledge_types": [t]}
                                  for o, t in ((0, 1), (1, 2), (2, 3))]}]}]))
        assert r.responses[0].partitions[0].error_code == ErrorCode.none
        port = b.port
    with suite_brokers.running(data_dir=tmp_path, port=port) as b, WireClient(b.bootstrap) as w:
        join(w, group, "m2", topic)
        assert acquired(fetch(w, group, "m2", tid, 0)) == [(1, 1, 2)]  # the released one only, second delivery
