"""A dependency-free Kafka ApiVersions probe, used to detect when a broker is ready.

Kept independent of groupcoord's own wire package so the harness measures a broken or
half-written broker without sharing its bugs.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable

API_VERSIONS_KEY = 18
_CLIENT_ID = b"bench-probe"


def _api_versions_v0(correlation_id: int) -> bytes:
    """Encode a size-prefixed ApiVersions v0 request (request header v1, empty body)."""
    body = struct.pack(">hhih", API_VERSIONS_KEY, 0, correlation_id, len(_CLIENT_ID))
    body += _CLIENT_ID
    return struct.pack(">i", len(body)) + body


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed before full response")
        buf += chunk
    return bytes(buf)


def _exchange(sock: socket.socket) -> int:
    """Run one ApiVersions v0 exchange on a connected socket; return the API count."""
    return len(_exchange_keys(sock))


def _exchange_keys(sock: socket.socket) -> list[int]:
    """Run one ApiVersions v0 exchange on a connected socket; return the advertised keys."""
    correlation_id = 0x5EED
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(_api_versions_v0(correlation_id))
    (size,) = struct.unpack(">i", _recv_exact(sock, 4))
    if size < 10 or size > 1 << 20:
        raise ValueError(f"implausible ApiVersions response size {size}")
    payload = _recv_exact(sock, size)
    corr, error_code, count = struct.unpack_from(">ihi", payload, 0)
    if corr != correlation_id:
        raise ValueError(f"correlation id {corr} != {correlation_id}")
    if error_code != 0:
        raise ValueError(f"ApiVersions error_code {error_code}")
    if not 0 <= count <= (size - 10) // 6:
        raise ValueError(f"implausible ApiVersions entry count {count}")
    # v0 entries: api_key, min_version, max_version (int16 each).
    return [struct.unpack_from(">h", payload, 10 + 6 * i)[0] for i in range(count)]


def api_versions(host: str, port: int, timeout: float = 2.0) -> int:
    """Send one ApiVersions v0 request; return the number of APIs the broker advertises.

    Raises ``OSError`` (connection refused/reset/timeout) or ``ValueError`` (bad reply).
    """
    with socket.create_connection((host, port), timeout=timeout) as sock:
        return _exchange(sock)


def api_keys(host: str, port: int, timeout: float = 2.0) -> set[int]:
    """The API keys the broker advertises in ApiVersions v0."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        return set(_exchange_keys(sock))


def wait_ready(host: str, port: int, deadline: float, poll_s: float = 0.001,
               alive: Callable[[], bool] | None = None) -> tuple[float, float]:
    """Poll until ApiVersions succeeds; return (first TCP connect, first ApiVersions) times.

    Each attempt is one connection: connect, then ApiVersions on it. Times are
    ``time.perf_counter()`` values. ``alive`` is called between attempts; if it returns
    False the wait is abandoned with ``RuntimeError``. ``deadline`` is a ``perf_counter``
    value after which ``TimeoutError`` is raised.
    """
    first_connect: float | None = None
    last_error: Exception | None = None
    while True:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"broker not ready on {host}:{port}: {last_error!r}")
        if alive is not None and not alive():
            raise RuntimeError(f"broker process exited before ready: {last_error!r}")
        try:
            with socket.create_connection((host, port), timeout=2.0) as sock:
                if first_connect is None:
                    first_connect = time.perf_counter()
                _exchange(sock)
            return first_connect, time.perf_counter()
        except (OSError, ValueError) as exc:
            last_error = exc
            time.sleep(poll_s)
