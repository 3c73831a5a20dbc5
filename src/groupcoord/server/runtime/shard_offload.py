"""A shard's offloaded work in flight (Kafka's `CoordinatorExecutor`): an `Offload`'s
`compute` runs on the runtime's worker thread, then its `apply` runs with the value as an
ordinary operation on the shard's queue, unless a newer task took the key or the shard
failed meanwhile (`clear`)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from groupcoord.coordinator.result import Offload

log = logging.getLogger("groupcoord.coordinator")

# Queues an operation (shard, op context, now ms) -> Result on the shard.
Submit = Callable[[Callable[[Any, Any, int], Any]], None]


class Offloads:
    """Key -> the sequence number of the newest task started for it."""

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.pending: dict[tuple[Any, ...], int] = {}
        self._seq = itertools.count(1)

    def clear(self) -> None:
        """Drop every task in flight: their values are never applied."""
        self.pending.clear()

    def start(self, task: Offload, executor: Executor, submit: Submit) -> None:
        seq = next(self._seq)
        pending = self.pending
        pending[task.key] = seq

        def compute() -> Any:
            # Superseded while it waited for the thread: skip the work (its value is dropped).
            return None if pending.get(task.key) != seq else task.compute()

        running = asyncio.get_running_loop().run_in_executor(executor, compute)

        def done(fut: asyncio.Future[Any]) -> None:
            if pending.get(task.key) != seq:
                return  # superseded, or dropped by a failure or unload
            del pending[task.key]
            value = None
            if not fut.cancelled():
                if fut.exception() is not None:
                    log.error("offloaded %s failed on shard %d", task.key, self.partition,
                              exc_info=fut.exception())
                else:
                    value = fut.result()
            submit(lambda shard, _ctx, now: task.apply(shard, value, now))

        running.add_done_callback(done)
