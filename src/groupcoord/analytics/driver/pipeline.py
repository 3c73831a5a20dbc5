"""``groupcoord analyze run``: ingest -> silver -> gold -> outputs, on Spark.

Large tables stay in Spark and are written as Parquet by Spark: ``silver/end_offsets``,
``gold/group_burrow_status``, ``gold/lag_rollup``, ``gold/commit_rate``, ``gold/rewinds``.
In unfiltered batch runs ``silver/offset_commits``, the largest, is written by the decoding
tasks themselves (``direct_silver``), one file per set of whole coordinator partitions, and
``gold/partition_lag`` and ``gold/burrow_status`` are built from those files one by one
(``task_gold``); otherwise Spark builds them (``spark_gold``).
Membership records and group events are a tiny share of the log; they are collected to the
driver, decoded there (``membership``, ``rebalance``) and written with pyarrow, as are the
small gold tables built from them. Plots read only aggregated tables.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupcoord.analytics.gold.burrow import BurrowConfig
from groupcoord.analytics.silver.direct_silver import TaskFile
from groupcoord.logformat.internal_topics import (
    GROUP_EVENTS_TOPIC,
    OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
)

Progress = Callable[[str], None]


@dataclass
class RunConfig:
    data_dir: str
    out_dir: str
    since_ms: int | None = None
    until_ms: int | None = None
    groups_regex: str | None = None
    grid_ms: int = 10_000
    eval_every_ms: int = 60_000  # 0: a twentieth of the range (``eval_every``)
    burrow: BurrowConfig = field(default_factory=BurrowConfig)
    split_bytes: str = "128m"
    plots: bool = True


class Stages:
    """Prints one line per stage with the elapsed time since ``started`` (a ``monotonic``
    time; default now), so the lines continue the CLI's own clock."""

    def __init__(self, progress: Progress, started: float | None = None) -> None:
        self.progress = progress
        self.t0 = time.monotonic() if started is None else started
        self.timings: dict[str, float] = {}
        self._last = time.monotonic()

    def done(self, name: str, detail: str = "") -> None:
        now = time.monotonic()
        self.timings[name] = round(now - self._last, 3)
        self._last = now
        self.progress(f"[{now - self.t0:7.1f}s] {name}{': ' + detail if detail else ''}")


def _read(spark: Any, cfg: RunConfig, table: str, stream: bool = False,
          **options: str) -> Any:
    """A ``kafkalog`` read of ``table`` (``spark.readStream`` with ``stream``)."""
    reader = (spark.readStream if stream else spark.read).format("kafkalog")
    reader = reader.option("table", table)
    for k, v in {**_read_options(spark, cfg), **options}.items():
        reader = reader.option(k, v)
    return reader.load(cfg.data_dir)


def _read_options(spark: Any, cfg: RunConfig) -> dict[str, str]:
    # keep every core busy: never fewer tasks than the default parallelism
    return {"split_bytes": cfg.split_bytes,
            "min_tasks": str(spark.sparkContext.defaultParallelism)}


def _filter_commits(df: Any, cfg: RunConfig) -> Any:
    from pyspark.sql import functions as F

    if cfg.groups_regex:
        df = df.filter(F.col("group_id").rlike(cfg.groups_regex))
    if cfg.since_ms is not None:
        df = df.filter(F.col("record_ts_ms") >= cfg.since_ms)
    if cfg.until_ms is not None:
        df = df.filter(F.col("record_ts_ms") <= cfg.until_ms)
    return df


def ingest(spark: Any, cfg: RunConfig, st: Stages) -> dict[str, Any]:
    """Decode the log dir into silver Parquet; returns the re-read DataFrames and counts.
    Unfiltered runs decode ``__consumer_offsets`` once (``direct_silver``): its tasks write
    the commits and bronze's rows of that topic, after Spark wrote the other topics' rows."""
    from groupcoord.analytics.silver import direct_silver

    out = Path(cfg.out_dir)
    direct = direct_silver.applies(cfg.groups_regex, cfg.since_ms, cfg.until_ms)
    frames = source_frames(spark, cfg, bronze_topics=OTHER_INTERNAL if direct else None)
    files = None
    for name in ("coord_records", "end_offsets", "offset_commits"):
        if name == "offset_commits" and direct:
            files = direct_silver.write(spark, cfg.data_dir, out / TABLE_PATHS[name],
                                        _read_options(spark, cfg),
                                        out / TABLE_PATHS["coord_records"])
            st.done(DIRECT_STAGE, f"{sum(f.bronze_rows for f in files)} membership records")
            continue
        frames[name].write.mode("overwrite").parquet(str(out / TABLE_PATHS[name]))
        st.done(DIRECT_BRONZE_STAGE if direct and name == "coord_records"
                else INGEST_STAGES[name])
    ing = load_ingested(spark, cfg, st)
    ing["commit_files"] = files
    return ing


# Where each source table lands, and its progress line.
TABLE_PATHS = {"offset_commits": "silver/offset_commits", "end_offsets": "silver/end_offsets",
               "coord_records": "bronze/coord_records"}
INGEST_STAGES = {"offset_commits": "ingest offset commits",
                 "end_offsets": "ingest end offsets (batch headers)",
                 "coord_records": "ingest membership records (bronze)"}
DIRECT_STAGE = "ingest offset commits and membership records (one pass)"
DIRECT_BRONZE_STAGE = "ingest group events, share state (bronze)"
# bronze's topics; ``__consumer_offsets`` first, the others are small
BRONZE_TOPICS = (OFFSETS_TOPIC, GROUP_EVENTS_TOPIC, SHARE_STATE_TOPIC)
OTHER_INTERNAL = BRONZE_TOPICS[1:]


def source_frames(spark: Any, cfg: RunConfig, stream: bool = False,
                  options: dict[str, str] | None = None,
                  bronze_topics: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The three ingest DataFrames (batch, or streaming with ``stream``), as written;
    ``options`` go to every read; bronze reads ``bronze_topics`` (default all three)."""
    from pyspark.sql import functions as F

    extra = options or {}

    def read(table: str, **opts: str) -> Any:
        return _read(spark, cfg, table, stream, **opts, **extra)

    commits = _filter_commits(read("offset_commits"), cfg)
    commits = commits.withColumn("record_ts", F.timestamp_millis("record_ts_ms"))
    ends = read("end_offsets").withColumn("ts", F.timestamp_millis("ts_ms"))
    # One pass over the internal topics: membership records (commit types excluded, they
    # are in silver), group events and share state, all small; bronze keeps them raw.
    bronze = read("coord_records", exclude_types="0,1",
                  topic=",".join(bronze_topics or BRONZE_TOPICS))
    return {"offset_commits": commits, "end_offsets": ends, "coord_records": bronze}


def load_ingested(spark: Any, cfg: RunConfig, st: Stages) -> dict[str, Any]:
    """Re-read the ingested Parquet tables; collect the small bronze records by topic."""
    out = Path(cfg.out_dir)
    commits = spark.read.parquet(str(out / TABLE_PATHS["offset_commits"]))
    ends = spark.read.parquet(str(out / TABLE_PATHS["end_offsets"]))
    rows = [r.asDict() for r in spark.read.parquet(str(out / TABLE_PATHS["coord_records"]))
            .orderBy("topic", "coord_partition", "log_offset").collect()]
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_topic.setdefault(r["topic"], []).append(r)
    found = {t: len(v) for t, v in by_topic.items()}
    st.done("load membership records, group events, share state", str(found))
    return {"commits": commits, "ends": ends,
            "group_rows": by_topic.get(OFFSETS_TOPIC, []),
            "event_rows": by_topic.get(GROUP_EVENTS_TOPIC, []),
            "share_rows": by_topic.get(SHARE_STATE_TOPIC, [])}


def bounds(commits: Any, ends: Any, cfg: RunConfig,
           files: list[TaskFile] | None = None) -> tuple[int, int]:
    """The analysed time range: the data's span, cut by --since/--until. The commits' span
    comes from ``files`` (what the decoding tasks saw) when given, instead of a scan."""
    from pyspark.sql import functions as F

    if files is None:
        both = (commits.select(F.col("record_ts_ms").alias("t"))
                .unionByName(ends.select(F.col("ts_ms").alias("t"))))
        row = both.agg(F.min("t"), F.max("t")).first()
        found = [row[0], row[1]] if row else [None, None]
    else:
        row = ends.agg(F.min("ts_ms"), F.max("ts_ms")).first()
        mins = [v for v in [row and row[0], *(f.min_ts_ms for f in files)] if v is not None]
        maxs = [v for v in [row and row[1], *(f.max_ts_ms for f in files)] if v is not None]
        found = [min(mins, default=None), max(maxs, default=None)]
    lo = found[0] if found[0] is not None else 0
    hi = found[1] if found[1] is not None else 0
    if cfg.since_ms is not None:
        lo = max(lo, cfg.since_ms)
    if cfg.until_ms is not None:
        hi = min(hi, cfg.until_ms)
    return lo, hi


def eval_every(cfg: RunConfig, lo: int, hi: int) -> int:
    """The Burrow evaluation period: as configured, or with 0 a twentieth of the analysed
    range in whole grid steps, at most a minute (a 76 s demo run is then evaluated every
    10 s, not once)."""
    if cfg.eval_every_ms:
        return cfg.eval_every_ms
    steps = -(-(hi - lo) // (20 * cfg.grid_ms))
    return max(cfg.grid_ms, min(60_000, steps * cfg.grid_ms))


def eval_ticks(lo: int, hi: int, every_ms: int) -> list[int]:
    """Burrow evaluation times: every ``every_ms`` on the clock, plus the end of the data."""
    ticks = list(range((lo // every_ms + 1) * every_ms, hi, every_ms))
    return ticks + [hi] if hi > lo else ticks


def event_dicts(rows: list[dict[str, Any]], groups_regex: str | None) -> list[dict[str, Any]]:
    """Parse ``__group_events`` values (JSON objects of GroupEvent fields)."""
    import json

    pattern = re.compile(groups_regex) if groups_regex else None
    out = []
    for r in rows:
        if r.get("value") is None:
            continue
        try:
            ev = json.loads(bytes(r["value"]))
        except ValueError:
            continue
        if not isinstance(ev, dict) or "group_id" not in ev or "kind" not in ev:
            continue
        if pattern is None or pattern.search(ev["group_id"]):
            ev.setdefault("timestamp_ms", r["record_ts_ms"])
            out.append(ev)
    return out
