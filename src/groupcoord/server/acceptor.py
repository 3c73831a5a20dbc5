"""One listener: bind, then accept connections within the broker's connection limits.

Mirrors Kafka's `SocketServer.Acceptor`: before taking a connection off the listen
backlog it waits for a slot (`max.connections`, and here also the open-files reserve);
after accepting it applies `max.connections.per.ip`, closing a refused socket at once. An
own accept loop instead of `loop.create_server` is what makes "wait, do not accept"
possible: asyncio's server accepts everything and, out of descriptors, logs an error per
attempt and retries in a loop.

On a TLS listener each accepted socket's handshake runs in its own task, bounded by the
handshake timeout: a client that connects and never finishes the handshake holds its slot
until then and delays no one else (Kafka bounds such a client by its idle timeout).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Callable

from groupcoord.server.connection import KafkaConnection
from groupcoord.server.connection_limits import ConnectionLimits

log = logging.getLogger("groupcoord.server")

LISTEN_BACKLOG = 1024
# accept() errors that mean "out of resources": wait for a slot instead of spinning.
_RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_RESOURCE_RETRY_S = 0.1

ProtocolFactory = Callable[[str], KafkaConnection]


async def bind_listener(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for `host:port` (each address the host resolves to), as
    `loop.create_server` binds them: SO_REUSEADDR, IPv6 sockets v6-only."""
    loop = asyncio.get_running_loop()
    sockets: list[socket.socket] = []
    try:
        infos = await loop.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # The stdlib lacks IPPROTO_IPV6 on some platforms.
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        # Which of the listeners failed, as `loop.create_server` names it.
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: "
                                 f"{(exc.strerror or str(exc)).lower()}") from None
    return sockets


class Acceptor:
    """Accept loops over one listener's sockets; `close` stops them and the sockets."""

    def __init__(self, sockets: list[socket.socket], limits: ConnectionLimits,
                 protocol_for: ProtocolFactory, ssl_context: ssl.SSLContext | None = None,
                 ssl_handshake_timeout_s: float | None = None) -> None:
        self.sockets = sockets
        self._limits = limits
        self._protocol_for = protocol_for
        self._ssl = ssl_context
        self._handshake_timeout = ssl_handshake_timeout_s
        self._tasks: list[asyncio.Task[None]] = []
        self._handshakes: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        return int(self.sockets[0].getsockname()[1])

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._accept_loop(sock)) for sock in self.sockets]

    async def _accept_loop(self, listen_sock: socket.socket) -> None:
        while listen_sock.fileno() != -1:
            try:
                await self._accept_one(listen_sock)
            except Exception as exc:  # noqa: BLE001 - as Kafka's acceptor: log, keep accepting
                self._limits.accept_crashed(exc)
                await asyncio.sleep(_RESOURCE_RETRY_S)

    async def _accept_one(self, listen_sock: socket.socket) -> None:
        limits = self._limits
        await limits.wait_for_slot()
        try:
            sock, peer = await asyncio.get_running_loop().sock_accept(listen_sock)
        except OSError as exc:
            if exc.errno in _RESOURCE_ERRNOS:
                limits.accept_failed(exc)
                await asyncio.sleep(_RESOURCE_RETRY_S)
            return  # ECONNABORTED and the like: the client gave up, take the next
        address = str(peer[0])
        admitted = False
        try:
            admitted = limits.admit(address)
        finally:
            if not admitted:  # refused, or the check itself failed
                sock.close()
        if admitted:
            if self._ssl is None:
                await self._serve(sock, address)
                return
            task = asyncio.get_running_loop().create_task(self._serve(sock, address))
            self._handshakes.add(task)
            task.add_done_callback(self._handshake_done)

    def _handshake_done(self, task: asyncio.Task[None]) -> None:
        self._handshakes.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._limits.accept_crashed(task.exception())  # type: ignore[arg-type]

    async def _serve(self, sock: socket.socket, address: str) -> None:
        loop = asyncio.get_running_loop()
        created: list[KafkaConnection] = []

        def factory() -> KafkaConnection:
            created.append(self._protocol_for(address))
            return created[0]

        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if self._ssl is None:
                await loop.connect_accepted_socket(factory, sock)
            else:
                await loop.connect_accepted_socket(
                    factory, sock, ssl=self._ssl,
                    ssl_handshake_timeout=self._handshake_timeout)
        except BaseException as exc:  # reset between accept and set-up, failed TLS, shutdown
            if self._ssl is not None and isinstance(exc, OSError):
                log.info("TLS handshake with %s failed: %s", address, exc)
            else:
                log.debug("dropping connection from %s: %r", address, exc)
            sock.close()
            if created:
                self._limits.closed(created[0])  # idempotent if connection_lost ran
            else:
                self._limits.release(address)
            if not isinstance(exc, OSError):
                raise

    def close(self) -> None:
        for task in [*self._tasks, *self._handshakes]:
            task.cancel()
        for sock in self.sockets:
            sock.close()

    async def wait_closed(self) -> None:
        await asyncio.gather(*self._tasks, *self._handshakes, return_exceptions=True)
