"""Framing: size-prefixed Kafka frames read straight from the socket, and responses made of bytes
and file regions written back.

Rules:
- A frame is a 4-byte big-endian size and that many bytes; a size below 0 or above the reader's
  limit is MalformedRequest (the connection loop closes the connection with a log line). The
  limit is socket.request.max.bytes, and sasl.server.max.receive.size on a SASL listener until
  the connection is authenticated (as Kafka since CVE-2022-34917).
- Memory follows the bytes that arrive, never the size a header claims: a small frame is a
  read-only view into the reader's one receive buffer (an anonymous mmap whose pages are backed
  only once data lands in them), valid until the next read_frame (requests of a connection are
  handled one at a time and kio copies what it decodes); a frame larger than that buffer grows
  as its bytes come. A header announcing 64 MiB that is never followed costs nothing.
- queued.max.request.bytes (RequestMemoryPool) bounds the frames all connections hold at once,
  as Kafka's SimpleMemoryPool in its non-strict mode: a frame's announced size is taken from the
  pool when its header is read, if anything is left, and given back by `release` (the connection
  loop calls it once the request is decoded, as Kafka releases a parsed request's buffer), at the
  latest when the next frame is read; while nothing is left, connections wait at their next frame header (no
  more is read from their sockets) until memory is given back. A frame once granted always
  completes, so connections never wait on each other's half-read frames. -1 (Kafka's default):
  no bound.
- File regions (Fetch) go out with os.sendfile on a plain TCP socket and are read and sent like
  bytes on any other stream (TLS).
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
from typing import Any, cast

import trio

from kafkalite.protocol.messages import MalformedRequest
from kafkalite.protocol.regions import Chunk, FileRegion

log = logging.getLogger("kafkalite.server")
_SIZE = struct.Struct(">i")
_API_KEY = struct.Struct(">h")


class ConnectionClosed(Exception):
    pass


class RequestMemoryPool:
    """queued.max.request.bytes: the request bytes all connections of a broker may hold at once,
    as Kafka's SimpleMemoryPool (non-strict: a reservation succeeds while anything is left, so
    the pool may go below zero by one frame; a limit of 0 or less bounds nothing)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.available = limit
        self._freed = trio.lowlevel.ParkingLot()
        self._logged_exhaustion = False

    @property
    def bounded(self) -> bool:
        return self.limit > 0

    async def reserve(self, size: int) -> None:
        """Take `size` bytes, first waiting while the pool is used up."""
        if self.limit <= 0:
            return
        while self.available <= 0:
            if not self._logged_exhaustion:
                self._logged_exhaustion = True
                log.warning("queued.max.request.bytes=%d is used up: connections wait at their next request "
                            "until memory is freed", self.limit)
            await self._freed.park()
        self.available -= size

    def release(self, size: int) -> None:
        if self.limit <= 0 or not size:
            return
        self.available += size
        if self.available > 0:
            self._logged_exhaustion = False
            self._freed.unpark_all()


class FrameReader:
    """Reads size-prefixed frames straight from the socket (the rules at the top of this module).

    Small frames are read-only views into one reusable receive buffer, valid until the next
    read_frame; a frame larger than that buffer is received through it into a buffer of its own
    that grows as the bytes arrive.
    """

    BUFFER_SIZE = 256 * 1024
    # once the buffer is drained after holding more than this, its pages go back to the kernel
    # (madvise DONTNEED): a connection that sent one large batch and went idle costs a page or
    # two again, not the 256 KiB it touched
    RELEASE_ABOVE = 64 * 1024

    def __init__(self, sock: Any, max_size: int, pool: RequestMemoryPool | None = None,
                 limit_name: str = "socket.request.max.bytes"):
        # a socket, or anything with an async recv_into (StreamSource over a TLS stream)
        self.sock = sock
        self.max_size = max_size
        # the setting that max_size comes from, for the log line of a refused frame
        self.limit_name = limit_name
        self.pool = pool
        # what this connection took from the pool for the frame last returned
        self.reserved = 0
        # anonymous mmap, not bytearray: its zero pages are only backed by memory once data
        # lands in them, so an idle connection costs a page or two, not the whole buffer
        self.buf = mmap.mmap(-1, self.BUFFER_SIZE)
        self.view = memoryview(self.buf)
        self.start = 0
        self.end = 0

    def set_limit(self, max_size: int, limit_name: str) -> None:
        """The largest frame from now on, and the setting it comes from."""
        self.max_size = max_size
        self.limit_name = limit_name

    def release(self) -> None:
        """Give back to the pool what the frame last returned took (the connection is done with it)."""
        if self.reserved and self.pool is not None:
            self.pool.release(self.reserved)
        self.reserved = 0

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
        self.release()
        while self.end - self.start < 4:
            await self._receive_more()
        (size,) = _SIZE.unpack_from(self.buf, self.start)
        if size < 0 or size > self.max_size:
            raise MalformedRequest(f"frame of {size} bytes exceeds {self.limit_name}={self.max_size}")
        if self.pool is not None and self.pool.bounded:
            await self.pool.reserve(size)
            self.reserved = size
        if size <= len(self.buf) - 4:
            while self.end - self.start - 4 < size:
                await self._receive_more()
            body_start = self.start + 4
            self.start = body_start + size
            return self.view[body_start : body_start + size].toreadonly()
        return await self._read_large(size)

    async def _read_large(self, size: int) -> memoryview:
        """A frame larger than the receive buffer: received through the buffer, appended to a
        buffer of its own as the bytes arrive (bytearray over-allocates by an eighth as it grows),
        so its memory is what was sent, never what the header announced."""
        body_start = self.start + 4
        frame = bytearray(self.view[body_start : self.end])
        self.start = self.end = 0
        while len(frame) < size:
            # never past this frame: the next frame's bytes stay for the receive buffer's reads
            n = await self.sock.recv_into(self.view[: min(size - len(frame), self.BUFFER_SIZE)])
            if not n:
                raise ConnectionClosed()
            frame += self.view[:n]
        if size > self.RELEASE_ABOVE:
            self.buf.madvise(mmap.MADV_DONTNEED, 0, self.BUFFER_SIZE)
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
