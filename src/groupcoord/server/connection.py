"""One client connection: frame splitting, pipelining, responses in request order.

Mirrors Kafka's `SocketServer.Processor` + `KafkaChannel`: an int32 size prefix per frame,
`socket.request.max.bytes` enforced before buffering, and responses written strictly in
the order requests arrived even when handlers finish out of order (a Fetch long-poll
followed by a Metadata request). Unlike Kafka the channel is not muted per request:
requests run concurrently and only their responses are ordered. A protocol error (bad
size, undecodable header or body, unknown API) closes the connection with one log line.

Closing is graceful towards requests already read: after a protocol error, a client EOF
(half-close) or a failed acks=0 produce, nothing more is read or dispatched, but every
response owed to a request read before that point is still written, then the connection
closes. Kafka reads one request at a time per connection, so it has answered all of those
before it meets the bad frame or the EOF; answering them keeps that behaviour.

With `ConnectionLimits` the connection holds a quota slot for its client address from
construction until `connection_lost`, and reports reads and writes for idle expiry.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from groupcoord.security.client_address import java_host_address
from groupcoord.security.principal import ANONYMOUS, KafkaPrincipal

if TYPE_CHECKING:
    import ssl

    from groupcoord.server.config import Listener
    from groupcoord.server.connection_limits import ConnectionLimits


class RequestRouter(Protocol):
    """Where a connection's request frames go, and who learns it opened and closed
    (`dispatch.Dispatcher`)."""

    def connection_opened(self, conn: KafkaConnection) -> None: ...

    def connection_closed(self, conn: KafkaConnection) -> None: ...

    def dispatch(self, conn: KafkaConnection, buf: bytes, start: int, end: int) -> None: ...


class ConnectionListener(Protocol):
    """The listener a connection came in on (`listener_security.ListenerSecurity`)."""

    @property
    def name(self) -> str: ...

    @property
    def security_protocol(self) -> str: ...

    @property
    def advertised(self) -> Listener: ...

    @property
    def ssl_context(self) -> ssl.SSLContext | None: ...

    def on_connect(self, conn: KafkaConnection, transport: asyncio.BaseTransport) -> None:
        """Called once the transport is up (after the TLS handshake on TLS listeners)."""


class FrameGate(Protocol):
    """Takes a connection's request frames instead of the dispatcher: SASL authentication,
    and the session check of a re-authenticating connection (`server.sasl_authenticator`)."""

    def frame(self, conn: KafkaConnection, buf: bytes, start: int, end: int) -> None: ...

log = logging.getLogger("groupcoord.server")

_SIZE = struct.Struct(">i")
# Pause reading when this many responses are outstanding, like a muted channel.
_MAX_IN_FLIGHT = 128


class _Slot:
    """A response position in the connection's ordered output."""

    __slots__ = ("done", "dropped", "parts", "task")

    def __init__(self) -> None:
        self.parts: list[Any] | None = None
        self.done = False
        # What computes the response: the handler's task, or the shard's future it awaits.
        self.task: asyncio.Future[Any] | None = None
        # The connection gave the request up (closed) before the request started.
        self.dropped = False

    def drop(self) -> None:
        self.dropped = True
        if self.task is not None and not self.task.done():
            self.task.cancel()


class KafkaConnection(asyncio.Protocol):
    """asyncio protocol for one client; the dispatcher does the per-request work."""

    def __init__(self, dispatcher: RequestRouter, max_request_size: int,
                 limits: ConnectionLimits | None = None, quota_address: str = "",
                 listener: ConnectionListener | None = None, node_id: int = 0) -> None:
        self._dispatcher = dispatcher
        # The node whose listener accepted this connection (`server.cluster_map`).
        self.node_id = node_id
        # Largest frame accepted now: smaller while SASL authentication is in progress.
        self.max_frame = max_request_size
        # The listener this connection came in on (None: a plain PLAINTEXT connection).
        self.listener = listener
        self.gate: FrameGate | None = None
        self._limits = limits
        self.quota_address = quota_address
        self.quota_held = limits is not None
        self._chunks: list[bytes] = []
        self._have = 0
        self._need = 0
        self._slots: deque[_Slot] = deque()
        # Encoded responses waiting for this loop iteration's single write.
        self._out: list[Any] = []
        self._transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._paused_read = False
        self._write_paused = False
        # Set once no more input is accepted; `closed` once the transport is closing.
        self._closing = False
        self._close_delay_s = 0.0
        self.closed = False
        self.peer = "?"
        # The bare address ACLs match (Java's `getHostAddress()`) and the `/`-prefixed
        # form the group APIs report as a member's client host (`InetAddress.toString()`).
        self.client_address = ""
        self.client_host = ""
        self.connection_id = ""
        # Replaced by authentication (SASL or a TLS client certificate).
        self.principal: KafkaPrincipal = ANONYMOUS

    # -- asyncio callbacks -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self._loop = asyncio.get_running_loop()  # kept: each lookup costs a getpid()
        peer = transport.get_extra_info("peername")
        if peer:
            self.client_address = java_host_address(str(peer[0]))
            self.client_host = kafka_client_host(str(peer[0]))
            self.peer = f"{peer[0]}:{peer[1]}"
        self._dispatcher.connection_opened(self)
        if self._limits is not None:
            self._limits.opened(self)
        if self.listener is not None:
            self.listener.on_connect(self, transport)

    @property
    def listener_name(self) -> str:
        return self.listener.name if self.listener is not None else "PLAINTEXT"

    @property
    def security_protocol(self) -> str:
        return self.listener.security_protocol if self.listener is not None else "PLAINTEXT"

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for slot in self._slots:
            slot.drop()
        self._slots.clear()
        self._out = []
        self._chunks = []
        self._dispatcher.connection_closed(self)
        if self._limits is not None:
            self._limits.closed(self)

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._update_reading()

    def eof_received(self) -> bool:
        """The client half-closed: answer what it already sent, then close."""
        self.close_after_pending()
        # Keep the transport open for the owed responses; TLS cannot half-close (asyncio's
        # SSL transport closes after EOF whatever the answer, and warns if asked not to).
        return self.listener is None or self.listener.ssl_context is None

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        if self._limits is not None:
            self._limits.touch(self)
        if self._chunks:
            # Finishing a frame that spans reads: join once, when it is complete.
            self._chunks.append(data)
            self._have += len(data)
            if self._have < self._need:
                return
            data = b"".join(self._chunks)
            self._chunks = []
        pos, need = self._split(data)
        if pos < len(data) and not self._closing:
            self._chunks = [data[pos:]]
            self._have = len(data) - pos
            self._need = need

    # -- framing -----------------------------------------------------------------------

    def _split(self, data: bytes) -> tuple[int, int]:
        """Dispatch every complete frame in `data` (immutable, so frames are addressed in
        place); return where the remainder starts and how many bytes it needs."""
        pos = 0
        end = len(data)
        dispatch = self._dispatcher.dispatch
        while end - pos >= 4 and not self._closing:
            (size,) = _SIZE.unpack_from(data, pos)
            if size < 0 or size > self.max_frame:
                self.protocol_error(f"frame size {size} outside 0..{self.max_frame}")
                return end, 0
            stop = pos + 4 + size
            if stop > end:
                return pos, 4 + size
            gate = self.gate
            if gate is None:
                dispatch(self, data, pos + 4, stop)
            else:
                gate.frame(self, data, pos + 4, stop)
            pos = stop
        return pos, 4

    # -- ordered responses -------------------------------------------------------------

    def new_slot(self) -> _Slot:
        slot = _Slot()
        self._slots.append(slot)
        if len(self._slots) >= _MAX_IN_FLIGHT:
            self._update_reading()
        return slot

    def complete(self, slot: _Slot, parts: list[Any] | None) -> None:
        """Fill a slot (None = no response, e.g. Produce acks=0) and flush what is ready."""
        slot.parts = parts
        slot.done = True
        slots = self._slots
        if self.closed or not slots or not slots[0].done:
            return
        out: list[Any] = []
        while slots and slots[0].done:
            ready = slots.popleft().parts
            if ready:
                out.extend(ready)
        if out:
            # Coalesce: responses finished in this loop iteration leave in one write
            # (one syscall), instead of one write per pipelined response.
            if not self._out:
                (self._loop or asyncio.get_running_loop()).call_soon(self._flush)
            self._out.extend(out)
        if self._closing and not slots:
            self._close_when_due()  # the transport flushes what was just written first
        elif self._paused_read:
            self._update_reading()

    def _flush(self) -> None:
        out, self._out = self._out, []
        if out and self._transport is not None:
            self._transport.writelines(out)
            if self._limits is not None:
                self._limits.touch(self)

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or self._closing:
            return
        want_pause = self._write_paused or len(self._slots) >= _MAX_IN_FLIGHT
        if want_pause and not self._paused_read:
            transport.pause_reading()
            self._paused_read = True
        elif not want_pause and self._paused_read:
            transport.resume_reading()
            self._paused_read = False

    def has_pending_responses(self) -> bool:
        """Requests read and not yet answered (a parked JoinGroup, a long-poll Fetch)."""
        return bool(self._slots) or bool(self._out)

    def protocol_error(self, reason: str) -> None:
        """Close the connection after a client protocol violation: exactly one log line."""
        if self.closed:
            return
        log.warning("closing connection from %s: %s", self.peer, reason)
        self.close_after_pending()

    def close_after_pending(self, last: _Slot | None = None, delay_s: float = 0.0) -> None:
        """Read nothing more; close once the responses owed up to `last` (default: every
        request dispatched so far) are written, and `delay_s` after that. Requests after
        `last` are abandoned, as Kafka would never have read them."""
        if self.closed:
            return
        self._closing = True
        self._close_delay_s = max(self._close_delay_s, delay_s)
        self._chunks = []
        if self._transport is not None and not self._paused_read:
            self._paused_read = True
            try:
                self._transport.pause_reading()
            except RuntimeError:  # already closing underneath us
                pass
        slots = self._slots
        if last is not None and last in slots:
            while slots[-1] is not last:
                slots.pop().drop()
        if not slots:
            self._close_when_due()

    def _close_when_due(self) -> None:
        if self._close_delay_s <= 0:
            self.close()
            return
        # Kafka's `connection.failed.authentication.delay.ms`: the answer leaves now, the
        # close follows later, so a client reads the error before it sees the connection end.
        self._flush()
        asyncio.get_running_loop().call_later(self._close_delay_s, self.close)
        self._close_delay_s = 0.0

    def close(self) -> None:
        if self.closed:
            return
        self._flush()  # responses owed so far go out before the close
        self._closing = True
        self.closed = True
        if self._transport is not None:
            self._transport.close()


def kafka_client_host(address: str) -> str:
    """The client host as Kafka's group APIs report it: Java's `InetAddress.toString()`, i.e.
    the literal address after a slash (`/127.0.0.1`); IPv6 in Java's uncompressed form."""
    return "/" + java_host_address(address)
