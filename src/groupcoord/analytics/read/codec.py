"""Schema-driven decoder and encoder for the layouts in ``analytics.schema``.

Decoding turns key/value bytes into plain dicts keyed by Kafka's JSON field names; encoding
is the inverse and exists for the fixture generator and round-trip tests. Kafka's rules are
kept: classic (non-flexible) versions use int16-length strings, int32-length bytes and arrays;
flexible versions use unsigned-varint lengths plus one, and every struct ends with a tagged
field section (unknown tags are skipped). Fields absent from a version take their default
and are not written. Malformed input raises ``CodecError`` (a ``ValueError``).
"""

from __future__ import annotations

import struct
from typing import Any

from groupcoord.analytics.read.schema import F, Layout
from groupcoord.wire import primitives
from groupcoord.wire.errors import DecodeError
from groupcoord.wire.primitives import write_uvarint

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_FIXED = {"int8": _I8, "int16": _I16, "uint16": _U16, "int32": _I32, "int64": _I64}


class CodecError(ValueError):
    """A record key or value does not match its layout."""


def read_uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varint (the length encoding of flexible versions)."""
    try:
        return primitives.read_uvarint(buf, pos)
    except DecodeError as exc:
        raise CodecError(str(exc)) from None


class _Reader:
    """A cursor over one buffer; flexible decides the length encodings."""

    __slots__ = ("buf", "flexible", "pos")

    def __init__(self, buf: bytes | memoryview, pos: int, flexible: bool) -> None:
        self.buf, self.pos, self.flexible = buf, pos, flexible

    def fixed(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.buf):
            raise CodecError("truncated fixed-width field")
        (v,) = fmt.unpack_from(self.buf, self.pos)
        self.pos += fmt.size
        return int(v)

    def length(self, wide: bool) -> int:
        """A length prefix; -1 means null."""
        if self.flexible:
            n, self.pos = read_uvarint(self.buf, self.pos)
            return n - 1
        return self.fixed(_I32 if wide else _I16)

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise CodecError("truncated string or bytes field")
        v = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return v


def _read_value(r: _Reader, f: F, version: int) -> Any:
    t = f.type
    fmt = _FIXED.get(t)
    if fmt is not None:
        return r.fixed(fmt)
    if t == "uuid":
        return r.raw(16)
    if t == "string" or t == "bytes":
        n = r.length(t == "bytes")
        if n < 0:
            if not f.is_nullable(version) and f.tag is None:
                raise CodecError(f"null in non-nullable field {f.name}")
            return None
        v = r.raw(n)
        if t == "bytes":
            return v
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(f"bad utf-8 in {f.name}") from exc
    if t in ("[]int16", "[]int32", "[]string") or f.array:
        n = r.length(True)
        if n < 0:
            return None
        if t == "[]int32":
            return [r.fixed(_I32) for _ in range(n)]
        if t == "[]int16":
            return [r.fixed(_I16) for _ in range(n)]
        if t == "[]string":
            elem = F(f.name, "string")
            return [_read_value(r, elem, version) for _ in range(n)]
        return [_read_struct(r, f.fields, version) for _ in range(n)]
    if t == "struct":
        if f.is_nullable(version):
            # Kafka prefixes a nullable struct with an int8 presence marker (-1 null, 1 set).
            # Inside a tagged field some writers omit it; a struct here never starts with
            # 0x01/0xFF in practice (it starts with an int32 timeout), so peek to tell.
            marker = r.buf[r.pos] if r.pos < len(r.buf) else 0
            if (f.tag is None or marker in (1, 0xFF)) and r.fixed(_I8) < 0:
                return None
        return _read_struct(r, f.fields, version)
    raise CodecError(f"unsupported field type {t}")


def _read_struct(r: _Reader, fields: tuple[F, ...], version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged: dict[int, F] = {}
    for f in fields:
        if not f.present(version):
            out[f.name] = f.default
        elif f.tag is not None and r.flexible:
            out[f.name] = f.default
            tagged[f.tag] = f
        else:
            out[f.name] = _read_value(r, f, version)
    if r.flexible:
        count, r.pos = read_uvarint(r.buf, r.pos)
        for _ in range(count):
            tag, r.pos = read_uvarint(r.buf, r.pos)
            size, r.pos = read_uvarint(r.buf, r.pos)
            end = r.pos + size
            tf = tagged.get(tag)
            if tf is not None:
                out[tf.name] = _read_value(r, tf, version)
            r.pos = end  # unknown tags, and any slack in known ones, are skipped
    return out


def decode(layout: Layout, buf: bytes | memoryview, version: int, pos: int = 0) -> dict[str, Any]:
    """Decode one struct of ``layout`` at ``version`` from ``buf[pos:]``."""
    r = _Reader(buf, pos, layout.flexible(version))
    try:
        return _read_struct(r, layout.fields, version)
    except (struct.error, IndexError) as exc:
        raise CodecError(str(exc)) from exc


def decode_versioned(layout: Layout, buf: bytes | memoryview) -> tuple[int, dict[str, Any]]:
    """Decode ``int16 version`` + struct, the framing of record values and consumer protocol."""
    if len(buf) < 2:
        raise CodecError("missing version prefix")
    (version,) = _I16.unpack_from(buf, 0)
    return version, decode(layout, buf, version, 2)


# ---- encoding ------------------------------------------------------------------------------


def _w_length(out: bytearray, n: int, flexible: bool, wide: bool) -> None:
    if flexible:
        write_uvarint(out, n + 1)
    else:
        out += (_I32 if wide else _I16).pack(n)


def _write_value(out: bytearray, f: F, v: Any, version: int, flexible: bool) -> None:
    t = f.type
    fmt = _FIXED.get(t)
    if fmt is not None:
        out += fmt.pack(v)
    elif t == "uuid":
        out += v
    elif t in ("string", "bytes"):
        if v is None:
            _w_length(out, -1, flexible, t == "bytes")
        else:
            data = v.encode("utf-8") if t == "string" else bytes(v)
            _w_length(out, len(data), flexible, t == "bytes")
            out += data
    elif t in ("[]int16", "[]int32", "[]string") or f.array:
        if v is None:
            _w_length(out, -1, flexible, True)
            return
        _w_length(out, len(v), flexible, True)
        for item in v:
            if t == "[]int32":
                out += _I32.pack(item)
            elif t == "[]int16":
                out += _I16.pack(item)
            elif t == "[]string":
                _write_value(out, F(f.name, "string"), item, version, flexible)
            else:
                _write_struct(out, f.fields, item, version, flexible)
    elif t == "struct":
        if f.is_nullable(version):
            out += _I8.pack(-1 if v is None else 1)
            if v is None:
                return
        _write_struct(out, f.fields, v, version, flexible)
    else:
        raise CodecError(f"unsupported field type {t}")


def _write_struct(
    out: bytearray, fields: tuple[F, ...], obj: dict[str, Any], version: int, flexible: bool
) -> None:
    tagged: list[tuple[int, bytes]] = []
    for f in fields:
        if not f.present(version):
            continue
        v = obj.get(f.name, f.default)
        if f.tag is not None and flexible:
            if v != f.default:
                body = bytearray()
                _write_value(body, f, v, version, flexible)
                tagged.append((f.tag, bytes(body)))
            continue
        _write_value(out, f, v, version, flexible)
    if flexible:
        write_uvarint(out, len(tagged))
        for tag, data in sorted(tagged):
            write_uvarint(out, tag)
            write_uvarint(out, len(data))
            out += data


def encode(layout: Layout, obj: dict[str, Any], version: int) -> bytes:
    """Encode ``obj`` (Kafka JSON field names; missing fields take defaults) at ``version``."""
    out = bytearray()
    _write_struct(out, layout.fields, obj, version, layout.flexible(version))
    return bytes(out)


def encode_versioned(layout: Layout, obj: dict[str, Any], version: int) -> bytes:
    return _I16.pack(version) + encode(layout, obj, version)
