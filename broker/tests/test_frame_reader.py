"""FrameReader returns exactly the frames that were sent, however the bytes arrive."""

from __future__ import annotations

import struct

import pytest
import trio
from hypothesis import given, settings, strategies as st

from kafkalite.broker.framing import ConnectionClosed, FrameReader
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
