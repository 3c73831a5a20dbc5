"""Record batch compression codecs: gzip, snappy, lz4 and zstd through cramjam.

Mirrors ``org.apache.kafka.common.compress`` (``GzipCompression``, ``SnappyCompression``,
``Lz4Compression``, ``ZstdCompression``) and ``CompressionType``'s attribute ids.

Rules kept here:
- snappy is written the way the Java client writes it: xerial framing (``\\x82SNAPPY\\x00``,
  version 1, compatible version 1, then big-endian length-prefixed raw snappy blocks of at
  most 32 KiB input). Reading accepts xerial framing and plain raw snappy, because some
  non-Java clients send the latter.
- lz4 is the LZ4 frame format with independent blocks and no content checksum, which is what
  Kafka's ``KafkaLZ4BlockOutputStream`` produces and what its input stream requires (it
  decompresses each block on its own). Frames from pre-0.10 brokers with the broken header
  checksum are not supported.
- Errors from a codec surface as ``CompressionError`` (a ``ValueError``) so the batch layer
  can turn them into a corrupt-record error.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from enum import IntEnum
from typing import TypeAlias

import cramjam

Buffer: TypeAlias = bytes | bytearray | memoryview


class CompressionType(IntEnum):
    """Bits 0-2 of the record batch attributes, as Kafka's ``CompressionType.id``."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class CompressionError(ValueError):
    """Compressed data could not be decoded, or the codec id is unknown."""


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's SnappyOutputStream default block size
_BE_INT32 = struct.Struct(">i")


def _snappy_xerial_encode(data: Buffer) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        parts.append(_BE_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decode(data: Buffer) -> bytes:
    view = memoryview(data)
    if bytes(view[:8]) != _XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(view))
    # Header: magic, version int32, compatible-version int32; then (int32 length, block)*.
    pos = 16
    out = bytearray()
    end = len(view)
    while pos < end:
        if pos + 4 > end:
            raise CompressionError("truncated xerial snappy block length")
        (size,) = _BE_INT32.unpack_from(view, pos)
        pos += 4
        if size < 0 or pos + size > end:
            raise CompressionError("truncated xerial snappy block")
        out += cramjam.snappy.decompress_raw(view[pos : pos + size])
        pos += size
    return bytes(out)


def _lz4_encode(data: Buffer) -> bytes:
    comp = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
    comp.compress(bytes(data))
    return bytes(comp.finish())


Codec: TypeAlias = Callable[[Buffer], bytes]

# Kafka codec id -> (compress, decompress): the one table of what each codec is.
_CODECS: dict[int, tuple[Codec, Codec]] = {
    CompressionType.NONE: (bytes, bytes),
    CompressionType.GZIP: (lambda data: bytes(cramjam.gzip.compress(data)),
                           lambda data: bytes(cramjam.gzip.decompress(data))),
    CompressionType.SNAPPY: (_snappy_xerial_encode, _snappy_decode),
    CompressionType.LZ4: (_lz4_encode, lambda data: bytes(cramjam.lz4.decompress(data))),
    CompressionType.ZSTD: (lambda data: bytes(cramjam.zstd.compress(data)),
                           lambda data: bytes(cramjam.zstd.decompress(data))),
}


def _codec(codec: int) -> tuple[Codec, Codec]:
    pair = _CODECS.get(codec)
    if pair is None:
        raise CompressionError(f"unknown compression codec {codec}")
    return pair


def compress(codec: int, data: Buffer) -> bytes:
    """Compress ``data`` with the codec whose Kafka id is ``codec``."""
    encode = _codec(codec)[0]
    try:
        return encode(data)
    except cramjam.CompressionError as exc:
        raise CompressionError(str(exc)) from exc


def decompress(codec: int, data: Buffer) -> bytes:
    """Decompress ``data`` written with the codec whose Kafka id is ``codec``."""
    decode = _codec(codec)[1]
    try:
        return decode(data)
    except (cramjam.DecompressionError, cramjam.CompressionError) as exc:
        raise CompressionError(str(exc)) from exc
