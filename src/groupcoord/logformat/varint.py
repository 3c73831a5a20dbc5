"""Zigzag varints as used inside Kafka record batch v2 records.

Mirrors ``org.apache.kafka.common.utils.ByteUtils`` (``writeVarint``/``readVarint``,
``writeVarlong``/``readVarlong``). Kept local to ``logformat`` so record decoding does not
depend on ``groupcoord.wire``; both implement the same protobuf-style encoding.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; they raise ``VarintError``
(a ``ValueError``) on truncated input or an over-long encoding instead of ``IndexError``.
"""

from __future__ import annotations

from typing import TypeAlias

Buffer: TypeAlias = bytes | bytearray | memoryview


class VarintError(ValueError):
    """A varint ran past the end of its buffer or used too many bytes."""


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` (a signed 64-bit int) as a zigzag varint/varlong."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def varint_size(value: int) -> int:
    """Bytes ``write_varint(value)`` would produce."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read a zigzag varint (or varlong; Kafka's encodings are identical) at ``pos``."""
    b = buf
    try:
        byte = b[pos]
        if byte < 0x80:  # single-byte fast path: the common case for deltas and lengths
            return (byte >> 1) ^ -(byte & 1), pos + 1
        result = byte & 0x7F
        shift = 7
        pos += 1
        while True:
            byte = b[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if shift > 63:
                raise VarintError("varint longer than 10 bytes")
    except IndexError:
        raise VarintError("truncated varint") from None
    return (result >> 1) ^ -(result & 1), pos
