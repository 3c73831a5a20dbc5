"""A blocking Kafka wire client built on our generated codec, for tests that speak raw requests.

One `WireConnection` is one TCP connection to one broker (loopback only). Requests are framed
with the request header Kafka's `ApiKeys.requestHeaderVersion` picks (v2 when the version is
flexible, else v1) and responses are decoded with the matching generated response class.
`send` and `receive` are separate so that a test can park a request the broker holds (a
classic JoinGroup waiting for the rebalance) and go on with other connections meanwhile;
responses on one connection come back in request order, as Kafka guarantees.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections import deque
from dataclasses import dataclass

from groupcoord.wire.headers import (
    RequestHeader,
    decode_response_header,
    encode_request_header,
    request_header_version,
    response_header_version,
)
from groupcoord.wire.messages import RESPONSES, WireStruct

_SIZE = struct.Struct(">i")
DEFAULT_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Pending:
    """A request sent and not yet answered."""

    api_key: int
    version: int
    correlation_id: int


class WireConnection:
    """One connection; `call` = `send` + `receive`."""

    def __init__(self, host: str, port: int, client_id: str = "conformance",
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"test clients only connect to loopback addresses, not {host!r}")
        self.client_id = client_id
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation = 0
        self.in_flight: deque[Pending] = deque()

    def send(self, request: WireStruct, version: int) -> Pending:
        api_key = int(request.API_KEY)  # type: ignore[attr-defined]
        self.correlation += 1
        out = bytearray()
        header = RequestHeader(api_key, version, self.correlation, self.client_id)
        encode_request_header(out, header, request_header_version(api_key, version))
        request.encode_into(out, version)
        self.sock.sendall(_SIZE.pack(len(out)) + out)
        pending = Pending(api_key, version, self.correlation)
        self.in_flight.append(pending)
        return pending

    def send_raw(self, frame: bytes) -> None:
        """Bytes as they are (size prefix included); for malformed-input tests."""
        self.sock.sendall(frame)

    def receive(self, pending: Pending) -> WireStruct:
        """The response to `pending`; earlier requests on this connection must be received first."""
        if not self.in_flight or self.in_flight[0] != pending:
            raise AssertionError(f"responses come in order; {pending} is not the oldest request")
        self.in_flight.popleft()
        data = self.read_frame()
        correlation, pos = decode_response_header(
            data, 0, response_header_version(pending.api_key, pending.version))
        if correlation != pending.correlation_id:
            raise AssertionError(f"correlation id {correlation}, expected {pending.correlation_id}")
        response, _end = RESPONSES[pending.api_key].decode(data, pos, pending.version)
        assert isinstance(response, WireStruct)
        return response

    def call(self, request: WireStruct, version: int) -> WireStruct:
        return self.receive(self.send(request, version))

    def read_frame(self) -> bytes:
        (size,) = _SIZE.unpack(self._read_exactly(4))
        return self._read_exactly(size)

    def is_closed_by_peer(self) -> bool:
        """True when the broker closed the connection (EOF) before the socket timeout."""
        try:
            return self.sock.recv(1) == b""
        except TimeoutError:
            return False
        except ConnectionError:
            return True

    def _read_exactly(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self.sock.recv(size - len(chunks))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks += chunk
        return bytes(chunks)

    def close(self) -> None:
        self.sock.close()
