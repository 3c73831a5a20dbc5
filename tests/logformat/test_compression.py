"""Codecs: round trips, Kafka's framings (xerial snappy, lz4 frame with independent
blocks), and frames written by other implementations."""

from __future__ import annotations

import gzip
import os
import struct

import cramjam
import pytest
from kafka import codec as kafka_codec

from groupcoord.logformat.compression import (
    CompressionError,
    CompressionType,
    compress,
    decompress,
)

PAYLOADS = [b"", b"x", b"hello kafka " * 10, os.urandom(5000), b"ab" * 70_000,
            os.urandom(100_000)]


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize("size_index", range(len(PAYLOADS)))
def test_round_trip(codec: CompressionType, size_index: int) -> None:
    data = PAYLOADS[size_index]
    assert decompress(codec, compress(codec, data)) == data


def test_decompress_accepts_memoryview() -> None:
    data = b"abc" * 1000
    for codec in CompressionType:
        assert decompress(codec, memoryview(compress(codec, data))) == data


def test_gzip_from_stdlib() -> None:
    data = b"stdlib gzip " * 500
    assert decompress(CompressionType.GZIP, gzip.compress(data)) == data
    assert gzip.decompress(compress(CompressionType.GZIP, data)) == data


def test_snappy_is_xerial_framed_like_java() -> None:
    data = os.urandom(40_000) + b"z" * 40_000  # three 32 KiB blocks
    out = compress(CompressionType.SNAPPY, data)
    assert out[:8] == b"\x82SNAPPY\x00"
    assert struct.unpack(">ii", out[8:16]) == (1, 1)
    pos, blocks = 16, []
    while pos < len(out):
        (size,) = struct.unpack_from(">i", out, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(out[pos + 4 : pos + 4 + size])))
        pos += 4 + size
    assert [len(b) for b in blocks] == [32768, 32768, 14464]
    assert b"".join(blocks) == data


def test_snappy_raw_and_foreign_xerial() -> None:
    data = b"raw snappy " * 300
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(CompressionType.SNAPPY, raw) == data
    assert decompress(CompressionType.SNAPPY, kafka_codec.snappy_encode(data)) == data
    assert kafka_codec.snappy_decode(compress(CompressionType.SNAPPY, data)) == data


def test_lz4_frame_has_independent_blocks_and_no_content_checksum() -> None:
    out = compress(CompressionType.LZ4, b"lz4 " * 50_000)
    assert out[:4] == b"\x04\x22\x4d\x18"
    flg = out[4]
    assert flg >> 6 == 1  # frame format version 01
    assert flg & 0x20  # block independence: Kafka's Java reader needs it
    assert not flg & 0x04  # no content checksum
    assert not flg & 0x08  # no content size


def test_lz4_decodes_linked_blocks_and_checksums() -> None:
    data = b"linked " * 40_000
    foreign = bytes(cramjam.lz4.compress(data))  # cramjam default: linked, checksummed
    assert decompress(CompressionType.LZ4, foreign) == data
    assert decompress(CompressionType.LZ4, kafka_codec.lz4_encode(data)) == data
    assert kafka_codec.lz4_decode(compress(CompressionType.LZ4, data)) == data


def test_zstd_interop() -> None:
    data = b"zstd " * 10_000
    assert decompress(CompressionType.ZSTD, kafka_codec.zstd_encode(data)) == data
    assert kafka_codec.zstd_decode(compress(CompressionType.ZSTD, data)) == data


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_raises_compression_error(codec: int) -> None:
    with pytest.raises(CompressionError):
        decompress(codec, b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x10\x00xx"
                   if codec == 2 else b"not compressed at all")


def test_unknown_codec() -> None:
    with pytest.raises(CompressionError):
        compress(5, b"x")
    with pytest.raises(CompressionError):
        decompress(7, b"x")
