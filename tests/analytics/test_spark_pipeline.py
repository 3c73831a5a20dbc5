"""The whole ``analyze run`` on Spark over the synthetic fixture (one session, one run).

Checks that every injected anomaly shows up in the gold tables with the expected values, that
row counts reconcile with the manifest, and that the outputs (summary, plots, report) exist.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

Fixture = tuple[Path, dict[str, Any]]


@pytest.fixture(scope="module")
def result(spark: Any, fixture_dir: Fixture, tmp_path_factory: pytest.TempPathFactory
           ) -> dict[str, Any]:
    from groupcoord.analytics.driver.pipeline import RunConfig
    from groupcoord.analytics.driver.run import run

    root, _ = fixture_dir
    out = tmp_path_factory.mktemp("analytics-out")
    lines: list[str] = []
    summary = run(spark, RunConfig(str(root), str(out)), lines.append)
    return {"summary": summary, "out": out, "lines": lines}


def _gold(spark: Any, out: Path, name: str) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in spark.read.parquet(str(out / "gold" / name)).collect()]


def test_row_counts_reconcile(result: dict[str, Any], fixture_dir: Fixture) -> None:
    _, m = fixture_dir
    rows = result["summary"]["rows"]
    assert rows["offset_commits"] == m["commit_rows"]
    assert rows["end_offsets"] == m["data_batches"]
    assert rows["group_events"] == m["group_events"]
    assert rows["classic_generations"] == m["classic_generations"]
    assert rows["share_partition_state"] == rows["share_lag"] == len(m["expect_share"]["rows"])


def test_share_lag(spark: Any, result: dict[str, Any], fixture_dir: Fixture) -> None:
    _, m = fixture_dir
    got = sorted((r["ts_ms"], r["lag"], r["max_delivery_count"])
                 for r in _gold(spark, result["out"], "share_lag"))
    assert got == [(w["ts_ms"], w["lag"], w["max_delivery_count"])
                   for w in m["expect_share"]["rows"]]


def test_burrow_statuses_at_end(spark: Any, result: dict[str, Any], fixture_dir: Fixture) -> None:
    _, m = fixture_dir
    final = [r for r in _gold(spark, result["out"], "burrow_status")
             if r["eval_ts_ms"] == m["end_ms"]]
    got = {(r["group_id"], r["partition"]): r["status"] for r in final}
    want = {(g, int(p)): s for g, v in m["groups"].items()
            for p, s in v["expect_partition_status"].items()}
    assert got == want
    groups = result["summary"]["groups"]
    assert {g: v["status"] for g, v in groups.items() if g in m["groups"]} == \
        {g: v["expect_group_status"] for g, v in m["groups"].items()}
    # a group with share state only still gets its verdict
    assert groups["share-a"]["kind"] == "share" and groups["share-a"]["lag"] > 0


def test_rewinds(spark: Any, result: dict[str, Any], fixture_dir: Fixture) -> None:
    _, m = fixture_dir
    rew = {r["group_id"]: r for r in _gold(spark, result["out"], "rewinds")}
    assert set(rew) == {"rewind-ok", "rewind-bad"}
    assert rew["rewind-ok"]["recovered"] and not rew["rewind-bad"]["recovered"]
    assert rew["rewind-ok"]["ts_ms"] == m["rewind_at_ms"]
    assert rew["rewind-ok"]["recovered_ts_ms"] == m["rewind_at_ms"] + 5_000


def test_rebalances_and_balance(spark: Any, result: dict[str, Any], fixture_dir: Fixture) -> None:
    _, m = fixture_dir
    rebs = _gold(spark, result["out"], "rebalances")
    for want in m["expect_rebalances"]:
        (r,) = [r for r in rebs if r["group_id"] == want["group"]
                and r["to_epoch"] == want["to_epoch"]]
        assert (r["start_ts_ms"], r["end_ts_ms"], r["duration_ms"], r["joined"], r["left"]) == \
            (want["start_ms"], want["end_ms"], want["duration_ms"], want["joined"], want["left"])
        if "partitions_moved" in want:
            assert r["partitions_moved"] == want["partitions_moved"], r
    latest = result["summary"]["assignment_balance_latest"]
    assert latest["unbalanced"]["imbalance"] == 2.0
    assert latest["healthy-0"]["imbalance"] == 1.0


def test_partition_lag_and_stuck(spark: Any, result: dict[str, Any],
                                 fixture_dir: Fixture) -> None:
    stuck = {(r["group_id"], r["partition"]): r for r in _gold(spark, result["out"],
                                                               "stuck_consumers")}
    assert stuck[("stopper", 0)]["status"] == "STOP"
    assert stuck[("stopper", 0)]["member_id"] == "stopper-m0"
    assert stuck[("rewind-bad", 0)]["status"] == "REWIND"
    lag = spark.read.parquet(str(result["out"] / "gold" / "partition_lag"))
    assert lag.filter("lag_records < 0").count() == 0
    assert lag.filter("group_id = 'stopper' and kind = 'grid'").agg({"lag_records": "max"}) \
        .first()[0] > 2000
    churn = next(r for r in fixture_dir[1]["expect_rebalances"] if r["group"] == "churn")
    owners = {r[0]: r[1] for r in lag.filter("group_id = 'churn' and partition = 2").selectExpr(
        f"ts_ms < {churn['end_ms']}", "owner_member_id").distinct().collect()}
    assert owners == {True: "churn-m1", False: "churn-m0"}


def test_commit_rate_by_member(spark: Any, result: dict[str, Any], fixture_dir: Fixture) -> None:
    _, m = fixture_dir
    rate = _gold(spark, result["out"], "commit_rate")
    assert sum(r["commits"] for r in rate) == m["commit_rows"]
    churn = {r["member_id"] for r in rate if r["group_id"] == "churn"}
    assert churn == {"churn-m0", "churn-m1"}
    # only KIP-848 partitions between revocation and reassignment have no owner
    assert {r["group_id"] for r in rate if r["member_id"] is None} <= {"cg-rebal"}


def test_outputs_written(result: dict[str, Any]) -> None:
    out = result["out"]
    summary = json.loads((out / "summary.json").read_text())
    worst = summary["worst_groups"]
    assert {summary["groups"][g]["status"] for g in worst[:3]} == {"ERR"}
    names = {p.name for p in (out / "plots").glob("*.png")}
    assert names == {"lag_heatmap.png", "lag_series.png", "commit_rate.png",
                     "rebalance_timeline.png", "assignment_balance.png", "burrow_status.png"}
    report = (out / "report.html").read_text()
    # every chart is drawn by the page (legends, one UTC axis); the PNGs are files only
    assert report.count("data:image/png;base64,") == 0
    assert report.count("class='chart'") == 6
    assert any("gold burrow_status" in line for line in result["lines"])


def test_estimated_classic_rebalance(spark: Any, result: dict[str, Any],
                                     fixture_dir: Fixture) -> None:
    _, m = fixture_dir
    want = m["expect_estimated_rebalance"]
    (r,) = [r for r in _gold(spark, result["out"], "rebalances")
            if r["group_id"] == want["group"] and r["to_epoch"] == want["to_epoch"]]
    assert r["estimated"]
    assert (r["start_ts_ms"], r["end_ts_ms"]) == (want["start_ms"], want["end_ms"])
    assert r["duration_ms"] == want["end_ms"] - want["start_ms"]
