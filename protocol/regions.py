"""Responses whose record data stays in the segment file until the socket takes it.

A `FileRegion` stands for `length` bytes at `offset` of an open file. It is a `bytes` whose
`len()` is the region's length and whose content is empty, so kio encodes a response around
it as if the records were there: the length prefix is right and `write()` is called with the
region itself, where `encode_chunks` cuts the output into header bytes and file regions, in
order. The connection sends bytes as bytes and regions with `os.sendfile` (plain sockets) or
`read()` + send (any other stream). A region holds its file open (a pin in storage's cache of
open files) until `release()`, which the connection calls once the response is sent or
dropped.
"""

from __future__ import annotations

import os
from typing import Callable


class FileRegion(bytes):
    """`length` bytes at `offset` of descriptor `fd`, released by `release()`."""

    fd: int
    offset: int
    length: int
    _release: Callable[[], None] | None

    def __new__(cls, fd: int, offset: int, length: int, release: Callable[[], None] | None = None) -> FileRegion:
        self = super().__new__(cls)
        self.fd = fd
        self.offset = offset
        self.length = length
        self._release = release
        return self

    def __len__(self) -> int:
        return self.length

    def __bool__(self) -> bool:
        return self.length > 0

    def read(self) -> bytes:
        """The region's bytes (for streams that cannot send from a file)."""
        data = os.pread(self.fd, self.length, self.offset)
        if len(data) != self.length:
            raise OSError(f"file region of {self.length} bytes at {self.offset} is short ({len(data)})")
        return data

    def release(self) -> None:
        rel, self._release = self._release, None
        if rel is not None:
            rel()

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, offset={self.offset}, length={self.length})"

    # a region is not hashable or comparable by (empty) content
    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other


Chunk = bytes | bytearray | FileRegion


class ChunkWriter:
    """A write() target for kio's encoders: bytes accumulate, a FileRegion starts a new chunk."""

    __slots__ = ("chunks", "_buf", "size")

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self._buf = bytearray()
        self.size = 0

    def write(self, data: bytes | bytearray | memoryview | FileRegion) -> int:
        if type(data) is FileRegion:
            if self._buf:
                self.chunks.append(self._buf)
                self._buf = bytearray()
            if data.length:
                self.chunks.append(data)
            n = data.length
        else:
            self._buf += data
            n = len(data)
        self.size += n
        return n

    def finish(self) -> list[Chunk]:
        if self._buf:
            self.chunks.append(self._buf)
            self._buf = bytearray()
        return self.chunks
