"""SystemClock: one time base for readings and timers; a loop wake-up that comes before
the wall-clock deadline is re-armed, so no timer is seen firing early."""

from __future__ import annotations

import asyncio

from groupcoord.coordinator.clock import ManualClock
from groupcoord.server.runtime.clock import SystemClock, sleep_ms


def test_timer_woken_early_by_clock_drift_waits_for_its_deadline() -> None:
    # The wall clock lags the loop clock: readings while arming and at the first two
    # wake-ups are behind the deadline, as when the two clocks drift apart.
    readings = iter([1_000, 1_004, 1_009, 1_010])
    last = [1_000]

    def read_ns() -> int:
        last[0] = next(readings, last[0])
        return last[0] * 1_000_000

    async def go() -> list[int]:
        clock = SystemClock(read_ns)
        fired: list[int] = []
        done = asyncio.get_running_loop().create_future()
        clock.call_at(1_010, lambda: (fired.append(clock.now_ms()), done.set_result(None)))
        await asyncio.wait_for(done, 5)
        return fired

    assert asyncio.run(go()) == [1_010]


def test_readings_never_go_back() -> None:
    readings = iter([5_000, 4_000, 6_000])
    clock = SystemClock(lambda: next(readings) * 1_000_000)
    assert [clock.now_ms(), clock.now_ms(), clock.now_ms()] == [5_000, 5_000, 6_000]


def test_cancelled_timer_does_not_run() -> None:
    async def go() -> list[int]:
        clock = SystemClock()
        fired: list[int] = []
        handle = clock.call_at(clock.now_ms() + 1, lambda: fired.append(1))
        handle.cancel()
        await sleep_ms(clock, 5)
        return fired

    assert asyncio.run(go()) == []


def test_sleep_ms_follows_a_manual_clock() -> None:
    async def go() -> int:
        clock = ManualClock(0)
        sleeper = asyncio.ensure_future(sleep_ms(clock, 100))
        await asyncio.sleep(0)
        clock.advance(99)
        await asyncio.sleep(0)
        assert not sleeper.done()
        clock.advance(1)
        await sleeper
        return clock.now_ms()

    assert asyncio.run(go()) == 100


def test_a_postponed_timer_fires_at_its_new_deadline_only() -> None:
    # Readings: arming, postponing, then the loop wake-up at the old deadline (re-armed),
    # and the one at the new deadline.
    readings = iter([1_000, 1_002, 1_010, 1_030])
    last = [1_000]

    def read_ns() -> int:
        last[0] = next(readings, last[0])
        return last[0] * 1_000_000

    async def go() -> tuple[list[int], bool]:
        clock = SystemClock(read_ns)
        fired: list[int] = []
        done = asyncio.get_running_loop().create_future()
        handle = clock.call_at(1_010, lambda: (fired.append(clock.now_ms()),
                                               done.set_result(None)))
        clock.now_ms()
        assert handle.postpone(1_030)
        earlier = handle.postpone(1_020)  # never earlier: the caller arms a new timer
        await asyncio.wait_for(done, 5)
        return fired, earlier

    assert asyncio.run(go()) == ([1_030], False)


def test_a_fired_or_cancelled_timer_cannot_be_postponed() -> None:
    async def go() -> list[bool]:
        clock = SystemClock()
        fired: list[int] = []
        done = clock.call_at(clock.now_ms(), lambda: fired.append(1))
        await sleep_ms(clock, 5)
        cancelled = clock.call_at(clock.now_ms() + 1_000, lambda: fired.append(2))
        cancelled.cancel()
        return [bool(fired), done.postpone(clock.now_ms() + 10),
                cancelled.postpone(clock.now_ms() + 2_000)]

    assert asyncio.run(go()) == [True, False, False]


def test_a_manual_timer_is_never_postponed_in_place() -> None:
    clock = ManualClock(0)
    handle = clock.call_at(10, lambda: None)
    assert not handle.postpone(20) and clock.pending() == [10]
