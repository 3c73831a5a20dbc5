"""Shared by the request field tests: an in-process broker on its own thread, the
broker's ERROR log, and the error codes of a response.

`BrokerThread` runs `broker_inproc.InProcBroker` on an event loop in a thread so that
hypothesis examples (plain functions) can drive it synchronously; `untouched()` says
whether anything reached a coordinator: no shard task, no share partition, no record in an
internal topic.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker, RawClient

from groupcoord.apis.registry import handlers
from groupcoord.wire.messages import WireStruct

INTERNAL_TOPICS = ("__consumer_offsets", "__share_group_state", "__transaction_state")
COORDINATOR_API_KEYS = (8, 9, 10, 11, 12, 13, 14, 15, 16, 22, 24, 25, 26, 28, 42, 44, 47,
                        68, 69, 76, 77, 78, 79, 84, 90, 91, 92)


class ErrorLog(logging.Handler):
    """Every ERROR the broker logs (a shard failure, a failed handler or encoder)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def error_log() -> Iterator[ErrorLog]:
    """Collect the broker's ERROR records for the duration of the block."""
    handler = ErrorLog()
    logger = logging.getLogger("groupcoord")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def run_checked(scenario: Any) -> None:
    """Run an async scenario on a fresh loop and require that the broker logged no error
    (a shard failure or reload, a failed handler or encoder)."""
    with error_log() as errors:
        asyncio.run(scenario)
    assert errors.messages == []


class BrokerThread:
    """An in-process broker on its own event loop thread, driven synchronously (hypothesis
    examples are plain functions)."""

    def __init__(self, data_dir: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.inproc = InProcBroker(data_dir)
        self.run(self.inproc.__aenter__())
        self.client: RawClient = self.run(self.inproc.client())

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def call(self, request: Any, version: int) -> Any:
        response_cls = handlers()[request.API_KEY].response_cls
        return self.run(self.client.call(request, version, response_cls))

    def call_on_new_connection(self, request: Any, version: int, timeout: float) -> Any:
        """`call` on a connection of its own (closed afterwards), so that a reply the
        coordinator parks cannot hold up later requests; TimeoutError if none came."""
        response_cls = handlers()[request.API_KEY].response_cls

        async def exchange() -> Any:
            client = await self.inproc.client()
            try:
                return await client.call(request, version, response_cls, timeout)
            finally:
                self.inproc.clients.remove(client)
                await client.close()
        return self.run(exchange())

    def untouched(self) -> bool:
        """No coordinator shard loaded, no share partition, no internal record written."""
        async def check() -> bool:
            broker = self.inproc.broker
            ends = []
            for name in INTERNAL_TOPICS:
                info = broker.topics.get(name)
                for partition in range(info.num_partitions if info else 0):
                    plog = broker.topics.log(name, partition)
                    ends.append(plog.log_end_offset if plog is not None else 0)
            return not broker.groups.shards and not broker.shares.partitions and not any(ends)
        result: bool = self.run(check())
        return result

    def close(self) -> None:
        self.run(self.inproc.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def error_codes(message: WireStruct) -> set[int]:
    """Every error code anywhere in a response."""
    codes: set[int] = set()
    for name in message._FIELDS:
        value = getattr(message, name)
        if name.endswith("error_code"):
            codes.add(value)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, WireStruct):
                codes |= error_codes(item)
    return codes


def assert_answered(response: WireStruct, code: int) -> None:
    codes = error_codes(response)
    assert code in codes and codes <= {0, code}, codes
