"""ManualClock: time moves only on `advance`, due timers run in deadline order and see
their own deadline as the time."""

from __future__ import annotations

from groupcoord.coordinator.clock import ManualClock


def test_timers_fire_in_deadline_order_at_their_deadline() -> None:
    clock = ManualClock(1_000)
    seen: list[tuple[str, int]] = []
    clock.call_at(1_030, lambda: seen.append(("b", clock.now_ms())))
    clock.call_at(1_010, lambda: seen.append(("a", clock.now_ms())))
    clock.call_at(1_030, lambda: seen.append(("c", clock.now_ms())))
    assert clock.advance(9) == 0 and seen == []
    assert clock.advance(21) == 3
    assert seen == [("a", 1_010), ("b", 1_030), ("c", 1_030)]
    assert clock.now_ms() == 1_030


def test_cancelled_timer_never_runs_and_armed_timers_chain() -> None:
    clock = ManualClock(0)
    seen: list[int] = []
    handle = clock.call_at(5, lambda: seen.append(-1))
    handle.cancel()

    def again() -> None:
        seen.append(clock.now_ms())
        if clock.now_ms() < 30:
            clock.call_at(clock.now_ms() + 10, again)

    clock.call_at(10, again)
    assert clock.pending() == [10]
    clock.advance(100)
    assert seen == [10, 20, 30] and clock.now_ms() == 100 and clock.pending() == []


def test_time_never_goes_back() -> None:
    clock = ManualClock(50)
    clock.advance_to(10)
    assert clock.now_ms() == 50
