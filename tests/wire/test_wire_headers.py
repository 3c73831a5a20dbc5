"""Request/response headers: versions per api, Kafka's byte layout, client_id rules."""

from __future__ import annotations

import pytest

from groupcoord.wire.api_keys import ApiKey
from groupcoord.wire.errors import DecodeError
from groupcoord.wire.headers import (
    RequestHeader,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
    request_header_version,
    response_header_bytes,
    response_header_version,
)


@pytest.mark.parametrize(("api", "version", "req", "resp"), [
    (ApiKey.JOIN_GROUP, 5, 1, 0), (ApiKey.JOIN_GROUP, 6, 2, 1), (ApiKey.JOIN_GROUP, 9, 2, 1),
    (ApiKey.API_VERSIONS, 2, 1, 0), (ApiKey.API_VERSIONS, 3, 2, 0), (ApiKey.API_VERSIONS, 4, 2, 0),
    (ApiKey.FETCH, 11, 1, 0), (ApiKey.FETCH, 12, 2, 1), (ApiKey.PRODUCE, 9, 2, 1),
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 2, 1), (ApiKey.METADATA, 8, 1, 0),
])
def test_header_versions(api: int, version: int, req: int, resp: int) -> None:
    assert request_header_version(api, version) == req
    assert response_header_version(api, version) == resp


def test_request_header_v2_client_id_is_not_compact() -> None:
    raw = (b"\x00\x0b\x00\x09\x00\x00\x00\x07" + b"\x00\x03abc" + b"\x01\x05\x02zz" + b"BODY")
    header, pos = decode_request_header(raw)
    assert header == RequestHeader(11, 9, 7, "abc")
    assert header.header_version == 2
    assert raw[pos:] == b"BODY"  # the unknown tag 5 in the header was skipped


def test_request_header_v1_null_client_id() -> None:
    header, pos = decode_request_header(b"\x00\x0b\x00\x05\x00\x00\x00\x01\xff\xffX")
    assert (header.client_id, header.header_version, pos) == (None, 1, 10)


def test_request_header_v0() -> None:
    header, pos = decode_request_header(b"\x00\x07\x00\x00\x00\x00\x00\x02", header_version=0)
    assert (header.api_key, header.correlation_id, header.client_id, pos) == (7, 2, None, 8)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_request_header_round_trip(version: int) -> None:
    header = RequestHeader(ApiKey.SYNC_GROUP, 5, -3, None if version == 0 else "client-é")
    out = bytearray()
    encode_request_header(out, header, version)
    decoded, pos = decode_request_header(bytes(out), header_version=version)
    assert decoded == header
    assert pos == len(out)


def test_response_headers() -> None:
    out = bytearray()
    encode_response_header(out, 42, 0)
    assert bytes(out) == b"\x00\x00\x00\x2a"
    out = bytearray()
    encode_response_header(out, 42, 1)
    assert bytes(out) == b"\x00\x00\x00\x2a\x00" == response_header_bytes(42, 1)
    assert decode_response_header(b"\x00\x00\x00\x2a\x01\x00\x00", 0, 1) == (42, 7)


@pytest.mark.parametrize("raw", [b"", b"\x00\x0b\x00", b"\x00\x0b\x00\x09\x00\x00\x00\x07\x00",
                                 b"\x00\x0b\x00\x09\x00\x00\x00\x07\x00\x05ab",
                                 b"\x00\x0b\x00\x09\x00\x00\x00\x07\xff\xfe",
                                 b"\x00\x0b\x00\x09\x00\x00\x00\x07\x00\x01\xff",
                                 b"\x00\x0b\x00\x09\x00\x00\x00\x07\x00\x00\x01\x01\x09"])
def test_bad_request_headers(raw: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_request_header(raw)
