"""Compression codecs of record batches: the records section deflated and inflated the way
Kafka's clients frame each codec.

Rules:
- gzip is the standard library's; snappy, lz4 and zstd are the optional `cramjam` package,
  imported when a batch first needs it; without it such a batch raises UnsupportedCompression.
- snappy is written in xerial framing (the Java client's) and read in xerial or raw framing;
  lz4 is the LZ4 frame format with independent blocks (Kafka's KafkaLZ4BlockInputStream).
- A `level` is a topic's compression.gzip/lz4/zstd.level (KIP-390); None takes the codec's default.
"""

from __future__ import annotations

import struct
from typing import Any

from .batch import (COMPRESSION_GZIP, COMPRESSION_LZ4, COMPRESSION_NAMES, COMPRESSION_NONE, COMPRESSION_SNAPPY,
                    COMPRESSION_ZSTD, ReadableBuffer)

_I32 = struct.Struct(">i")


class UnsupportedCompression(RuntimeError):
    """The batch uses a codec we cannot decode here (cramjam missing, or an unknown codec id)."""


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")   # magic, version, compatible version
_XERIAL_BLOCK = 32 * 1024

_cramjam: Any = None      # optional (snappy, lz4, zstd): imported when a batch first needs it


def _need_cramjam(codec: int) -> Any:
    global _cramjam
    if _cramjam is None:
        try:
            import cramjam
        except ImportError:
            raise UnsupportedCompression(
                f"{COMPRESSION_NAMES.get(codec, codec)} batches need the optional 'cramjam' package "
                f"(pip install '.[compression]' in a kafkalite checkout)") from None
        _cramjam = cramjam
    return _cramjam


def decompress(codec: int, data: ReadableBuffer) -> bytes:
    """Inflate the records section of a batch compressed with `codec`."""
    if codec == COMPRESSION_NONE:
        return bytes(data)
    if codec == COMPRESSION_GZIP:
        import gzip

        return gzip.decompress(bytes(data))
    if codec == COMPRESSION_SNAPPY:
        cj = _need_cramjam(codec)
        data = bytes(data)
        if data.startswith(_XERIAL_MAGIC):
            # Kafka's Java client uses xerial snappy-java framing: a 16-byte header, then
            # blocks of int32 length + raw snappy.
            out = []
            p = _XERIAL_HEADER.size
            while p < len(data):
                (blen,) = _I32.unpack_from(data, p)
                p += 4
                out.append(bytes(cj.snappy.decompress_raw(data[p:p + blen])))
                p += blen
            return b"".join(out)
        return bytes(cj.snappy.decompress_raw(data))   # plain raw snappy, as some clients send
    if codec == COMPRESSION_LZ4:
        return bytes(_need_cramjam(codec).lz4.decompress(bytes(data)))   # LZ4 frame format
    if codec == COMPRESSION_ZSTD:
        return bytes(_need_cramjam(codec).zstd.decompress(bytes(data)))
    raise UnsupportedCompression(f"unknown compression codec id {codec}")


def compress(codec: int, data: ReadableBuffer, level: int | None = None) -> bytes:
    """Deflate a records section the way Kafka's clients frame each codec. `level` is a topic's
    compression.gzip/lz4/zstd.level (KIP-390); None or gzip's -1 take the codec's default."""
    if codec == COMPRESSION_NONE:
        return bytes(data)
    if codec == COMPRESSION_GZIP:
        import gzip

        return gzip.compress(bytes(data), compresslevel=6 if level is None or level < 0 else level)
    if codec == COMPRESSION_SNAPPY:
        cj = _need_cramjam(codec)
        parts = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)]
        for i in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cj.snappy.compress_raw(bytes(data[i:i + _XERIAL_BLOCK])))
            parts.append(_I32.pack(len(block)))
            parts.append(block)
        return b"".join(parts)
    if codec == COMPRESSION_LZ4:
        # Kafka's KafkaLZ4BlockInputStream decodes each block on its own: independent blocks.
        c = _need_cramjam(codec).lz4.Compressor(content_checksum=False, block_linked=False,
                                                **({} if level is None else {"level": level}))
        c.compress(bytes(data))
        return bytes(c.finish())
    if codec == COMPRESSION_ZSTD:
        if level is None:
            return bytes(_need_cramjam(codec).zstd.compress(bytes(data)))
        return bytes(_need_cramjam(codec).zstd.compress(bytes(data), level=level))
    raise UnsupportedCompression(f"unknown compression codec id {codec}")
