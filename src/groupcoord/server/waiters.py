"""Fetch long-poll waiters: park a Fetch until an append touches one of its partitions.

Mirrors Kafka's `DelayedFetch` purgatory, reduced to what a single node needs: a waiter
is a future registered under each partition key it reads; `notify(key)` (called after
every append) wakes all waiters of that key. The handler re-reads and decides whether
`min_bytes` is met, so spurious wake-ups are harmless.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable


class FetchWaiters:
    """Partition key -> futures of parked Fetch requests."""

    def __init__(self) -> None:
        self._by_key: dict[Hashable, list[asyncio.Future[None]]] = {}

    def notify(self, key: Hashable) -> None:
        waiters = self._by_key.pop(key, None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def parked(self, key: Hashable) -> int:
        """How many fetches wait on `key`."""
        return len(self._by_key.get(key, ()))

    def notify_all(self) -> None:
        for key in list(self._by_key):
            self.notify(key)

    async def wait(self, keys: Iterable[Hashable], timeout_s: float) -> None:
        """Return after an append to any key, or after `timeout_s` seconds."""
        if timeout_s <= 0:
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        keys = list(keys)
        by_key = self._by_key
        for key in keys:
            by_key.setdefault(key, []).append(fut)
        timer = loop.call_later(timeout_s, _resolve, fut)
        try:
            await fut
        finally:
            timer.cancel()
            for key in keys:
                waiters = by_key.get(key)
                if waiters is not None:
                    try:
                        waiters.remove(fut)
                    except ValueError:
                        pass
                    if not waiters:
                        del by_key[key]


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
