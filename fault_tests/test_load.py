"""Many connections, many partitions and a client that never reads, on one broker (loopback,
bounded in count and time). The figures themselves come from `python -m bench.faults_load`."""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
import uuid

import pytest
from kio.schema.errors import ErrorCode

import kio.schema.metadata.v12.request as md12
from kafkalite.broker.tests.test_wire import fetch, metadata, produce, records
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.batch import iter_batches
from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.tests import suite_brokers

from .load import (
    api_versions_frame, broker_figures, create_partitions, fd_soft_limit, open_connections, raise_fd_limit,
)

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240)]

IDLE = 1000
ACTIVE = 20
TOPICS, PER_TOPIC = 10, 1000          # 10 000 partitions


@pytest.fixture(scope="module", autouse=True)
def fd_limit():
    # the broker inherits this: a thousand idle connections hold a thousand sockets
    have = raise_fd_limit(IDLE + 1024)
    if have < IDLE + 256:
        pytest.fail(f"RLIMIT_NOFILE is {have}; the load tests need about {IDLE + 256}")


def _active_client(bootstrap: str, topic: str, rounds: int, failures: list) -> None:
    try:
        with WireClient(bootstrap, timeout=30) as c:
            for i in range(rounds):
                r = produce(c, topic, build_batch(records(2, 2 * i)))
                if r.error_code != ErrorCode.none:
                    failures.append(f"produce: {r.error_code}")
                p = fetch(c, topic, 0)
                if p.error_code != ErrorCode.none or p.high_watermark < 2:
                    failures.append(f"fetch: {p.error_code} hw={p.high_watermark}")
    except Exception as exc:      # reported by the test below
        failures.append(repr(exc))


def test_a_thousand_connections_idle_and_active_stay_served():
    with suite_brokers.running() as broker:
        with WireClient(broker.bootstrap) as c:
            metadata(c, "warm")
        base = broker_figures(broker.pid)
        socks, _opened_in = open_connections(broker.bootstrap, IDLE, timeout=60)
        try:
            idle = broker_figures(broker.pid)
            topics = [f"act-{uuid.uuid4().hex[:6]}" for _ in range(ACTIVE)]
            with WireClient(broker.bootstrap) as c:
                metadata(c, *topics)
            failures: list[str] = []
            threads = [threading.Thread(target=_active_client, args=(broker.bootstrap, t, 10, failures))
                       for t in topics]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert not any(t.is_alive() for t in threads), "active clients did not finish in 60 s"
            assert not failures, failures[:5]
            # every idle connection is still served
            frame = api_versions_frame(correlation_id=2)
            for s in socks:
                s.setblocking(True)
                s.sendall(frame)
            deadline = time.monotonic() + 30
            for s in socks:
                s.settimeout(max(0.1, deadline - time.monotonic()))
                size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
                assert size > 0 and len(s.recv(size, socket.MSG_WAITALL)) == size
        finally:
            for s in socks:
                s.close()
        # every idle connection is held open (a few fds of the warm-up client may still be closing)
        assert idle["fds"] >= base["fds"] + IDLE - 5
        per_connection = (idle["rss"] - base["rss"]) / IDLE
        assert per_connection < 32 * 1024, f"{per_connection / 1024:.0f} KiB per idle connection"


def test_connections_idle_after_a_large_batch_give_their_receive_buffer_back():
    n = 100
    with suite_brokers.running() as broker:
        topic = f"big-{uuid.uuid4().hex[:6]}"
        with WireClient(broker.bootstrap) as c:
            metadata(c, topic)
            assert produce(c, topic, build_batch(records(1))).error_code == ErrorCode.none
        base = broker_figures(broker.pid)
        clients = [WireClient(broker.bootstrap, timeout=30) for _ in range(n)]
        try:
            big = build_batch([Record(b"k", b"x" * (150 * 1024), (), None)])   # fills most of the buffer
            for c in clients:
                assert produce(c, topic, big).error_code == ErrorCode.none
                metadata(c, topic)          # the next, small request drains the buffer
            held = broker_figures(broker.pid)
            per_connection = (held["rss"] - base["rss"]) / n
            assert per_connection < 32 * 1024, f"{per_connection / 1024:.0f} KiB per connection after a 150 KiB batch"
        finally:
            for c in clients:
                c.close()


def _fetch_one(c: WireClient, topic: str, part: int):
    import datetime
    import kio.schema.fetch.v12.request as f12
    resp = c.request(f12.FetchRequest(
        max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
        topics=(f12.FetchTopic(topic=topic, partitions=(f12.FetchPartition(
            partition=part, fetch_offset=0, partition_max_bytes=1 << 20),)),)))
    return resp.responses[0].partitions[0]


def test_ten_thousand_partitions_run_under_a_1024_descriptor_limit(tmp_path):
    """Segment files are opened on demand through a bounded cache: a broker started with the
    common `ulimit -n 1024` creates, serves, closes and reopens 10 000 partitions."""
    prefix = f"many-{uuid.uuid4().hex[:4]}"
    names = [f"{prefix}-{i}" for i in range(TOPICS)]
    rng = random.Random(7)
    picks = sorted({(rng.choice(names), rng.randrange(PER_TOPIC)) for _ in range(100)})
    with fd_soft_limit(1024), suite_brokers.running(data_dir=tmp_path / "data") as broker:
        create_partitions(broker.bootstrap, names, PER_TOPIC, timeout=180)
        with WireClient(broker.bootstrap, timeout=60) as c:
            md = c.request(md12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                include_topic_authorized_operations=False))
            mine = [t for t in md.topics if t.name.startswith(prefix)]
            assert sum(len(t.partitions) for t in mine) == TOPICS * PER_TOPIC
            for topic, part in picks:
                batch = build_batch([Record(b"k", f"{topic}/{part}".encode(), (), None)])
                assert produce(c, topic, batch, partition=part).error_code == ErrorCode.none
            for topic, part in picks[:20]:
                p = _fetch_one(c, topic, part)
                assert p.error_code == ErrorCode.none and p.high_watermark == 1
            fds = broker_figures(broker.pid)["fds"]
        assert fds < 1024, f"{fds} open descriptors"
        assert "Too many open files" not in broker.log_text()
    # a clean restart reopens every partition under the same limit, with every record in place
    with fd_soft_limit(1024), suite_brokers.running(data_dir=tmp_path / "data", timeout=120) as broker:
        with WireClient(broker.bootstrap, timeout=60) as c:
            for topic, part in picks:
                p = _fetch_one(c, topic, part)
                assert p.error_code == ErrorCode.none and p.high_watermark == 1, (topic, part)
                data = bytes(p.records)
                values = [r.value for pos, _h in iter_batches(data) for r in decode_records(data, pos)]
                assert values == [f"{topic}/{part}".encode()]
            assert broker_figures(broker.pid)["fds"] < 1024
        assert "Too many open files" not in broker.log_text()


def test_a_client_that_never_reads_does_not_block_others():
    with suite_brokers.running() as broker:
        topic = f"slow-{uuid.uuid4().hex[:6]}"
        with WireClient(broker.bootstrap) as c:
            metadata(c, topic)
            big = b"x" * (60 * 1024)
            for _i in range(16):       # about 1 MiB to fetch, again and again
                assert produce(c, topic, build_batch([Record(b"k", big, (), None)])).error_code == ErrorCode.none
        base_fds = broker_figures(broker.pid)["fds"]
        slow = WireClient(broker.bootstrap)
        try:
            slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            import datetime
            import kio.schema.fetch.v12.request as f12
            req = f12.FetchRequest(
                max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=16 << 20, isolation_level=0,
                session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
                topics=(f12.FetchTopic(topic=topic, partitions=(f12.FetchPartition(
                    partition=0, fetch_offset=0, partition_max_bytes=16 << 20),)),))
            slow.sock.settimeout(2)
            sent = 0
            try:
                for _ in range(64):      # ~64 MiB of responses asked for, none read
                    slow.send_only(req)
                    sent += 1
            except (socket.timeout, BlockingIOError):
                pass                     # the broker stopped reading: its sends to us are stuck
            assert sent >= 1
            time.sleep(0.5)
            # everyone else is served promptly meanwhile
            t0 = time.monotonic()
            with WireClient(broker.bootstrap, timeout=5) as c:
                assert metadata(c, topic).topics[0].error_code == ErrorCode.none
                assert produce(c, topic, build_batch(records(1))).error_code == ErrorCode.none
                p = fetch(c, topic, 0)
                assert p.error_code == ErrorCode.none and len(p.records) > 0
            assert time.monotonic() - t0 < 5
        finally:
            slow.close()
        # and the stuck connection goes away once its client does
        for _ in range(100):
            if broker_figures(broker.pid)["fds"] <= base_fds:
                break
            time.sleep(0.1)
        assert broker_figures(broker.pid)["fds"] <= base_fds, "the never-reading connection was not closed"
        assert "Traceback" not in broker.log_text()
