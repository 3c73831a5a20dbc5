"""Per-partition lag and Burrow evaluation over Arrow tables (run by ``applyInArrow``).

Both functions get every commit on one (topic, partition), from all groups, plus that
partition's end-offset samples (one per data batch), so the as-of lookups are numpy
``searchsorted`` calls instead of range joins in Spark. The work is done on whole columns:
no pandas frame or Python object is made per commit (string columns are built with Arrow
``take``), because converting millions of commit rows through pandas dominated the pipeline.

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

from groupcoord.analytics.burrow import BurrowConfig, Commit, add_commit, evaluate_partition

LAG_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("ts_ms", pa.int64()), ("kind", pa.string()), ("committed_offset", pa.int64()),
    ("end_offset", pa.int64()), ("lag_records", pa.int64()), ("lag_seconds", pa.float64()),
    # commit rows: the group's previous commit on the partition (for commit rate and rewinds)
    ("prev_committed_offset", pa.int64()), ("prev_commit_ts_ms", pa.int64()),
])
BURROW_SCHEMA = pa.schema([
    ("eval_ts_ms", pa.int64()), ("group_id", pa.string()), ("topic", pa.string()),
    ("partition", pa.int32()), ("status", pa.string()), ("status_code", pa.int32()),
    ("current_lag", pa.int64()), ("complete", pa.float64()),
    ("window_start_offset", pa.int64()), ("window_end_offset", pa.int64()),
    ("lag_trend", pa.float64()),
])
OFFSET_REFRESH_MS = 10_000
_KINDS = pa.array(["commit", "grid"])


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
        return cls(_ints(ends, "ts_ms"), _ints(ends, "end_offset"))

    def at(self, ts: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self.ts, ts, side="right") - 1
        out = np.where(idx >= 0, self.end[np.clip(idx, 0, None)] if len(self.end) else 0, 0)
        return out.astype(np.int64)

    def appended_at(self, offsets: np.ndarray) -> np.ndarray:
        """Time of the first sample whose end offset is past ``offsets`` (-1 if none)."""
        idx = np.searchsorted(self.end, offsets, side="right")
        ok = idx < len(self.end)
        return np.where(ok, self.ts[np.clip(idx, 0, len(self.ts) - 1)] if len(self.ts) else -1, -1)


def _ints(t: pa.Table, name: str, null: int = -1) -> np.ndarray:
    col = t.column(name)
    return pc.fill_null(col, null).to_numpy().astype(np.int64) if len(col) \
        else np.zeros(0, dtype=np.int64)


class _ByGroup:
    """A commit table sorted by (group, time, log offset), with each group's row range."""

    def __init__(self, commits: pa.Table) -> None:
        order = pc.sort_indices(commits, [("group_id", "ascending"),
                                          ("record_ts_ms", "ascending"),
                                          ("log_offset", "ascending")])
        self.t = commits.take(order)
        codes = pc.dictionary_encode(self.t.column("group_id")).combine_chunks().indices
        change = np.flatnonzero(np.diff(codes.to_numpy())) + 1 if len(codes) else codes
        self.bounds = np.concatenate([[0], change, [len(codes)]]).astype(np.int64) \
            if len(codes) else np.zeros(1, dtype=np.int64)
        self.ts = _ints(self.t, "record_ts_ms")
        self.committed = _ints(self.t, "committed_offset")

    def ranges(self) -> Iterator[tuple[int, int]]:
        return zip(self.bounds[:-1].tolist(), self.bounds[1:].tolist(), strict=True)

    def column_at(self, name: str, rows: np.ndarray) -> pa.Array:
        return self.t.column(name).take(pa.array(rows, type=pa.int64()))


def partition_lag(commits: pa.Table, ends: pa.Table, grid_ms: int, until_ms: int) -> pa.Table:
    """Lag rows at every commit and on a ``grid_ms`` grid carrying the last commit forward."""
    live = commits.filter(pc.invert(commits.column("tombstone")))
    if not live.num_rows:
        return LAG_SCHEMA.empty_table()
    g = _ByGroup(live)
    rows, grid_ts = [np.arange(live.num_rows, dtype=np.int64)], [g.ts]
    for lo, hi in g.ranges():
        grid = np.arange((g.ts[lo] // grid_ms + 1) * grid_ms, until_ms + 1, grid_ms,
                         dtype=np.int64)
        rows.append(lo + np.searchsorted(g.ts[lo:hi], grid, side="right") - 1)
        grid_ts.append(grid)
    src, ts = np.concatenate(rows), np.concatenate(grid_ts)
    committed = g.committed[src]
    eo = EndOffsets.of(ends)
    end = eo.at(ts)
    lag = np.maximum(end - committed, 0)
    appended = eo.appended_at(committed)
    secs = np.where((lag > 0) & (appended >= 0), np.maximum(ts - appended, 0) / 1000.0, 0.0)
    kind = np.zeros(len(src), dtype=np.int64)
    kind[live.num_rows:] = 1
    prev_offset, prev_ts = _previous(g, len(src))
    return pa.Table.from_arrays([
        g.column_at("group_id", src), g.column_at("topic", src),
        g.column_at("partition", src).cast(pa.int32()), pa.array(ts),
        _KINDS.take(pa.array(kind)), pa.array(committed), pa.array(end), pa.array(lag),
        pa.array(secs), prev_offset, prev_ts], schema=LAG_SCHEMA)


def _previous(g: _ByGroup, rows: int) -> tuple[pa.Array, pa.Array]:
    """Each commit's predecessor in its group (null for a group's first commit and for the
    grid rows that follow the commit rows), so rates and rewinds need no second shuffle."""
    n = len(g.ts)
    first = np.zeros(rows, dtype=bool)
    first[g.bounds[:-1]] = True
    first[n:] = True
    before = np.concatenate([[0], np.arange(n - 1), np.zeros(rows - n, dtype=np.int64)]) \
        if n else np.zeros(rows, dtype=np.int64)
    return (pa.array(g.committed[before], mask=first), pa.array(g.ts[before], mask=first))


def burrow_timeline(commits: pa.Table, ends: pa.Table, ticks_ms: list[int],
                    cfg: BurrowConfig) -> pa.Table:
    """Burrow partition status of every group on this partition at every tick."""
    if not commits.num_rows:
        return BURROW_SCHEMA.empty_table()
    eo = EndOffsets.of(ends)
    g = _ByGroup(commits)
    lags = np.maximum(eo.at(g.ts) - g.committed, 0)
    tomb = g.t.column("tombstone").to_numpy(zero_copy_only=False)
    topic, part = g.t.column("topic")[0].as_py(), g.t.column("partition")[0].as_py()
    gids = g.t.column("group_id")
    # The broker side of each evaluation is the same for every group on the partition.
    ticks = np.asarray(ticks_ms, dtype=np.int64)
    end_at = dict(zip(ticks_ms, eo.at(ticks).tolist(), strict=True))
    steps = np.arange(cfg.intervals, dtype=np.int64) * OFFSET_REFRESH_MS
    recent_at = dict(zip(ticks_ms, eo.at(ticks[:, None] - steps).tolist(), strict=True))
    rows: list[tuple[object, ...]] = []
    for lo, hi in g.ranges():
        gid = gids[lo].as_py()
        for tick, ring in _rings(g.ts[lo:hi], g.committed[lo:hi], lags[lo:hi], tomb[lo:hi],
                                 ticks_ms, cfg):
            r = evaluate_partition(ring, end_at[tick], recent_at[tick], tick, cfg)
            rows.append((tick, gid, topic, part, r.status.name, int(r.status), r.current_lag,
                         r.complete, r.window_start_offset, r.window_end_offset, r.lag_trend))
    return pa.Table.from_pylist([dict(zip(BURROW_SCHEMA.names, r, strict=True)) for r in rows],
                                schema=BURROW_SCHEMA)


def _rings(ts: np.ndarray, committed: np.ndarray, lags: np.ndarray, tomb: np.ndarray,
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
