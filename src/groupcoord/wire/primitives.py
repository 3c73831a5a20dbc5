"""Kafka protocol primitive types: fixed-width ints, varints, strings, bytes, uuids.

Mirrors ``org.apache.kafka.common.protocol.{Readable,Writable,ByteUtils}``.

Rules kept here:
- readers take ``(buf, pos)`` and return ``(value, new_pos)``; ``buf`` may be ``bytes``,
  ``bytearray`` or a byte ``memoryview``;
- writers append to a ``bytearray``;
- every decoding failure raises :class:`~groupcoord.wire.errors.DecodeError`;
- unsigned varints are at most 5 bytes and varlongs at most 10, as in ``ByteUtils``.

It also holds the helpers the generated code calls on its slow paths.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, TypeVar

from groupcoord.wire.decode_error import DecodeError

Buffer = bytes | bytearray | memoryview
_T = TypeVar("_T")

UUID_ZERO = bytes(16)


class _Missing:
    """Sentinel for "argument not given" where the default is a fresh list or struct."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

#: One-byte unsigned varints, indexed by value (0..127): the common case of every length.
UVARINT_1 = tuple(bytes((i,)) for i in range(128))

# Struct errors and slicing surprises are all "the input is not a valid message".


def _fixed_reader(s: struct.Struct) -> Callable[[Buffer, int], tuple[Any, int]]:
    unpack_from = s.unpack_from
    size = s.size

    def read(buf: Buffer, pos: int) -> tuple[Any, int]:
        try:
            return unpack_from(buf, pos)[0], pos + size
        except struct.error as exc:
            raise DecodeError(f"truncated input at {pos}") from exc

    return read


def _fixed_writer(s: struct.Struct) -> Callable[[bytearray, Any], None]:
    pack = s.pack

    def write(out: bytearray, value: Any) -> None:
        out += pack(value)

    return write


read_int8 = _fixed_reader(_I8)
read_int16 = _fixed_reader(_I16)
read_uint16 = _fixed_reader(_U16)
read_int32 = _fixed_reader(_I32)
read_uint32 = _fixed_reader(_U32)
read_int64 = _fixed_reader(_I64)
read_float64 = _fixed_reader(_F64)
write_int8 = _fixed_writer(_I8)
write_int16 = _fixed_writer(_I16)
write_uint16 = _fixed_writer(_U16)
write_int32 = _fixed_writer(_I32)
write_uint32 = _fixed_writer(_U32)
write_int64 = _fixed_writer(_I64)
write_float64 = _fixed_writer(_F64)


def read_bool(buf: Buffer, pos: int) -> tuple[bool, int]:
    value, pos = read_int8(buf, pos)
    return value != 0, pos


def _read_unsigned(buf: Buffer, pos: int, max_shift: int) -> tuple[int, int]:
    result = 0
    shift = 0
    try:
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
            if shift > max_shift:
                raise DecodeError("varint is too long")
    except IndexError as exc:
        raise DecodeError(f"truncated varint at {pos}") from exc


def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (``ByteUtils.readUnsignedVarint``)."""
    return _read_unsigned(buf, pos, 28)


def read_uvarlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned varlong of at most 10 bytes."""
    return _read_unsigned(buf, pos, 63)


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zigzag-encoded signed 32-bit varint."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zigzag-encoded signed 64-bit varlong; also the record fields of batch v2."""
    try:
        first = buf[pos]
    except IndexError as exc:
        raise DecodeError(f"truncated varint at {pos}") from exc
    if first < 0x80:  # one byte: the common case of record deltas and lengths
        return (first >> 1) ^ -(first & 1), pos + 1
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _read_span(buf: Buffer, pos: int, length: int) -> tuple[Buffer, int]:
    end = pos + length
    if end > len(buf):
        raise DecodeError(f"truncated input: need {length} bytes at {pos}")
    return buf[pos:end], end


def _utf8(raw: Buffer) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError("invalid utf-8 in string") from exc


def _nullable_reader(read_length: Callable[[Buffer, int], tuple[int, int]],
                     convert: Callable[[Buffer], _T], what: str
                     ) -> Callable[[Buffer, int], tuple[_T | None, int]]:
    """A reader of `read_length`'s length (-1 = null, other negatives refused) + the bytes."""

    def read(buf: Buffer, pos: int) -> tuple[_T | None, int]:
        length, pos = read_length(buf, pos)
        if length < 0:
            if length != -1:
                raise DecodeError(f"negative {what} length {length}")
            return None, pos
        raw, pos = _read_span(buf, pos, length)
        return convert(raw), pos

    return read


def _compact_nullable_reader(convert: Callable[[Buffer], _T]
                             ) -> Callable[[Buffer, int], tuple[_T | None, int]]:
    """A reader of uvarint (length + 1, 0 = null) + the bytes."""

    def read(buf: Buffer, pos: int) -> tuple[_T | None, int]:
        length, pos = read_uvarint(buf, pos)
        if length == 0:
            return None, pos
        raw, pos = _read_span(buf, pos, length - 1)
        return convert(raw), pos

    return read


def _non_null_reader(read_nullable: Callable[[Buffer, int], tuple[_T | None, int]], null_error: str
                     ) -> Callable[[Buffer, int], tuple[_T, int]]:
    """`read_nullable` refusing a null with `null_error`."""

    def read(buf: Buffer, pos: int) -> tuple[_T, int]:
        value, pos = read_nullable(buf, pos)
        if value is None:
            raise DecodeError(null_error)
        return value, pos

    return read


# int16 length + utf-8; int32 length + raw bytes; their compact forms.
read_nullable_string = _nullable_reader(read_int16, _utf8, "string")
read_string = _non_null_reader(read_nullable_string, "non-nullable string was null")
read_compact_nullable_string = _compact_nullable_reader(_utf8)
read_compact_string = _non_null_reader(read_compact_nullable_string,
                                       "non-nullable compact string was null")
read_nullable_bytes = _nullable_reader(read_int32, bytes, "bytes")
read_bytes = _non_null_reader(read_nullable_bytes, "non-nullable bytes were null")
read_compact_nullable_bytes = _compact_nullable_reader(bytes)
read_compact_bytes = _non_null_reader(read_compact_nullable_bytes,
                                      "non-nullable compact bytes were null")


def read_uuid(buf: Buffer, pos: int) -> tuple[bytes, int]:
    raw, pos = _read_span(buf, pos, 16)
    return bytes(raw), pos


def skip_tagged_fields(buf: Buffer, pos: int) -> int:
    """Skip a whole tagged-fields section; unknown tags are never an error."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
    if pos > len(buf):
        raise DecodeError("tagged field runs past the end of the input")
    return pos


# -- writers -------------------------------------------------------------------------------


def write_bool(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)


def uvarint_bytes(value: int) -> bytes:
    """The unsigned varint encoding of ``value`` (callers keep it below 2**64)."""
    if value < 0x80:
        return UVARINT_1[value]
    if value < 0x4000:  # two bytes: lengths of records and of larger strings/arrays
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if value < 0x200000:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    parts = bytearray()
    while value >= 0x80:
        parts.append((value & 0x7F) | 0x80)
        value >>= 7
    parts.append(value)
    return bytes(parts)


def write_uvarint(out: bytearray, value: int) -> None:
    out += uvarint_bytes(value)


def write_varint(out: bytearray, value: int) -> None:
    out += uvarint_bytes(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    out += uvarint_bytes(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def write_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    raw = value.encode()
    out += _I16.pack(len(raw))
    out += raw


write_string = write_nullable_string


def write_compact_nullable_string(out: bytearray, value: str | None) -> None:
    """The utf-8 bytes as compact bytes."""
    write_compact_nullable_bytes(out, None if value is None else value.encode())


write_compact_string = write_compact_nullable_string


def write_nullable_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += _I32.pack(len(value))
    out += value


write_bytes = write_nullable_bytes


def write_compact_nullable_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out.append(0)
        return
    out += uvarint_bytes(len(value) + 1)
    out += value


write_compact_bytes = write_compact_nullable_bytes


def write_uuid(out: bytearray, value: bytes) -> None:
    if len(value) != 16:
        raise ValueError("a uuid is exactly 16 bytes")
    out += value


def write_tagged_fields(out: bytearray, tagged: list[tuple[int, Buffer]]) -> None:
    """Write a tagged-fields section from ``(tag, encoded value)`` pairs in tag order."""
    out += uvarint_bytes(len(tagged))
    for tag, data in tagged:
        out += uvarint_bytes(tag)
        out += uvarint_bytes(len(data))
        out += data


def raise_decode_error(message: str) -> None:
    """Raise :class:`DecodeError`; generated code calls this to keep its bodies short."""
    raise DecodeError(message)
