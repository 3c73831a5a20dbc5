"""An in-process broker on a loopback port and a raw Kafka wire client for tests.

The broker is the real `groupcoord.server.broker.Broker` (optionally with a custom handler
table); the client frames requests with our generated classes and reads responses back,
so tests see exactly the bytes a client would.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from groupcoord.coordinator.clock import Clock
from groupcoord.server.broker import Broker
from groupcoord.server.config import BrokerConfig, Listener

_I32 = struct.Struct(">i")


def make_config(data_dir: Path, **overrides: Any) -> BrokerConfig:
    values: dict[str, Any] = {
        "listeners": (Listener("127.0.0.1", 0),),
        "data_dir": str(data_dir),
        "fsync": "never",
        "cluster_id": "test-cluster",
        "group_initial_rebalance_delay_ms": 0,
    }
    values.update(overrides)
    return BrokerConfig(**values)


class RawClient:
    """One connection; `call` sends a request and waits for its response."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.correlation = 0

    @staticmethod
    def frame(request: Any, version: int, correlation_id: int, client_id: str = "test") -> bytes:
        flexible = request.FLEXIBLE_MIN is not None and version >= request.FLEXIBLE_MIN
        cid = client_id.encode()
        head = struct.pack(">hhih", request.API_KEY, version, correlation_id, len(cid)) + cid
        if flexible:
            head += b"\x00"
        body = head + request.encode(version)
        return _I32.pack(len(body)) + body

    async def send(self, request: Any, version: int) -> int:
        self.correlation += 1
        self.writer.write(self.frame(request, version, self.correlation))
        await self.writer.drain()
        return self.correlation

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self, timeout: float = 5.0) -> bytes:
        size = _I32.unpack(await asyncio.wait_for(self.reader.readexactly(4), timeout))[0]
        return await asyncio.wait_for(self.reader.readexactly(size), timeout)

    async def recv(self, response_cls: Any, version: int, timeout: float = 5.0) -> tuple[int, Any]:
        data = await self.read_frame(timeout)
        (corr,) = _I32.unpack_from(data, 0)
        flexible = (response_cls.FLEXIBLE_MIN is not None and version >= response_cls.FLEXIBLE_MIN
                    and response_cls.API_KEY != 18)
        pos = 4 + (1 if flexible else 0)
        obj, _ = response_cls.decode(data, pos, version)
        return corr, obj

    async def call(self, request: Any, version: int, response_cls: Any,
                   timeout: float = 5.0) -> Any:
        corr = await self.send(request, version)
        got, response = await self.recv(response_cls, version, timeout)
        assert got == corr
        return response

    async def closed(self, timeout: float = 2.0) -> bool:
        """True when the broker closed the connection (EOF) within `timeout`."""
        try:
            data = await asyncio.wait_for(self.reader.read(1 << 16), timeout)
        except (TimeoutError, ConnectionError):
            return False
        return data == b""

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


class InProcBroker:
    """Async context manager: a started broker; `client()` opens connections to it."""

    def __init__(self, data_dir: Path, handlers: dict[int, Any] | None = None,
                 clock: Clock | None = None, **overrides: Any) -> None:
        self.broker = Broker(make_config(data_dir, **overrides), handlers, clock)
        self.clients: list[RawClient] = []

    async def __aenter__(self) -> Self:
        await self.broker.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in self.clients:
            await client.close()
        await self.broker.stop()

    @property
    def port(self) -> int:
        return self.broker.bound[0].port

    async def client(self) -> RawClient:
        host = self.broker.config.listeners[0].host  # 127.0.0.1 unless a test binds ::1
        reader, writer = await asyncio.open_connection(host, self.port)
        client = RawClient(reader, writer)
        self.clients.append(client)
        return client


async def settle(condition: Callable[[], object], turns: int = 10_000) -> None:
    """Let the loop run (no time passes on any clock) until `condition` holds; a socket
    round trip takes a few turns."""
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


def run(coro: Any) -> Any:
    """Run a test coroutine on a fresh event loop."""
    return asyncio.run(coro)
