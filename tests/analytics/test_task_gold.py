"""Gold tables built file by file in the decoding tasks (``task_gold``, ``keyed_gold``) equal
the Spark path's: per series against the per-partition references on awkward histories, the
owner lookup against the Spark range join, and a whole ``analyze run`` on the fixture log
(rewinds, tombstones, several groups and members, data partitions with and without end
offsets) against the same run with the Spark gold steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from helpers.parquet_rows import parquet_rows

from groupcoord.analytics.driver.pipeline import RunConfig
from groupcoord.analytics.driver.run import OWNERS_SCHEMA, run
from groupcoord.analytics.gold import keyed_gold, keyed_rollups, lag, spark_gold, task_gold
from groupcoord.analytics.gold.burrow import BurrowConfig
from groupcoord.analytics.silver.direct_silver import TaskFile

from .test_gold_native import T0, _history, _per_partition, _rows

Fixture = tuple[Path, dict[str, Any]]


def _live_ends(ends: pa.Table) -> dict[tuple[str, int], lag.EndOffsets]:
    live = ends.filter(pc.invert(ends.column("is_control")))
    return keyed_gold.end_offsets_by_partition(live.select(["topic", "partition", "ts_ms",
                                                            "end_offset"]))


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 7])
def test_lag_rows_of_many_partitions_equal_the_per_partition_reference(seed: int) -> None:
    commits, ends = _history(seed)
    if not seed:
        ends = ends.slice(0, 0)
    until = T0 + 130_000
    want = _per_partition(commits, ends, lambda c, e: keyed_gold.partition_lag_of(c, e, 7_000, until))
    got = keyed_gold.partition_lag(commits, _live_ends(ends), 7_000, until)
    assert sorted(_rows(got)) == want
    assert len({(r["topic"], r["partition"]) for r in got.to_pylist()}) == 3


@pytest.mark.parametrize("ticks", [
    [T0 + 120_000],
    [T0 + s * 10_000 for s in range(1, 12)] + [T0 + 119_500],
    [T0 + 5_000, T0 + 37_000, T0 + 38_000, T0 + 90_000],
])
@pytest.mark.parametrize("cfg", [BurrowConfig(intervals=1), BurrowConfig(intervals=3),
                                 BurrowConfig(), BurrowConfig(intervals=4,
                                                              min_distance_ms=2_000)])
def test_burrow_of_many_partitions_equals_the_per_partition_reference(
        ticks: list[int], cfg: BurrowConfig) -> None:
    commits, ends = _history(7)
    want = _per_partition(commits, ends, lambda c, e: keyed_gold.burrow_timeline_of(c, e, ticks, cfg))
    got = keyed_gold.burrow_timeline(commits, _live_ends(ends), ticks, cfg)
    assert sorted(_rows(got)) == want


def _intervals(rng: np.random.Generator) -> list[dict[str, Any]]:
    out = []
    for g in ("a", "b"):
        for topic, part in (("t1", 0), ("t1", 1), ("t2", 0)):
            t = T0 + 1_000 * int(rng.integers(0, 30))
            for i in range(int(rng.integers(0, 4))):
                end = t + 1_000 * int(rng.integers(0, 40))  # empty intervals too
                out.append({"group_id": g, "topic": topic, "partition": part,
                            "member_id": f"{g}-m{i}", "from_ts_ms": t, "to_ts_ms": end})
                t = end + 1_000 * int(rng.integers(0, 3))
    return out


@pytest.mark.spark
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_owner_lookup_equals_the_spark_range_join(spark: Any, seed: int) -> None:
    commits, ends = _history(seed)
    plag = keyed_gold.partition_lag(commits, _live_ends(ends), 7_000, T0 + 130_000)
    intervals = _intervals(np.random.default_rng(seed))
    index = task_gold.owner_index(intervals)
    assert index is not None
    got = task_gold.with_owner(plag, index)
    owners = spark.createDataFrame(
        [tuple(r[k] for k in ("group_id", "topic", "partition", "member_id", "from_ts_ms",
                              "to_ts_ms")) for r in intervals], OWNERS_SCHEMA)
    want = spark_gold._owned(spark.createDataFrame(plag), owners, "ts_ms")
    assert sorted(_rows(got)) == sorted(json.dumps(r.asDict(), sort_keys=True)
                                        for r in want.collect())
    assert any(r["owner_member_id"] for r in got.to_pylist())
    assert got.schema == task_gold.PARTITION_LAG_SCHEMA


@pytest.mark.spark
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rollups_equal_the_spark_tables(spark: Any, seed: int, tmp_path: Path) -> None:
    commits, ends = _history(seed)
    plag = task_gold.with_owner(
        keyed_gold.partition_lag(commits, _live_ends(ends), 7_000, T0 + 130_000),
        task_gold.owner_index(_intervals(np.random.default_rng(seed))) or {})
    df = spark.createDataFrame(plag)
    rollup, rollup_exact = keyed_rollups.lag_rollup(plag, bucket_s=20)
    rate, rate_exact = keyed_rollups.commit_rate(plag, bucket_s=20)
    rew = keyed_rollups.rewinds(plag)
    assert rollup_exact and rate_exact
    for got, want in ((rollup, spark_gold.lag_rollup(df, tmp_path, bucket_s=20)),
                      (rate, spark_gold.commit_rate(df, tmp_path, bucket_s=20)),
                      (rew, spark_gold.rewinds(df, tmp_path))):
        assert got.column_names == want.columns
        assert sorted(_rows(got)) == sorted(json.dumps(r.asDict(), sort_keys=True)
                                            for r in want.collect())
    assert rew.num_rows > 0 and pc.any(rew.column("recovered")).as_py()
    assert not pc.all(rew.column("recovered")).as_py()
    assert pc.min(rate.column("partitions_committed")).as_py() \
        < pc.max(rate.column("partitions_committed")).as_py()


def test_percentiles_over_large_groups_are_flagged_inexact() -> None:
    n = keyed_rollups.EXACT_PERCENTILE_VALUES + 1  # n - 1 intervals: the first has none
    commits = pa.table({"group_id": ["g"] * n, "topic": ["t"] * n,
                        "partition": pa.array([0] * n, pa.int32()),
                        "record_ts_ms": [T0 + i for i in range(n)],
                        "log_offset": list(range(n)), "committed_offset": list(range(n)),
                        "tombstone": [False] * n})
    plag = task_gold.with_owner(keyed_gold.partition_lag(commits, {}, 60_000, T0 + n), {})
    assert not keyed_rollups.commit_rate(plag, bucket_s=60)[1]
    assert keyed_rollups.commit_rate(plag.slice(0, n - 1), bucket_s=60)[1]


def test_overlapping_owners_or_shared_groups_keep_the_spark_path() -> None:
    iv = {"group_id": "g", "topic": "t", "partition": 0, "member_id": "m"}
    assert task_gold.owner_index([{**iv, "from_ts_ms": 0, "to_ts_ms": 10},
                                  {**iv, "from_ts_ms": 10, "to_ts_ms": 20}]) is not None
    assert task_gold.owner_index([{**iv, "from_ts_ms": 0, "to_ts_ms": 10},
                                  {**iv, "from_ts_ms": 9, "to_ts_ms": 20}]) is None
    a = TaskFile("a", 1, frozenset({"g1", "g2"}), 0, 1)
    b = TaskFile("b", 1, frozenset({"g3"}), 0, 1)
    assert task_gold.disjoint([a, b])
    assert not task_gold.disjoint([a, b, TaskFile("c", 1, frozenset({"g2"}), 0, 1)])


@pytest.mark.spark
def test_run_gives_the_tables_of_the_spark_gold_path(spark: Any, fixture_dir: Fixture,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root, _manifest = fixture_dir
    runs = {}
    for mode in ("tasks", "spark"):
        if mode == "spark":
            monkeypatch.setattr(task_gold, "disjoint", lambda files: False)
        lines: list[str] = []
        run(spark, RunConfig(str(root), str(tmp_path / mode), plots=False), lines.append)
        runs[mode] = lines
    assert any("commit files" in line for line in runs["tasks"])
    assert not any("commit files" in line for line in runs["spark"])
    tables = sorted(str(p.relative_to(tmp_path / "spark"))
                    for p in (tmp_path / "spark").glob("*/*") if any(p.glob("*.parquet")))
    assert "gold/partition_lag" in tables and "gold/rewinds" in tables
    for table in tables:
        want = spark.read.parquet(str(tmp_path / "spark" / table))
        got = spark.read.parquet(str(tmp_path / "tasks" / table))
        assert sorted(got.columns) == sorted(want.columns), table
        assert got.select(*want.columns).schema == want.schema, table
        rows = parquet_rows(tmp_path / "spark" / table)
        assert parquet_rows(tmp_path / "tasks" / table) == rows, table
        if table in ("gold/partition_lag", "gold/burrow_status", "gold/rewinds"):
            assert rows, table


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_task_is_sent_exactly_its_groups_owners(seed: int) -> None:
    index = task_gold.owner_index(_intervals(np.random.default_rng(seed)))
    assert index
    files = [TaskFile("a", 1, frozenset({"a"}), 0, 1), TaskFile("b", 1, frozenset({"b"}), 0, 1),
             TaskFile("c", 1, frozenset({"absent"}), 0, 1)]
    sent = [p.unpack() for p in task_gold.pack_by_file(index, files)]
    for f, owners in zip(files, sent, strict=True):
        want = {k: v for k, v in index.items() if k.split("\x00")[0] in f.groups}
        assert owners.keys() == want.keys()
        for k, (starts, ends, members) in owners.items():
            assert starts.tolist() == want[k][0].tolist()
            assert ends.tolist() == want[k][1].tolist()
            assert members == want[k][2]
    assert sent[0] and sent[1] and not sent[2]


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 7])
def test_one_series_order_serves_both_tables(seed: int) -> None:
    commits, ends = _history(seed)
    assert pc.any(commits.column("tombstone")).as_py()  # the live rows are a strict subset
    live, cfg = _live_ends(ends), BurrowConfig()
    ticks = [T0 + 30_000, T0 + 90_000, T0 + 130_000]
    ordered = keyed_gold.in_series_order(commits)
    assert keyed_gold.partition_lag(commits, live, 7_000, T0 + 130_000, ordered).equals(
        keyed_gold.partition_lag(commits, live, 7_000, T0 + 130_000))
    assert keyed_gold.burrow_timeline(commits, live, ticks, cfg, ordered).equals(
        keyed_gold.burrow_timeline(commits, live, ticks, cfg))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_commit_rate_sorts_alike_with_one_combined_key_or_many(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    commits, ends = _history(seed)
    plag = task_gold.with_owner(
        keyed_gold.partition_lag(commits, _live_ends(ends), 7_000, T0 + 130_000),
        task_gold.owner_index(_intervals(np.random.default_rng(seed))) or {})
    combined, _ = keyed_rollups.commit_rate(plag, bucket_s=20)
    monkeypatch.setattr(keyed_rollups, "_combined", lambda keys: None)  # keys too wide
    separate, _ = keyed_rollups.commit_rate(plag, bucket_s=20)
    assert combined.num_rows > 0 and combined.equals(separate)


def test_keys_too_wide_for_one_integer_are_not_combined() -> None:
    wide = np.array([0, 1 << 40], dtype=np.int64)
    assert keyed_rollups._combined([wide, wide]) is None
    small = keyed_rollups._combined([np.array([1, 0, 1]), np.array([5, 9, 2])])
    assert small is not None and np.argsort(small).tolist() == [1, 2, 0]
