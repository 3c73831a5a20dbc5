"""Request and response headers (Kafka ``RequestHeader.json`` / ``ResponseHeader.json``).

Mirrors ``org.apache.kafka.common.requests.RequestHeader`` and ``ApiKeys.requestHeaderVersion``
/ ``responseHeaderVersion``:

- request header v0: api_key int16, api_version int16, correlation_id int32;
  v1 adds client_id (nullable string); v2 adds a tagged-fields section. The client_id stays a
  classic int16-length string even in v2 (``"flexibleVersions": "none"`` on that field) so a
  broker of any age can read the header of any ApiVersions request.
- response header v0: correlation_id int32; v1 adds a tagged-fields section.
- a request uses header v2 when its version is flexible, else v1; its response uses v1 when
  flexible, else v0, except ApiVersions responses, which always use v0 (a client that sent a
  too-new ApiVersions request must still be able to read the reply).

Hand-written rather than generated because it is on every request's path.
"""

from __future__ import annotations

import struct

from groupcoord.wire import api_key_numbers
from groupcoord.wire.api_key_numbers import FLEXIBLE_MIN
from groupcoord.wire.decode_error import DecodeError
from groupcoord.wire.primitives import Buffer, skip_tagged_fields

_HHI = struct.Struct(">hhi")
_H = struct.Struct(">h")
_I = struct.Struct(">i")


class RequestHeader:
    """A decoded request header; ``client_id`` is None in v0 or when sent as null."""

    __slots__ = ("api_key", "api_version", "client_id", "correlation_id", "header_version")

    def __init__(self, api_key: int, api_version: int, correlation_id: int,
                 client_id: str | None = None, header_version: int = 2) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.header_version = header_version

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RequestHeader):
            return NotImplemented
        return (self.api_key, self.api_version, self.correlation_id, self.client_id) == (
            other.api_key, other.api_version, other.correlation_id, other.client_id)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"RequestHeader(api_key={self.api_key}, api_version={self.api_version}, "
                f"correlation_id={self.correlation_id}, client_id={self.client_id!r}, "
                f"header_version={self.header_version})")


def is_flexible(api_key: int, api_version: int) -> bool:
    first = FLEXIBLE_MIN.get(api_key)
    return first is not None and api_version >= first


def request_header_version(api_key: int, api_version: int) -> int:
    return 2 if is_flexible(api_key, api_version) else 1


_API_VERSIONS = api_key_numbers.API_VERSIONS  # compared on every response


def response_header_flexible(api_key: int, request_flexible: bool) -> bool:
    """Whether the response carries header v1 (tagged fields): when the request version is
    flexible, except for ApiVersions, whose responses always use v0 (KIP-511: a client that
    sent a too-new ApiVersions request must still read the reply)."""
    return request_flexible and api_key != _API_VERSIONS


def response_header_version(api_key: int, api_version: int) -> int:
    return 1 if response_header_flexible(api_key, is_flexible(api_key, api_version)) else 0


def peek_request_header(buf: Buffer, start: int, end: int) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of the request frame at ``buf[start:end]``.

    The frame is addressed inside the bytes it arrived in and never copied: the broker calls
    this for every request before it knows whether the api key and version are served.
    """
    if end - start < 8:
        raise DecodeError(f"request header truncated ({end - start} bytes)")
    return _HHI.unpack_from(buf, start)


def read_client_id(buf: Buffer, start: int, end: int, flexible: bool) -> tuple[str | None, int]:
    """The client id of the v1/v2 request header of the frame at ``buf[start:end]`` (its
    tagged fields skipped when ``flexible``), and the absolute offset of the request body."""
    if end - start < 10:
        raise DecodeError("request header truncated")
    (length,) = _H.unpack_from(buf, start + 8)
    pos = start + 10
    client_id: str | None = None
    if length >= 0:
        if pos + length > end:
            raise DecodeError("client id runs past the frame")
        try:
            client_id = str(buf[pos : pos + length], "utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError("client id is not UTF-8") from exc
        pos += length
    elif length != -1:
        raise DecodeError(f"invalid client id length {length}")
    if flexible:
        pos = skip_tagged_fields(buf, pos)
        if pos > end:
            raise DecodeError("tagged field runs past the frame")
    return client_id, pos


def decode_request_header(buf: Buffer, pos: int = 0,
                          header_version: int | None = None) -> tuple[RequestHeader, int]:
    """Decode a request header; its version follows from the api key and version in it.

    For an api key this broker does not know, the header is read as v1: the fields up to
    client_id are the same in every version, and the caller must reject the request anyway.
    """
    end = len(buf)
    api_key, api_version, correlation_id = peek_request_header(buf, pos, end)
    if header_version is None:
        header_version = request_header_version(api_key, api_version)
    client_id = None
    if header_version >= 1:
        flexible = header_version >= 2 and api_key in FLEXIBLE_MIN
        client_id, pos = read_client_id(buf, pos, end, flexible)
    else:
        pos += 8
    header = RequestHeader(api_key, api_version, correlation_id, client_id, header_version)
    return header, pos


def encode_request_header(out: bytearray, header: RequestHeader, header_version: int) -> None:
    """Append a request header (used by tests and client-side tooling)."""
    out += _HHI.pack(header.api_key, header.api_version, header.correlation_id)
    if header_version >= 1:
        if header.client_id is None:
            out += b"\xff\xff"
        else:
            raw = header.client_id.encode()
            out += _H.pack(len(raw))
            out += raw
    if header_version >= 2:
        out.append(0)


def encode_response_header(out: bytearray, correlation_id: int, header_version: int) -> None:
    """Append a response header: correlation id, plus an empty tagged-fields section in v1."""
    out += _I.pack(correlation_id)
    if header_version >= 1:
        out.append(0)


def response_header_bytes(correlation_id: int, header_version: int) -> bytes:
    """The response header as bytes, for callers that assemble a list of chunks."""
    head = _I.pack(correlation_id)
    return head + b"\x00" if header_version >= 1 else head


def decode_response_header(buf: Buffer, pos: int, header_version: int) -> tuple[int, int]:
    """Decode a response header; returns ``(correlation_id, new_pos)``."""
    try:
        (correlation_id,) = _I.unpack_from(buf, pos)
    except struct.error as exc:
        raise DecodeError("truncated response header") from exc
    pos += 4
    if header_version >= 1:
        pos = skip_tagged_fields(buf, pos)
    return correlation_id, pos
