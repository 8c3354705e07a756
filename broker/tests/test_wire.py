"""The broker at the protocol level: versions, bad input, produce/fetch error codes."""

from __future__ import annotations

import datetime
import socket
import struct
import uuid

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.waiting import wait_until

import kio.schema.api_versions.v3.request as av3
import kio.schema.fetch.v12.request as f12
import kio.schema.list_offsets.v9.request as lo9
import kio.schema.metadata.v12.request as md12
import kio.schema.produce.v9.request as p9
from kafkalite.protocol.client import WireClient, decode_response
from kafkalite.protocol.control_records import build_control_batch
from kafkalite.protocol.records import Record, build_batch
from kafkalite.tests import suite_brokers

MS = datetime.timedelta(milliseconds=1)


def metadata(wire, *names, auto_create=True):
    req = md12.MetadataRequest(
        topics=tuple(md12.MetadataRequestTopic(topic_id=None, name=n) for n in names),
        allow_auto_topic_creation=auto_create,
        include_topic_authorized_operations=False,
    )
    return wire.request(req)


def produce(wire, topic, batch, partition=0, acks=-1):
    req = p9.ProduceRequest(
        transactional_id=None, acks=acks, timeout=1000 * MS,
        topic_data=(p9.TopicProduceData(name=topic, partition_data=(
            p9.PartitionProduceData(index=partition, records=bytes(batch)),)),),
    )
    resp = wire.request(req)
    return resp.responses[0].partition_responses[0]


def fetch(wire, topic, offset, *, max_wait_ms=0, min_bytes=1, isolation=0):
    req = f12.FetchRequest(
        max_wait=max_wait_ms * MS, min_bytes=min_bytes, max_bytes=10 << 20, isolation_level=isolation,
        session_id=0, session_epoch=-1,
        topics=(f12.FetchTopic(topic=topic, partitions=(
            f12.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20),)),),
        forgotten_topics_data=(), rack_id="",
    )
    resp = wire.request(req)
    return resp.responses[0].partitions[0]


def records(n, start=0):
    return [Record(key=f"k{i}".encode(), value=f"v{i}".encode(), headers=(), timestamp_ms=1_700_000_000_000 + i)
            for i in range(start, start + n)]


def test_api_versions_lists_what_is_served(wire):
    resp = wire.request(av3.ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert resp.error_code == ErrorCode.none
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[0] == (0, 13)  # Produce advertised from v0 like Kafka 4.x
    assert keys[1][1] >= 17 and keys[3][1] == 13
    names = {f.name: f.max_version_level for f in resp.finalized_features}
    assert names.get("transaction.version") == 2


def test_api_versions_unknown_version_answers_v0_with_error(broker):
    with WireClient(broker.bootstrap) as c:
        c.send_raw(struct.pack(">hhih", 18, 99, 7, 1) + b"x" + b"\0\0\0")
        frame = c.recv_frame()
        resp = decode_response(18, 0, frame, 7)
    assert resp.error_code == ErrorCode.unsupported_version
    # KIP-511: only the ApiVersions range, for the client's retry
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(18, 0, 4)]


def test_garbage_frame_closes_only_that_connection(broker):
    with WireClient(broker.bootstrap) as bad:
        bad.send_raw(b"\x00\x03\x00")  # shorter than a header
        with pytest.raises((ConnectionError, socket.timeout, OSError)):
            bad.recv_frame()
    with WireClient(broker.bootstrap) as good:
        assert metadata(good).brokers


def test_oversized_frame_is_refused_without_allocation(broker):
    s = socket.create_connection((broker.host, broker.port), timeout=5)
    s.sendall(struct.pack(">i", 2_000_000_000))
    assert s.recv(10) == b""  # closed
    s.close()


def test_unserved_api_version_closes_connection(broker):
    with WireClient(broker.bootstrap) as c:
        c.send_raw(struct.pack(">hhih", 0, 2, 1, 0))  # Produce v2: refused as in Kafka 4.x
        with pytest.raises(ConnectionError):
            c.recv_frame()


def test_metadata_auto_creates_and_keeps_topic_id(wire):
    """The Metadata that auto-creates a topic answers it UNKNOWN_TOPIC_OR_PARTITION with no id, as
    Kafka 4.4 answers while its controller creates the topic; the next Metadata finds it."""
    name = f"auto-{uuid.uuid4().hex[:6]}"
    creating = metadata(wire, name).topics[0]
    assert creating.error_code == ErrorCode.unknown_topic_or_partition and not creating.partitions
    assert creating.topic_id is None    # the all-zero id on the wire, which kio reads as no id
    t1 = metadata(wire, name).topics[0]
    assert t1.error_code == ErrorCode.none and len(t1.partitions) == 1
    r2 = metadata(wire, name)
    assert r2.topics[0].topic_id == t1.topic_id != uuid.UUID(int=0)


def test_metadata_auto_creates_at_once_when_instant():
    """auto.create.topics.instant=true: the creating Metadata answers the new topic itself."""
    with suite_brokers.running(config={"auto.create.topics.instant": True}) as b, WireClient(b.bootstrap) as wire:
        t = metadata(wire, "instant").topics[0]
        assert t.error_code == ErrorCode.none and len(t.partitions) == 1 and t.topic_id != uuid.UUID(int=0)


def test_metadata_unknown_topic_without_auto_create(wire):
    r = metadata(wire, f"nope-{uuid.uuid4().hex[:6]}", auto_create=False)
    assert r.topics[0].error_code == ErrorCode.unknown_topic_or_partition


def test_produce_then_fetch_round_trip(wire):
    name = f"rt-{uuid.uuid4().hex[:6]}"
    metadata(wire, name)
    r = produce(wire, name, build_batch(records(3)))
    assert r.error_code == ErrorCode.none and r.base_offset == 0
    r = produce(wire, name, build_batch(records(2, 3)))
    assert r.base_offset == 3
    p = fetch(wire, name, 4)  # inside the second batch: the whole batch comes back
    assert p.error_code == ErrorCode.none and p.high_watermark == 5
    assert struct.unpack_from(">q", p.records, 0)[0] == 3
    assert fetch(wire, name, 6).error_code == ErrorCode.offset_out_of_range


def test_produce_rejects_bad_crc_and_control_batches(wire):
    name = f"bad-{uuid.uuid4().hex[:6]}"
    metadata(wire, name)
    batch = build_batch(records(2))
    batch[-1] ^= 0xFF
    assert produce(wire, name, batch).error_code == ErrorCode.corrupt_message
    ctrl = build_control_batch(True, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp_ms=1)
    assert produce(wire, name, ctrl).error_code in (ErrorCode.invalid_record, ErrorCode.corrupt_message)
    assert produce(wire, f"unknown-{uuid.uuid4().hex}", build_batch(records(1))).error_code == \
        ErrorCode.unknown_topic_or_partition
    # nothing was appended
    assert fetch(wire, name, 0).high_watermark == 0


def test_idempotent_sequence_rules(wire):
    name = f"idem-{uuid.uuid4().hex[:6]}"
    metadata(wire, name)
    pid = 987654
    b0 = build_batch(records(2), producer_id=pid, producer_epoch=0, base_sequence=0)
    assert produce(wire, name, b0).base_offset == 0
    # a duplicate of a recent batch is acknowledged with its first offset, not appended again
    assert produce(wire, name, b0).base_offset == 0
    gap = build_batch(records(1), producer_id=pid, producer_epoch=0, base_sequence=5)
    assert produce(wire, name, gap).error_code == ErrorCode.out_of_order_sequence_number
    nxt = build_batch(records(1), producer_id=pid, producer_epoch=0, base_sequence=2)
    assert produce(wire, name, nxt).base_offset == 2
    # a new epoch must start at 0
    bad_epoch = build_batch(records(1), producer_id=pid, producer_epoch=1, base_sequence=3)
    assert produce(wire, name, bad_epoch).error_code == ErrorCode.out_of_order_sequence_number
    new_epoch = build_batch(records(1), producer_id=pid, producer_epoch=1, base_sequence=0)
    assert produce(wire, name, new_epoch).base_offset == 3
    old_epoch = build_batch(records(1), producer_id=pid, producer_epoch=0, base_sequence=3)
    assert produce(wire, name, old_epoch).error_code == ErrorCode.invalid_producer_epoch
    assert fetch(wire, name, 0).high_watermark == 4


def test_fetch_long_poll_wakes_on_append(controls_broker):
    import threading
    import time
    name = f"poll-{uuid.uuid4().hex[:6]}"
    controls_broker.controls.record_requests()
    with WireClient(controls_broker.bootstrap) as w:
        metadata(w, name)
    result = {}
    max_wait_ms = 60_000

    def waiter():
        with WireClient(controls_broker.bootstrap, timeout=max_wait_ms / 1000 + 30) as w:
            t0 = time.monotonic()
            result["p"] = fetch(w, name, 0, max_wait_ms=max_wait_ms)
            result["t"] = time.monotonic() - t0

    th = threading.Thread(target=waiter)
    th.start()
    # the Fetch is dispatched (the request log records it as its handler starts, on the broker's one
    # loop) and finds nothing: it waits until the append wakes it
    wait_until(lambda: controls_broker.controls.requests().of("Fetch").where(topic=name), 30,
               what="the long-polling Fetch to reach the broker")
    with WireClient(controls_broker.bootstrap) as w:
        produce(w, name, build_batch(records(1)))
    th.join(max_wait_ms / 1000 + 30)
    assert not th.is_alive()
    assert len(result["p"].records) > 0
    # woken by the append, not by max_wait_ms (a minute: far beyond any load's delay)
    assert result["t"] < max_wait_ms / 1000


def test_list_offsets_earliest_latest_timestamp(wire):
    name = f"lo-{uuid.uuid4().hex[:6]}"
    metadata(wire, name)
    produce(wire, name, build_batch(records(5)))

    def lo(ts):
        req = lo9.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
            lo9.ListOffsetsTopic(name=name, partitions=(
                lo9.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=ts),)),))
        return wire.request(req).topics[0].partitions[0]

    assert lo(-2).offset == 0
    assert lo(-1).offset == 5
    assert lo(1_700_000_000_002).offset == 2
    assert lo(-3).offset == 4
    assert lo(1_800_000_000_000).offset == -1


def test_frames_larger_than_the_receive_buffer(wire):
    """A 2 MiB produce arrives in a frame larger than the server's receive buffer."""
    name = f"big-{uuid.uuid4().hex[:6]}"
    req = md12.MetadataRequest(topics=(md12.MetadataRequestTopic(topic_id=None, name=name),),
                               allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    wire.request(req)
    import kio.schema.incremental_alter_configs.v1.request as iac
    wire.request(iac.IncrementalAlterConfigsRequest(validate_only=False, resources=(
        iac.AlterConfigsResource(resource_type=2, resource_name=name, configs=(
            iac.AlterableConfig(name="max.message.bytes", config_operation=0, value=str(4 << 20)),)),)))
    value = bytes(range(256)) * (8 << 10)
    r = produce(wire, name, build_batch([Record(key=b"k", value=value, headers=(), timestamp_ms=1)]))
    assert r.error_code == ErrorCode.none and r.base_offset == 0
    from kafkalite.protocol.records import decode_records
    p = fetch(wire, name, 0)
    assert decode_records(p.records)[0].value == value
