"""The field types of the coordinators' record keys and values (`__consumer_offsets`,
`__transaction_state`, `__share_group_state`), as Kafka's generated message classes write them:
int8..int64 big-endian, STRING (int16 length, -1 null) and COMPACT_STRING (uvarint length + 1,
0 null), BYTES and COMPACT_BYTES alike, UUID, compact array lengths and tagged fields.

Rules: `Writer` appends fields and `done()` gives the bytes; `Reader` reads them in order and
raises ValueError for a record that runs short, a varint longer than 64 bits or a null where
the schema has none (`*_not_null`), so a damaged record is one ValueError to its decoder.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def i8(self, v: int) -> "Writer":
        self.buf += struct.pack(">b", v)
        return self

    def i16(self, v: int) -> "Writer":
        self.buf += _I16.pack(v)
        return self

    def i32(self, v: int) -> "Writer":
        self.buf += _I32.pack(v)
        return self

    def i64(self, v: int) -> "Writer":
        self.buf += _I64.pack(v)
        return self

    def uvarint(self, v: int) -> "Writer":
        while True:
            b = v & 0x7F
            v >>= 7
            if v:
                self.buf.append(b | 0x80)
            else:
                self.buf.append(b)
                return self

    def _sized(self, data: bytes | None, length: Callable[[int], "Writer"], null: int, plus: int) -> "Writer":
        """`data` after `length(len(data) + plus)`, or `length(null)` alone for a null: STRING and
        BYTES (int16 / int32, -1 null, plus 0), COMPACT_STRING and COMPACT_BYTES (uvarint, 0 null,
        plus 1)."""
        if data is None:
            return length(null)
        length(len(data) + plus)
        self.buf += data
        return self

    def string(self, s: str | None) -> "Writer":
        return self._sized(None if s is None else s.encode(), self.i16, -1, 0)

    def cstring(self, s: str | None) -> "Writer":
        return self._sized(None if s is None else s.encode(), self.uvarint, 0, 1)

    def bytes_(self, b: bytes | None) -> "Writer":
        return self._sized(b, self.i32, -1, 0)

    def cbytes(self, b: bytes | None) -> "Writer":
        return self._sized(b, self.uvarint, 0, 1)

    def carray_len(self, n: int | None) -> "Writer":
        return self.uvarint(0 if n is None else n + 1)

    def uuid(self, u: uuid.UUID) -> "Writer":
        self.buf += u.bytes
        return self

    def no_tags(self) -> "Writer":
        return self.uvarint(0)

    def tags(self, fields: dict[int, bytes]) -> "Writer":
        """Tagged fields, in tag order: (tag, size, data) each."""
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag).uvarint(len(fields[tag]))
            self.buf += fields[tag]
        return self

    def done(self) -> bytes:
        return bytes(self.buf)


def _not_null(value: str | None) -> str:
    if value is None:
        raise ValueError("a null string where the record's schema has none")
    return value


class Reader:
    def __init__(self, data: bytes | memoryview) -> None:
        self.data = bytes(data)
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("record runs short")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def i8(self) -> int:
        return struct.unpack(">b", self._take(1))[0]

    def i16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def i32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def i64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self._take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def string(self) -> str | None:
        n = self.i16()
        return None if n < 0 else self._take(n).decode()

    def cstring(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self._take(n - 1).decode()

    def string_not_null(self) -> str:
        """A STRING field Kafka's schema makes non-nullable; a null one is a damaged record."""
        return _not_null(self.string())

    def cstring_not_null(self) -> str:
        """A COMPACT_STRING field Kafka's schema makes non-nullable; a null one is a damaged record."""
        return _not_null(self.cstring())

    def bytes_(self) -> bytes | None:
        n = self.i32()
        return None if n < 0 else self._take(n)

    def cbytes(self) -> bytes | None:
        n = self.uvarint()
        return None if n == 0 else self._take(n - 1)

    def carray_len(self) -> int | None:
        n = self.uvarint()
        return None if n == 0 else n - 1

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16))

    def tags(self) -> dict[int, bytes]:
        out = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            out[tag] = self._take(size)
        return out
