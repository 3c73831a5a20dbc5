"""The Spark-native gold steps equal their Arrow references on awkward histories.

``lag_sql.lag_rows`` must give the rows of ``keyed_gold.partition_lag_of`` (per (topic, partition),
all groups), and Burrow over ``gold.ring_commits`` (only the commits some evaluation can
see) must give the statuses of Burrow over every commit: same-millisecond commits, commits
on a tick, tombstones, end offsets equal to a committed offset, partitions with no end
offsets at all, and evaluation ticks on and off a regular clock.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from groupcoord.analytics.gold import keyed_gold, lag_sql, spark_gold
from groupcoord.analytics.gold.burrow import BurrowConfig
from groupcoord.analytics.read.table_schemas import END_OFFSETS

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
COMMITS = pa.schema([("group_id", pa.string()), ("topic", pa.string()),
                     ("partition", pa.int32()), ("record_ts_ms", pa.int64()),
                     ("log_offset", pa.int64()), ("committed_offset", pa.int64()),
                     ("tombstone", pa.bool_())])


def _history(seed: int) -> tuple[pa.Table, pa.Table]:
    """Commits of three groups on three partitions of two topics (one partition has no end
    offsets), on a coarse clock so times collide, and end offsets that hit committed ones."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    log_offset = 0
    for g in ("a", "b", "c"):
        for topic, part in (("t1", 0), ("t1", 1), ("t2", 0)):
            offset = 0
            for _ in range(int(rng.integers(0, 40))):
                log_offset += 1
                tomb = bool(rng.random() < 0.08)
                offset = max(0, offset + int(rng.integers(-3, 12)))
                rows.append({"group_id": g, "topic": topic, "partition": part,
                             "record_ts_ms": T0 + 1_000 * int(rng.integers(0, 120)),
                             "log_offset": log_offset,
                             "committed_offset": None if tomb else offset, "tombstone": tomb})
    ends = []
    for topic, part in (("t1", 0), ("t1", 1)):
        end = 0
        for _ in range(60):
            end += int(rng.integers(0, 8))
            ends.append({"topic": topic, "partition": part,
                         "ts_ms": T0 + 1_000 * int(rng.integers(0, 125)), "base_offset": 0,
                         "end_offset": end, "records": 1, "batch_bytes": 1,
                         "is_control": bool(rng.random() < 0.05)})
    return pa.Table.from_pylist(rows, COMMITS), pa.Table.from_pylist(ends, END_OFFSETS)


def _per_partition(commits: pa.Table, ends: pa.Table, fn: Any) -> list[str]:
    """``fn(commits, ends)`` per (topic, partition) as ``applyInArrow`` calls it."""
    keys = {(t, p) for t, p in zip(commits.column("topic").to_pylist(),
                                   commits.column("partition").to_pylist(), strict=True)}
    out: list[str] = []
    for topic, part in sorted(keys):
        def on(t: pa.Table, topic: str = topic, part: int = part) -> pa.Table:
            mask = [a == topic and b == part for a, b in zip(
                t.column("topic").to_pylist(), t.column("partition").to_pylist(), strict=True)]
            return t.filter(pa.array(mask, pa.bool_()))
        e = on(ends)
        e = e.filter(pa.array([not c for c in e.column("is_control").to_pylist()], pa.bool_()))
        out += _rows(fn(on(commits), e.select(["topic", "partition", "ts_ms", "end_offset"])))
    return sorted(out)


def _rows(t: pa.Table) -> list[str]:
    return [json.dumps(r, sort_keys=True) for r in t.to_pylist()]


def _spark_rows(df: Any) -> list[str]:
    return sorted(json.dumps(r.asDict(), sort_keys=True) for r in df.collect())


@pytest.mark.parametrize("seed", [1, 2, 3, 0])
def test_lag_rows_equal_the_arrow_reference(spark: Any, seed: int) -> None:
    commits, ends = _history(seed)
    if not seed:  # a log dir without data partitions: no end offsets at all
        ends = ends.slice(0, 0)
    until = T0 + 130_000
    want = _per_partition(commits, ends, lambda c, e: keyed_gold.partition_lag_of(c, e, 7_000, until))
    got = lag_sql.lag_rows(spark.createDataFrame(commits),
                           spark.createDataFrame(ends), 7_000, until)
    assert _spark_rows(got) == want
    assert any('"kind": "grid"' in r for r in want)
    assert any('"lag_seconds": 0.0' not in r for r in want) == bool(seed)


@pytest.mark.parametrize("ticks", [
    [T0 + 120_000],                                     # one evaluation at the end
    [T0 + 60_000, T0 + 119_000],                        # one clock tick and the end
    [T0 + s * 10_000 for s in range(1, 12)] + [T0 + 119_500],  # a 10 s clock and the end
    [T0 + 5_000, T0 + 37_000, T0 + 38_000, T0 + 90_000],  # no regular clock: no filter
])
@pytest.mark.parametrize("intervals", [1, 3, 10])
def test_burrow_over_ring_commits_equals_every_commit(spark: Any, ticks: list[int],
                                                      intervals: int) -> None:
    commits, ends = _history(7)
    cfg = BurrowConfig(intervals=intervals)
    want = _per_partition(commits, ends, lambda c, e: keyed_gold.burrow_timeline_of(c, e, ticks, cfg))
    kept = spark_gold.ring_commits(spark.createDataFrame(commits), ticks, cfg)
    rows = kept.toArrow().cast(COMMITS)
    assert _per_partition(rows, ends, lambda c, e: keyed_gold.burrow_timeline_of(c, e, ticks, cfg)) == want
    if len(ticks) < 4:
        assert rows.num_rows < commits.num_rows  # the filter did drop commits
