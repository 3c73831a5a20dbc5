"""Lag and Burrow building blocks over Arrow tables: the schemas of ``partition_lag`` and
``burrow_status``, a partition's end offsets over time, and Burrow's ring at each tick.

``keyed_gold`` builds the two tables with them, for one (topic, partition) as ``applyInArrow``
hands it over or for many series at once. The as-of lookups are numpy ``searchsorted`` calls
instead of range joins in Spark, on whole columns: no pandas frame or Python object is made
per commit, because converting millions of commit rows through pandas dominated the pipeline.

- ``lag_records`` = end offset as of the commit (or grid tick) minus the committed offset,
  floored at 0.
- ``lag_seconds`` (analytics.md 5.3, kafka-lag-exporter made exact) = the time minus the
  append time of the first batch whose end offset passes the committed offset; 0 when caught up.
- Burrow is evaluated at each tick of ``ticks_ms`` over the commits up to that tick; the
  recent broker offsets are the end offsets as of the last ``intervals`` refreshes (10 s).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from groupcoord.analytics.gold.burrow import BurrowConfig, Commit, add_commit
from groupcoord.analytics.read.table_schemas import arrow_schema

# commit rows carry the group's previous commit on the partition (for commit rate and
# rewinds): prev_committed_offset, prev_commit_ts_ms
LAG_SCHEMA = arrow_schema(
    "group_id STRING, topic STRING, partition INT, ts_ms BIGINT, kind STRING, "
    "committed_offset BIGINT, end_offset BIGINT, lag_records BIGINT, lag_seconds DOUBLE, "
    "prev_committed_offset BIGINT, prev_commit_ts_ms BIGINT")
BURROW_SCHEMA = arrow_schema(
    "eval_ts_ms BIGINT, group_id STRING, topic STRING, partition INT, status STRING, "
    "status_code INT, current_lag BIGINT, complete DOUBLE, window_start_offset BIGINT, "
    "window_end_offset BIGINT, lag_trend DOUBLE")
OFFSET_REFRESH_MS = 10_000
LAG_KINDS = pa.array(["commit", "grid"])


class EndOffsets:
    """One partition's end offset over time, for as-of lookups."""

    def __init__(self, ts: np.ndarray, end: np.ndarray) -> None:
        order = np.lexsort((end, ts))
        self.ts = np.asarray(ts, dtype=np.int64)[order]
        # a later batch can carry an older timestamp; the end offset never goes back
        self.end = np.maximum.accumulate(np.asarray(end, dtype=np.int64)[order]) \
            if len(order) else np.zeros(0, dtype=np.int64)

    @classmethod
    def of(cls, ends: pa.Table) -> EndOffsets:
        """From a table with ``ts_ms`` and ``end_offset`` columns."""
        return cls(int_column(ends, "ts_ms"), int_column(ends, "end_offset"))

    def at(self, ts: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self.ts, ts, side="right") - 1
        out = np.where(idx >= 0, self.end[np.clip(idx, 0, None)] if len(self.end) else 0, 0)
        return out.astype(np.int64)

    def appended_at(self, offsets: np.ndarray) -> np.ndarray:
        """Time of the first sample whose end offset is past ``offsets`` (-1 if none)."""
        idx = np.searchsorted(self.end, offsets, side="right")
        ok = idx < len(self.end)
        return np.where(ok, self.ts[np.clip(idx, 0, len(self.ts) - 1)] if len(self.ts) else -1, -1)


def int_column(t: pa.Table, name: str, null: int = -1) -> np.ndarray:
    col = t.column(name)
    return pc.fill_null(col, null).to_numpy().astype(np.int64) if len(col) \
        else np.zeros(0, dtype=np.int64)


def burrow_rings(ts: np.ndarray, committed: np.ndarray, lags: np.ndarray, tomb: np.ndarray,
           ticks_ms: list[int], cfg: BurrowConfig) -> Iterator[tuple[int, list[Commit]]]:
    """(tick, Burrow's ring as of the tick) for every tick with a non-empty ring; a tombstone
    empties the ring. Commits come sorted by time, so with ``min_distance_ms`` 0 the ring is
    just the newest ``intervals`` commits since the last tombstone: found by index, with no
    Python work per commit (that loop dominated the pipeline at a few million commits)."""
    if cfg.min_distance_ms == 0:
        last_tomb = np.maximum.accumulate(np.where(tomb, np.arange(len(ts)), -1))
        his = np.searchsorted(ts, np.asarray(ticks_ms, dtype=np.int64), side="right")
        for tick, hi in zip(ticks_ms, his.tolist(), strict=True):
            lo = max(int(last_tomb[hi - 1]) + 1, hi - cfg.intervals) if hi else 0
            if lo < hi:
                yield tick, [Commit(o, t, lag) for o, t, lag in zip(
                    committed[lo:hi].tolist(), ts[lo:hi].tolist(), lags[lo:hi].tolist(),
                    strict=True)]
        return
    ring: list[Commit] = []
    i = 0
    for tick in ticks_ms:
        while i < len(ts) and ts[i] <= tick:
            if tomb[i]:
                ring = []
            else:
                add_commit(ring, Commit(int(committed[i]), int(ts[i]), int(lags[i])), cfg)
            i += 1
        if ring:
            yield tick, list(ring)
