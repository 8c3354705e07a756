"""Framing: size-prefixed Kafka frames read straight from the socket, and responses made of bytes
and file regions written back.

Rules:
- A frame is a 4-byte big-endian size and that many bytes; a size below 0 or above
  socket.request.max.bytes is MalformedRequest (the connection loop closes the connection).
- A small frame is a read-only view into the reader's one receive buffer, valid until the next
  read_frame: requests of a connection are handled one at a time and kio copies what it decodes.
- File regions (Fetch) go out with os.sendfile on a plain TCP socket and are read and sent like
  bytes on any other stream (TLS).
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Any, cast

import trio

from kafkalite.protocol.messages import MalformedRequest
from kafkalite.protocol.regions import Chunk, FileRegion

_SIZE = struct.Struct(">i")
_API_KEY = struct.Struct(">h")


class ConnectionClosed(Exception):
    pass


class FrameReader:
    """Reads size-prefixed frames straight from the socket.

    Small frames are read-only views into one reusable receive buffer, valid until the next
    read_frame (requests of a connection are handled one at a time, and kio copies what it
    decodes out of the frame); a frame larger than that buffer is received directly into a
    buffer of its own size. Either way the request's bytes are not copied before kio reads them.
    """

    BUFFER_SIZE = 256 * 1024
    # once the buffer is drained after holding more than this, its pages go back to the kernel
    # (madvise DONTNEED): a connection that sent one large batch and went idle costs a page or
    # two again, not the 256 KiB it touched
    RELEASE_ABOVE = 64 * 1024

    def __init__(self, sock: Any, max_size: int):
        # a socket, or anything with an async recv_into (StreamSource over a TLS stream)
        self.sock = sock
        self.max_size = max_size
        # anonymous mmap, not bytearray: its zero pages are only backed by memory once data
        # lands in them, so an idle connection costs a page or two, not the whole buffer
        self.buf = mmap.mmap(-1, self.BUFFER_SIZE)
        self.view = memoryview(self.buf)
        self.start = 0
        self.end = 0

    async def _receive_more(self) -> None:
        if self.start == self.end:
            if self.end > self.RELEASE_ABOVE:
                self.buf.madvise(mmap.MADV_DONTNEED, 0, self.end - self.end % mmap.PAGESIZE)
            self.start = self.end = 0
        elif self.end == len(self.buf):
            pending = self.end - self.start
            self.buf[:pending] = self.buf[self.start : self.end]
            self.start, self.end = 0, pending
        n = await self.sock.recv_into(self.view[self.end :])
        if not n:
            raise ConnectionClosed()
        self.end += n

    def buffered_api_key(self) -> int | None:
        """The api key of the next request when the whole of it is already received, else None."""
        have = self.end - self.start
        if have < 6:
            return None
        (size,) = _SIZE.unpack_from(self.buf, self.start)
        if size < 2 or have - 4 < size:
            return None
        return _API_KEY.unpack_from(self.buf, self.start + 4)[0]

    async def read_frame(self) -> bytes | memoryview:
        while self.end - self.start < 4:
            await self._receive_more()
        (size,) = _SIZE.unpack_from(self.buf, self.start)
        if size < 0 or size > self.max_size:
            raise MalformedRequest(f"frame of {size} bytes exceeds socket.request.max.bytes={self.max_size}")
        if size <= len(self.buf) - 4:
            while self.end - self.start - 4 < size:
                await self._receive_more()
            body_start = self.start + 4
            self.start = body_start + size
            return self.view[body_start : body_start + size].toreadonly()
        body_start = self.start + 4
        frame: bytearray = bytearray(size)
        have = self.end - body_start
        frame[:have] = self.view[body_start : self.end]
        self.start = self.end = 0
        fview = memoryview(frame)
        while have < size:
            n = await self.sock.recv_into(fview[have:])
            if not n:
                raise ConnectionClosed()
            have += n
        # kio's native readers take read-only buffers only
        return memoryview(frame).toreadonly()


class StreamSource:
    """recv_into over a trio stream (a TLS stream has no socket to read from)."""

    def __init__(self, stream: trio.abc.ReceiveStream):
        self.stream = stream

    async def recv_into(self, view: memoryview) -> int:
        data = await self.stream.receive_some(len(view))
        n = len(data)
        view[:n] = data
        return n


async def send_chunks(stream: trio.abc.SendStream, chunks: list[Chunk]) -> int:
    """Send a response made of bytes and file regions, in order; returns the bytes sent.
    Regions go out with os.sendfile when the stream is a plain TCP socket (the record data
    never enters Python), and are read and sent like bytes on any other stream (TLS)."""
    sock = stream.socket if type(stream) is trio.SocketStream else None
    total = 0
    if sock is None:
        for c in chunks:
            data = c.read() if type(c) is FileRegion else c
            await stream.send_all(data)
            total += len(data)
        return total
    # no TCP_CORK around the chunks: uncorking did not push the tail out at once here (a
    # consumer waited ~200 ms per response); with TCP_NODELAY the header bytes go out alone
    out = sock.fileno()
    await trio.lowlevel.checkpoint_if_cancelled()
    for c in chunks:
        if type(c) is FileRegion:
            await _sendfile(sock, out, c)
        else:
            await _write(sock, out, cast(bytes, c))
        total += len(c)
    await trio.lowlevel.cancel_shielded_checkpoint()
    return total


async def _write(sock: Any, out: int, data: bytes) -> None:
    """os.write to the socket's descriptor until all of `data` is sent (the few header bytes
    between regions: trio's send_all costs more than the write itself)."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(out, view)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        view = view[n:]


async def _sendfile(sock: Any, out: int, region: FileRegion) -> None:
    offset, left = region.offset, region.length
    while left:
        try:
            n = os.sendfile(out, region.fd, offset, left)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        if n == 0:
            # the file is shorter than the region: the response cannot be completed
            raise RuntimeError(f"{region!r}: the file ended {left} bytes early")
        offset += n
        left -= n
