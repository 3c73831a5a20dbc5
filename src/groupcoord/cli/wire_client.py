"""A small blocking Kafka client for the admin CLI, built on the generated codec.

It speaks to one broker: negotiates versions with ApiVersions once, then sends one request at
a time and decodes the response. Enough for `groupcoord groups`; not a general client (no
metadata refresh, no retries, no coordinator discovery across brokers).
"""

from __future__ import annotations

import socket
import ssl
import struct
from typing import Any, Self

from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.headers import (
    RequestHeader,
    decode_response_header,
    encode_request_header,
    request_header_version,
    response_header_version,
)

_SIZE = struct.Struct(">i")
CLIENT_ID = "groupcoord-cli"


class KafkaError(Exception):
    """A response error code the CLI cannot continue past."""

    def __init__(self, code: int, context: str) -> None:
        self.code = code
        name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
        super().__init__(f"{context}: {name}")


def check(code: int, context: str) -> None:
    if code != 0:
        raise KafkaError(code, context)


class WireClient:
    """One connection to one broker, with negotiated API versions."""

    def __init__(self, bootstrap: str, timeout_s: float = 30.0,
                 tls: ssl.SSLContext | None = None) -> None:
        host, _, port = bootstrap.rpartition(":")
        sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s)
        self._sock = tls.wrap_socket(sock, server_hostname=host or "127.0.0.1") if tls else sock
        self._correlation = 0
        self._versions: dict[int, tuple[int, int]] = {}
        response = self._send(ApiVersionsRequest(), 0)
        check(response.error_code, "ApiVersions")
        self._versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def version_for(self, request_cls: Any, wanted: int) -> int:
        """The highest version <= wanted that both sides serve."""
        lo, hi = self._versions.get(request_cls.API_KEY, (-1, -1))
        version = min(wanted, hi, request_cls.MAX_VERSION)
        if version < max(lo, request_cls.MIN_VERSION):
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, request_cls.__name__)
        return version

    def request(self, message: Any, wanted_version: int) -> tuple[Any, int]:
        """Send `message` at the best version <= wanted; returns (response, version used)."""
        version = self.version_for(type(message), wanted_version)
        return self._send(message, version), version

    def _send(self, message: Any, version: int) -> Any:
        from groupcoord.wire.messages import RESPONSES

        api_key = type(message).API_KEY
        self._correlation += 1
        out = bytearray()
        header = RequestHeader(api_key, version, self._correlation, CLIENT_ID)
        encode_request_header(out, header, request_header_version(api_key, version))
        message.encode_into(out, version)
        self._sock.sendall(_SIZE.pack(len(out)) + out)
        body = self._recv_frame()
        correlation, pos = decode_response_header(body, 0, response_header_version(api_key, version))
        if correlation != self._correlation:
            raise ConnectionError("correlation id mismatch")
        response_cls = ApiVersionsResponse if api_key == 18 else RESPONSES[api_key]
        response, _ = response_cls.decode(body, pos, version)
        return response

    def _recv_frame(self) -> bytes:
        (size,) = _SIZE.unpack(self._recv_exact(4))
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self._sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            chunks += chunk
        return bytes(chunks)
