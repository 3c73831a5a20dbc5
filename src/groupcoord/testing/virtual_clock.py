"""Virtual time for an embedded broker: a `ManualClock` moved from the test's thread.

The broker's coordinators, share-partition locks and transaction timeouts all read the one
injected clock (docs/architecture.md, "Time"). `VirtualClock.advance(ms)` runs on the
broker's event loop: it fires every timer that falls due, lets the operations those timers
queued on the coordinator shards run to completion (their records appended and replayed),
fires what those armed in turn if it is also due, and returns only then. The clients' own
timers (heartbeat intervals, poll loops) still run on real time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from groupcoord.coordinator.clock import ManualClock, ManualTimer
from groupcoord.server.broker import Broker

T = TypeVar("T")
# Loop turns given to work woken by a timer outside the shards (a transaction timeout's
# maintenance task) before `advance` returns; each turn only runs what is ready.
SETTLE_TURNS = 20


class LoopManualClock(ManualClock):
    """A `ManualClock` that runs a timer armed for a time already reached on the loop's next
    turn, as the system clock would, instead of holding it until the next `advance`: a
    group with no initial rebalance delay arms its join timer for "now", and a client
    waiting on it must not wait for the test to move time."""

    def call_at(self, deadline_ms: int, callback: Callable[[], object]) -> ManualTimer:
        timer = super().call_at(deadline_ms, callback)
        if deadline_ms <= self.now_ms():
            asyncio.get_running_loop().call_soon(self._run_due)
        return timer

    def _run_due(self) -> None:
        self.advance_to(self.now_ms())


class VirtualClock:
    """The thread-safe face of a broker's `ManualClock`."""

    def __init__(self, clock: LoopManualClock,
                 run_on_loop: Callable[[Coroutine[Any, Any, Any]], Any],
                 broker: Callable[[], Broker | None]) -> None:
        self.manual = clock
        self._run = run_on_loop
        self._broker = broker

    def now_ms(self) -> int:
        async def read() -> int:
            return self.manual.now_ms()
        return int(self._run(read()))

    def advance(self, ms: int) -> int:
        """Move the broker's time on by `ms` and return the number of timers that fired,
        once everything they set off has run."""
        if ms < 0:
            raise ValueError("time does not go back")
        return int(self._run(advance_broker(self.manual, self._broker(), ms)))

    def pending(self) -> list[int]:
        """Deadlines of the armed timers, earliest first."""
        async def read() -> list[int]:
            return self.manual.pending()
        return list(self._run(read()))


async def advance_broker(clock: LoopManualClock, broker: Broker | None, ms: int) -> int:
    target = clock.now_ms() + ms
    fired = 0
    while True:
        fired += clock.advance_to(target)
        await _drain(broker)
        due = clock.pending()
        if not due or due[0] > target:
            return fired


async def _drain(broker: Broker | None) -> None:
    """Wait until every coordinator shard has run what is queued on it now (a no-op
    queued behind it completes last: shard queues are FIFO)."""
    for _ in range(SETTLE_TURNS):
        await asyncio.sleep(0)
    if broker is None or not broker.ready.is_set():
        return
    loop = asyncio.get_running_loop()
    barriers = []
    for shard in list(broker.groups.shards.values()):
        fut: asyncio.Future[Any] = loop.create_future()
        shard.submit(lambda _shard, _ctx, _now: None, None, fut)
        barriers.append(fut)
    await asyncio.gather(*barriers, return_exceptions=True)
    for _ in range(SETTLE_TURNS):
        await asyncio.sleep(0)
