"""``gold/partition_lag`` with Spark's own operators (window functions, no Python worker).

The same rows as ``keyed_gold.partition_lag`` (the Arrow reference it is tested against), built
as sorted passes instead of a cogroup into Python, because shipping every commit to a
Python worker and back was the largest cost of the pipeline:

1. per (group, topic, partition), ordered by (time, log offset): the previous commit of
   each commit row, and the grid rows (every ``grid_ms`` from the group's first commit up
   to ``until_ms``) carrying the last commit forward;
2. per (topic, partition), ordered by time: the end offset as of each row (the running
   maximum of the end-offset samples up to its time, 0 before the first one);
3. per (topic, partition), ordered by offset, descending: the append time of the committed
   offset (the earliest sample whose end offset is past it), for ``lag_seconds``.

Steps 2 and 3 are left out when there are no end-offset samples at all (end offset 0,
lag 0). Step 1 is computed once: splitting its rows by whether their partition has samples
would make Spark compute it once per branch.
"""

from __future__ import annotations

from typing import Any

_KEY = ["group_id", "topic", "partition"]
_TP = ["topic", "partition"]


def lag_rows(commits: Any, ends: Any, grid_ms: int, until_ms: int) -> Any:
    """Commit and grid rows with lag in records and seconds (``lag.LAG_SCHEMA``)."""
    from pyspark.sql import functions as F

    rows = _commit_and_grid_rows(commits, grid_ms, until_ms)
    samples = (ends.filter("not is_control")
               .select(*_TP, F.coalesce("ts_ms", F.lit(-1)).alias("ts_ms"),
                       F.coalesce("end_offset", F.lit(-1)).alias("end_offset")))
    if samples.limit(1).count():
        rows = _appended_at(_end_at(rows, samples), samples)
    else:  # no broker side at all (a log dir of coordinator partitions only)
        rows = (rows.withColumn("end_offset", F.lit(0).cast("long"))
                .withColumn("appended_ts_ms", F.lit(-1).cast("long")))
    lag = F.greatest(F.col("end_offset") - F.col("committed_offset"), F.lit(0))
    secs = F.when((F.col("lag_records") > 0) & (F.col("appended_ts_ms") >= 0),
                  F.greatest(F.col("ts_ms") - F.col("appended_ts_ms"), F.lit(0)).cast("double")
                  / F.lit(1000.0)).otherwise(F.lit(0.0))
    return (rows.withColumn("lag_records", lag).withColumn("lag_seconds", secs)
            .select(*_KEY, "ts_ms", "kind", "committed_offset", "end_offset", "lag_records",
                    "lag_seconds", "prev_committed_offset", "prev_commit_ts_ms"))


def _commit_and_grid_rows(commits: Any, grid_ms: int, until_ms: int) -> Any:
    """Step 1: commit rows with their predecessor, grid rows with the last commit."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    live = commits.filter(~F.col("tombstone")).select(
        *_KEY, F.coalesce("record_ts_ms", F.lit(-1)).alias("ts_ms"), "log_offset",
        F.coalesce("committed_offset", F.lit(-1)).alias("committed_offset"))
    first = F.col("first_ts")
    start = first - F.pmod(first, F.lit(grid_ms)) + F.lit(grid_ms)
    ticks = F.when(start <= F.lit(until_ms),
                   F.sequence(start, F.lit(until_ms).cast("long"), F.lit(grid_ms).cast("long"))
                   ).otherwise(F.array().cast("array<bigint>"))
    grid = (live.groupBy(*_KEY).agg(F.min("ts_ms").alias("first_ts"))
            .select(*_KEY, F.explode(ticks).alias("ts_ms"))
            .select(*_KEY, "ts_ms", F.lit(None).cast("long").alias("log_offset"),
                    F.lit(None).cast("long").alias("committed_offset"),
                    F.lit(1).alias("probe")))
    both = live.withColumn("probe", F.lit(0)).unionByName(grid)
    commit_ts = F.when(F.col("probe") == 0, F.col("ts_ms"))
    order = Window.partitionBy(*_KEY).orderBy("ts_ms", "probe", "log_offset")
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    is_commit = F.col("probe") == 0
    return both.select(
        *_KEY, "ts_ms",
        F.when(is_commit, F.lit("commit")).otherwise(F.lit("grid")).alias("kind"),
        F.last("committed_offset", ignorenulls=True).over(upto).alias("committed_offset"),
        F.when(is_commit, F.last("committed_offset", ignorenulls=True).over(before))
        .alias("prev_committed_offset"),
        F.when(is_commit, F.last(commit_ts, ignorenulls=True).over(before))
        .alias("prev_commit_ts_ms"))


def _end_at(rows: Any, samples: Any) -> Any:
    """Step 2: ``end_offset`` = the highest sampled end offset at or before the row's time
    (a sample at the same millisecond counts), 0 when there is none yet."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    probes = rows.withColumn("sample_end", F.lit(None).cast("long")).withColumn("rank", F.lit(1))
    marks = samples.select(*_TP, "ts_ms", F.col("end_offset").alias("sample_end"),
                           F.lit(0).alias("rank"))
    order = (Window.partitionBy(*_TP).orderBy("ts_ms", "rank")
             .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    return (probes.unionByName(marks, allowMissingColumns=True)
            .withColumn("end_offset", F.coalesce(F.max("sample_end").over(order), F.lit(0)))
            .filter(F.col("rank") == 1).drop("sample_end", "rank"))


def _appended_at(rows: Any, samples: Any) -> Any:
    """Step 3: ``appended_ts_ms`` = the earliest time of a sample whose end offset is past
    the committed offset (-1 when none is): a running minimum over the samples in
    descending offset order, where a sample equal to the offset comes after it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    probes = (rows.withColumn("at_offset", F.col("committed_offset"))
              .withColumn("sample_ts", F.lit(None).cast("long")).withColumn("rank", F.lit(0)))
    marks = samples.select(*_TP, F.col("end_offset").alias("at_offset"),
                           F.col("ts_ms").alias("sample_ts"), F.lit(1).alias("rank"))
    order = (Window.partitionBy(*_TP).orderBy(F.col("at_offset").desc(), "rank")
             .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    return (probes.unionByName(marks, allowMissingColumns=True)
            .withColumn("appended_ts_ms",
                        F.coalesce(F.min("sample_ts").over(order), F.lit(-1).cast("long")))
            .filter(F.col("rank") == 0).drop("at_offset", "sample_ts", "rank"))
