"""Per-partition lag and Burrow evaluation over pandas frames (run by ``applyInPandas``).

Both functions get every commit on one (topic, partition), from all groups, plus that
partition's end-offset samples (one per data batch), so the as-of lookups are numpy
``searchsorted`` calls instead of range joins in Spark.

- ``lag_records`` = end offset as of the commit (or grid tick) minus the committed offset,
  floored at 0.
- ``lag_seconds`` (analytics.md 5.3, kafka-lag-exporter made exact) = the time minus the
  append time of the first batch whose end offset passes the committed offset; 0 when caught up.
- Burrow is evaluated at each tick of ``ticks_ms`` over the commits up to that tick; the
  recent broker offsets are the end offsets as of the last ``intervals`` refreshes (10 s).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from groupcoord.analytics.burrow import BurrowConfig, Commit, build_window, evaluate_partition

LAG_COLUMNS = ["group_id", "topic", "partition", "ts_ms", "kind", "committed_offset",
               "end_offset", "lag_records", "lag_seconds"]
BURROW_COLUMNS = ["eval_ts_ms", "group_id", "topic", "partition", "status", "status_code",
                  "current_lag", "complete", "window_start_offset", "window_end_offset",
                  "lag_trend"]
OFFSET_REFRESH_MS = 10_000


class EndOffsets:
    """One partition's end offset over time, for as-of lookups."""

    def __init__(self, ends: pd.DataFrame) -> None:
        e = ends.sort_values(["ts_ms", "end_offset"])
        self.ts = e["ts_ms"].to_numpy(dtype=np.int64)
        # a later batch can carry an older timestamp; the end offset never goes back
        self.end = np.maximum.accumulate(e["end_offset"].to_numpy(dtype=np.int64)) \
            if len(e) else np.zeros(0, dtype=np.int64)

    def at(self, ts: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self.ts, ts, side="right") - 1
        out = np.where(idx >= 0, self.end[np.clip(idx, 0, None)] if len(self.end) else 0, 0)
        return out.astype(np.int64)

    def appended_at(self, offsets: np.ndarray) -> np.ndarray:
        """Time of the first sample whose end offset is past ``offsets`` (-1 if none)."""
        idx = np.searchsorted(self.end, offsets, side="right")
        ok = idx < len(self.end)
        return np.where(ok, self.ts[np.clip(idx, 0, len(self.ts) - 1)] if len(self.ts) else -1, -1)


def _lag_rows(group: pd.DataFrame, eo: EndOffsets, ts: np.ndarray, committed: np.ndarray,
              kind: str) -> pd.DataFrame:
    end = eo.at(ts)
    lag = np.maximum(end - committed, 0)
    appended = eo.appended_at(committed)
    secs = np.where((lag > 0) & (appended >= 0), np.maximum(ts - appended, 0) / 1000.0, 0.0)
    return pd.DataFrame({
        "group_id": group["group_id"].iloc[0], "topic": group["topic"].iloc[0],
        "partition": group["partition"].iloc[0], "ts_ms": ts, "kind": kind,
        "committed_offset": committed, "end_offset": end, "lag_records": lag,
        "lag_seconds": secs})


def partition_lag(commits: pd.DataFrame, ends: pd.DataFrame, grid_ms: int,
                  until_ms: int) -> pd.DataFrame:
    """Lag rows at every commit and on a ``grid_ms`` grid carrying the last commit forward."""
    live = commits[~commits["tombstone"]] if len(commits) else commits
    if not len(live):
        return pd.DataFrame(columns=LAG_COLUMNS)
    eo = EndOffsets(ends)
    parts = []
    for _gid, g in live.sort_values(["record_ts_ms", "log_offset"]).groupby("group_id"):
        ts = g["record_ts_ms"].to_numpy(dtype=np.int64)
        committed = g["committed_offset"].to_numpy(dtype=np.int64)
        parts.append(_lag_rows(g, eo, ts, committed, "commit"))
        grid = np.arange((ts[0] // grid_ms + 1) * grid_ms, until_ms + 1, grid_ms, dtype=np.int64)
        if len(grid):
            last = np.searchsorted(ts, grid, side="right") - 1
            parts.append(_lag_rows(g, eo, grid, committed[last], "grid"))
    return pd.concat(parts, ignore_index=True)[LAG_COLUMNS]


def burrow_timeline(commits: pd.DataFrame, ends: pd.DataFrame, ticks_ms: list[int],
                    cfg: BurrowConfig) -> pd.DataFrame:
    """Burrow partition status of every group on this partition at every tick."""
    if not len(commits):
        return pd.DataFrame(columns=BURROW_COLUMNS)
    eo = EndOffsets(ends)
    rows: list[tuple[object, ...]] = []
    for gid, g in commits.sort_values(["record_ts_ms", "log_offset"]).groupby("group_id"):
        ts = g["record_ts_ms"].to_numpy(dtype=np.int64)
        committed = g["committed_offset"].fillna(-1).to_numpy(dtype=np.int64)
        tomb = g["tombstone"].to_numpy()
        lags = np.maximum(eo.at(ts) - committed, 0)
        topic, part = g["topic"].iloc[0], int(g["partition"].iloc[0])
        ring: list[Commit] = []
        i = 0
        for tick in ticks_ms:
            while i < len(ts) and ts[i] <= tick:
                ring = [] if tomb[i] else build_window(
                    [*ring, Commit(int(committed[i]), int(ts[i]), int(lags[i]))], cfg)
                i += 1
            if not ring:
                continue
            recent = eo.at(np.array([tick - k * OFFSET_REFRESH_MS for k in range(cfg.intervals)]))
            r = evaluate_partition(ring, int(eo.at(np.array([tick]))[0]), recent.tolist(), tick,
                                   cfg)
            rows.append((tick, gid, topic, part, r.status.name, int(r.status), r.current_lag,
                         r.complete, r.window_start_offset, r.window_end_offset, r.lag_trend))
    return pd.DataFrame(rows, columns=BURROW_COLUMNS)
