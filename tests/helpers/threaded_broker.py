"""The real broker on its own thread and event loop, for tests that drive it with real
clients and reach into it meanwhile (a fault-injecting storage layer, its logs).

`ThreadedBroker(data_dir, **config)` starts on enter and stops (cleanly: flush, checkpoint,
close) on exit; `restart()` stops and starts a new broker on the same data dir and port.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Self, TypeVar

from groupcoord.server.broker import Broker
from groupcoord.server.config import BrokerConfig, Listener

T = TypeVar("T")
START_TIMEOUT_S = 60.0


class ThreadedBroker:
    def __init__(self, data_dir: Path, **overrides: Any) -> None:
        self.values: dict[str, Any] = {
            "listeners": (Listener("127.0.0.1", 0),),
            "data_dir": str(data_dir),
            "fsync": "always",
            "cluster_id": "test-cluster",
            "group_initial_rebalance_delay_ms": 0,
        }
        self.values.update(overrides)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="broker", daemon=True)
        self.broker: Broker | None = None
        self.port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = START_TIMEOUT_S) -> T:
        """Run a coroutine on the broker's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def run(self, fn: Any, *args: Any) -> Any:
        """Call a plain function on the broker's loop thread (storage is not thread-safe)."""
        async def invoke() -> Any:
            return fn(*args)
        return self.call(invoke())

    def start(self) -> None:
        if not self.thread.is_alive():
            self.thread.start()
        if self.port:
            self.values["listeners"] = (Listener("127.0.0.1", self.port),)
        broker = Broker(BrokerConfig(**self.values))
        self.call(broker.start())
        self.broker = broker
        self.port = broker.bound[0].port

    def stop(self) -> None:
        if self.broker is not None:
            self.call(self.broker.stop())
            self.broker = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()
