"""One client connection: frame splitting, pipelining, responses in request order.

Mirrors Kafka's `SocketServer.Processor` + `KafkaChannel`: an int32 size prefix per frame,
`socket.request.max.bytes` enforced before buffering, and responses written strictly in
the order requests arrived even when handlers finish out of order (a Fetch long-poll
followed by a Metadata request). Unlike Kafka the channel is not muted per request:
requests run concurrently and only their responses are ordered. A protocol error (bad
size, undecodable header or body, unknown API) closes the connection with one log line.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groupcoord.server.dispatch import Dispatcher

log = logging.getLogger("groupcoord.server")

_SIZE = struct.Struct(">i")
# Pause reading when this many responses are outstanding, like a muted channel.
_MAX_IN_FLIGHT = 128


class _Slot:
    """A response position in the connection's ordered output."""

    __slots__ = ("done", "parts", "task")

    def __init__(self) -> None:
        self.parts: list[Any] | None = None
        self.done = False
        self.task: asyncio.Task[Any] | None = None


class KafkaConnection(asyncio.Protocol):
    """asyncio protocol for one client; the dispatcher does the per-request work."""

    def __init__(self, dispatcher: Dispatcher, max_request_size: int) -> None:
        self._dispatcher = dispatcher
        self._max = max_request_size
        self._chunks: list[bytes] = []
        self._have = 0
        self._need = 0
        self._slots: deque[_Slot] = deque()
        self._transport: asyncio.Transport | None = None
        self._paused_read = False
        self._write_paused = False
        self.closed = False
        self.peer = "?"
        self.client_host = ""
        self.connection_id = ""

    # -- asyncio callbacks -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        if peer:
            self.client_host = str(peer[0])
            self.peer = f"{peer[0]}:{peer[1]}"
        self._dispatcher.connection_opened(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for slot in self._slots:
            if slot.task is not None and not slot.task.done():
                slot.task.cancel()
        self._slots.clear()
        self._chunks = []
        self._dispatcher.connection_closed(self)

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        if self._chunks:
            # Finishing a frame that spans reads: join once, when it is complete.
            self._chunks.append(data)
            self._have += len(data)
            if self._have < self._need:
                return
            data = b"".join(self._chunks)
            self._chunks = []
        pos, need = self._split(data)
        if pos < len(data) and not self.closed:
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
        while end - pos >= 4 and not self.closed:
            (size,) = _SIZE.unpack_from(data, pos)
            if size < 0 or size > self._max:
                self.protocol_error(f"frame size {size} outside 0..{self._max}")
                return end, 0
            stop = pos + 4 + size
            if stop > end:
                return pos, 4 + size
            dispatch(self, data, pos + 4, stop)
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
        if out and self._transport is not None:
            self._transport.writelines(out)
        if self._paused_read:
            self._update_reading()

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or self.closed:
            return
        want_pause = self._write_paused or len(self._slots) >= _MAX_IN_FLIGHT
        if want_pause and not self._paused_read:
            transport.pause_reading()
            self._paused_read = True
        elif not want_pause and self._paused_read:
            transport.resume_reading()
            self._paused_read = False

    def protocol_error(self, reason: str) -> None:
        """Close the connection after a client protocol violation: exactly one log line."""
        if self.closed:
            return
        log.warning("closing connection from %s: %s", self.peer, reason)
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._transport is not None:
            self._transport.close()
