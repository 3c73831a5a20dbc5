"""``partition_lag`` and ``burrow_status`` rows (``lag`` has their schemas and rules).

``partition_lag`` and ``burrow_timeline`` take any set of whole series (every commit of each
(group, topic, partition) present), such as the commits of whole coordinator partitions;
``partition_lag_of`` and ``burrow_timeline_of`` are the same for the commits of one (topic,
partition) and its end-offset samples, as Spark's ``applyInArrow`` hands them over. The
commits are sorted once by (group, topic, partition, time, log offset); the end-offset
lookups run per (topic, partition) over that partition's rows only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from groupcoord.analytics.gold.burrow import BurrowConfig, evaluate_partition
from groupcoord.analytics.gold.lag import (
    BURROW_SCHEMA,
    LAG_KINDS,
    LAG_SCHEMA,
    OFFSET_REFRESH_MS,
    EndOffsets,
    burrow_rings,
    int_column,
)

TopicPartition = tuple[str, int]
_NO_SAMPLES = EndOffsets(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


def end_offsets_by_partition(ends: pa.Table) -> dict[TopicPartition, EndOffsets]:
    """One ``EndOffsets`` per (topic, partition) of ``ends`` (control batches left out by the
    caller, as the cogroup path does)."""
    if not ends.num_rows:
        return {}
    order = pc.sort_indices(ends, [("topic", "ascending"), ("partition", "ascending")])
    t = ends.take(order)
    bounds = changes(t, ["topic", "partition"])
    ts, end = int_column(t, "ts_ms"), int_column(t, "end_offset")
    topics, parts = t.column("topic").to_pylist(), t.column("partition").to_pylist()
    return {(topics[lo], parts[lo]): EndOffsets(ts[lo:hi], end[lo:hi])
            for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)}


def changes(t: pa.Table, names: list[str]) -> np.ndarray:
    """Row bounds of the runs of equal ``names`` in a table sorted by them."""
    n = t.num_rows
    change = np.zeros(n, dtype=bool)
    for name in names:
        col = t.column(name)
        if pa.types.is_string(col.type):
            col = pc.dictionary_encode(col).combine_chunks().indices
        codes = pc.fill_null(col, -1).to_numpy()
        change[1:] |= codes[1:] != codes[:-1]
    return np.concatenate([[0], np.flatnonzero(change), [n]]).astype(np.int64) if n \
        else np.zeros(1, dtype=np.int64)


def key_codes(t: pa.Table, names: list[str]) -> list[np.ndarray]:
    """Integer columns equal exactly where the ``names`` columns are (nulls as -1)."""
    out = []
    for name in names:
        col = t.column(name)
        if pa.types.is_string(col.type):
            col = pc.dictionary_encode(col).combine_chunks().indices
        out.append(pc.fill_null(col, -1).to_numpy().astype(np.int64))
    return out


class _BySeries:
    """The rows of a commit table (``rows``, indices into it) ordered by series (group,
    topic, partition), then time and log offset, with the row range and (topic, partition)
    of each series. Only integer columns are sorted; string columns are taken once, for
    the output rows (the series need to be contiguous, not in string order)."""

    def __init__(self, commits: pa.Table, rows: np.ndarray) -> None:
        keys = [k[rows] for k in key_codes(commits, ["group_id", "topic", "partition"])]
        ts, log_offset = int_column(commits, "record_ts_ms")[rows], int_column(commits, "log_offset")[rows]
        order = np.lexsort((log_offset, ts, *reversed(keys)))
        self._set(commits, rows[order], [k[order] for k in keys], ts[order])

    def _set(self, commits: pa.Table, rows: np.ndarray, keys: list[np.ndarray],
             ts: np.ndarray) -> None:
        self.source, self.rows, self._keys, self.ts = commits, rows, keys, ts
        change = np.zeros(len(rows), dtype=bool)
        for k in keys:
            change[1:] |= k[1:] != k[:-1]
        self.bounds = np.concatenate([[0], np.flatnonzero(change), [len(rows)]]).astype(
            np.int64) if len(rows) else np.zeros(1, dtype=np.int64)
        self.committed = int_column(commits, "committed_offset")[self.rows]
        firsts = pa.array(self.rows[self.bounds[:-1]], type=pa.int64())
        self.tps: list[TopicPartition] = list(zip(
            commits.column("topic").take(firsts).to_pylist(),
            commits.column("partition").take(firsts).to_pylist(), strict=True))
        self.groups: list[str] = commits.column("group_id").take(firsts).to_pylist()

    def where(self, keep: np.ndarray) -> _BySeries:
        """The rows for which ``keep`` (per row of this order) holds, in the same order: the
        order their own sort would give, as the sort keys tell every row apart."""
        out = _BySeries.__new__(_BySeries)
        out._set(self.source, self.rows[keep], [k[keep] for k in self._keys], self.ts[keep])
        return out

    def ranges(self) -> Iterator[tuple[int, int]]:
        return zip(self.bounds[:-1].tolist(), self.bounds[1:].tolist(), strict=True)

    def column_at(self, name: str, rows: np.ndarray) -> pa.Array:
        return self.source.column(name).take(pa.array(self.rows[rows], type=pa.int64()))


def _by_partition(series_of_row: np.ndarray, s: _BySeries,
                  ends: dict[TopicPartition, EndOffsets]
                  ) -> Iterator[tuple[EndOffsets, np.ndarray]]:
    """(end offsets, rows) for each (topic, partition) with samples, where a row's series is
    ``series_of_row``."""
    if not ends:
        return
    ids = {tp: i for i, tp in enumerate(dict.fromkeys(s.tps))}
    tp_of_series = np.array([ids[tp] for tp in s.tps], dtype=np.int64)
    tp_of_row = tp_of_series[series_of_row]
    order = np.argsort(tp_of_row, kind="stable")
    cuts = np.searchsorted(tp_of_row[order], np.arange(len(ids) + 1))
    for tp, i in ids.items():
        if tp in ends:
            yield ends[tp], order[cuts[i]:cuts[i + 1]]


def _tombstones(commits: pa.Table, null: bool) -> np.ndarray:
    return pc.fill_null(commits.column("tombstone"), null).to_numpy(zero_copy_only=False)


def in_series_order(commits: pa.Table) -> _BySeries:
    """Every row of ``commits`` in series order: sorted once for both tables."""
    return _BySeries(commits, np.arange(commits.num_rows, dtype=np.int64))


def partition_lag(commits: pa.Table, ends: dict[TopicPartition, EndOffsets], grid_ms: int,
                  until_ms: int, ordered: _BySeries | None = None,
                  grid_from_ms: int | None = None) -> pa.Table:
    """Lag rows at every commit and on a ``grid_ms`` grid carrying each series' last commit
    forward, over whole series of many partitions (``LAG_SCHEMA``, with each commit's
    predecessor in its series, so rates and rewinds need no second shuffle); ``ordered`` is ``in_series_order(commits)`` when the caller has it. ``grid_from_ms`` keeps
    only the grid rows at or after it (the same rows the full grid has there), so that one
    old commit does not make a grid over years."""
    live_row = ~_tombstones(commits, True)  # as a filter on ``~tombstone``
    if not live_row.any():
        return LAG_SCHEMA.empty_table()
    s = _BySeries(commits, np.flatnonzero(live_row)) if ordered is None \
        else ordered.where(live_row[ordered.rows])
    n = len(s.rows)
    sizes = np.diff(s.bounds)
    rows, grid_ts, grid_counts = [np.arange(n, dtype=np.int64)], [s.ts], []
    for lo, hi in s.ranges():
        start = (s.ts[lo] // grid_ms + 1) * grid_ms
        if grid_from_ms is not None:
            start = max(start, -(-grid_from_ms // grid_ms) * grid_ms)
        grid = np.arange(start, until_ms + 1, grid_ms, dtype=np.int64)
        rows.append(lo + np.searchsorted(s.ts[lo:hi], grid, side="right") - 1)
        grid_ts.append(grid)
        grid_counts.append(len(grid))
    src, ts = np.concatenate(rows), np.concatenate(grid_ts)
    committed = s.committed[src]
    series = np.arange(len(sizes), dtype=np.int64)
    series_of_row = np.concatenate([np.repeat(series, sizes),
                                    np.repeat(series, np.asarray(grid_counts, dtype=np.int64))])
    end = np.zeros(len(src), dtype=np.int64)
    appended = np.full(len(src), -1, dtype=np.int64)
    for eo, idx in _by_partition(series_of_row, s, ends):
        end[idx] = eo.at(ts[idx])
        appended[idx] = eo.appended_at(committed[idx])
    lag = np.maximum(end - committed, 0)
    secs = np.where((lag > 0) & (appended >= 0), np.maximum(ts - appended, 0) / 1000.0, 0.0)
    kind = np.zeros(len(src), dtype=np.int64)
    kind[n:] = 1
    prev_offset, prev_ts = _previous(s, len(src))
    return pa.Table.from_arrays([
        s.column_at("group_id", src), s.column_at("topic", src),
        s.column_at("partition", src).cast(pa.int32()), pa.array(ts),
        LAG_KINDS.take(pa.array(kind)), pa.array(committed), pa.array(end), pa.array(lag),
        pa.array(secs), prev_offset, prev_ts], schema=LAG_SCHEMA)


def _previous(s: _BySeries, rows: int) -> tuple[pa.Array, pa.Array]:
    """Each commit's predecessor in its series (null for a series' first commit and for the
    grid rows after the commit rows)."""
    n = len(s.ts)
    first = np.zeros(rows, dtype=bool)
    first[s.bounds[:-1]] = True
    first[n:] = True
    before = np.concatenate([[0], np.arange(n - 1), np.zeros(rows - n, dtype=np.int64)]) \
        if n else np.zeros(rows, dtype=np.int64)
    return (pa.array(s.committed[before], mask=first), pa.array(s.ts[before], mask=first))


def burrow_timeline(commits: pa.Table, ends: dict[TopicPartition, EndOffsets],
                    ticks_ms: list[int], cfg: BurrowConfig,
                    ordered: _BySeries | None = None) -> pa.Table:
    """Burrow partition status of every series at every tick, over whole series of many
    partitions (``BURROW_SCHEMA``); ``ordered`` as for ``partition_lag``."""
    if not commits.num_rows:
        return BURROW_SCHEMA.empty_table()
    s = in_series_order(commits) if ordered is None else ordered
    sizes = np.diff(s.bounds)
    end = np.zeros(len(s.ts), dtype=np.int64)
    series_of_row = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    for eo, idx in _by_partition(series_of_row, s, ends):
        end[idx] = eo.at(s.ts[idx])
    lags = np.maximum(end - s.committed, 0)
    tomb = _tombstones(commits, False)[s.rows]
    ticks = np.asarray(ticks_ms, dtype=np.int64)
    steps = np.arange(cfg.intervals, dtype=np.int64) * OFFSET_REFRESH_MS
    broker: dict[TopicPartition, tuple[dict[int, int], dict[int, list[int]]]] = {}
    rows: list[tuple[object, ...]] = []
    for (lo, hi), tp, gid in zip(s.ranges(), s.tps, s.groups, strict=True):
        if tp not in broker:  # the broker side is the same for every group on a partition
            eo = ends.get(tp, _NO_SAMPLES)
            broker[tp] = (dict(zip(ticks_ms, eo.at(ticks).tolist(), strict=True)),
                          dict(zip(ticks_ms, eo.at(ticks[:, None] - steps).tolist(),
                                   strict=True)))
        end_at, recent_at = broker[tp]
        for tick, ring in burrow_rings(s.ts[lo:hi], s.committed[lo:hi], lags[lo:hi], tomb[lo:hi],
                                 ticks_ms, cfg):
            r = evaluate_partition(ring, end_at[tick], recent_at[tick], tick, cfg)
            rows.append((tick, gid, tp[0], tp[1], r.status.name, int(r.status), r.current_lag,
                         r.complete, r.window_start_offset, r.window_end_offset, r.lag_trend))
    return pa.Table.from_pylist([dict(zip(BURROW_SCHEMA.names, r, strict=True)) for r in rows],
                                schema=BURROW_SCHEMA)


def _the_partition(commits: pa.Table, ends: pa.Table) -> dict[TopicPartition, EndOffsets]:
    """The end offsets of the one (topic, partition) of ``commits``, keyed as ``ends`` of the
    many-series functions are."""
    if not commits.num_rows:
        return {}
    tp = (commits.column("topic")[0].as_py(), commits.column("partition")[0].as_py())
    return {tp: EndOffsets.of(ends)}


def partition_lag_of(commits: pa.Table, ends: pa.Table, grid_ms: int, until_ms: int
                     ) -> pa.Table:
    """``partition_lag`` of the commits of one (topic, partition), with that partition's
    end-offset samples (a table with ``ts_ms`` and ``end_offset``)."""
    return partition_lag(commits, _the_partition(commits, ends), grid_ms, until_ms)


def burrow_timeline_of(commits: pa.Table, ends: pa.Table, ticks_ms: list[int],
                       cfg: BurrowConfig) -> pa.Table:
    """``burrow_timeline`` of the commits of one (topic, partition), with that partition's
    end-offset samples."""
    return burrow_timeline(commits, _the_partition(commits, ends), ticks_ms, cfg)


def last_commits_in(commits: pa.Table, windows: Sequence[tuple[str, int, int]]
                    ) -> dict[tuple[str, int], int]:
    """(group, hi) -> the latest ``record_ts_ms`` of the group's commits (tombstones too)
    strictly between lo and hi, over the ``windows`` (group, lo, hi) of groups in
    ``commits``; windows with no such commit are left out."""
    if not windows or not commits.num_rows:
        return {}
    enc = pc.dictionary_encode(commits.column("group_id")).combine_chunks()
    code_of = {g: i for i, g in enumerate(enc.dictionary.to_pylist())}
    group = pc.fill_null(enc.indices, -1).to_numpy().astype(np.int64)
    col = commits.column("record_ts_ms")
    ts = pc.fill_null(col, np.iinfo(np.int64).min).to_numpy()  # a null time is in no window
    order = np.lexsort((ts, group))
    group, ts = group[order], ts[order]
    found: dict[tuple[str, int], int] = {}
    for g, lo, hi in windows:
        if g not in code_of:
            continue
        a, b = np.searchsorted(group, [code_of[g], code_of[g] + 1])
        i = a + int(np.searchsorted(ts[a:b], hi, side="left")) - 1
        if i >= a and ts[i] > lo:
            found[(g, hi)] = max(found.get((g, hi), int(ts[i])), int(ts[i]))
    return found
