"""A small HTTP/JSON control endpoint for a broker, for tests in any language.

    GET  /clock          -> {"now_ms": N, "pending": [deadline, ...]}
    POST /clock/advance  {"ms": N} -> {"fired": K, "now_ms": N}
    /cluster/...         coordinators and nodes (`testing.cluster_control`)

The `/clock` routes need a broker on virtual time (404 on the system clock).

`advance` has the semantics of `KafkaBroker.advance` (every due timer fired, and what they
set off run, before the answer). One request per connection, `Connection: close`; bodies
are JSON. Bad input answers 400, an unknown path 404, a wrong method 405.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from groupcoord.server.broker import Broker
from groupcoord.testing.virtual_clock import LoopManualClock, advance_broker

log = logging.getLogger("groupcoord.control")

MAX_BODY = 1 << 16
READ_TIMEOUT_S = 10.0
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           413: "Payload Too Large"}


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ControlServer:
    def __init__(self, clock: LoopManualClock | None,
                 broker: Callable[[], Broker | None]) -> None:
        self.clock = clock
        self.broker = broker
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str, port: int) -> int:
        self.server = await asyncio.start_server(self._serve, host, port)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, body = await self._answer(reader)
        except HttpError as exc:
            status, body = exc.status, {"error": str(exc)}
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, ValueError):
            writer.close()
            return
        data = json.dumps(body).encode()
        head = (f"HTTP/1.1 {status} {REASONS[status]}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n")
        try:
            writer.write(head.encode() + data)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, dict[str, Any]]:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            raise HttpError(400, "malformed request line")
        method, path = parts[0], parts[1]
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                if not value.strip().isdigit():
                    raise HttpError(400, "bad Content-Length")
                length = int(value)
        if length > MAX_BODY:
            raise HttpError(413, "body too large")
        raw = await asyncio.wait_for(reader.readexactly(length), READ_TIMEOUT_S)
        if path == "/cluster" or path.startswith("/cluster/"):
            return 200, await _cluster_route(self.broker(), method, path, raw)
        if self.clock is None and path.startswith("/clock"):
            raise HttpError(404, "the broker runs on the system clock")
        assert self.clock is not None
        if path == "/clock":
            if method != "GET":
                raise HttpError(405, "GET /clock")
            return 200, {"now_ms": self.clock.now_ms(), "pending": self.clock.pending()}
        if path == "/clock/advance":
            if method != "POST":
                raise HttpError(405, "POST /clock/advance")
            ms = _ms(raw)
            fired = await advance_broker(self.clock, self.broker(), ms)
            return 200, {"fired": fired, "now_ms": self.clock.now_ms()}
        raise HttpError(404, f"no such endpoint: {path}")


async def _cluster_route(broker: Broker | None, method: str, path: str,
                         raw: bytes) -> dict[str, Any]:
    from groupcoord.testing import cluster_control

    if broker is None:
        raise HttpError(404, "no broker")
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise HttpError(400, f"body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise HttpError(400, "body must be a JSON object")
    try:
        return await cluster_control.route(broker, method, path, body)
    except KeyError as exc:
        raise HttpError(404, f"no such endpoint: {path}") from exc
    except cluster_control.ControlError as exc:
        raise HttpError(400, str(exc)) from exc


def _ms(raw: bytes) -> int:
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise HttpError(400, f"body is not JSON: {exc}") from exc
    ms = body.get("ms") if isinstance(body, dict) else None
    if not isinstance(ms, int) or isinstance(ms, bool) or ms < 0:
        raise HttpError(400, 'body must be {"ms": <non-negative integer>}')
    return ms
