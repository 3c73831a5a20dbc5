"""The HTTP/1.1 plumbing the broker's small endpoints share (`metrics.http`, and the test
control endpoint `testing.control`): one request per connection, answered with
`Connection: close`, on the broker's event loop."""

from __future__ import annotations

import asyncio

# A client that sends nothing for this long is dropped.
READ_TIMEOUT_S = 10.0
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           409: "Conflict", 413: "Payload Too Large", 500: "Internal Server Error",
           503: "Service Unavailable"}


class HttpServer:
    """Binds, serves each connection with `_serve`, and stops."""

    # How much of a request a reader buffers (asyncio's default).
    read_limit = 1 << 16

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._serve, host, port,
                                                  limit=self.read_limit)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


async def write_answer(writer: asyncio.StreamWriter, status: int, content_type: str,
                       body: bytes, head_only: bool = False) -> None:
    """Write the answer (without its body for a HEAD request) and close the connection; a
    client already gone is no error."""
    head = (f"HTTP/1.1 {status} {REASONS[status]}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    try:
        writer.write(head if head_only else head + body)
        await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()
