"""Spark gold tables over the silver commits and end offsets (analytics.md 5.3).

``partition_lag`` and ``burrow_status`` cogroup all commits of a (topic, partition) with its
end-offset samples and run ``analytics.keyed_gold`` on the Arrow tables; the rest are plain aggregations:
``group_burrow_status`` (Burrow's group fold: STOP/STALL/REWIND count as ERR),
``lag_rollup`` (1-minute buckets), ``commit_rate`` (per group and bucket, with empty commits)
and ``rewinds`` (backwards commits and when, if ever, the pre-rewind offset was reached
again), both from the commit rows of ``partition_lag`` (owner and previous commit included,
so the commits are shuffled once),
and the estimated start of classic rebalances that have no group event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groupcoord.analytics.gold import keyed_gold, lag, lag_sql
from groupcoord.analytics.gold.burrow import BurrowConfig
from groupcoord.analytics.read.table_schemas import ddl

_COMMIT_COLS = ["group_id", "topic", "partition", "record_ts_ms", "log_offset",
                "committed_offset", "tombstone"]
_END_COLS = ["topic", "partition", "ts_ms", "end_offset"]


def _write(df: Any, out: Path, name: str) -> Any:
    path = str(out / "gold" / name)
    df.write.mode("overwrite").parquet(path)
    return df.sparkSession.read.parquet(path)


def _cogrouped(commits: Any, ends: Any) -> Any:
    c = commits.select(*_COMMIT_COLS).groupBy("topic", "partition")
    e = ends.filter("not is_control").select(*_END_COLS).groupBy("topic", "partition")
    return c.cogroup(e)


def _owned(df: Any, owners: Any, ts_col: str) -> Any:
    """``df`` plus ``owner_member_id``: the member owning the partition at ``ts_col``
    (ownership intervals are small and broadcast)."""
    from pyspark.sql import functions as F

    o = F.broadcast(owners.withColumnRenamed("member_id", "owner_member_id")).alias("o")
    d = df.alias("d")
    cond = [F.col("d.group_id") == F.col("o.group_id"), F.col("d.topic") == F.col("o.topic"),
            F.col("d.partition") == F.col("o.partition"),
            F.col(f"d.{ts_col}") >= F.col("o.from_ts_ms"), F.col(f"d.{ts_col}") < F.col("o.to_ts_ms")]
    return d.join(o, cond, "left").select("d.*", "o.owner_member_id")


def partition_lag(commits: Any, ends: Any, out: Path, grid_ms: int, until_ms: int,
                  owners: Any) -> Any:
    df = lag_sql.lag_rows(commits, ends, grid_ms, until_ms)
    return _write(_owned(df, owners, "ts_ms"), out, "partition_lag")


def burrow_status(commits: Any, ends: Any, out: Path, ticks: list[int], cfg: BurrowConfig) -> Any:
    def fn(c: Any, e: Any) -> Any:
        return keyed_gold.burrow_timeline_of(c, e, ticks, cfg)

    df = _cogrouped(ring_commits(commits, ticks, cfg), ends).applyInArrow(
        fn, ddl(lag.BURROW_SCHEMA))
    return _write(df, out, "burrow_status")


def _tick_of(ticks: list[int]) -> Any:
    """The first of ``ticks`` at or after ``record_ts_ms`` as a column, when the ticks are
    multiples of one step plus a last one (as ``pipeline.eval_ticks`` makes them); else
    None. With one or two ticks the first one is the step."""
    from pyspark.sql import functions as F

    if not ticks or ticks[0] <= 0:
        return None
    every = ticks[1] - ticks[0] if len(ticks) > 2 else ticks[0]
    clock = list(range(ticks[0], ticks[-2] + 1, every)) if len(ticks) > 1 and every > 0 else []
    if len(ticks) > 1 and (ticks[:-1] != clock or ticks[-1] <= ticks[-2]
                           or ticks[0] % every):
        return None
    ts = F.col("record_ts_ms")
    up = ts + F.pmod(-ts, F.lit(every))  # ts rounded up to the step
    return F.least(F.greatest(up, F.lit(ticks[0])), F.lit(ticks[-1]))


def ring_commits(commits: Any, ticks: list[int], cfg: BurrowConfig) -> Any:
    """Only the commits some evaluation can see: with ``min_distance_ms`` 0 Burrow's ring at
    a tick is the newest ``intervals`` commits up to it, so a commit matters only if it is
    among the newest ``intervals`` of its group and partition before the first tick at or
    after it (later ticks see newer commits first). Other configurations fold every
    commit."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    tick = _tick_of(ticks)
    if cfg.min_distance_ms != 0 or tick is None:
        return commits
    newest = Window.partitionBy("group_id", "topic", "partition", "tick").orderBy(
        F.col("record_ts_ms").desc(), F.col("log_offset").desc())
    return (commits.withColumn("tick", tick)
            .withColumn("newest", F.row_number().over(newest))
            .filter((F.col("newest") <= cfg.intervals) | F.col("record_ts_ms").isNull())
            .drop("tick", "newest"))


def group_burrow_status(burrow: Any, out: Path) -> Any:
    from pyspark.sql import functions as F

    folded = F.when(F.col("status_code").isin(4, 5, 6), F.lit(3)).otherwise(F.col("status_code"))
    df = (burrow.withColumn("folded", folded)
          .groupBy("eval_ts_ms", "group_id")
          .agg(F.max("folded").alias("status_code"),
               F.sum("current_lag").alias("total_lag"),
               F.max("current_lag").alias("max_lag"),
               # the highest lag; among equal lags the first partition, as Burrow's fold
               # picks it (max_by alone would pick whichever row came first)
               F.min_by(F.struct("topic", "partition"),
                        F.struct(-F.col("current_lag"), "topic", "partition"))
               .alias("max_lag_partition"),
               F.avg(F.when(F.col("complete") >= 1.0, 1.0).otherwise(0.0)).alias("complete"),
               F.sum("lag_trend").alias("lag_trend"),
               F.count("*").alias("partitions"))
          .withColumn("status", F.element_at(
              F.array(*[F.lit(s) for s in ("NOTFOUND", "OK", "WARN", "ERR")]),
              F.col("status_code") + 1)))
    return _write(df, out, "group_burrow_status")


def lag_rollup(plag: Any, out: Path, bucket_s: int = 60) -> Any:
    from pyspark.sql import functions as F

    bucket = (F.col("ts_ms") / 1000 / bucket_s).cast("long") * bucket_s * 1000
    df = (plag.filter(F.col("kind") == "grid").withColumn("bucket_ms", bucket)
          .groupBy("group_id", "topic", "bucket_ms", "partition")
          .agg(F.max("lag_records").alias("lag"), F.max("lag_seconds").alias("lag_s"))
          .groupBy("group_id", "topic", "bucket_ms")
          .agg(F.sum("lag").alias("sum_lag"), F.max("lag").alias("max_lag"),
               F.percentile_approx("lag", 0.95).alias("p95_lag"),
               F.max("lag_s").alias("max_lag_seconds"), F.count("*").alias("partitions")))
    return _write(df, out, "lag_rollup")


def commit_rate(plag: Any, out: Path, bucket_s: int = 60) -> Any:
    """Commits per group, owning member (as of the commit) and minute, from the commit rows
    of ``partition_lag`` (which carry the owner and the previous commit): no shuffle of the
    raw commits."""
    from pyspark.sql import functions as F

    bucket = (F.col("ts_ms") / 1000 / bucket_s).cast("long") * bucket_s * 1000
    interval = (F.col("ts_ms") - F.col("prev_commit_ts_ms")) / 1000.0
    df = (plag.filter(F.col("kind") == "commit").withColumn("bucket_ms", bucket)
          .withColumnRenamed("owner_member_id", "member_id")
          .groupBy("group_id", "member_id", "topic", "bucket_ms")
          .agg(F.count("*").alias("commits"),
               # a set per bucket, not countDistinct: a distinct aggregate would make Spark
               # keep a percentile sketch per (bucket, partition) before merging them
               F.size(F.collect_set("partition")).cast("long").alias("partitions_committed"),
               F.percentile_approx(interval, 0.5).alias("median_commit_interval_s"),
               F.sum(F.when(F.col("committed_offset") == F.col("prev_committed_offset"), 1)
                     .otherwise(0)).alias("empty_commits")))
    return _write(df, out, "commit_rate")


# Above this many backwards commits the recovery lookup joins by sort-merge instead of
# broadcasting the candidates (rewinds are rare; a log full of them is not).
BROADCAST_REWINDS = 200_000


def rewinds(plag: Any, out: Path) -> Any:
    """Backwards commits (a commit below the group's previous one on the partition) and
    when, if ever, a later commit reached the pre-rewind offset again."""
    from pyspark.sql import functions as F

    key = ["group_id", "topic", "partition"]
    commits = plag.filter(F.col("kind") == "commit")
    cand = (commits.filter(F.col("committed_offset") < F.col("prev_committed_offset"))
            .select(*key, "ts_ms", F.col("prev_committed_offset").alias("from_offset"),
                    F.col("committed_offset").alias("to_offset")))
    later = commits.select(*[F.col(k).alias(f"l_{k}") for k in key],
                           F.col("ts_ms").alias("later_ts"),
                           F.col("committed_offset").alias("later_offset"))
    small = cand.count() <= BROADCAST_REWINDS
    c = F.broadcast(cand) if small else cand
    cond = [c[k] == later[f"l_{k}"] for k in key] + [later["later_ts"] > c["ts_ms"],
                                                    later["later_offset"] >= c["from_offset"]]
    recovered = (later.join(c, cond, "inner")
                 .groupBy(*key, "ts_ms", "from_offset", "to_offset")
                 .agg(F.min("later_ts").alias("recovered_ts_ms")))
    df = (cand.join(recovered, [*key, "ts_ms", "from_offset", "to_offset"], "left")
          .withColumn("rewound_by", F.col("from_offset") - F.col("to_offset"))
          .withColumn("recovered", F.col("recovered_ts_ms").isNotNull()))
    return _write(df, out, "rewinds")


# (group, end of the previous generation, end of the rebalance): the window in which the
# group's last commit estimates the start of a classic rebalance that has no event
StartWindow = tuple[str, int, int]


def classic_start_windows(rebalances: list[dict[str, Any]]) -> list[StartWindow]:
    """The windows ``estimate_classic_starts`` looks up commits in."""
    prev_end: dict[str, int] = {}
    wanted = []
    for r in sorted(rebalances, key=lambda r: (r["group_id"], r["end_ts_ms"] or 0)):
        if r["group_type"] == "classic" and r["estimated"] and r["from_epoch"] is not None \
                and r["group_id"] in prev_end:
            wanted.append((r["group_id"], prev_end[r["group_id"]], r["end_ts_ms"]))
        if r["group_type"] == "classic" and r["end_ts_ms"] is not None:
            prev_end[r["group_id"]] = r["end_ts_ms"]
    return wanted


def fill_classic_starts(rebalances: list[dict[str, Any]],
                        found: dict[tuple[str, int], int]) -> int:
    """Set the estimated starts (``found``: (group, rebalance end) -> the group's last
    commit in the window); returns how many rebalances got one."""
    n = 0
    for r in rebalances:
        start = found.get((r["group_id"], r["end_ts_ms"]))
        if r["estimated"] and start is not None and r["start_ts_ms"] is None:
            r["start_ts_ms"], r["duration_ms"] = start, r["end_ts_ms"] - start
            n += 1
    return n


def estimate_classic_starts(commits: Any, rebalances: list[dict[str, Any]]) -> int:
    """Fill the start of classic rebalances that have no event (analytics.md 5.3): the
    group's last commit during the previous generation. Rows stay flagged ``estimated``;
    returns how many got a start."""
    from pyspark.sql import functions as F

    wanted = classic_start_windows(rebalances)
    if not wanted:
        return 0
    spark = commits.sparkSession
    w = spark.createDataFrame(wanted, "g string, lo bigint, hi bigint")
    c = commits.select("group_id", "record_ts_ms")
    found = {(row["g"], row["hi"]): row["start"] for row in (
        F.broadcast(w).join(c, (c.group_id == w.g) & (c.record_ts_ms > w.lo)
                            & (c.record_ts_ms < w.hi))
        .groupBy("g", "hi").agg(F.max("record_ts_ms").alias("start")).collect())}
    return fill_classic_starts(rebalances, found)
