"""Request header parsing and response framing on raw frame bytes.

Mirrors `org.apache.kafka.common.requests.RequestHeader` / `ResponseHeader`, hand-written
because it runs for every request: precompiled structs, no intermediate objects. A frame
is addressed as (buffer, start, end) inside the bytes it arrived in, never copied. Header v1 = api_key, api_version,
correlation_id, nullable client_id; header v2 (flexible versions) adds tagged fields, which
are skipped. Every decoding problem raises `FrameError` so the connection can be closed.
"""

from __future__ import annotations

import struct

_HEAD = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_SIZE_CORR = struct.Struct(">ii")
API_VERSIONS_KEY = 18


class FrameError(ValueError):
    """The frame cannot be parsed as a Kafka request header; the connection is closed."""


def peek_header(buf: bytes, start: int, end: int) -> tuple[int, int, int]:
    """Return (api_key, api_version, correlation_id) of the frame at buf[start:end]."""
    if end - start < 8:
        raise FrameError(f"request header truncated ({end - start} bytes)")
    return _HEAD.unpack_from(buf, start)


def _read_uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 28:
            raise FrameError("bad varint in request header")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def read_client_id(buf: bytes, start: int, end: int, flexible: bool) -> tuple[str | None, int]:
    """Decode the client id (and skip header tagged fields when flexible) of the frame at
    buf[start:end]; return it and the absolute offset of the request body."""
    if end - start < 10:
        raise FrameError("request header truncated")
    (n,) = _I16.unpack_from(buf, start + 8)
    pos = start + 10
    client_id: str | None = None
    if n >= 0:
        if pos + n > end:
            raise FrameError("client id runs past the frame")
        try:
            client_id = buf[pos : pos + n].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FrameError("client id is not UTF-8") from exc
        pos += n
    elif n != -1:
        raise FrameError(f"bad client id length {n}")
    if flexible:
        count, pos = _read_uvarint(buf, pos, end)
        for _ in range(count):
            _tag, pos = _read_uvarint(buf, pos, end)
            size, pos = _read_uvarint(buf, pos, end)
            pos += size
            if pos > end:
                raise FrameError("tagged field runs past the frame")
    return client_id, pos


def response_head(correlation_id: int, body_len: int, flexible_header: bool) -> bytes:
    """Size prefix + response header; header v1 (flexible) adds an empty tagged-field section."""
    if flexible_header:
        return _SIZE_CORR.pack(body_len + 5, correlation_id) + b"\x00"
    return _SIZE_CORR.pack(body_len + 4, correlation_id)
