"""FrameReader returns exactly the frames that were sent, however the bytes arrive; its memory
follows the bytes that arrive, and queued.max.request.bytes holds connections at their next frame."""

from __future__ import annotations

import struct

import pytest
import trio
import trio.testing
from hypothesis import given, settings, strategies as st

from kafkalite.broker.framing import ConnectionClosed, FrameReader, RequestMemoryPool
from kafkalite.protocol.messages import MalformedRequest


class ChunkedSocket:
    """A fake socket that hands out the stream in the given chunk sizes."""

    def __init__(self, data: bytes, chunks: list[int]):
        self.data = data
        self.pos = 0
        self.chunks = list(chunks)

    async def recv_into(self, view) -> int:
        await trio.lowlevel.checkpoint()
        if self.pos >= len(self.data):
            return 0
        want = self.chunks.pop(0) if self.chunks else len(self.data)
        n = min(len(view), max(1, want), len(self.data) - self.pos)
        view[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def frames_of(payloads):
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads)


@settings(max_examples=60, deadline=None)
@given(
    payloads=st.lists(st.one_of(st.binary(max_size=300), st.integers(0, 600_000).map(lambda n: b"\x07" * n)),
                      min_size=1, max_size=6),
    chunks=st.lists(st.integers(1, 400_000), max_size=40),
)
def test_frames_survive_any_chunking(payloads, chunks):
    sock = ChunkedSocket(frames_of(payloads), chunks)

    async def main():
        reader = FrameReader(sock, max_size=1 << 30)
        got = [bytes(await reader.read_frame()) for _ in payloads]
        with pytest.raises(ConnectionClosed):
            await reader.read_frame()
        return got

    assert trio.run(main) == payloads


def test_oversized_frame_is_refused_before_reading_it():
    sock = ChunkedSocket(struct.pack(">i", 10_000) + b"x" * 10, [])

    async def main():
        await FrameReader(sock, max_size=1000).read_frame()

    with pytest.raises(MalformedRequest):
        trio.run(main)


def test_refusal_names_the_limit_in_force():
    sock = ChunkedSocket(struct.pack(">i", 600_000) + b"x" * 10, [])

    async def main():
        reader = FrameReader(sock, max_size=1 << 30)
        reader.set_limit(524288, "sasl.server.max.receive.size")
        await reader.read_frame()

    with pytest.raises(MalformedRequest, match=r"600000 bytes exceeds sasl.server.max.receive.size=524288"):
        trio.run(main)


class StallingSocket:
    """Sends `data`, then nothing more (the connection stays open)."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    async def recv_into(self, view) -> int:
        if self.pos >= len(self.data):
            await trio.sleep_forever()
        n = min(len(view), len(self.data) - self.pos)
        view[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def test_a_large_announced_frame_costs_what_arrived_not_what_it_claims():
    import tracemalloc

    arrived = 3 << 20
    sock = StallingSocket(struct.pack(">i", 64 << 20) + b"\x07" * arrived)

    async def main():
        reader = FrameReader(sock, max_size=1 << 30)
        with trio.move_on_after(0.5):
            await reader.read_frame()

    tracemalloc.start()
    try:
        trio.run(main)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the frame grows with its bytes (bytearray over-allocates an eighth); 64 MiB never appear
    assert peak < 2 * arrived, peak


def test_memory_pool_holds_connections_at_their_next_frame_until_memory_is_freed():
    pool = RequestMemoryPool(1000)
    first = FrameReader(ChunkedSocket(frames_of([b"a" * 1500, b"b"]), []), max_size=1 << 20, pool=pool)
    second = FrameReader(ChunkedSocket(frames_of([b"c" * 10]), []), max_size=1 << 20, pool=pool)

    async def main():
        # granted while anything is left (Kafka's non-strict pool): the pool goes below zero
        assert bytes(await first.read_frame()) == b"a" * 1500
        assert pool.available == -500
        got = []

        async def read_second():
            got.append(bytes(await second.read_frame()))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_second)
            await trio.testing.wait_all_tasks_blocked()
            assert not got, "a frame was granted while the pool was used up"
            # the first connection is done with its frame: reading the next one gives it back
            assert bytes(await first.read_frame()) == b"b"
        assert got == [b"c" * 10]
        first.release()
        second.release()
        assert pool.available == 1000

    trio.run(main)


def test_unbounded_pool_takes_nothing():
    pool = RequestMemoryPool(-1)
    reader = FrameReader(ChunkedSocket(frames_of([b"x" * 10]), []), max_size=1 << 20, pool=pool)
    assert trio.run(reader.read_frame) == b"x" * 10
    assert pool.available == -1 and reader.reserved == 0


def test_queued_max_request_bytes_below_one_largest_frame_is_refused(tmp_path):
    from kafkalite.broker.settings.broker_config import BrokerConfig
    from kafkalite.broker.settings.broker_keys import UnknownConfig

    with pytest.raises(UnknownConfig, match="queued.max.request.bytes must be larger or equal to socket.request"):
        BrokerConfig(data_dir=tmp_path, listeners=[], values={"queued.max.request.bytes": "1000"})
    config = BrokerConfig(data_dir=tmp_path, listeners=[], values={"queued.max.request.bytes": str(200 << 20)})
    assert config["queued.max.request.bytes"] == 200 << 20
    assert config["sasl.server.max.receive.size"] == 524288
