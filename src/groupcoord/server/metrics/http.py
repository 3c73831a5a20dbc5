"""The metrics endpoint: a small HTTP/1.1 server on the broker's event loop.

    GET /metrics  -> Prometheus text (`families`); 503 until start-up loading is done
    GET /health   -> 200 "ok" while the process serves
    GET /ready    -> 200 "ready" once start-up loading is done, else 503

One request per connection (`Connection: close`), GET or HEAD only; a malformed request
gets 400, an unknown path 404, another method 405, and a client that sends nothing for
`READ_TIMEOUT_S` is dropped. It binds after the Kafka listeners (`serve`), so it adds
nothing to the broker's start-up path.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from groupcoord.server.http_server import READ_TIMEOUT_S, HttpServer, write_answer
from groupcoord.server.metrics.exposition import CONTENT_TYPE
from groupcoord.server.metrics.families import BrokerMetrics, MetricsOptions

if TYPE_CHECKING:
    from groupcoord.server.broker import Broker

log = logging.getLogger("groupcoord.metrics")

MAX_HEAD = 8192
TEXT = "text/plain; charset=utf-8"


class MetricsServer(HttpServer):
    read_limit = MAX_HEAD

    def __init__(self, broker: Broker, options: MetricsOptions) -> None:
        super().__init__()
        self.broker = broker
        self.options = options
        self._metrics: BrokerMetrics | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            status, content_type, body, is_head = await self._answer(head)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ConnectionError):
            writer.close()
            return
        await write_answer(writer, status, content_type, body, is_head)

    async def _answer(self, head: bytes) -> tuple[int, str, bytes, bool]:
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return 400, TEXT, b"malformed request line\n", False
        method, target = parts[0], parts[1]
        path = target.split("?", 1)[0]
        if path not in ("/metrics", "/health", "/ready"):
            return 404, TEXT, f"no such endpoint: {path}\n".encode(), False
        if method not in ("GET", "HEAD"):
            return 405, TEXT, f"{method} {path}: only GET\n".encode(), False
        is_head = method == "HEAD"
        if path == "/health":
            return 200, TEXT, b"ok\n", is_head
        if not self.broker.ready.is_set():
            return 503, TEXT, b"loading\n", is_head
        if path == "/ready":
            return 200, TEXT, b"ready\n", is_head
        if self._metrics is None:
            self._metrics = BrokerMetrics(self.broker, self.options)
        try:
            return 200, CONTENT_TYPE, await self._metrics.scrape(), is_head
        except Exception:
            # A scrape must never take the broker down; the failure is logged once per
            # scrape and Prometheus records the target as down.
            log.exception("metrics scrape failed")
            return 500, TEXT, b"scrape failed; see the broker log\n", is_head
