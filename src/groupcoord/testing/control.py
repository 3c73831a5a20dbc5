"""A small HTTP/JSON control endpoint of a broker, for tests in any language.

    GET    /clock             -> {"now_ms": N, "pending": [deadline, ...]}
    POST   /clock/advance     {"ms": N} -> {"fired": K, "now_ms": N}
    POST   /faults            {"api": "JoinGroup", "error": "NOT_COORDINATOR", "count": 1,
                               "group_id": "g"} -> {"rule": {...}}   (or "drop": true,
                               or "delay_ms": D; see `testing.faults`)
    GET    /faults            -> {"rules": [armed], "fired": [what fired]}
    DELETE /faults            -> {"removed": N}
    GET    /groups/<group id> -> the group's internal state and timers (`testing.group_state`)
    GET    /cluster           -> the nodes; POST /cluster/...: move coordinators, stop and
                               start nodes (`testing.cluster_control`)

`advance` has the semantics of `KafkaBroker.advance` (every due timer fired, and what they
set off run, before the answer); on a broker on the system clock the clock answers 409.
One request per connection, `Connection: close`; bodies are JSON. Bad input answers 400,
an unknown path 404, a wrong method 405.

Endpoints are rows of `ROUTES`: (method, path or path prefix ending in "/", handler). A
handler gets the server, the rest of the path after a prefix, and the raw body.
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

from groupcoord.server.broker import Broker
from groupcoord.server.http_server import READ_TIMEOUT_S, HttpServer, write_answer
from groupcoord.testing import faults
from groupcoord.testing.group_state import describe_group
from groupcoord.testing.virtual_clock import LoopManualClock, advance_broker

log = logging.getLogger("groupcoord.control")

MAX_BODY = 1 << 16


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


Answer = dict[str, Any]
Handler = Callable[["ControlServer", str, bytes], Awaitable[Answer]]


class ControlServer(HttpServer):
    """`clock` is the broker's manual clock, or None for a broker on the system clock."""

    def __init__(self, clock: LoopManualClock | None,
                 broker: Callable[[], Broker | None]) -> None:
        super().__init__()
        self.clock = clock
        self.broker = broker

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, body = await self._answer(reader)
        except HttpError as exc:
            status, body = exc.status, {"error": str(exc)}
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, ValueError):
            writer.close()
            return
        await write_answer(writer, status, "application/json", json.dumps(body).encode())

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, Answer]:
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
        handler, rest = _route(method, path)
        return 200, await handler(self, rest, raw)

    def running_broker(self) -> Broker:
        broker = self.broker()
        if broker is None:
            raise HttpError(503, "the broker is not running")
        return broker


def _route(method: str, path: str) -> tuple[Handler, str]:
    allowed = []
    for route_method, route_path, handler in ROUTES:
        if route_path.endswith("/"):
            if not path.startswith(route_path) or len(path) == len(route_path):
                continue
            rest = urllib.parse.unquote(path[len(route_path):])
        elif path != route_path:
            continue
        else:
            rest = ""
        if route_method == method:
            return handler, rest
        allowed.append(route_method)
    if allowed:
        raise HttpError(405, f"{' or '.join(allowed)} {path}")
    raise HttpError(404, f"no such endpoint: {path}")


def _manual(server: ControlServer) -> LoopManualClock:
    if server.clock is None:
        raise HttpError(409, "the broker runs on the system clock (serve --clock manual)")
    return server.clock


async def _get_clock(server: ControlServer, _rest: str, _raw: bytes) -> Answer:
    clock = _manual(server)
    return {"now_ms": clock.now_ms(), "pending": clock.pending()}


async def _advance(server: ControlServer, _rest: str, raw: bytes) -> Answer:
    clock = _manual(server)
    ms = _ms(raw)
    fired = await advance_broker(clock, server.broker(), ms)
    return {"fired": fired, "now_ms": clock.now_ms()}


async def _add_fault(server: ControlServer, _rest: str, raw: bytes) -> Answer:
    broker = server.running_broker()
    try:
        return {"rule": faults.inject_from_json(broker, _json(raw))}
    except ValueError as exc:
        raise HttpError(400, str(exc)) from exc


async def _list_faults(server: ControlServer, _rest: str, _raw: bytes) -> Answer:
    return faults.injections(server.running_broker())


async def _clear_faults(server: ControlServer, _rest: str, _raw: bytes) -> Answer:
    return {"removed": faults.clear(server.running_broker())}


async def _describe_group(server: ControlServer, group_id: str, _raw: bytes) -> Answer:
    return await describe_group(server.running_broker(), group_id)


async def _cluster(server: ControlServer, rest: str, raw: bytes) -> Answer:
    from groupcoord.testing import cluster_control

    body = _json(raw)
    if not isinstance(body, dict):
        raise HttpError(400, "body must be a JSON object")
    path = "/cluster/" + rest if rest else "/cluster"
    try:
        return await cluster_control.route(server.running_broker(), "POST" if rest else "GET",
                                           path, body)
    except KeyError as exc:
        raise HttpError(404, f"no such endpoint: {path}") from exc
    except cluster_control.ControlError as exc:
        raise HttpError(400, str(exc)) from exc


ROUTES: list[tuple[str, str, Handler]] = [
    ("GET", "/clock", _get_clock),
    ("POST", "/clock/advance", _advance),
    ("POST", "/faults", _add_fault),
    ("GET", "/faults", _list_faults),
    ("DELETE", "/faults", _clear_faults),
    ("GET", "/groups/", _describe_group),
    ("GET", "/cluster", _cluster),
    ("POST", "/cluster/", _cluster),
]


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"{}")
    except ValueError as exc:
        raise HttpError(400, f"body is not JSON: {exc}") from exc



def _ms(raw: bytes) -> int:
    body = _json(raw)
    ms = body.get("ms") if isinstance(body, dict) else None
    if not isinstance(ms, int) or isinstance(ms, bool) or ms < 0:
        raise HttpError(400, 'body must be {"ms": <non-negative integer>}')
    return ms
