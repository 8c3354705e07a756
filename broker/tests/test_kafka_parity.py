"""Answers that compat_tests/differ found to differ from Apache Kafka's, pinned at the protocol
level: each test sends the request the differ sent and checks the fields Kafka answers."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request
from kafkalite.protocol.batch import COMPRESSION_ZSTD
from kafkalite.protocol.records import Record, build_batch


@pytest.fixture
def topic_name():
    return f"parity-{uuid.uuid4().hex[:10]}"


def create(wire, name, partitions=1, configs=None):
    resp = wire.request(request(19, 7, timeout=5000, validate_only=False, topics=[
        {"name": name, "num_partitions": partitions, "replication_factor": 1,
         "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}]))
    assert resp.topics[0].error_code == ErrorCode.none
    return resp.topics[0].topic_id


def produce(wire, name, data, version=9, partition=0):
    resp = wire.request(request(0, version, transactional_id=None, acks=-1, timeout=5000, topic_data=[
        {"name": name, "partition_data": [{"index": partition, "records": bytes(data)}]}]))
    return resp.responses[0].partition_responses[0]


def recs(n, keyed=True):
    return [Record(key=b"k%d" % i if keyed else None, value=b"v%d" % i, timestamp_ms=1_600_000_000 + i)
            for i in range(n)]


def test_metadata_v0_lists_brokers_without_rack(wire):
    resp = wire.request(request(3, 0, topics=[]))
    assert [b.node_id for b in resp.brokers] == [1]


def fetch_records(wire, name, offset=0):
    from kafkalite.protocol.batch import iter_batches
    from kafkalite.protocol.records import decode_records
    resp = wire.request(request(1, 12, max_wait=0, min_bytes=1, isolation_level=0, session_id=0, session_epoch=-1,
                                topics=[{"topic": name, "partitions": [
                                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]))
    part = resp.responses[0].partitions[0]
    data = part.records or b""
    return part, [(h.compression, [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in decode_records(data, pos)])
                  for pos, h in iter_batches(data)]


def test_topic_compression_type_recompresses_other_codecs(wire, topic_name):
    from kafkalite.protocol.batch import COMPRESSION_GZIP, COMPRESSION_NONE, COMPRESSION_SNAPPY
    create(wire, topic_name, configs={"compression.type": "gzip"})
    assert produce(wire, topic_name, build_batch(recs(3))).error_code == ErrorCode.none
    assert produce(wire, topic_name, build_batch(recs(2), compression=COMPRESSION_SNAPPY)).base_offset == 3
    assert produce(wire, topic_name, build_batch(recs(1), compression=COMPRESSION_GZIP)).base_offset == 5
    _part, batches = fetch_records(wire, topic_name)
    assert [c for c, _ in batches] == [COMPRESSION_GZIP] * 3
    assert [(o, k, v, t) for _c, rs in batches for o, k, v, _h, t in rs] == [
        (0, b"k0", b"v0", 1_600_000_000), (1, b"k1", b"v1", 1_600_000_001), (2, b"k2", b"v2", 1_600_000_002),
        (3, b"k0", b"v0", 1_600_000_000), (4, b"k1", b"v1", 1_600_000_001), (5, b"k0", b"v0", 1_600_000_000)]
    other = topic_name + "-plain"
    create(wire, other, configs={"compression.type": "uncompressed"})
    assert produce(wire, other, build_batch(recs(2), compression=COMPRESSION_SNAPPY)).error_code == ErrorCode.none
    assert [c for c, _ in fetch_records(wire, other)[1]] == [COMPRESSION_NONE]


def test_zstd_needs_produce_v7(wire, topic_name):
    create(wire, topic_name)
    old = produce(wire, topic_name, build_batch(recs(1), compression=COMPRESSION_ZSTD), version=6)
    assert (old.error_code, old.base_offset) == (ErrorCode.unsupported_compression_type, -1)
    assert produce(wire, topic_name, build_batch(recs(1), compression=COMPRESSION_ZSTD), version=7).base_offset == 0


def test_keyless_records_of_a_compacted_topic_are_listed(wire, topic_name):
    create(wire, topic_name, configs={"cleanup.policy": "compact"})
    resp = produce(wire, topic_name, build_batch([recs(1)[0], recs(2, keyed=False)[1], recs(3, keyed=False)[2]]))
    assert resp.error_code == ErrorCode.invalid_record
    assert [e.batch_index for e in resp.record_errors] == [1, 2]
    assert resp.log_start_offset == 0  # a log-level rejection carries the log start offset
    old = produce(wire, topic_name, build_batch(recs(1, keyed=False)), version=7)  # no record_errors before v8
    assert old.error_code == ErrorCode.invalid_record


def test_producer_state_errors_carry_the_log_start_offset_and_duplicates_the_batch_time(wire, topic_name):
    create(wire, topic_name)
    pid = wire.request(request(22, 4, transactional_id=None, transaction_timeout=60000, producer_id=-1,
                               producer_epoch=-1))
    first = build_batch(recs(2), producer_id=pid.producer_id, producer_epoch=pid.producer_epoch, base_sequence=0)
    assert produce(wire, topic_name, first).log_append_time is None  # -1 on the wire
    dup = produce(wire, topic_name, first)
    assert (dup.error_code, dup.base_offset) == (ErrorCode.none, 0)
    assert round(dup.log_append_time.timestamp() * 1000) == 1_600_000_001
    gap = produce(wire, topic_name, build_batch(recs(1), producer_id=pid.producer_id,
                                                producer_epoch=pid.producer_epoch, base_sequence=9))
    assert (gap.error_code, gap.log_start_offset) == (ErrorCode.out_of_order_sequence_number, 0)
    bad = bytearray(build_batch(recs(1)))
    bad[-1] ^= 0xFF
    corrupt = produce(wire, topic_name, bad)
    assert (corrupt.error_code, corrupt.log_start_offset) == (ErrorCode.corrupt_message, -1)


def test_fetch_errors_answer_no_offsets(wire, topic_name):
    create(wire, topic_name)
    produce(wire, topic_name, build_batch(recs(2)))
    part, _ = fetch_records(wire, topic_name, offset=9)
    assert part.error_code == ErrorCode.offset_out_of_range
    assert (part.high_watermark, part.last_stable_offset, part.log_start_offset) == (-1, -1, -1)
    assert part.aborted_transactions is None
    resp = wire.request(request(1, 12, max_wait=0, min_bytes=1, isolation_level=0, session_id=0, session_epoch=-1,
                                topics=[{"topic": topic_name, "partitions": [
                                    {"partition": 5, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]))
    unknown = resp.responses[0].partitions[0]
    assert (unknown.error_code, unknown.aborted_transactions) == (ErrorCode.unknown_topic_or_partition, ())


@pytest.mark.parametrize("name,version", [("!bad", "1.0"), ("ok", "1.0-"), ("", "1")])
def test_api_versions_checks_the_client_software_name(wire, name, version):
    resp = wire.request(request(18, 3, client_software_name=name, client_software_version=version))
    assert (resp.error_code, resp.api_keys, resp.finalized_features_epoch) == (ErrorCode.invalid_request, (), -1)
    fine = wire.request(request(18, 3, client_software_name="apache-kafka-java", client_software_version="4.3.0"))
    assert fine.error_code == ErrorCode.none and fine.api_keys


def test_leave_of_an_unknown_group_answers_each_member(wire):
    resp = wire.request(request(13, 5, group_id=f"g-{uuid.uuid4().hex}", members=[
        {"member_id": "m", "group_instance_id": None, "reason": None}]))
    assert resp.error_code == ErrorCode.none
    assert [m.error_code for m in resp.members] == [ErrorCode.unknown_member_id]
    old = wire.request(request(13, 0, group_id=f"g-{uuid.uuid4().hex}", member_id="m"))
    assert old.error_code == ErrorCode.unknown_member_id


def test_consumer_group_heartbeat_errors_carry_no_member(wire, topic_name):
    create(wire, topic_name)
    group = f"g-{uuid.uuid4().hex}"

    def hb(member_id, epoch, assignor=None):
        return wire.request(request(68, 1, group_id=group, member_id=member_id, member_epoch=epoch, instance_id=None,
                                    rack_id=None, rebalance_timeout=10000, subscribed_topic_names=[topic_name],
                                    subscribed_topic_regex=None, server_assignor=assignor, topic_partitions=[]))

    member = str(uuid.uuid4())
    joined = hb(member, 0)
    assert joined.error_code == ErrorCode.none
    fenced = hb(member, joined.member_epoch + 10)
    assert (fenced.error_code, fenced.member_id, fenced.member_epoch) == (ErrorCode.fenced_member_epoch, None, 0)
    bad = hb(member, 0, assignor="nope")
    assert (bad.error_code, bad.member_id, bad.member_epoch) == (ErrorCode.unsupported_assignor, None, 0)
    described = wire.request(request(69, 1, group_ids=[group], include_authorized_operations=False))
    assert described.groups[0].members[0].subscribed_topic_regex == ""


def test_describe_transactions_of_an_unknown_id_is_all_zero(wire):
    resp = wire.request(request(65, 0, transactional_ids=[f"x-{uuid.uuid4().hex}"]))
    (state,) = resp.transaction_states
    assert state.error_code == ErrorCode.transactional_id_not_found
    assert (state.producer_id, state.producer_epoch, state.transaction_timeout.total_seconds()) == (0, 0, 0)
    assert state.transaction_start_time.timestamp() == 0


def test_describe_groups_shows_the_last_assignment_during_a_rebalance(wire):
    """Kafka's DescribeGroups outside Stable leaves out member metadata but keeps each member's
    last assignment, until the next SyncGroup replaces it."""
    import threading

    from kafkalite.protocol.client import WireClient

    group = f"g-{uuid.uuid4().hex}"

    def join_req(member):
        return request(11, 5, group_id=group, session_timeout=10000, rebalance_timeout=10000, member_id=member,
                       group_instance_id=None, protocol_type="consumer",
                       protocols=[{"name": "range", "metadata": b"\x00"}])

    wire.request(request(10, 3, key=group, key_type=0))
    a = wire.request(join_req(""))
    a = wire.request(join_req(a.member_id))
    wire.request(request(14, 5, group_id=group, generation_id=a.generation_id, member_id=a.member_id,
                         group_instance_id=None, assignments=[{"member_id": a.member_id, "assignment": b"A"}]))
    host = wire.sock.getpeername()
    other = WireClient(f"{host[0]}:{host[1]}")
    b = other.request(join_req(""))
    parked = threading.Thread(target=other.request, args=(join_req(b.member_id),), daemon=True)
    parked.start()
    import time
    deadline = time.monotonic() + 5
    while True:
        (g,) = wire.request(request(15, 5, groups=[group], include_authorized_operations=False)).groups
        if g.group_state == "PreparingRebalance" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert g.group_state == "PreparingRebalance"
    assignments = {m.member_id: (m.member_assignment, m.member_metadata) for m in g.members}
    assert assignments[a.member_id] == (b"A", b"")
    wire.request(join_req(a.member_id))  # lets the parked join finish
    parked.join(5)
    other.close()


def _commit_one(wire, group: str, topic: str, partition: int) -> ErrorCode:
    """A simple-group OffsetCommit (v9, no member) of offset 1 on one partition: its error."""
    resp = wire.request(request(8, 9, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                group_instance_id=None, topics=[{"name": topic, "partitions": [
                                    {"partition_index": partition, "committed_offset": 1,
                                     "committed_leader_epoch": -1}]}]))
    return resp.topics[0].partitions[0].error_code


def _group_state(wire, group: str) -> str:
    (g,) = wire.request(request(15, 5, groups=[group], include_authorized_operations=False)).groups
    return g.group_state


def test_a_commit_whose_every_partition_fails_creates_no_group(wire, topic_name):
    create(wire, topic_name)
    group = f"g-{uuid.uuid4().hex}"
    assert _commit_one(wire, group, topic_name, 5) == ErrorCode.unknown_topic_or_partition
    assert _group_state(wire, group) == "Dead"
    assert wire.request(request(47, 0, group_id=group, topics=[])).error_code == ErrorCode.group_id_not_found
    assert _commit_one(wire, group, topic_name, 0) == ErrorCode.none
    assert _group_state(wire, group) == "Empty"


def test_invalid_timestamps_list_the_records(wire, topic_name):
    import time
    create(wire, topic_name, configs={"message.timestamp.before.max.ms": "60000"})
    now = int(time.time() * 1000)
    batch = build_batch([Record(value=b"a", timestamp_ms=now - 3_600_000), Record(value=b"b", timestamp_ms=now),
                         Record(value=b"c", timestamp_ms=now - 7_200_000)])
    resp = produce(wire, topic_name, batch)
    assert resp.error_code == ErrorCode.invalid_timestamp
    assert [e.batch_index for e in resp.record_errors] == [0, 2]
    assert resp.log_start_offset == 0


def test_consumer_group_errors_for_unknown_groups(wire, topic_name):
    create(wire, topic_name)
    group = f"g-{uuid.uuid4().hex}"
    (g,) = wire.request(request(69, 1, group_ids=[group], include_authorized_operations=False)).groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch) == (ErrorCode.group_id_not_found, "", 0, 0)
    hb = wire.request(request(68, 1, group_id=group, member_id=str(uuid.uuid4()), member_epoch=3, instance_id=None,
                              rack_id=None, rebalance_timeout=-1, subscribed_topic_names=None,
                              subscribed_topic_regex=None, server_assignor=None, topic_partitions=None))
    assert hb.error_code == ErrorCode.group_id_not_found


def test_recompression_uses_the_topic_compression_level(wire, topic_name):
    import random

    from kafkalite.protocol.batch import COMPRESSION_ZSTD as ZSTD
    rng = random.Random(7)
    text = b" ".join(rng.choice([b"alpha", b"beta", b"gamma", b"delta", b"epsilon"]) for _ in range(4000))
    sizes = {}
    for level in ("1", "9"):
        name = f"{topic_name}-{level}"
        create(wire, name, configs={"compression.type": "gzip", "compression.gzip.level": level})
        assert produce(wire, name, build_batch([Record(value=text, timestamp_ms=1_600_000_000)])).error_code == \
            ErrorCode.none
        part, batches = fetch_records(wire, name)
        assert [c for c, _ in batches] == [1] and batches[0][1][0][2] == text
        sizes[level] = len(part.records)
    assert sizes["9"] < sizes["1"]
    zname = f"{topic_name}-z"
    create(wire, zname, configs={"compression.type": "zstd", "compression.zstd.level": "19"})
    assert produce(wire, zname, build_batch([Record(value=text)])).error_code == ErrorCode.none
    assert [c for c, _ in fetch_records(wire, zname)[1]] == [ZSTD]
