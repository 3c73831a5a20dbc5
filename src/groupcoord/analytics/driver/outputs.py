"""``summary.json``, the PNG plots and ``report.html`` of an ``analyze run``.

Only aggregated tables reach the driver: the heatmaps and charts use partition lag bucketed
to at most ``data.BUCKETS`` columns in Spark, and only the ``MAX_GROUPS`` worst groups
get per-group PNG plots. The report (``page``) inlines the heatmap and the Burrow strip as
data URIs next to its interactive charts, so each page is one self-contained file.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from groupcoord.analytics.driver.pipeline import RunConfig
from groupcoord.analytics.report import data, health, page, plots, story

MAX_GROUPS = 12  # groups charted on the index page (and in the PNGs)
MAX_PAGES = 200  # groups that get a page of their own when there are more than MAX_GROUPS


def summary(spark: Any, cfg: RunConfig, span: tuple[int, int], commits: Any, ends: Any,
            verdicts: list[health.GroupHealth], rewinds: Any, small: dict[str, Any],
            timings: dict[str, float]) -> dict[str, Any]:
    """``summary.json``: the groups' health as ``analyze health --json`` gives it."""
    lo, hi = span
    return {
        "spark_version": spark.version, "master": spark.sparkContext.master,
        "data_dir": cfg.data_dir, "start_ms": lo, "end_ms": hi, "grid_ms": cfg.grid_ms,
        "rows": {"offset_commits": commits.count(), "end_offsets": ends.count(),
                 **small["counts"]},
        "unknown_record_types_skipped": small["skipped_unknown"],
        "groups": {h.group: {**h.as_json(), "total_lag": h.lag, "partitions": {
            f"{p.topic}-{p.partition}": p.status for p in h.partitions},
            "partition_detail": h.as_json()["partitions"]} for h in verdicts},
        "worst_groups": [h.group for h in verdicts[:10]],
        "rewinds": [r.asDict() for r in rewinds.orderBy("group_id", "ts_ms").limit(100).collect()],
        "rebalances": small["rebalances"],
        "stuck_consumers": small["stuck"],
        "assignment_balance_latest": _latest_balance(small["balance"]),
        "stage_timings_s": dict(timings),
    }


def _latest_balance(balance: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each group's newest assignment; a group that emptied at the end keeps its last
    non-empty one, which is the assignment worth showing."""
    out: dict[str, dict[str, Any]] = {}
    for b in sorted(balance, key=lambda b: b["ts_ms"]):
        if not b["members"] and out.get(b["group_id"], {}).get("members"):
            continue
        out[b["group_id"]] = {k: b[k] for k in ("epoch_or_generation", "members", "partitions",
                                                "min_per_member", "max_per_member", "imbalance",
                                                "unassigned_partitions", "per_member")}
    return out


def _meta(summ: dict[str, Any]) -> str:
    return (f"{html.escape(story.fmt_ts(summ['start_ms']))} to "
            f"{html.escape(story.fmt_ts(summ['end_ms']))} UTC "
            f"({html.escape(story.fmt_seconds(summ['end_ms'] - summ['start_ms']))}, to the "
            f"last record of any kind) from {html.escape(str(summ['data_dir']))}")


def plots_and_report(out: Path, rollup: Any, plag: Any, rate: Any, burrow: Any,
                     small: dict[str, Any], summ: dict[str, Any],
                     verdicts: list[health.GroupHealth],
                     series: dict[str, list[story.LagPoint]],
                     pseries: dict[tuple[str, str, int], list[tuple[int, int, int]]],
                     rewinds: list[dict[str, Any]]) -> list[Path]:
    """The PNG plots under ``plots/`` and the report pages; returns the PNGs."""
    lo, hi = summ["start_ms"], summ["end_ms"]
    paged = [h.group for h in verdicts[:MAX_PAGES]]
    burrow_rows = [r.asDict() for r in burrow.filter(burrow.group_id.isin(paged)).select(
        "eval_ts_ms", "group_id", "topic", "partition", "status", "current_lag").collect()]
    got = data.collect(plag, small, summ, verdicts, series, MAX_PAGES, burrow_rows,
                              pseries)
    chosen = [v.group for v in got.views[:MAX_GROUPS]]
    pdir = out / "plots"
    pdir.mkdir(parents=True, exist_ok=True)
    heat = [r for r in got.heat_rows if r["group_id"] in set(chosen)]
    made = [
        plots.lag_heatmaps(pdir, heat, small["rebalances"], lo, hi,
                           (hi - lo) // got.width_ms + 2),
        plots.lag_series(pdir, [r.asDict() for r in rollup.filter(
            rollup.group_id.isin(chosen)).collect()]),
        plots.commit_rate(pdir, [r.asDict() for r in rate.filter(
            rate.group_id.isin(chosen)).collect()]),
        plots.rebalance_timeline(pdir, small["rebalances"], lo, hi),
        plots.assignment_balance(pdir, summ["assignment_balance_latest"]),
        plots.burrow_strip(pdir, [r for r in burrow_rows if r["group_id"] in set(chosen)]),
    ]
    # the report draws every chart itself (legends, one UTC axis); the PNGs stay under
    # plots/ for whoever wants a file
    groups = [{"group": h.group, "kind": h.kind, "status": h.status,
               "partitions": len(h.partitions), "total_lag": h.lag,
               "max_lag": h.worst[2] if h.worst else None,
               "lag_trend": h.trend_records_per_s} for h in verdicts]
    tables = page.standard_tables(groups, page.rebalance_rows(small["rebalances"],
                                                                  small["timeouts"]),
                                    small["stuck"], rewinds)
    page.write(out, "Consumer group analytics", _meta(summ), got.views, got.charts, tables,
                 [], MAX_GROUPS, MAX_PAGES)
    return [p for p in made if p is not None]
