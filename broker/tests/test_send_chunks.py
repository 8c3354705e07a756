"""send_chunks: a response of header bytes and file regions arrives whole and in order, sent
with os.sendfile on a TCP socket and read + sent on any other stream (TLS)."""

from __future__ import annotations

import os

import pytest
import trio
import trio.testing

from kafkalite.broker.framing import send_chunks
from kafkalite.protocol.regions import FileRegion


@pytest.fixture
def data_file(tmp_path):
    data = os.urandom(3 << 20)
    path = tmp_path / "seg.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    yield fd, data
    os.close(fd)


def _chunks(fd):
    released = []
    chunks = [bytearray(b"\0\0\0\x10head"), FileRegion(fd, 3, 1000, lambda: released.append(1)), b"mid",
              FileRegion(fd, 5000, (3 << 20) - 5000), b"tail"]
    return chunks, released


def _expected(data):
    return b"\0\0\0\x10head" + data[3:1003] + b"mid" + data[5000:] + b"tail"


async def _read_all(stream, n):
    got = bytearray()
    while len(got) < n:
        chunk = await stream.receive_some(1 << 16)
        assert chunk
        got += chunk
    return bytes(got)


def test_regions_go_out_with_sendfile_on_a_tcp_socket(data_file):
    fd, data = data_file
    want = _expected(data)

    async def main():
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        client = await trio.open_tcp_stream("127.0.0.1", port)
        server = await listeners[0].accept()
        assert type(server) is trio.SocketStream
        chunks, released = _chunks(fd)
        result = {}
        async with trio.open_nursery() as nursery:
            async def reader():
                result["got"] = await _read_all(client, len(want))   # slower than the sender: EAGAIN paths
            nursery.start_soon(reader)
            result["sent"] = await send_chunks(server, chunks)
        assert result["sent"] == len(want)
        assert result["got"] == want
        for s in (client, server, *listeners):
            await s.aclose()

    trio.run(main)


def test_regions_are_read_and_sent_on_other_streams(data_file):
    fd, data = data_file
    want = _expected(data)

    async def main():
        left, right = trio.testing.memory_stream_pair()
        chunks, _ = _chunks(fd)
        result = {}
        async with trio.open_nursery() as nursery:
            async def reader():
                result["got"] = await _read_all(right, len(want))
            nursery.start_soon(reader)
            result["sent"] = await send_chunks(left, chunks)
        assert result == {"sent": len(want), "got": want}

    trio.run(main)


def test_a_region_past_the_end_of_its_file_fails_instead_of_sending_garbage(data_file):
    fd, data = data_file

    async def main():
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        client = await trio.open_tcp_stream("127.0.0.1", port)
        server = await listeners[0].accept()
        with pytest.raises(RuntimeError, match="ended"):
            await send_chunks(server, [b"x", FileRegion(fd, len(data) - 10, 20)])
        left, _right = trio.testing.memory_stream_pair()
        with pytest.raises(OSError, match="short"):
            await send_chunks(left, [FileRegion(fd, len(data) - 10, 20)])
        for s in (client, server, *listeners):
            await s.aclose()

    trio.run(main)
