"""``summary.json``, the PNG plots and ``report.html`` of an ``analyze run``.

Only aggregated tables reach the driver: the heatmaps use partition lag bucketed to at most
``HEAT_BUCKETS`` columns in Spark, and only the ``MAX_GROUPS`` worst groups get per-group
plots. The report embeds every PNG as a data URI, so it is one self-contained file.
"""

from __future__ import annotations

import base64
import html
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groupcoord.analytics import plots
from groupcoord.analytics.pipeline import RunConfig

MAX_GROUPS = 12
HEAT_BUCKETS = 120
STATUS_RANK = {"ERR": 3, "WARN": 2, "OK": 1, "NOTFOUND": 0}


def summary(spark: Any, cfg: RunConfig, span: tuple[int, int], commits: Any, ends: Any,
            groups: Any, final: dict[tuple[str, str, int], dict[str, Any]], rewinds: Any,
            small: dict[str, Any], timings: dict[str, float]) -> dict[str, Any]:
    lo, hi = span
    group_final = {r["group_id"]: r.asDict(recursive=True)
                   for r in groups.filter(groups.eval_ts_ms == hi).collect()}
    worst = sorted(group_final.values(),
                   key=lambda g: (-STATUS_RANK.get(g["status"], 0), -(g["total_lag"] or 0)))
    by_group: dict[str, dict[str, str]] = {}
    for (g, topic, p), st in sorted(final.items()):
        by_group.setdefault(g, {})[f"{topic}-{p}"] = st["status"]
    return {
        "spark_version": spark.version, "master": spark.sparkContext.master,
        "data_dir": cfg.data_dir, "start_ms": lo, "end_ms": hi, "grid_ms": cfg.grid_ms,
        "rows": {"offset_commits": commits.count(), "end_offsets": ends.count(),
                 **small["counts"]},
        "unknown_record_types_skipped": small["skipped_unknown"],
        "groups": {g: {"status": v["status"], "total_lag": v["total_lag"],
                       "max_lag": v["max_lag"], "complete": v["complete"],
                       "lag_trend": v["lag_trend"], "partitions": by_group.get(g, {})}
                   for g, v in sorted(group_final.items())},
        "worst_groups": [g["group_id"] for g in worst[:10]],
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


def _heat_width(lo: int, hi: int, grid_ms: int) -> int:
    """Bucket width of the heatmaps: at most HEAT_BUCKETS, never finer than the lag grid."""
    return max(grid_ms, (hi - lo) // HEAT_BUCKETS + 1)


def _heat_rows(plag: Any, chosen: list[str], lo: int, width: int) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    return [r.asDict() for r in plag.filter((F.col("kind") == "grid")
                                            & F.col("group_id").isin(chosen))
            .withColumn("bucket", ((F.col("ts_ms") - lo) / width).cast("int"))
            .groupBy("group_id", "topic", "partition", "bucket")
            .agg(F.max("lag_records").alias("lag")).collect()]


def plots_and_report(out: Path, rollup: Any, plag: Any, rate: Any, burrow: Any, groups: Any,
                     small: dict[str, Any], summ: dict[str, Any]) -> list[Path]:
    lo, hi = summ["start_ms"], summ["end_ms"]
    chosen = (summ["worst_groups"] + sorted(summ["groups"]))[:MAX_GROUPS * 2]
    chosen = list(dict.fromkeys(chosen))[:MAX_GROUPS]
    pdir = out / "plots"
    pdir.mkdir(parents=True, exist_ok=True)
    width = _heat_width(lo, hi, summ["grid_ms"])
    made = [
        plots.lag_heatmaps(pdir, _heat_rows(plag, chosen, lo, width), small["rebalances"], lo,
                           hi, (hi - lo) // width + 1),
        plots.lag_series(pdir, [r.asDict() for r in rollup.filter(
            rollup.group_id.isin(chosen)).collect()]),
        plots.commit_rate(pdir, [r.asDict() for r in rate.filter(
            rate.group_id.isin(chosen)).collect()]),
        plots.rebalance_timeline(pdir, small["rebalances"], lo, hi),
        plots.assignment_balance(pdir, summ["assignment_balance_latest"]),
        plots.burrow_strip(pdir, [r.asDict() for r in burrow.filter(
            burrow.group_id.isin(chosen)).select("eval_ts_ms", "group_id", "topic", "partition",
                                                 "status").collect()]),
    ]
    write_report(out / "report.html", [p for p in made if p is not None], summ)
    return [p for p in made if p is not None]


def _cell(col: str, value: Any) -> str:
    """A table cell as a person reads it: times in UTC, lists one item per line, no None."""
    if value is None:
        return "-"
    if col.endswith("_ts_ms") and isinstance(value, int):
        ts = datetime.fromtimestamp(value / 1000, UTC)
        return ts.strftime("%Y-%m-%d %H:%M:%S.") + f"{ts.microsecond // 1000:03d}"
    if isinstance(value, list):
        return "<br>".join(html.escape(str(v)) for v in value)
    return html.escape(str(value))


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c.removesuffix('_ms') if c.endswith('_ts_ms') else c)}"
                   "</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c, r.get(c))}</td>" for c in cols)
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def write_report(path: Path, images: list[Path], summ: dict[str, Any]) -> None:
    groups = [{"group": g, **v} for g, v in summ["groups"].items()]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>groupcoord analyze</title>",
        ("<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px;vertical-align:top}"
         "img{max-width:100%}</style>"),
        "</head><body><h1>Consumer group analytics</h1>",
        (f"<p>Data: {html.escape(str(summ['data_dir']))}; Spark {summ['spark_version']} "
         f"({html.escape(summ['master'])}); rows: {html.escape(str(summ['rows']))}</p>"),
        "<h2>Group status at the end of the data (Burrow)</h2>",
        _table(groups, ["group", "status", "total_lag", "max_lag", "complete", "lag_trend"]),
        "<h2>Rebalances</h2>",
        _table(summ["rebalances"], ["group_id", "group_type", "from_epoch", "to_epoch",
                                    "start_ts_ms", "end_ts_ms", "duration_ms", "joined", "left",
                                    "reasons", "estimated"]),
        "<h2>Stuck consumers</h2>",
        _table(summ["stuck_consumers"], ["group_id", "topic", "partition", "status",
                                         "member_id", "client_host", "current_lag"]),
    ]
    for img in images:
        data = base64.b64encode(img.read_bytes()).decode("ascii")
        parts.append(f"<h2>{html.escape(img.stem.replace('_', ' '))}</h2>"
                     f"<img alt='{html.escape(img.stem)}' src='data:image/png;base64,{data}'>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
