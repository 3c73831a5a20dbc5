"""Burrow's ring at each evaluation tick (``lag.burrow_rings``): the indexed shortcut taken with
``min_distance_ms`` 0 equals folding every commit into the ring, for random histories."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.analytics.gold import keyed_gold, lag
from groupcoord.analytics.gold.burrow import BurrowConfig, Commit, build_window

history = st.lists(st.tuples(st.integers(0, 5_000), st.integers(0, 1_000), st.booleans()),
                   max_size=60)


def _folded(ts: np.ndarray, committed: np.ndarray, lags: np.ndarray, tomb: np.ndarray,
            tick: int, cfg: BurrowConfig) -> list[Commit]:
    """The reference: every commit up to the tick since the last tombstone, folded."""
    upto = [i for i in range(len(ts)) if ts[i] <= tick]
    since = [i for i in upto if not any(tomb[j] for j in upto if j >= i)]
    return build_window([Commit(int(committed[i]), int(ts[i]), int(lags[i])) for i in since],
                        cfg)


@settings(max_examples=200, deadline=None)
@given(history, st.lists(st.integers(0, 6_000), min_size=1, max_size=8),
       st.integers(1, 6), st.sampled_from([0, 150]))
def test_ring_at_each_tick_equals_the_fold(rows: list[tuple[int, int, bool]], ticks: list[int],
                                            intervals: int, min_distance: int) -> None:
    rows = sorted(rows, key=lambda r: r[0])  # the timeline sorts commits by time
    ts = np.array([r[0] for r in rows], dtype=np.int64)
    committed = np.array([r[1] for r in rows], dtype=np.int64)
    tomb = np.array([r[2] for r in rows], dtype=np.bool_)
    lags = committed % 7
    cfg = BurrowConfig(intervals=intervals, min_distance_ms=min_distance)
    ticks = sorted(set(ticks))
    got = dict(lag.burrow_rings(ts, committed, lags, tomb, ticks, cfg))
    for tick in ticks:
        assert got.get(tick, []) == _folded(ts, committed, lags, tomb, tick, cfg)


def test_timeline_skips_ticks_after_a_tombstone() -> None:
    commits = pa.table({"group_id": ["g"] * 3, "topic": ["t"] * 3, "partition": [0] * 3,
                        "record_ts_ms": [1_000, 2_000, 3_000], "log_offset": [1, 2, 3],
                        "committed_offset": [5, 9, None], "tombstone": [False, False, True]})
    ends = pa.table({"ts_ms": [500], "end_offset": [10]})
    out = keyed_gold.burrow_timeline_of(commits, ends, [1_500, 2_500, 3_500], BurrowConfig())
    assert out.column("eval_ts_ms").to_pylist() == [1_500, 2_500]
    assert out.column("current_lag").to_pylist() == [5, 1]


def test_lag_rows_per_group_at_commits_and_on_the_grid() -> None:
    """Two groups interleaved in time: each group's grid carries its own last commit."""
    commits = pa.table({"group_id": ["b", "a", "b", "a"], "topic": ["t"] * 4,
                        "partition": pa.array([3] * 4, pa.int32()),
                        "record_ts_ms": [1_000, 1_500, 2_500, 3_000],
                        "log_offset": [1, 2, 3, 4], "committed_offset": [4, 2, 8, 6],
                        "tombstone": [False] * 4})
    ends = pa.table({"ts_ms": [0, 2_000], "end_offset": [5, 10]})
    out = keyed_gold.partition_lag_of(commits, ends, 2_000, 4_000).to_pylist()
    got = {(r["group_id"], r["kind"], r["ts_ms"]): (r["committed_offset"], r["lag_records"])
           for r in out}
    assert got == {("a", "commit", 1_500): (2, 3), ("a", "commit", 3_000): (6, 4),
                   ("b", "commit", 1_000): (4, 1), ("b", "commit", 2_500): (8, 2),
                   ("a", "grid", 2_000): (2, 8), ("a", "grid", 4_000): (6, 4),
                   ("b", "grid", 2_000): (4, 6), ("b", "grid", 4_000): (8, 2)}
    assert {r["topic"] for r in out} == {"t"} and {r["partition"] for r in out} == {3}
