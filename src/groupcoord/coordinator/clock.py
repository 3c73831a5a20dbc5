"""Time as every coordinator runtime sees it: one injected `Clock`.

A clock gives wall-clock milliseconds (`now_ms`, never going back) and runs timers in
that same time base: a callback armed for `deadline_ms` runs only once `now_ms()` has
reached it, so an operation fired by a timer never observes a time before the deadline
it was armed for. Kafka's runtime gets the same guarantee from one `Time` for reads and
its timer wheel (`CoordinatorTimerImpl` over `SystemTimer`).

`ManualClock` is the clock of tests and virtual time: it stands still until `advance`,
which runs the due timers in deadline order (ties in arming order), each seeing
`now_ms()` equal to its deadline. The system implementation lives in `server.runtime.clock`
(this layer reads no time).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...

    def postpone(self, deadline_ms: int) -> bool:
        """Move the timer to `deadline_ms` if that is not earlier and it has not fired;
        False (nothing changed) otherwise, or when the clock does not move timers."""
        ...


class Clock(Protocol):
    def now_ms(self) -> int: ...

    def call_at(self, deadline_ms: int, callback: Callable[[], object]) -> TimerHandle:
        """Run `callback` once, when `now_ms()` has reached `deadline_ms`."""
        ...


class ManualTimer:
    __slots__ = ("callback", "cancelled", "deadline_ms", "seq")

    def __init__(self, deadline_ms: int, seq: int, callback: Callable[[], object]) -> None:
        self.deadline_ms = deadline_ms
        self.seq = seq
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def postpone(self, deadline_ms: int) -> bool:
        # Its place in the clock's heap is fixed: the caller arms a new timer instead, so
        # `pending()` always lists the deadlines as they are.
        return False

    def __lt__(self, other: ManualTimer) -> bool:
        return (self.deadline_ms, self.seq) < (other.deadline_ms, other.seq)


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._timers: list[ManualTimer] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def call_at(self, deadline_ms: int, callback: Callable[[], object]) -> ManualTimer:
        timer = ManualTimer(deadline_ms, next(self._seq), callback)
        heapq.heappush(self._timers, timer)
        return timer

    def advance(self, ms: int) -> int:
        """Move time forward by `ms`, running every timer that falls due (also timers
        armed by those callbacks); returns how many ran."""
        return self.advance_to(self._now + ms)

    def advance_to(self, target_ms: int) -> int:
        fired = 0
        while self._timers and self._timers[0].deadline_ms <= target_ms:
            timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, timer.deadline_ms)
            timer.callback()
            fired += 1
        self._now = max(self._now, target_ms)
        return fired

    def pending(self) -> list[int]:
        """Deadlines of the timers still armed, earliest first."""
        return sorted(t.deadline_ms for t in self._timers if not t.cancelled)
