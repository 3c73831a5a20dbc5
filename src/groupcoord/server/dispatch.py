"""Per-request dispatch: header -> version gate -> decode -> handler -> encoded response.

Mirrors Kafka's `RequestChannel` / `KafkaApis.handle` / `RequestContext.parseRequest`: an
unknown API key, an unsupported version (except ApiVersions, answered at v0 with
UNSUPPORTED_VERSION) or an undecodable body closes the connection; a string field longer
than the coordinator's records can hold is answered with its error before the handler
runs (`apis.request_limits`); an `ApiError` raised by a handler becomes the response's
error code; an unexpected exception is logged once and answered with UNKNOWN_SERVER_ERROR.
A decoded request may meet an injected fault first (`server.fault_injection`, for tests).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from groupcoord.apis.errors import ApiError
from groupcoord.apis.raw_response import RawResponse
from groupcoord.apis.request_limits import FieldRejection, check_request
from groupcoord.server.fault_injection import FaultInjector, FaultRule
from groupcoord.server.framing import API_VERSIONS_KEY, response_head
from groupcoord.wire import error_code_numbers as codes
from groupcoord.wire.decode_error import DecodeError
from groupcoord.wire.headers import (
    RequestHeader,
    peek_request_header,
    read_client_id,
    response_header_flexible,
)

if TYPE_CHECKING:
    from groupcoord.apis.registry import ApiSpec
    from groupcoord.coordinator.clock import Clock
    from groupcoord.server.connection import KafkaConnection, _Slot

log = logging.getLogger("groupcoord.server")

# The context a handler gets for one request on a connection (`request_context`).
ContextFactory = Callable[["KafkaConnection", RequestHeader], Any]


class ShareSessions(Protocol):
    """The share runtime, which drops the share sessions of a closed connection."""

    def connection_closed(self, connection_id: str) -> None: ...


class DispatchHost(Protocol):
    """What the dispatcher uses of the broker (`broker.Broker`)."""

    @property
    def connections(self) -> set[KafkaConnection]: ...

    # Set once every request can be served; until then only ApiVersions is answered.
    @property
    def ready(self) -> asyncio.Event: ...

    @property
    def faults(self) -> FaultInjector: ...

    @property
    def clock(self) -> Clock: ...

    # Read only once `ready` is set.
    @property
    def shares(self) -> ShareSessions: ...


class Dispatcher:
    """Routes frames of every connection to the handler table."""

    def __init__(self, broker: DispatchHost, handlers: Mapping[int, ApiSpec],
                 new_context: ContextFactory) -> None:
        self.broker = broker
        self.handlers = handlers
        self._new_context = new_context
        self._loop: asyncio.AbstractEventLoop | None = None
        self._next_conn = 0
        self.faults: FaultInjector = broker.faults
        # Api key -> its spec, and whether its handler is a plain function (`_start`),
        # learnt on first use: the table imports a handler module only when its api is
        # first requested, and a lookup there is a Python-level Mapping call.
        self._specs: dict[int, ApiSpec] = {}
        self._direct: dict[int, bool] = {}

    def connection_opened(self, conn: KafkaConnection) -> None:
        self._next_conn += 1
        conn.connection_id = f"{conn.peer}-{self._next_conn}"
        self.broker.connections.add(conn)

    def connection_closed(self, conn: KafkaConnection) -> None:
        self.broker.connections.discard(conn)
        # Share sessions exist only once loaded (every request but ApiVersions waits).
        if self.broker.ready.is_set():
            self.broker.shares.connection_closed(conn.connection_id)

    def dispatch(self, conn: KafkaConnection, buf: bytes, start: int, end: int) -> None:
        """Handle the request frame at buf[start:end] (after its size prefix)."""
        try:
            api_key, version, correlation_id = peek_request_header(buf, start, end)
        except DecodeError as exc:
            conn.protocol_error(str(exc))
            return
        spec = self._specs.get(api_key)
        if spec is None:
            spec = self.handlers.get(api_key)
            if spec is None:
                conn.protocol_error(f"unsupported api key {api_key}")
                return
            self._specs[api_key] = spec
        if not spec.min_version <= version <= spec.max_version:
            if api_key == API_VERSIONS_KEY:
                self._unsupported_api_versions(conn, correlation_id)
            else:
                conn.protocol_error(f"unsupported version {version} of api key {api_key}")
            return
        try:
            client_id, pos = read_client_id(buf, start, end, spec.is_flexible(version))
            request, stop = spec.request_cls.decode(buf, pos, version)
        except Exception as exc:  # noqa: BLE001 - any decode failure is the client's fault
            conn.protocol_error(f"cannot decode api key {api_key} v{version}: {exc}")
            return
        if stop > end:
            conn.protocol_error(f"api key {api_key} v{version} request runs past its frame")
            return
        rejection = check_request(request, end - start)
        header = RequestHeader(api_key, version, correlation_id, client_id,
                               2 if spec.is_flexible(version) else 1)
        fault = self.faults.match(api_key, request) if self.faults.by_api else None
        if fault is not None:
            self.faults.record(fault, version, correlation_id, client_id or "",
                               conn.connection_id, self.broker.clock.now_ms())
            if fault.action == "drop":
                log.info("injected fault %d: dropping connection %s at api key %d",
                         fault.id, conn.connection_id, api_key)
                conn.close()
                return
        ctx = self._new_context(conn, header)
        slot = conn.new_slot()
        ctx.slot = slot
        loop = self._loop or asyncio.get_running_loop()
        self._loop = loop
        direct = self._direct.get(api_key)
        if direct is None:
            direct = self._direct[api_key] = not inspect.iscoroutinefunction(spec.handler)
        if direct and fault is None and rejection is None and self.broker.ready.is_set():
            # call_soon, as a task's first step is: requests start in arrival order.
            loop.call_soon(self._start, conn, slot, spec, ctx, header, request)
            return
        slot.task = loop.create_task(
            self._run(conn, slot, spec, ctx, header, request, rejection, fault))

    def _start(self, conn: KafkaConnection, slot: _Slot, spec: ApiSpec, ctx: Any,
               header: RequestHeader, request: Any) -> None:
        """Run a handler that is not a coroutine function. What it returns is the shard's
        future (answered from its done callback: no task per request), or a coroutine,
        which runs in a task as every other handler does."""
        if slot.dropped:
            return  # the connection closed before the request started
        version = header.api_version
        try:
            pending = spec.handler(ctx, header, request, version)
        except Exception as exc:  # noqa: BLE001 - answered as `_run` answers it
            self._respond(conn, slot, spec, header, self._failure(conn, spec, request, version, exc))
            return
        if isinstance(pending, asyncio.Future):
            slot.task = pending
            pending.add_done_callback(
                functools.partial(self._answer, conn, slot, spec, header, request))
        else:
            loop = self._loop or asyncio.get_running_loop()
            slot.task = loop.create_task(self._await(conn, slot, spec, header, request, pending))

    def _answer(self, conn: KafkaConnection, slot: _Slot, spec: ApiSpec, header: RequestHeader,
                request: Any, fut: asyncio.Future[Any]) -> None:
        try:
            response = fut.result()
        except asyncio.CancelledError:
            return  # the connection dropped the request
        except Exception as exc:  # noqa: BLE001 - answered as `_run` answers it
            response = self._failure(conn, spec, request, header.api_version, exc)
        self._respond(conn, slot, spec, header, response)

    async def _await(self, conn: KafkaConnection, slot: _Slot, spec: ApiSpec,
                     header: RequestHeader, request: Any, pending: Awaitable[Any]) -> None:
        try:
            response = await pending
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - answered as `_run` answers it
            response = self._failure(conn, spec, request, header.api_version, exc)
        self._respond(conn, slot, spec, header, response)

    def _failure(self, conn: KafkaConnection, spec: ApiSpec, request: Any, version: int,
                 exc: BaseException) -> Any:
        """The response to a handler that raised: an ApiError's code, else logged once and
        UNKNOWN_SERVER_ERROR."""
        if isinstance(exc, ApiError):
            return self._error_response(conn, spec, request, version, exc.code)
        log.error("handler for api key %d v%d failed", spec.api_key, version, exc_info=exc)
        return self._error_response(conn, spec, request, version, codes.UNKNOWN_SERVER_ERROR)

    async def _run(self, conn: KafkaConnection, slot: _Slot, spec: ApiSpec, ctx: Any,
                   header: RequestHeader, request: Any,
                   rejection: FieldRejection | None = None,
                   fault: FaultRule | None = None) -> None:
        version = header.api_version
        ready = self.broker.ready
        if not ready.is_set() and spec.api_key != API_VERSIONS_KEY:
            # Bound before the logs and runtimes are loaded (`Broker.start`): ApiVersions
            # needs neither, every other request waits for them.
            await ready.wait()
        try:
            if fault is not None and fault.action == "error":
                raise ApiError(fault.error_code, "injected fault")
            if rejection is not None:
                log.debug("api key %d v%d refused: %s", spec.api_key, version,
                          rejection.message)
                raise ApiError(rejection.code, rejection.message)
            response = await spec.handler(ctx, header, request, version)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure gets an answer
            response = self._failure(conn, spec, request, version, exc)
        if fault is not None and fault.action == "delay":
            await asyncio.sleep(fault.delay_ms / 1000.0)  # real time: see fault_injection
        self._respond(conn, slot, spec, header, response)

    def _respond(self, conn: KafkaConnection, slot: _Slot, spec: ApiSpec, header: RequestHeader,
                 response: Any) -> None:
        """Encode the response into its slot (None: the request gets no response)."""
        version = header.api_version
        if response is None:
            conn.complete(slot, None)
            return
        flexible_header = response_header_flexible(spec.api_key, spec.is_flexible(version))
        try:
            parts = encode_response(response, version, header.correlation_id, flexible_header)
        except Exception:
            log.exception("cannot encode response of api key %d v%d", spec.api_key, version)
            conn.complete(slot, None)
            conn.close()
            return
        conn.complete(slot, parts)

    def _error_response(self, conn: KafkaConnection, spec: ApiSpec, request: Any,
                        version: int, code: int) -> Any:
        """Kafka's getErrorResponse: the module's builder, else a top-level error code."""
        if spec.error_response is not None:
            return spec.error_response(request, version, code)
        response = spec.response_cls()
        # `_FIELDS`, not `__slots__`: a subclass (the share APIs' v0 codecs) adds no slots.
        if "error_code" not in response._FIELDS:
            conn.protocol_error(f"api key {spec.api_key} failed with error {code}")
            return None
        response.error_code = code
        return response

    def _unsupported_api_versions(self, conn: KafkaConnection, correlation_id: int) -> None:
        from groupcoord.apis.api_versions import unsupported_version_response

        response = unsupported_version_response(self.handlers)
        parts = encode_response(response, 0, correlation_id, False)
        conn.complete(conn.new_slot(), parts)


def encode_response(response: Any, version: int, correlation_id: int,
                    flexible_header: bool) -> list[Any]:
    """Frame a response: size prefix + header, then the body buffers."""
    if isinstance(response, RawResponse):
        return [response_head(correlation_id, response.size, flexible_header), *response.parts]
    body = response.encode(version)
    return [response_head(correlation_id, len(body), flexible_header), body]
