"""Random and mutated frames on many connections to a live broker.

Every connection must end in an answer or a close (never hang after the client half-closes),
the broker must keep answering, data acknowledged before must read back byte for byte, its
log must hold no traceback, and its open file descriptors must come back to where they were.
"""

from __future__ import annotations

import datetime
import random
import socket
import struct
import time
import uuid

import psutil
import pytest
from kio.schema.errors import ErrorCode

import kio.schema.api_versions.v3.request as av3
import kio.schema.create_topics.v7.request as ct7
import kio.schema.find_coordinator.v4.request as fc4
import kio.schema.list_offsets.v9.request as lo9
import kio.schema.metadata.v12.request as md12
from kafkalite.broker.tests.test_wire import fetch, metadata, produce, records
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import build_batch
from kafkalite.tests import suite_brokers

from .load import readable

pytestmark = [pytest.mark.faults, pytest.mark.fuzz, pytest.mark.timeout(180)]

CONNECTIONS = 300
AT_ONCE = 100
DEADLINE_S = 15.0


def seed_frames(client: WireClient, topic: str) -> list[bytes]:
    """Requests as clients send them (size prefix included) for the mutator to start from.
    Requests that may legitimately wait (Fetch, JoinGroup) are left out: a mutated wait time
    would hold the connection open by design."""
    ms = datetime.timedelta(milliseconds=1)
    import kio.schema.produce.v9.request as p9
    reqs = [
        av3.ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"),
        md12.MetadataRequest(topics=(md12.MetadataRequestTopic(topic_id=None, name=topic),),
                             allow_auto_topic_creation=False, include_topic_authorized_operations=True),
        fc4.FindCoordinatorRequest(key_type=0, coordinator_keys=("fuzz-group",)),
        ct7.CreateTopicsRequest(topics=(ct7.CreatableTopic(name=f"fz-{uuid.uuid4().hex[:6]}", num_partitions=1,
                                                           replication_factor=1, assignments=(), configs=()),),
                                timeout=1000 * ms, validate_only=True),
        lo9.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(lo9.ListOffsetsTopic(name=topic, partitions=(
            lo9.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1),)),)),
        p9.ProduceRequest(transactional_id=None, acks=1, timeout=1000 * ms, topic_data=(p9.TopicProduceData(
            name=topic, partition_data=(p9.PartitionProduceData(index=0, records=bytes(build_batch(records(2)))),)),)),
    ]
    out = []
    for i, r in enumerate(reqs):
        payload = client.encode(r, 1000 + i)
        out.append(struct.pack(">i", len(payload)) + payload)
    return out


def mutate(rng: random.Random, seeds: list[bytes]) -> bytes:
    data = bytearray(rng.choice(seeds))
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:                       # flip bits
            data[min(pos, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:                              # random bytes over the body
            n = rng.randint(1, 8)
            data[pos:pos + n] = rng.randbytes(n)
        elif op == 2:                              # truncate
            del data[pos:]
        elif op == 3:                              # insert
            data[pos:pos] = rng.randbytes(rng.randint(1, 16))
        elif op == 4 and len(data) > 4:            # a lying size prefix
            struct.pack_into(">i", data, 0, rng.choice([-1, 0, 3, len(data), len(data) * 2, 2**31 - 1,
                                                         rng.randrange(-2**31, 2**31)]))
        elif op == 5 and len(data) >= 8:           # another api key / version
            struct.pack_into(">hh", data, 4, rng.randrange(-2, 80), rng.randrange(-2, 20))
        else:                                      # pure noise
            data = bytearray(rng.randbytes(rng.randint(0, 64)))
    if len(data) >= 4 and rng.random() < 0.7:      # mostly keep the prefix honest so bodies get parsed
        struct.pack_into(">i", data, 0, len(data) - 4)
    return bytes(data)


def drive(address: tuple[str, int], frames: list[list[bytes]]) -> tuple[int, int, list[int]]:
    """Send each connection's frames, half-close, read to EOF. Returns (answered, closed, stuck ids)."""
    socks = {}
    for i, fs in enumerate(frames):
        s = socket.create_connection(address, timeout=5)
        try:
            s.sendall(b"".join(fs))
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass        # the broker closed it already
        s.setblocking(False)
        socks[s] = [i, 0]
    deadline = time.monotonic() + DEADLINE_S
    answered = closed = 0
    while socks and time.monotonic() < deadline:
        ready = readable(socks, 0.5)
        for s in ready:
            try:
                chunk = s.recv(1 << 16)
            except (ConnectionResetError, BlockingIOError):
                chunk = b""
            if chunk:
                socks[s][1] += len(chunk)
                continue
            answered += socks[s][1] > 0
            closed += 1
            s.close()
            del socks[s]
    stuck = [v[0] for v in socks.values()]
    for s in socks:
        s.close()
    return answered, closed, stuck


def test_mutated_frames_on_many_connections_leave_the_broker_serving_and_data_intact():
    rng = random.Random(20261124)
    with suite_brokers.running(log_level="INFO") as broker:
        proc = psutil.Process(broker.pid)
        topic = f"fz-{uuid.uuid4().hex[:6]}"
        with WireClient(broker.bootstrap) as c:
            metadata(c, topic)
            acked = [produce(c, topic, build_batch(records(3, 3 * i))) for i in range(5)]
            assert all(a.error_code == ErrorCode.none for a in acked)
            before = bytes(fetch(c, topic, 0).records)
            seeds = seed_frames(c, topic)
        fds_before = proc.num_fds()
        host, port = broker.bootstrap.rsplit(":", 1)
        total_answered = total_closed = 0
        stuck_frames = []
        for _start in range(0, CONNECTIONS, AT_ONCE):
            batch = [[mutate(rng, seeds) for _ in range(rng.randint(1, 3))] for _ in range(AT_ONCE)]
            answered, closed, stuck = drive((host, int(port)), batch)
            total_answered += answered
            total_closed += closed
            stuck_frames += [batch[i] for i in stuck]
        assert not stuck_frames, f"{len(stuck_frames)} connections neither answered nor closed: {stuck_frames[:3]!r}"
        assert total_closed == CONNECTIONS
        assert total_answered > 0         # some mutated frames are still valid requests
        assert broker.process.poll() is None, "the broker died"
        with WireClient(broker.bootstrap) as c:
            assert metadata(c, topic).topics[0].error_code == ErrorCode.none
            after = bytes(fetch(c, topic, 0).records)
            assert after[:len(before)] == before, "acknowledged data changed"
        # connections are closed on the broker's side too
        for _ in range(50):
            if proc.num_fds() <= fds_before + 2:
                break
            time.sleep(0.1)
        assert proc.num_fds() <= fds_before + 2, f"file descriptors: {fds_before} before, {proc.num_fds()} after"
        text = broker.log_text()
        assert "Traceback" not in text, text[text.index("Traceback") - 500:][:4000]
        assert "closing connection" in text      # the bad frames were seen and logged
