"""``analyze health``'s inputs straight from a log dir, without Spark.

The same functions as the pipeline's gold tasks, on one process: offset commits decoded by
``columns`` (numba when installed), end offsets from the data segments' batch headers,
Burrow evaluated once at the end of the data (``keyed_gold.burrow_timeline``), the groups'
lag series from the grid rows of ``keyed_gold.partition_lag``, membership, rebalances and
share state decoded as ``analyze run`` decodes them. The end of the data is the last record
of any kind: a data append, a commit, a membership record, a group event or share state.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from groupcoord.analytics.driver.pipeline import event_dicts
from groupcoord.analytics.driver.why import raw_rows
from groupcoord.analytics.gold import keyed_gold, rebalance, share
from groupcoord.analytics.gold.burrow import BurrowConfig
from groupcoord.analytics.read.columns import end_offset_batches, offset_commit_batches
from groupcoord.analytics.read.segments import TxnResolver, list_partitions, topic_names
from groupcoord.analytics.read.splits import plan
from groupcoord.analytics.read.table_schemas import END_OFFSETS, OFFSET_COMMITS
from groupcoord.analytics.report import health, story
from groupcoord.analytics.silver import membership, streams_groups
from groupcoord.logformat.internal_topics import (
    GROUP_EVENTS_TOPIC,
    OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
)

COMMIT_TYPES = (b"\x00\x00", b"\x00\x01")


class NoData(Exception):
    """The log dir is missing, or holds no Kafka partition directory."""


def check_data_dir(data_dir: str) -> None:
    """One clear sentence when ``data_dir`` cannot be analysed."""
    path = Path(data_dir)
    if not path.is_dir():
        raise NoData(f"{data_dir}: no such directory")
    if not list_partitions(data_dir):
        raise NoData(f"{data_dir}: no Kafka log partitions in it (expected "
                     f"{OFFSETS_TOPIC}-N and topic-N directories)")


def _commits(data_dir: str) -> pa.Table:
    batches = [b for s in plan(data_dir, "offset_commits")
               for b in offset_commit_batches(s.path, s.start, s.end, s.partition,
                                              TxnResolver.from_list(list(s.txn_markers)))]
    return pa.Table.from_batches(batches, OFFSET_COMMITS)


def _ends(data_dir: str) -> pa.Table:
    batches = [b for s in plan(data_dir, "end_offsets")
               for b in end_offset_batches(s.path, s.start, s.end, s.topic, s.partition)]
    t = pa.Table.from_batches(batches, END_OFFSETS)
    return t.filter(pc.invert(t.column("is_control")))


def window(span: tuple[int | None, int | None], other_times: Iterable[int | None],
           since_ms: int | None = None, until_ms: int | None = None) -> tuple[int, int]:
    """The analysed range: from the first to the last record of any kind (``span`` is that
    of the data appends and commits, ``other_times`` membership records, group events and
    share state), cut by ``since_ms``/``until_ms``."""
    times = [t for t in (*span, *other_times) if t is not None]
    if not times:
        raise NoData("the log dir holds no records")
    lo, hi = min(times), max(times)
    return (lo if since_ms is None else max(lo, since_ms),
            hi if until_ms is None else min(hi, until_ms))


def trend_grid_from(lo: int, hi: int, grid_ms: int) -> int:
    """The first grid time the verdicts read: the trends compare the end with the last grid
    point at or before the trend window's start (``health._trend``, ``falling_behind``), so
    the grid from there on gives the same verdicts as one over the whole span, at most
    ``trend_window_ms / grid_ms + 2`` points a partition however long the span."""
    return (hi - story.trend_window_ms(hi - lo)) // grid_ms * grid_ms


def group_series(plag: pa.Table) -> dict[str, list[story.LagPoint]]:
    """Each group's lag on the grid: the sum of its partitions' lags, the worst seconds."""
    grid = plag.filter(pc.equal(plag.column("kind"), "grid"))
    sums: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0, 0.0])
    for g, ts, lag, secs in zip(grid.column("group_id").to_pylist(),
                                grid.column("ts_ms").to_pylist(),
                                grid.column("lag_records").to_pylist(),
                                grid.column("lag_seconds").to_pylist(), strict=True):
        acc = sums[(g, ts)]
        acc[0] += lag
        acc[1] = max(acc[1], secs)
    out: dict[str, list[story.LagPoint]] = defaultdict(list)
    for (g, ts), (lag, secs) in sorted(sums.items()):
        out[g].append(story.LagPoint(ts, int(lag), float(secs)))
    return dict(out)


def partition_series(plag: pa.Table) -> dict[tuple[str, str, int],
                                             list[tuple[int, int, int]]]:
    """(group, topic, partition) -> grid samples (ts, lag, end offset), oldest first."""
    grid = plag.filter(pc.equal(plag.column("kind"), "grid")).sort_by("ts_ms")
    out: dict[tuple[str, str, int], list[tuple[int, int, int]]] = defaultdict(list)
    for g, t, p, ts, lag, end in zip(*(grid.column(c).to_pylist() for c in (
            "group_id", "topic", "partition", "ts_ms", "lag_records", "end_offset")),
            strict=True):
        out[(g, t, p)].append((ts, lag, end))
    return dict(out)


def load(data_dir: str, cfg: BurrowConfig | None = None, grid_ms: int = 10_000
         ) -> health.HealthInputs:
    cfg = cfg or BurrowConfig()
    check_data_dir(data_dir)
    commits, ends = _commits(data_dir), _ends(data_dir)
    coord = [r for r in raw_rows(data_dir, OFFSETS_TOPIC, None)
             if r["key"] is not None and r["key"][:2] not in COMMIT_TYPES]
    event_rows = list(raw_rows(data_dir, GROUP_EVENTS_TOPIC, None))
    share_raw = list(raw_rows(data_dir, SHARE_STATE_TOPIC, None))
    both = [*commits.column("record_ts_ms").to_pylist(), *ends.column("ts_ms").to_pylist()]
    lo, hi = window((min(both, default=None), max(both, default=None)),
                    [r["record_ts_ms"] for r in (*coord, *event_rows, *share_raw)])
    names = topic_names(data_dir)
    t = membership.build(coord, names)
    membership.normalise_epoch_rows(t)
    events = event_dicts(event_rows, None)
    by_tp = keyed_gold.end_offsets_by_partition(ends.select(["topic", "partition", "ts_ms",
                                                             "end_offset"]))
    burrow = keyed_gold.burrow_timeline(commits, by_tp, [hi], cfg)
    final = {(r["group_id"], r["topic"], r["partition"]): r for r in burrow.to_pylist()}
    plag = keyed_gold.partition_lag(commits, by_tp, grid_ms, hi,
                                    grid_from_ms=trend_grid_from(lo, hi, grid_ms))
    rebs = (rebalance.classic_rebalances(t, events) + rebalance.consumer_rebalances(t, events)
            + streams_groups.streams_rebalances(t, events))
    kinds, members = health.kinds_and_members(t)
    share_ends = {tp: pa.table({"ts_ms": np.asarray(e.ts), "end_offset": np.asarray(e.end)})
                  for tp, e in by_tp.items()}
    backlog: dict[str, list[health.Row]] = defaultdict(list)
    for r in share.share_lag(share.share_state_rows(share_raw, names), share_ends):
        backlog[r["group_id"]].append(r)
    appended = {k: int(by_tp[(k[1], k[2])].appended_at(np.array([r["window_end_offset"]]))[0])
                for k, r in final.items() if (k[1], k[2]) in by_tp
                and r["window_end_offset"] is not None}
    return health.HealthInputs(lo, hi, final, group_series(plag),
                               rebalance.ownership_intervals(t), rebs, kinds, members,
                               share_backlog=dict(backlog), allowed_lag=cfg.allowed_lag,
                               partition_series=partition_series(plag),
                               appended_at=appended)
