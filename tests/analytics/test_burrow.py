"""Burrow's rules (analytics.md 4.1), one case per rule and per fold, on hand-made windows."""

from __future__ import annotations

from groupcoord.analytics.gold.burrow import (
    BurrowConfig,
    Commit,
    PartitionResult,
    Status,
    build_window,
    evaluate_group,
    evaluate_partition,
    fold_status,
    lag_trend,
)

DEFAULT = BurrowConfig()


def window(offsets: list[int], lags: list[int], step_ms: int = 10_000) -> list[Commit]:
    return [Commit(o, i * step_ms, lag) for i, (o, lag) in enumerate(zip(offsets, lags))]


def status(w: list[Commit], end: int, now: int, recent: list[int] | None = None,
           cfg: BurrowConfig = DEFAULT) -> Status:
    return evaluate_partition(w, end, recent if recent is not None else [end], now, cfg).status


def test_current_lag_zero_is_ok_even_when_stopped() -> None:
    w = window([10] * 10, [5] * 10)
    assert status(w, end=10, now=10**9) is Status.OK


def test_allowed_lag_counts_as_caught_up() -> None:
    w = window([10, 20, 30], [3, 3, 3])
    assert status(w, end=33, now=21_000, cfg=BurrowConfig(allowed_lag=5)) is Status.OK


def test_stop_when_gap_exceeds_window_span() -> None:
    w = window(list(range(100, 110)), [5] * 10)  # span 90 s
    assert status(w, end=200, now=90_000 + 91_000, recent=[150, 200]) is Status.STOP


def test_not_stopped_when_gap_within_span() -> None:
    w = window(list(range(100, 110)), [5, 4, 3, 2, 1, 0, 1, 2, 3, 4])
    assert status(w, end=200, now=90_000 + 89_000) is Status.OK


def test_stop_waived_when_recently_caught_up() -> None:
    w = window(list(range(100, 110)), [5] * 10)
    # one recent broker offset equals the last commit: the consumer was caught up lately
    assert status(w, end=200, now=10**6, recent=[109, 150, 200]) is not Status.STOP


def test_rewind_unrecovered() -> None:
    w = window([100, 110, 120, 50, 60, 70], [10, 10, 10, 80, 80, 80])
    assert status(w, end=150, now=50_001) is Status.REWIND


def test_rewind_recovered_is_not_rewind() -> None:
    w = window([100, 110, 120, 50, 125, 130], [0, 10, 10, 80, 10, 10])
    assert status(w, end=150, now=50_001) is Status.OK


def test_lag_zero_in_window_is_ok() -> None:
    w = window([10, 20, 30, 40], [5, 0, 7, 9])
    assert status(w, end=50, now=30_001) is Status.OK


def test_stall_same_offset_with_lag() -> None:
    w = window([42] * 10, [5, 6, 7, 8, 9, 10, 11, 12, 13, 14])
    assert status(w, end=60, now=90_001) is Status.STALL


def test_warn_lag_never_decreases() -> None:
    w = window([10, 20, 30, 40, 50], [5, 5, 6, 8, 9])
    assert status(w, end=60, now=40_001) is Status.WARN


def test_ok_when_lag_decreases_once() -> None:
    w = window([10, 20, 30, 40, 50], [5, 6, 4, 8, 9])
    assert status(w, end=60, now=40_001) is Status.OK


def test_rule_order_stop_before_rewind() -> None:
    w = window([100, 110, 50], [1, 1, 60])
    assert status(w, end=150, now=20_000 + 21_000, recent=[150]) is Status.STOP


def test_minimum_complete_reports_ok() -> None:
    w = window([42, 42], [5, 6])
    cfg = BurrowConfig(minimum_complete=0.5)
    assert status(w, end=60, now=10_001, cfg=cfg) is Status.OK


def test_empty_window_is_notfound() -> None:
    assert evaluate_partition([], 10, [10], 0).status is Status.NOTFOUND


def test_window_keeps_last_intervals() -> None:
    w = build_window([Commit(i, i * 1000, 0) for i in range(15)], BurrowConfig(intervals=10))
    assert [c.offset for c in w] == list(range(5, 15))


def test_min_distance_replaces_and_keeps_old_timestamp() -> None:
    cfg = BurrowConfig(min_distance_ms=1000)
    w = build_window([Commit(1, 0, 0), Commit(2, 5000, 1), Commit(3, 5500, 2)], cfg)
    assert w == [Commit(1, 0, 0), Commit(3, 5000, 2)]


def test_out_of_order_commit_is_inserted_by_time() -> None:
    w = build_window([Commit(1, 0, 0), Commit(3, 2000, 0), Commit(2, 1000, 0)])
    assert [c.offset for c in w] == [1, 2, 3]


def test_current_lag_and_complete() -> None:
    r = evaluate_partition(window([10, 20], [0, 0]), 35, [35], 10_001)
    assert (r.current_lag, r.complete, r.window_start_offset, r.window_end_offset) == \
        (15, 0.2, 10, 20)


def test_lag_trend_slope() -> None:
    assert lag_trend(window([1, 2, 3], [0, 10, 20])) == 1.0
    assert lag_trend(window([1], [5])) == 0.0


def _p(st: Status, lag: int, complete: float = 1.0) -> PartitionResult:
    return PartitionResult(st, lag, complete, 0, 0, 0.0)


def test_group_fold() -> None:
    assert fold_status(Status.STALL) is Status.ERR
    g = evaluate_group([_p(Status.OK, 1), _p(Status.WARN, 5), _p(Status.OK, 2, 0.5)])
    assert (g.status, g.total_lag, g.max_lag_index, g.complete) == (Status.WARN, 8, 1, 2 / 3)
    assert evaluate_group([_p(Status.WARN, 1), _p(Status.REWIND, 0)]).status is Status.ERR
    assert evaluate_group([]).status is Status.NOTFOUND
