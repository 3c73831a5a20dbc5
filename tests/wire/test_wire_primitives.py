"""Primitive readers and writers: known encodings, and DecodeError (only) on bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.wire import primitives as p
from groupcoord.wire.errors import DecodeError


@pytest.mark.parametrize(("value", "encoded"), [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
    (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
])
def test_uvarint_known(value: int, encoded: bytes) -> None:
    out = bytearray()
    p.write_uvarint(out, value)
    assert bytes(out) == encoded
    assert p.read_uvarint(encoded, 0) == (value, len(encoded))


@pytest.mark.parametrize(("value", "encoded"), [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01"),
    (2**31 - 1, b"\xfe\xff\xff\xff\x0f"), (-(2**31), b"\xff\xff\xff\xff\x0f"),
])
def test_varint_zigzag_known(value: int, encoded: bytes) -> None:
    out = bytearray()
    p.write_varint(out, value)
    assert bytes(out) == encoded
    assert p.read_varint(encoded, 0) == (value, len(encoded))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    out = bytearray()
    p.write_varlong(out, value)
    assert p.read_varlong(bytes(out), 0) == (value, len(out))


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(value: int) -> None:
    out = bytearray()
    p.write_varint(out, value)
    assert p.read_varint(bytes(out), 0) == (value, len(out))


def test_overlong_varints_rejected() -> None:
    with pytest.raises(DecodeError):
        p.read_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(DecodeError):
        p.read_uvarlong(b"\x80" * 10 + b"\x01", 0)


@pytest.mark.parametrize("reader", [
    p.read_int8, p.read_int16, p.read_int32, p.read_int64, p.read_uint16, p.read_uint32,
    p.read_float64, p.read_uvarint, p.read_varint, p.read_varlong, p.read_string,
    p.read_nullable_string, p.read_compact_string, p.read_bytes, p.read_compact_bytes,
    p.read_uuid, p.read_bool,
])
def test_truncated_input_raises_decode_error(reader: object) -> None:
    with pytest.raises(DecodeError):
        reader(b"", 0)  # type: ignore[operator]


def test_strings_and_bytes() -> None:
    out = bytearray()
    p.write_string(out, "hé")
    p.write_nullable_string(out, None)
    p.write_compact_string(out, "x")
    p.write_compact_nullable_string(out, None)
    p.write_bytes(out, b"ab")
    p.write_compact_bytes(out, memoryview(b"cd"))
    p.write_uuid(out, bytes(range(16)))
    buf = bytes(out)
    assert buf[:5] == b"\x00\x03h\xc3\xa9"
    value, pos = p.read_string(buf, 0)
    assert value == "hé"
    assert p.read_nullable_string(buf, pos)[0] is None
    value, pos = p.read_compact_string(buf, pos + 2)
    assert value == "x"
    assert p.read_compact_nullable_string(buf, pos) == (None, pos + 1)
    value, pos = p.read_bytes(buf, pos + 1)
    assert value == b"ab"
    value, pos = p.read_compact_bytes(buf, pos)
    assert value == b"cd"
    assert p.read_uuid(buf, pos) == (bytes(range(16)), len(buf))


def test_bad_lengths_and_utf8() -> None:
    with pytest.raises(DecodeError):
        p.read_nullable_string(b"\xff\xfe", 0)  # -2 is not null, it is invalid
    with pytest.raises(DecodeError):
        p.read_string(b"\xff\xff", 0)  # null where not nullable
    with pytest.raises(DecodeError):
        p.read_string(b"\x00\x05abc", 0)  # truncated
    with pytest.raises(DecodeError):
        p.read_string(b"\x00\x02\xc3\x28", 0)  # invalid utf-8
    with pytest.raises(DecodeError):
        p.read_nullable_bytes(b"\xff\xff\xff\xfe", 0)
    with pytest.raises(DecodeError):
        p.read_compact_string(b"\x00", 0)


def test_skip_tagged_fields() -> None:
    section = b"\x02" + b"\x01\x02ab" + b"\x90\x4e\x00"  # tag 1 (2 bytes), tag 10000 (empty)
    assert p.skip_tagged_fields(section + b"rest", 0) == len(section)
    with pytest.raises(DecodeError):
        p.skip_tagged_fields(b"\x01\x01\x05ab", 0)


def test_memoryview_input() -> None:
    assert p.read_int32(memoryview(b"\x00\x00\x01\x00"), 0) == (256, 4)
    assert p.read_compact_string(memoryview(b"\x03hi"), 0) == ("hi", 3)
