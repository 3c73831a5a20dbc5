"""What ``report.html`` shows, gathered from the gold tables (Spark side of the report).

Only aggregates reach the driver: partition lag is bucketed in Spark to at most
``BUCKETS`` points per partition over the analysed range (never finer than the lag grid),
the per-group lag series (sum of records, worst seconds) is aggregated in Spark for every
group, and per-partition series and commit counts are collected only for the groups that
get charts (the worst ``max_groups`` first). Membership-derived rows (rebalances, ownership
intervals) are already small and on the driver.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from groupcoord.analytics.report import health, story
from groupcoord.analytics.report.page import ChartData, GroupView

BUCKETS = 120
STATUS_RANK = {"ERR": 3, "WARN": 2, "OK": 1, "NOTFOUND": 0}
Row = dict[str, Any]
PartitionKey = tuple[str, str, int]


def bucket_width(lo: int, hi: int, grid_ms: int) -> int:
    return max(grid_ms, (hi - lo) // BUCKETS + 1)


@dataclass
class Collected:
    """The report's data: ordered views, chart data, heatmap rows for the PNG."""

    views: list[GroupView]
    charts: ChartData
    heat_rows: list[Row]
    width_ms: int


def ordered_groups(groups: dict[str, Row]) -> list[str]:
    """Worst first: Burrow status, then total lag."""
    return sorted(groups, key=lambda g: (-STATUS_RANK.get(groups[g]["status"], 0),
                                         -(groups[g]["total_lag"] or 0), g))


def _partition_buckets(plag: Any, lo: int, width: int) -> Any:
    from pyspark.sql import functions as F

    return (plag.filter(F.col("kind") == "grid")
            .withColumn("bucket", ((F.col("ts_ms") - lo) / width).cast("int"))
            .groupBy("group_id", "topic", "partition", "bucket")
            .agg(F.max("lag_records").alias("lag"), F.max("lag_seconds").alias("lag_s"),
                 F.max("end_offset").alias("end"), F.max("ts_ms").alias("ts_ms")))


def _group_series(pb: Any) -> dict[str, list[story.LagPoint]]:
    from pyspark.sql import functions as F

    out: dict[str, list[story.LagPoint]] = defaultdict(list)
    for r in (pb.groupBy("group_id", "bucket")
              .agg(F.sum("lag").alias("lag"), F.max("lag_s").alias("lag_s"),
                   F.max("ts_ms").alias("ts_ms")).collect()):
        out[r["group_id"]].append(story.LagPoint(int(r["ts_ms"]), int(r["lag"] or 0),
                                                 float(r["lag_s"] or 0.0)))
    for pts in out.values():
        pts.sort(key=lambda p: p.ts_ms)
    return out


def _lag_series(rows: list[Row]) -> list[Row]:
    by: dict[PartitionKey, list[list[float]]] = defaultdict(list)
    for r in rows:
        by[(r["group_id"], r["topic"], r["partition"])].append(
            [r["ts_ms"], r["lag"] or 0, round(r["lag_s"] or 0.0, 3)])
    return [{"g": g, "t": t, "p": p, "name": f"{g} {t}-{p}", "pts": sorted(pts)}
            for (g, t, p), pts in sorted(by.items())]


def _commit_series(plag: Any, chosen: list[str], lo: int, width: int) -> list[Row]:
    from pyspark.sql import functions as F

    rows = (plag.filter((F.col("kind") == "commit") & F.col("group_id").isin(chosen))
            .withColumn("bucket", ((F.col("ts_ms") - lo) / width).cast("int"))
            .groupBy("group_id", "owner_member_id", "bucket").count().collect())
    per_minute = 60_000 / width
    by: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    for r in rows:
        member = story.short_member(r["owner_member_id"]) if r["owner_member_id"] else "no owner"
        by[(r["group_id"], member)].append([lo + r["bucket"] * width + width // 2,
                                            round(r["count"] * per_minute, 2)])
    return [{"g": g, "name": f"{g} {m}", "pts": sorted(pts)} for (g, m), pts in sorted(by.items())]


def _rebalance_bars(rebalances: list[Row], timeouts: dict[tuple[str, str], int], hi: int
                    ) -> list[Row]:
    out = []
    for r in rebalances:
        start = r["start_ts_ms"] if r["start_ts_ms"] is not None else r["end_ts_ms"]
        if start is None:
            continue
        out.append({"g": r["group_id"], "s": start,
                    "e": r["end_ts_ms"] if r["end_ts_ms"] is not None else hi,
                    "label": story.epoch_label(r), "text": story.rebalance_sentence(r, timeouts)})
    return out


def _owner_bars(intervals: list[Row], chosen: set[str], lo: int, hi: int) -> list[Row]:
    out = []
    for o in intervals:
        s, e = max(o["from_ts_ms"], lo), min(o["to_ts_ms"], hi)
        if o["group_id"] in chosen and e > s:
            out.append({"g": o["group_id"], "t": o["topic"], "p": o["partition"],
                        "m": story.short_member(o["member_id"]), "s": s, "e": e})
    return out


def group_views(verdicts: list[health.GroupHealth], rebalances: list[Row],
                timeouts: dict[tuple[str, str], int]) -> list[GroupView]:
    """The cards: the health verdicts in words, and the last rebalance with its cause."""
    last: dict[str, Row] = {}
    for r in sorted(rebalances, key=lambda r: r.get("end_ts_ms") or r.get("start_ts_ms") or 0):
        last[r["group_id"]] = r
    return [GroupView(h.group, h.status, h.kind, health.health_sentence(h),
                      health.lag_sentence(h),
                      story.rebalance_line(last[h.group], timeouts) if h.group in last
                      else "none in the analysed range") for h in verdicts]


def lag_series(plag: Any, lo: int, hi: int, grid_ms: int
               ) -> tuple[dict[str, list[story.LagPoint]],
                          dict[PartitionKey, list[tuple[int, int, int]]]]:
    """Each group's lag series and each partition's (ts, lag, end offset) samples, bucketed
    to at most ``BUCKETS`` points over the range (what the health verdicts read)."""
    pb = _partition_buckets(plag, lo, bucket_width(lo, hi, grid_ms)).cache()
    try:
        series = _group_series(pb)
        parts: dict[PartitionKey, list[tuple[int, int, int]]] = defaultdict(list)
        for r in pb.select("group_id", "topic", "partition", "ts_ms", "lag", "end").collect():
            parts[(r["group_id"], r["topic"], r["partition"])].append(
                (int(r["ts_ms"]), int(r["lag"] or 0), int(r["end"] or 0)))
    finally:
        pb.unpersist()
    return series, {k: sorted(v) for k, v in parts.items()}


def _step(r: Row, pts: list[tuple[int, int, int]], lo: int) -> tuple[int, str, str]:
    ts, st = r["eval_ts_ms"], r["status"]
    if st == "OK" and pts and r["current_lag"]:
        behind = health.falling_behind(pts, int(r["current_lag"]), ts, ts - lo)
        if behind:
            return ts, "WARN", behind
    return ts, st, story.STATUS_WHY.get(st, "")


def status_bars(burrow_rows: list[Row], verdicts: list[health.GroupHealth], lo: int, hi: int,
                pseries: dict[PartitionKey, list[tuple[int, int, int]]]) -> list[Row]:
    """Each partition's status over time: Burrow's at each evaluation, WARN where Burrow
    says OK but the lag grew faster than a tenth of the appends (``health.falling_behind``,
    on the samples up to then), equal neighbours merged; the last one is the verdict at the
    end of the data."""
    final = {(h.group, p.topic, p.partition): p for h in verdicts for p in h.partitions}
    by: dict[PartitionKey, list[Row]] = defaultdict(list)
    for r in sorted(burrow_rows, key=lambda r: r["eval_ts_ms"]):
        by[(r["group_id"], r["topic"], r["partition"])].append(r)
    out: list[Row] = []
    for key, rows in sorted(by.items()):
        steps = [_step(r, [q for q in pseries.get(key, []) if q[0] <= r["eval_ts_ms"]], lo)
                 for r in rows if r["eval_ts_ms"] < hi]
        if key in final:
            steps.append((hi, final[key].status, final[key].why))
        bars: list[Row] = []
        prev = None
        for ts, st, why in steps:
            if bars and bars[-1]["st"] == st and bars[-1]["why"] == why:
                bars[-1]["e"] = ts
            else:
                bars.append({"g": key[0], "t": key[1], "p": key[2], "st": st, "why": why,
                             "s": prev if prev is not None else ts, "e": ts})
            prev = ts
        out += bars
    return out


def collect(plag: Any, small: dict[str, Any], summ: dict[str, Any],
            verdicts: list[health.GroupHealth], series: dict[str, list[story.LagPoint]],
            max_pages: int, burrow_rows: list[Row],
            pseries: dict[PartitionKey, list[tuple[int, int, int]]]) -> Collected:
    lo, hi = summ["start_ms"], summ["end_ms"]
    width = bucket_width(lo, hi, summ["grid_ms"])
    order = [h.group for h in verdicts]
    chosen = order[:max_pages]
    from pyspark.sql import functions as F

    rows = [r.asDict() for r in _partition_buckets(plag, lo, width)
            .filter(F.col("group_id").isin(chosen)).collect()]
    by_key = {(h.group, p.topic, p.partition): p.lag for h in verdicts for p in h.partitions}
    # every partition's line ends at the evaluation the cards and tables give
    last: dict[PartitionKey, Row] = {}
    for r in rows:
        k = (r["group_id"], r["topic"], r["partition"])
        if k not in last or r["ts_ms"] > last[k]["ts_ms"]:
            last[k] = r
    for k, r in last.items():
        if r["ts_ms"] < hi and k in by_key:
            rows.append({**r, "ts_ms": hi, "bucket": r["bucket"] + 1, "lag": by_key[k],
                         "lag_s": (r["lag_s"] or 0.0) + (hi - r["ts_ms"]) / 1000
                         if by_key[k] else 0.0})
    timeouts: dict[tuple[str, str], int] = small["timeouts"]
    rebalances = small["rebalances"] + small.get("streams_rebalances", [])
    views = group_views(verdicts, rebalances, timeouts)
    storms = {h.group for h in verdicts if any(f.startswith("rebalance storm") for f in h.findings)}
    bars = [{**b, "storm": b["g"] in storms} for b in _rebalance_bars(rebalances, timeouts, hi)
            if b["g"] in set(chosen)]
    charts = ChartData(lo, hi, _lag_series(rows), _commit_series(plag, chosen, lo, width),
                       bars, _owner_bars(small["ownership"], set(chosen), lo, hi),
                       status_bars(burrow_rows, [h for h in verdicts if h.group in chosen], lo,
                                   hi, pseries))
    heat = [{"group_id": r["group_id"], "topic": r["topic"], "partition": r["partition"],
             "bucket": r["bucket"], "lag": r["lag"]} for r in rows]
    return Collected(views, charts, heat, width)

