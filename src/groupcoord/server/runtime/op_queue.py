"""The operation queue of a coordinator shard's task (`shard_task`)."""

from __future__ import annotations

import asyncio
import collections
from typing import Generic, TypeVar

T = TypeVar("T")


class OpQueue(Generic[T]):
    """The shard's operation queue: asyncio.Queue without what one consumer and no bound
    never use (task counting, putters, an Event cleared per put), which made it a
    noticeable share of each operation's cost."""

    __slots__ = ("_items", "_loop", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._items: collections.deque[T] = collections.deque()
        self._loop = loop
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: T) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def empty(self) -> bool:
        return not self._items

    def __len__(self) -> int:
        return len(self._items)

    def get_nowait(self) -> T:
        """The oldest item; IndexError when empty."""
        return self._items.popleft()

    async def get(self) -> T:
        """The oldest item, once there is one (one consumer: the shard's task)."""
        while not self._items:
            waiter = self._waiter = self._loop.create_future()
            await waiter
        return self._items.popleft()
