"""The broker's clock as a control: LogAppendTime, group session timeouts, transaction timeouts,
retention and producer expiration all follow `advance-clock`, at once; a manual clock stands
still until advanced."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaException, Producer
from kio.schema.errors import ErrorCode

import kafkalite
from compat_tests.differ.core import request
from kafkalite.protocol.client import WireClient
from compat_tests.waiting import wait_until
from kafkalite.protocol.batch import iter_batches
from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.tests import suite_brokers

from .test_groups_wire import stable_member


def create(broker, partitions=1, **configs):
    name = f"clock-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap) as wire:
        resp = wire.request(request(19, 7, timeout=5000, validate_only=False, topics=[
            {"name": name, "num_partitions": partitions, "replication_factor": 1,
             "configs": [{"name": k.replace("_", "."), "value": str(v)} for k, v in configs.items()]}]))
        assert resp.topics[0].error_code == ErrorCode.none, resp
    return name


def produce(wire, topic, timestamp_ms=None, **batch):
    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    data = bytes(build_batch([Record(key=None, value=b"v", timestamp_ms=ts)], **batch))
    resp = wire.request(request(0, 9, transactional_id=None, acks=-1, timeout=5000, topic_data=[
        {"name": topic, "partition_data": [{"index": 0, "records": data}]}]))
    part = resp.responses[0].partition_responses[0]
    assert part.error_code == ErrorCode.none, part
    return part


def record_timestamps(wire, topic):
    resp = wire.request(request(1, 12, max_wait=0, min_bytes=1, isolation_level=0, session_id=0, session_epoch=-1,
                                topics=[{"topic": topic, "partitions": [
                                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]))
    data = resp.responses[0].partitions[0].records or b""
    return [r.timestamp for pos, _ in iter_batches(data) for r in decode_records(data, pos)]


def test_manual_clock_stands_still_and_log_append_time_follows_it():
    with suite_brokers.running(controls=0, clock="manual") as broker:
        c = broker.controls
        state = c.clock()
        assert state["mode"] == "manual"
        time.sleep(0.05)
        assert c.clock()["now_ms"] == state["now_ms"]
        topic = create(broker, message_timestamp_type="LogAppendTime")
        with WireClient(broker.bootstrap) as wire:
            first = produce(wire, topic)
            assert c.advance_clock(ms=5000)["now_ms"] == state["now_ms"] + 5000
            second = produce(wire, topic)
            assert record_timestamps(wire, topic) == [state["now_ms"], state["now_ms"] + 5000]
            assert (first.log_append_time.timestamp() * 1000, second.log_append_time.timestamp() * 1000) == (
                state["now_ms"], state["now_ms"] + 5000)
        # back to system time: it goes on from where manual time stood, never backwards
        after = c.set_clock(mode="system")
        assert after["mode"] == "system" and after["now_ms"] >= state["now_ms"] + 5000
        with pytest.raises(kafkalite.ControlFailed, match="never goes backwards"):
            c.advance_clock(ms=-1)
        with pytest.raises(kafkalite.ControlFailed, match="mode must be one of system, manual"):
            c.set_clock(mode="sundial")


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(controls=0) as b:
        yield b


def test_advance_past_the_session_timeout_removes_the_member_at_once(broker):
    group = f"clock-group-{uuid.uuid4().hex[:6]}"
    with WireClient(broker.bootstrap) as wire:
        stable_member(wire, group)
        describe = request(15, 5, groups=[group], include_authorized_operations=False)
        assert [g.group_state for g in wire.request(describe).groups] == ["Stable"]
        broker.controls.advance_clock(ms=10_001)
        (g,) = wire.request(describe).groups
        assert (g.group_state, g.members) == ("Empty", ())


def test_advance_past_the_transaction_timeout_aborts_it_at_once(broker):
    topic = create(broker)
    tid = f"clock-tx-{uuid.uuid4().hex[:6]}"
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid,
                  "transaction.timeout.ms": 60_000})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, b"never committed")
    assert p.flush(10) == 0
    describe = request(65, 0, transactional_ids=[tid])
    with WireClient(broker.bootstrap) as wire:
        assert wire.request(describe).transaction_states[0].transaction_state == "Ongoing"
        broker.controls.advance_clock(ms=60_001)
        # the abort timer fired now, not at its next 10 s scan
        state = wire.request(describe).transaction_states[0]
        assert state.transaction_state in ("PrepareAbort", "CompleteAbort"), state
    with pytest.raises(KafkaException):
        p.commit_transaction(10)


def test_retention_follows_the_clock(broker):
    # LogAppendTime: the records carry the broker's time, which segment.ms and retention.ms measure
    topic = create(broker, retention_ms=3_600_000, segment_ms=60_000, message_timestamp_type="LogAppendTime")
    with WireClient(broker.bootstrap) as wire:
        produce(wire, topic)
        broker.controls.advance_clock(ms=60_001)
        produce(wire, topic)  # the first segment is older than segment.ms: this one rolls a new one
        earliest = request(2, 7, replica_id=-1, isolation_level=0, topics=[
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}]}])
        assert wire.request(earliest).topics[0].partitions[0].offset == 0
        # the first segment past retention.ms (the active one, 60 s younger, not yet: it would go
        # too, as on Kafka) and the next retention check (60 s of real time away): the check runs
        # at once, in a worker thread, and the first segment goes
        broker.controls.advance_clock(ms=3_600_000 - 30_000)
        wait_until(lambda: wire.request(earliest).topics[0].partitions[0].offset == 1, 10, 0.05,
                   "retention of the first segment")


def test_producer_state_expires_by_the_clock(broker):
    topic = create(broker)
    with WireClient(broker.bootstrap) as wire:
        produce(wire, topic, producer_id=4242, producer_epoch=0, base_sequence=0)
        describe = request(61, 0, topics=[{"name": topic, "partition_indexes": [0]}])
        (part,) = wire.request(describe).topics[0].partitions
        assert [p.producer_id for p in part.active_producers] == [4242]
        # producer.id.expiration.ms (1 day) and the hourly expiration scan
        broker.controls.advance_clock(ms=86_400_000 + 3_600_001)
        (part,) = wire.request(describe).topics[0].partitions
        assert part.active_producers == ()


def test_transactional_ids_expire_by_the_clock(broker):
    topic = create(broker)
    tid = f"clock-expire-{uuid.uuid4().hex[:6]}"
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, b"committed")
    p.commit_transaction(20)
    describe = request(65, 0, transactional_ids=[tid])
    with WireClient(broker.bootstrap) as wire:
        assert wire.request(describe).transaction_states[0].error_code == ErrorCode.none
        # transactional.id.expiration.ms (7 days) and the hourly expiration scan
        broker.controls.advance_clock(ms=7 * 86_400_000 + 3_600_001)
        assert wire.request(describe).transaction_states[0].error_code == ErrorCode.transactional_id_not_found


def test_bad_clock_mode_is_a_usage_error():
    import subprocess

    out = subprocess.run(kafkalite.broker_command(["--port", "0", "--clock", "sundial"]), capture_output=True,
                         text=True, timeout=60, env=kafkalite._broker_env())
    assert out.returncode == 2 and "--clock must be system or manual, not 'sundial'" in out.stderr
    assert "Traceback" not in out.stderr
