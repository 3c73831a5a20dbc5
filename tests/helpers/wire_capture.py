"""A loopback TCP proxy that records Kafka frames between a real client and a broker.

`WireCapture` listens on `127.0.0.1:<free port>` and forwards every connection to one
upstream broker address, which must be a loopback address. Bytes are forwarded unchanged;
on the way through, the stream of each direction is cut into size-prefixed frames:

- a request frame is `int32 size` + request header + body; its api key, api version and
  correlation id are read from the first eight bytes after the size;
- a response frame is `int32 size` + correlation id + ...; its api key and version come from
  the request with the same correlation id on the same connection.

Each frame is kept whole (size prefix included) as a `CapturedFrame`. Capturing is bounded:
after `max_frames` frames, or `max_seconds` after `start()`, frames are still forwarded but
no longer recorded; frames larger than `max_frame_bytes` are forwarded and not recorded.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Self

REQUEST = "request"
RESPONSE = "response"
_SIZE = struct.Struct(">i")
_REQ_HEAD = struct.Struct(">hhi")
_RECV_CHUNK = 65536


@dataclass(frozen=True)
class CapturedFrame:
    """One frame as it crossed the proxy (size prefix included)."""

    connection: int
    direction: str
    api_key: int
    api_version: int
    correlation_id: int
    data: bytes


def _require_loopback(host: str) -> None:
    """Refuse anything but a loopback address (or the name `localhost`)."""
    if host == "localhost":
        return
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"wire capture only proxies loopback addresses, not {host!r}")


class _FrameSplitter:
    """Cuts a byte stream into whole size-prefixed frames."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        self._buf += chunk
        frames: list[bytes] = []
        while len(self._buf) >= 4:
            (size,) = _SIZE.unpack_from(self._buf, 0)
            if size < 0 or len(self._buf) < 4 + size:
                break
            frames.append(bytes(self._buf[: 4 + size]))
            del self._buf[: 4 + size]
        return frames


class WireCapture:
    """A threaded loopback proxy in front of one broker; use as a context manager."""

    def __init__(self, upstream: str, *, max_frames: int = 20000, max_seconds: float = 600.0,
                 max_frame_bytes: int = 1 << 20, listen_port: int = 0) -> None:
        host, port = upstream.rsplit(":", 1)
        _require_loopback(host)
        self.upstream = (host, int(port))
        self.max_frames = max_frames
        self.max_seconds = max_seconds
        self.max_frame_bytes = max_frame_bytes
        self.frames: list[CapturedFrame] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._deadline = 0.0
        self._connections = 0
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", listen_port))
        self.port = int(self._listener.getsockname()[1])

    @property
    def address(self) -> str:
        """`host:port` for clients to bootstrap from (and for the broker to advertise)."""
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start accepting connections; the capture window starts now."""
        self._deadline = time.monotonic() + self.max_seconds
        self._listener.listen(64)
        self._spawn(self._accept_loop)

    def stop(self) -> None:
        """Close the listener and every proxied connection, and join the threads."""
        self._stopping.set()
        self._close(self._listener)
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            self._close(sock)
        for thread in list(self._threads):
            thread.join(timeout=5)

    def take(self) -> list[CapturedFrame]:
        """Return the frames recorded so far and forget them."""
        with self._lock:
            frames, self.frames = self.frames, []
        return frames

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    @staticmethod
    def _close(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _addr = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                self._close(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._connections += 1
                conn_id = self._connections
                self._sockets += [client, server]
            inflight: dict[int, tuple[int, int]] = {}
            self._spawn(self._pump, client, server, conn_id, REQUEST, inflight)
            self._spawn(self._pump, server, client, conn_id, RESPONSE, inflight)

    def _pump(self, src: socket.socket, dst: socket.socket, conn_id: int, direction: str,
              inflight: dict[int, tuple[int, int]]) -> None:
        splitter = _FrameSplitter()
        try:
            while True:
                chunk = src.recv(_RECV_CHUNK)
                if not chunk:
                    break
                # Parse before forwarding so a request is known before its response arrives.
                for frame in splitter.feed(chunk):
                    self._record(conn_id, direction, frame, inflight)
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            self._close(dst)
            self._close(src)

    def _record(self, conn_id: int, direction: str, frame: bytes,
                inflight: dict[int, tuple[int, int]]) -> None:
        if direction == REQUEST:
            if len(frame) < 12:
                return
            api_key, api_version, correlation_id = _REQ_HEAD.unpack_from(frame, 4)
            inflight[correlation_id] = (api_key, api_version)
        else:
            if len(frame) < 8:
                return
            (correlation_id,) = _SIZE.unpack_from(frame, 4)
            known = inflight.pop(correlation_id, None)
            if known is None:
                return
            api_key, api_version = known
        if len(frame) > self.max_frame_bytes or time.monotonic() > self._deadline:
            return
        with self._lock:
            if len(self.frames) < self.max_frames:
                self.frames.append(CapturedFrame(conn_id, direction, api_key, api_version,
                                                 correlation_id, frame))
