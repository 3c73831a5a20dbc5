"""The whole ``analyze run``: session, ingest, gold tables, driver-side tables, outputs."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from groupcoord.analytics.driver import outputs
from groupcoord.analytics.driver.health_data import NoData, window
from groupcoord.analytics.driver.pipeline import (
    TABLE_PATHS,
    Progress,
    RunConfig,
    Stages,
    bounds,
    eval_every,
    eval_ticks,
    event_dicts,
    ingest,
)
from groupcoord.analytics.gold import incremental_gold, rebalance, share, spark_gold, task_gold
from groupcoord.analytics.read.segments import topic_names
from groupcoord.analytics.report import data, health, story
from groupcoord.analytics.silver import membership, streams_groups

IngestFn = Callable[[Any, RunConfig, Stages], dict[str, Any]]


def _typed(table: Any) -> Any:
    """Columns whose type a sample of all-null values cannot tell get their real type
    (``causes`` of rebalances without a member, say), so Spark reads every run alike."""
    import pyarrow as pa

    causes = pa.list_(pa.struct([("kind", pa.string()), ("member_id", pa.string()),
                                 ("reason", pa.string()), ("ts_ms", pa.int64())]))
    if "causes" in table.column_names and table.schema.field("causes").type != causes:
        i = table.column_names.index("causes")
        table = table.set_column(i, "causes", table.column("causes").cast(causes))
    return table


def write_rows(rows: list[dict[str, Any]], out: Path, layer: str, name: str) -> int:
    """Write a small driver-side table as a one-file Parquet dataset (Spark-readable)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = out / layer / name
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("*.parquet"):
        old.unlink()
    if rows:
        pq.write_table(_typed(pa.Table.from_pylist(rows)), path / "part-00000.parquet")
    return len(rows)


def _decode_membership(cfg: RunConfig, ing: dict[str, Any]) -> dict[str, Any]:
    """Membership tables, events and ownership intervals (driver side, before the gold jobs
    that need the owners)."""
    import re

    rows = ing["group_rows"]
    if cfg.groups_regex:
        pat = re.compile(cfg.groups_regex)
        rows = [r for r in rows if _group_of(r) is None or pat.search(_group_of(r) or "")]
    names = topic_names(cfg.data_dir)
    t = membership.build(rows, names)
    membership.normalise_epoch_rows(t)
    return {"tables": t, "names": names, "events": event_dicts(ing["event_rows"],
                                                               cfg.groups_regex),
            "owners": rebalance.ownership_intervals(t)}


def _rebalances(mem: dict[str, Any]) -> list[dict[str, Any]]:
    t, events = mem["tables"], mem["events"]
    return rebalance.classic_rebalances(t, events) + rebalance.consumer_rebalances(t, events)


def _small_tables(cfg: RunConfig, ing: dict[str, Any], mem: dict[str, Any],
                  sizes: dict[str, int], final: dict[tuple[str, str, int], dict[str, Any]],
                  rebs: list[dict[str, Any]]) -> dict[str, Any]:
    """The driver-side tables; ``rebs`` have their estimated starts filled in."""
    out = Path(cfg.out_dir)
    t, events = mem["tables"], mem["events"]
    balance = rebalance.assignment_balance(t, sizes)
    owners = rebalance.latest_owners(t)
    _add_member_lag(balance, owners, final)
    counts = {name: write_rows(getattr(t, name), out, "silver", name) for name in (
        "classic_generations", "cg_epochs", "cg_members", "cg_target_assignment",
        "cg_current_assignment", "sg_epochs", "sg_members", "sg_target_assignment",
        "sg_current_assignment")}
    counts["streams_rebalances"] = write_rows(
        streams_groups.streams_rebalances(t, events), out, "gold", "streams_rebalances")
    counts["task_movements"] = write_rows(streams_groups.task_movements(t), out, "gold",
                                          "task_movements")
    counts["group_events"] = write_rows(events and [
        {**e, "detail": json.dumps(e.get("detail"))} for e in events], out, "silver",
        "group_events")
    counts["share_partition_state"], share_lag = _share_tables(cfg, ing, mem["names"])
    counts["share_lag"] = len(share_lag)
    counts["ownership"] = write_rows(mem["owners"], out, "silver", "ownership")
    counts["rebalances"] = write_rows(rebs, out, "gold", "rebalances")
    counts["assignment_balance"] = write_rows(balance, out, "gold", "assignment_balance")
    return {"counts": counts, "rebalances": rebs, "share_lag": share_lag,
            "streams_rebalances": streams_groups.streams_rebalances(t, events), "balance": balance,
            "skipped_unknown": t.skipped_unknown, "ownership": mem["owners"],
            "timeouts": story.session_timeouts(t.classic_generations)}


def _share_tables(cfg: RunConfig, ing: dict[str, Any], names: dict[str, str]
                  ) -> tuple[int, list[dict[str, Any]]]:
    """Writes silver/share_partition_state and gold/share_lag; returns the count of the
    first and the rows of the second."""
    import re

    out = Path(cfg.out_dir)
    state = share.share_state_rows(ing["share_rows"], names)
    if cfg.groups_regex:
        state = [r for r in state if re.search(cfg.groups_regex, r["group_id"])]
    wanted = sorted({r["topic"] for r in state})
    ends: dict[tuple[str, int], Any] = {}
    if wanted:
        frame = ing["ends"].filter(ing["ends"].topic.isin(wanted)).select(
            "topic", "partition", "ts_ms", "end_offset").toPandas()
        ends = {(t, int(p)): g for (t, p), g in frame.groupby(["topic", "partition"])}
    lag = share.share_lag(state, ends)
    write_rows(lag, out, "gold", "share_lag")
    return write_rows(state, out, "silver", "share_partition_state"), lag


def _group_of(row: dict[str, Any]) -> str | None:
    from groupcoord.analytics.read.reader import decode_record

    try:
        rec = decode_record(row["key"], None)
    except ValueError:
        return None
    if rec is None:
        return None
    return rec.key.get("group") or rec.key.get("GroupId")


def _add_member_lag(balance: list[dict[str, Any]], owners: dict[tuple[str, str, int], Any],
                    final: dict[tuple[str, str, int], dict[str, Any]]) -> None:
    """Current lag per member for each group's newest generation/epoch."""
    newest: dict[str, dict[str, Any]] = {}
    for b in balance:  # an emptied group's last members are the ones the lag was left with
        if not b["members"] and b["group_id"] in newest:
            continue
        if b["group_id"] not in newest or b["ts_ms"] >= newest[b["group_id"]]["ts_ms"] \
                or not newest[b["group_id"]]["members"]:
            newest[b["group_id"]] = b
    for b in balance:
        for m in b["per_member"]:
            m["lag"] = None
    # one pass over the owners, not one per group
    lag_by_group: dict[str, dict[str, int]] = {}
    for key, owner in owners.items():
        if key[0] in newest and key in final:
            lag_by_member = lag_by_group.setdefault(key[0], {})
            lag_by_member[owner["member_id"]] = (lag_by_member.get(owner["member_id"], 0)
                                                 + final[key]["current_lag"])
    for group, b in newest.items():
        lag_by_member = lag_by_group.get(group, {})
        for m in b["per_member"]:
            m["lag"] = lag_by_member.get(m["member_id"], 0)


def run(spark: Any, cfg: RunConfig, progress: Progress = print,
        started: float | None = None, ingest_fn: IngestFn = ingest) -> dict[str, Any]:
    """Run every stage; returns the summary that is also written to ``summary.json``.
    ``ingest_fn`` fills silver/bronze (default: a batch rewrite; ``incremental.ingest``
    appends only what is new). The gold tables of the commits are then built file by file
    (``task_gold``), brought up to date from the new rows (``incremental_gold``, after an
    incremental ingest) or built by Spark (``spark_gold``); the rest is rebuilt."""
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    st = Stages(progress, started)
    ing = ingest_fn(spark, cfg, st)
    commits, ends = ing["commits"], ing["ends"]
    files = ing.get("commit_files")
    mem = _decode_membership(cfg, ing)
    lo, hi = _window(bounds(commits, ends, cfg, files), ing, mem, cfg)
    cfg = replace(cfg, eval_every_ms=eval_every(cfg, lo, hi))
    ticks = eval_ticks(lo, hi, cfg.eval_every_ms)
    index = task_gold.owner_index(mem["owners"]) \
        if files is not None or ing.get("incremental") else None
    rebs = _rebalances(mem)
    by_file: dict[str, Any] = {}
    keyed = files is not None and index is not None and task_gold.disjoint(files)
    incremental = ing.get("incremental") and index is not None \
        and incremental_gold.applies(cfg.burrow)
    if index is not None and (keyed or incremental):
        if incremental:
            spark_gold.estimate_classic_starts(commits, rebs)
            by_file, inexact = incremental_gold.update(
                spark, out, out / TABLE_PATHS["offset_commits"],
                out / TABLE_PATHS["end_offsets"], cfg.grid_ms, cfg.eval_every_ms, hi, ticks,
                cfg.burrow, index)
        else:
            by_file, inexact = task_gold.build(spark, files or [], out / TABLE_PATHS["end_offsets"],
                                               out, cfg.grid_ms, hi, ticks, cfg.burrow, index,
                                               rebs)
        plag, burrow = by_file["partition_lag"], by_file["burrow_status"]
        for name in inexact:  # groups too large for an exact percentile: Spark's estimate
            by_file[name] = getattr(spark_gold, name)(plag, out)
        st.done("gold burrow_status, partition_lag, lag_rollup, commit_rate, rewinds",
                "from new silver files and the carried state" if incremental
                else f"{len(files or [])} commit files, {len(ticks)} evaluation times")
    else:
        incremental_gold.forget(out)  # Spark rewrites the tables: the next update starts over
        spark_gold.estimate_classic_starts(commits, rebs)
        owners = _owners_df(spark, mem["owners"])
        plag = spark_gold.partition_lag(commits, ends, out, cfg.grid_ms, hi, owners)
        st.done("gold partition_lag")
        burrow = spark_gold.burrow_status(commits, ends, out, ticks, cfg.burrow)
        st.done("gold burrow_status", f"{len(ticks)} evaluation times")
    spark_gold.group_burrow_status(burrow, out)
    st.done("gold group_burrow_status")
    final = {(r["group_id"], r["topic"], r["partition"]): r.asDict()
             for r in burrow.filter(burrow.eval_ts_ms == hi).collect()}
    small = _small_tables(cfg, ing, mem, _topic_sizes(ends), final, rebs)
    st.done("membership, rebalances, assignment balance, share state")
    if by_file:
        rollup, rate, rew = by_file["lag_rollup"], by_file["commit_rate"], by_file["rewinds"]
    else:
        rollup = spark_gold.lag_rollup(plag, out)
        rate = spark_gold.commit_rate(plag, out)
        rew = spark_gold.rewinds(plag, out)
        st.done("gold lag_rollup, commit_rate, rewinds")
    series, pseries = data.lag_series(plag, lo, hi, cfg.grid_ms)
    kinds, members = health.kinds_and_members(mem["tables"])
    backlog: dict[str, list[health.Row]] = {}
    for r in small["share_lag"]:
        backlog.setdefault(r["group_id"], []).append(r)
    verdicts = health.evaluate(health.HealthInputs(
        lo, hi, final, series, mem["owners"], rebs + small["streams_rebalances"], kinds,
        members, backlog, pseries, cfg.burrow.allowed_lag, _appended_at(spark, ends, final)))
    small["stuck"] = health.stuck_rows(verdicts, hi)
    small["counts"]["stuck_consumers"] = write_rows(small["stuck"], out, "gold",
                                                    "stuck_consumers")
    st.done("health verdicts", f"{len(verdicts)} groups")
    summary = outputs.summary(spark, cfg, (lo, hi), commits, ends, verdicts, rew, small,
                              st.timings)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str))
    if cfg.plots:
        outputs.plots_and_report(out, rollup, plag, rate, burrow, small, summary, verdicts,
                                 series, pseries, summary["rewinds"])
        st.done("plots and report.html")
    summary["timings_s"] = st.timings
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str))
    return summary


def _appended_at(spark: Any, ends: Any, final: dict[tuple[str, str, int], dict[str, Any]]
                 ) -> dict[tuple[str, str, int], int]:
    """Append time of the first batch past each partition's last commit (seconds behind at
    the end of the data), one small join in Spark."""
    from pyspark.sql import functions as F

    rows = [(g, t, p, r["window_end_offset"]) for (g, t, p), r in final.items()
            if r.get("window_end_offset") is not None]
    if not rows:
        return {}
    last = spark.createDataFrame(rows, "group_id string, topic string, partition int, "
                                       "committed bigint")
    found = (F.broadcast(last).join(ends.select("topic", "partition", "ts_ms", "end_offset"),
                                    ["topic", "partition"])
             .filter(F.col("end_offset") > F.col("committed"))
             .groupBy("group_id", "topic", "partition").agg(F.min("ts_ms").alias("at")))
    return {(r["group_id"], r["topic"], r["partition"]): int(r["at"]) for r in found.collect()}


def _window(span: tuple[int, int], ing: dict[str, Any], mem: dict[str, Any], cfg: RunConfig
            ) -> tuple[int, int]:
    """The analysed range runs to the last record of any kind: a data append or a commit
    (``span``), a membership record, a group event or share state (``health_data.window``)."""
    times = [r.get("record_ts_ms") for key in ("group_rows", "share_rows")
             for r in ing.get(key, [])]
    times += [e.get("ts_ms") for e in mem["events"]]
    has_span = span != (0, 0)
    try:
        return window(span if has_span else (None, None), times, cfg.since_ms, cfg.until_ms)
    except NoData:
        return span


OWNERS_SCHEMA = ("group_id string, topic string, partition int, member_id string, "
                 "from_ts_ms bigint, to_ts_ms bigint")


def _owners_df(spark: Any, intervals: list[dict[str, Any]]) -> Any:
    rows = [(r["group_id"], r["topic"], r["partition"], r["member_id"], r["from_ts_ms"],
             r["to_ts_ms"]) for r in intervals]
    return spark.createDataFrame(rows, OWNERS_SCHEMA)


def _topic_sizes(ends: Any) -> dict[str, int]:
    from pyspark.sql import functions as F

    rows = ends.groupBy("topic").agg(F.countDistinct("partition").alias("n")).collect()
    return {r["topic"]: int(r["n"]) for r in rows}

