"""The broker's clock: wall-clock milliseconds, with timers in the same time base.

`SystemClock` reads `time.time_ns()` and never goes back (a wall clock stepped backwards
reads as standing still until it catches up). Its timers ride the event loop's
monotonic clock for the waiting, but fire only once the wall-clock reading has reached the
deadline: a wake-up that comes early by the drift between the two clocks is re-armed for
the rest. So no coordinator ever sees a timer fire before its deadline, and none has to
guard against it. `sleep_ms` waits on any `Clock` (a `ManualClock` in tests).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # protocols only: the broker creates its clock before its listeners bind
    from groupcoord.coordinator.clock import Clock, TimerHandle


class SystemTimer:
    __slots__ = ("_callback", "_clock", "_deadline_ms", "_handle")

    def __init__(self, clock: SystemClock, deadline_ms: int,
                 callback: Callable[[], object]) -> None:
        self._clock = clock
        self._deadline_ms = deadline_ms
        self._callback = callback
        self._handle: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        loop = asyncio.get_running_loop()
        delay_ms = max(0, self._deadline_ms - self._clock.now_ms())
        self._handle = loop.call_at(loop.time() + delay_ms / 1000.0, self._fire)

    def _fire(self) -> None:
        if self._clock.now_ms() < self._deadline_ms:
            self._arm()
            return
        self._handle = None
        self._callback()

    def postpone(self, deadline_ms: int) -> bool:
        """The loop timer stays armed for the old deadline; when it comes due, `_fire`
        re-arms it for the rest (cheaper than cancelling and arming a timer per call)."""
        if self._handle is None or deadline_ms < self._deadline_ms:
            return False
        self._deadline_ms = deadline_ms
        return True

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class SystemClock:
    """The real clock (one per broker)."""

    def __init__(self, read_ns: Callable[[], int] = time.time_ns) -> None:
        self._read_ns = read_ns
        self._last = 0

    def now_ms(self) -> int:
        now = self._read_ns() // 1_000_000
        if now < self._last:
            return self._last
        self._last = now
        return now

    def call_at(self, deadline_ms: int, callback: Callable[[], object]) -> TimerHandle:
        return SystemTimer(self, deadline_ms, callback)


async def sleep_ms(clock: Clock, duration_ms: int) -> None:
    """Wait until `clock` has moved `duration_ms` on."""
    fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not fut.done():
            fut.set_result(None)

    handle = clock.call_at(clock.now_ms() + duration_ms, wake)
    try:
        await fut
    finally:
        handle.cancel()
