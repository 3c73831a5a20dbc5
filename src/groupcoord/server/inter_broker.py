"""The requests one node of a cluster on PostgreSQL sends another (Kafka's inter-broker
`NetworkClient`, as the `TransactionMarkerChannelManager` and the share persister use it):
WriteTxnMarkers to a partition's leader, the share-state RPCs to a share coordinator.

- one connection per peer node, to the endpoint the node registered on the listener this
  node's inter-broker traffic uses (the first listener's name, as Kafka's
  `inter.broker.listener.name` defaults to it), made on first use; ApiVersions first, then
  every request at the highest version both sides serve;
- requests are pipelined on the connection and matched to their responses by correlation id;
- a request is answered within `request_timeout_ms` on the broker's clock, else
  `PeerUnavailable`; a connection that fails (refused, closed, a frame that cannot be read, a
  timeout) fails every request waiting on it with `PeerUnavailable` and is dropped, and the
  next request connects again, to the endpoint the cluster map then names (a node that
  restarted on another port is found there).

Single-node brokers and the nodes of one process (`--nodes`) never make one: they write to
every partition themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from typing import TYPE_CHECKING, Protocol, TypeVar

from groupcoord.server.runtime.clock import sleep_ms
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.headers import (
    RequestHeader,
    decode_response_header,
    encode_request_header,
    request_header_version,
    response_header_version,
)
from groupcoord.wire.messages import WireStruct

if TYPE_CHECKING:
    from groupcoord.coordinator.clock import Clock
    from groupcoord.server.config import Listener

log = logging.getLogger("groupcoord.cluster")

_SIZE = struct.Struct(">i")
# Kafka's `request.timeout.ms` default for the broker's own clients.
REQUEST_TIMEOUT_MS = 30_000
# ApiVersions v3: the first version naming the client software (what Kafka's clients send).
_API_VERSIONS_VERSION = 3


class PeerUnavailable(ConnectionError):
    """The peer could not be reached, or did not answer in time: retry later."""


class PeerRequest(Protocol):
    """A generated request (`wire.generated`): its api key, the versions our codec writes."""

    API_KEY: int
    MIN_VERSION: int
    MAX_VERSION: int

    def encode_into(self, out: bytearray, version: int) -> None: ...


Response = TypeVar("Response", bound=WireStruct)


class PeerEndpoints(Protocol):
    """Where the live nodes listen (`server.lease_cluster_map.LeaseClusterMap`)."""

    def endpoint(self, node_id: int, listener_name: str) -> Listener | None: ...


class _PeerConnection:
    """One open connection to one node: pipelined requests, matched by correlation id."""

    def __init__(self, address: tuple[str, int], reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, client_id: str) -> None:
        self.address = address
        self._reader = reader
        self._writer = writer
        self._client_id = client_id
        self._correlation = 0
        # correlation id -> (api key, version, the response class, its future)
        self._waiting: dict[int, tuple[int, int, type[WireStruct], asyncio.Future[WireStruct]]] = {}
        self.versions: dict[int, tuple[int, int]] = {}
        self.closed = False
        self._reading = asyncio.get_running_loop().create_task(self._read_responses())

    def send(self, request: PeerRequest, api_key: int, version: int,
             response_cls: type[WireStruct]) -> asyncio.Future[WireStruct]:
        self._correlation += 1
        out = bytearray()
        encode_request_header(out, RequestHeader(api_key, version, self._correlation,
                                                 self._client_id),
                              request_header_version(api_key, version))
        request.encode_into(out, version)
        future: asyncio.Future[WireStruct] = asyncio.get_running_loop().create_future()
        self._waiting[self._correlation] = (api_key, version, response_cls, future)
        self._writer.write(_SIZE.pack(len(out)) + out)
        return future

    async def _read_responses(self) -> None:
        try:
            while True:
                (size,) = _SIZE.unpack(await self._reader.readexactly(4))
                body = await self._reader.readexactly(size)
                (correlation,) = _SIZE.unpack_from(body, 0)
                waiting = self._waiting.pop(correlation, None)
                if waiting is None:
                    raise ConnectionError(f"a response to no request ({correlation})")
                api_key, version, response_cls, future = waiting
                _, pos = decode_response_header(body, 0, response_header_version(api_key,
                                                                                  version))
                response, _ = response_cls.decode(body, pos, version)
                if not future.done():
                    future.set_result(response)
        except (OSError, EOFError, ValueError, asyncio.IncompleteReadError) as exc:
            self.fail(PeerUnavailable(f"connection to {self.address} failed: {exc}"))

    def fail(self, exc: PeerUnavailable) -> None:
        """Close, failing every request still waiting."""
        if not self.closed:
            self.closed = True
            self._writer.close()
        waiting, self._waiting = self._waiting, {}
        for _, _, _, future in waiting.values():
            if not future.done():
                future.set_exception(exc)

    async def close(self) -> None:
        self.fail(PeerUnavailable("closed"))
        self._reading.cancel()
        await asyncio.gather(self._reading, return_exceptions=True)


class InterBrokerClient:
    """The connections of this node to its peers (see the module docstring)."""

    def __init__(self, node_id: int, peers: PeerEndpoints, listener_name: str, clock: Clock,
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS) -> None:
        self.node_id = node_id
        self._peers = peers
        self._listener_name = listener_name
        self._clock = clock
        self.request_timeout_ms = request_timeout_ms
        self._connections: dict[int, _PeerConnection] = {}
        # One connection attempt per peer at a time; the others wait for it.
        self._connecting: dict[int, asyncio.Lock] = {}

    async def send(self, node_id: int, request: PeerRequest, response_cls: type[Response],
                   lowest_version: int = 0) -> Response:
        """Send `request` to the node, at the highest version both serve and not below
        `lowest_version`; its response. `PeerUnavailable` when the node is not live, cannot
        be reached, serves no such version or does not answer within the request timeout
        (the connection is then dropped, as Kafka's client disconnects on a request
        timeout)."""
        task = asyncio.ensure_future(self._send(node_id, request, response_cls,
                                                lowest_version))
        timer = asyncio.ensure_future(sleep_ms(self._clock, self.request_timeout_ms))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not task.done():
                task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            return await task
        await self._drop(node_id)
        raise PeerUnavailable(f"node {node_id}: no answer within {self.request_timeout_ms} ms")

    async def _send(self, node_id: int, request: PeerRequest, response_cls: type[Response],
                    lowest_version: int) -> Response:
        conn = await self._connection(node_id)
        api_key = request.API_KEY
        low, high = conn.versions.get(api_key, (-1, -1))
        version = min(high, request.MAX_VERSION)
        if version < max(low, request.MIN_VERSION, lowest_version):
            raise PeerUnavailable(f"node {node_id} serves no version of api {api_key} we send")
        response = await conn.send(request, api_key, version, response_cls)
        assert isinstance(response, response_cls)
        return response

    async def _connection(self, node_id: int) -> _PeerConnection:
        endpoint = self._peers.endpoint(node_id, self._listener_name)
        if endpoint is None:
            raise PeerUnavailable(f"node {node_id} is not live")
        address = (endpoint.host, endpoint.port)
        lock = self._connecting.setdefault(node_id, asyncio.Lock())
        async with lock:
            conn = self._connections.get(node_id)
            if conn is not None and (conn.closed or conn.address != address):
                await self._drop(node_id)
                conn = None
            if conn is None:
                conn = await self._connect(node_id, address)
                self._connections[node_id] = conn
            return conn

    async def _connect(self, node_id: int, address: tuple[str, int]) -> _PeerConnection:
        try:
            reader, writer = await asyncio.open_connection(*address)
        except OSError as exc:
            raise PeerUnavailable(f"node {node_id} at {address[0]}:{address[1]}: {exc}") from exc
        conn = _PeerConnection(address, reader, writer, f"groupcoord-broker-{self.node_id}")
        try:
            answer = await conn.send(
                ApiVersionsRequest(client_software_name="groupcoord",
                                   client_software_version="1"),
                ApiVersionsRequest.API_KEY, _API_VERSIONS_VERSION, ApiVersionsResponse)
        except PeerUnavailable:
            await conn.close()
            raise
        assert isinstance(answer, ApiVersionsResponse)
        if answer.error_code != ErrorCode.NONE:
            await conn.close()
            raise PeerUnavailable(f"node {node_id} refused ApiVersions ({answer.error_code})")
        conn.versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        log.info("connected to node %d at %s:%d", node_id, *address)
        return conn

    async def _drop(self, node_id: int) -> None:
        conn = self._connections.pop(node_id, None)
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        for node_id in list(self._connections):
            await self._drop(node_id)

