"""The synthetic fixture, decoded without Spark: counts reconcile with the manifest and every
injected anomaly is found by the same functions the Spark jobs run (``lag``, ``membership``,
``rebalance``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from groupcoord.analytics.driver.pipeline import eval_ticks
from groupcoord.analytics.gold import rebalance
from groupcoord.analytics.gold.burrow import BurrowConfig
from groupcoord.analytics.gold.keyed_gold import burrow_timeline_of, partition_lag_of
from groupcoord.analytics.read import columns, splits
from groupcoord.analytics.read.reader import iter_raw_records
from groupcoord.analytics.read.segments import TxnResolver, scan_batches, topic_names
from groupcoord.analytics.silver import membership
from groupcoord.logformat.batch import validate

Fixture = tuple[Path, dict[str, Any]]


def _table(root: Path, table: str) -> pd.DataFrame:
    frames = []
    for s in splits.plan(root, table):
        txns = TxnResolver.from_list(list(s.txn_markers))
        it = (columns.offset_commit_batches(s.path, s.start, s.end, s.partition, txns)
              if table == "offset_commits"
              else columns.end_offset_batches(s.path, s.start, s.end, s.topic, s.partition))
        frames += [b.to_pandas() for b in it]
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def tables(fixture_dir: Fixture) -> dict[str, pd.DataFrame]:
    root, _ = fixture_dir
    return {"commits": _table(root, "offset_commits"), "ends": _table(root, "end_offsets")}


def test_every_batch_is_valid(fixture_dir: Fixture) -> None:
    root, _ = fixture_dir
    for seg in root.glob("*/*.log"):
        raw = seg.read_bytes()
        batches = list(scan_batches(seg))
        assert sum(h.size for _, h in batches) == len(raw)
        for pos, h in batches:
            validate(raw[pos : pos + h.size])


def test_counts_reconcile(fixture_dir: Fixture, tables: dict[str, pd.DataFrame]) -> None:
    _, m = fixture_dir
    commits = tables["commits"]
    assert len(commits) == m["commit_rows"]
    assert Counter(commits["group_id"]) == {g: v["commit_rows"] for g, v in m["groups"].items()}
    assert len(tables["ends"]) == m["data_batches"]
    # the aborted transaction's offsets (10,000,000) never reach the silver rows
    assert commits["committed_offset"].max() < 10_000_000
    assert set(commits["value_version"]) == {3, 4}


def _arrow(frame: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(frame, preserve_index=False)


def _statuses(m: dict[str, Any], tables: dict[str, pd.DataFrame]) -> dict[tuple[str, int], str]:
    commits, ends = tables["commits"], tables["ends"]
    ticks = eval_ticks(m["t0_ms"], m["end_ms"], 60_000)
    out = {}
    for (topic, part), c in commits.groupby(["topic", "partition"]):
        e = ends[(ends.topic == topic) & (ends.partition == part)]
        res = burrow_timeline_of(_arrow(c), _arrow(e), ticks, BurrowConfig()).to_pandas()
        last = res[res.eval_ts_ms == m["end_ms"]]
        out.update({(r.group_id, r.partition): r.status for r in last.itertuples()})
    return out


def test_injected_burrow_statuses(fixture_dir: Fixture, tables: dict[str, pd.DataFrame]) -> None:
    _, m = fixture_dir
    got = _statuses(m, tables)
    want = {(g, int(p)): s for g, v in m["groups"].items()
            for p, s in v["expect_partition_status"].items()}
    assert got == want


def test_partition_lag_rows(fixture_dir: Fixture, tables: dict[str, pd.DataFrame]) -> None:
    _, m = fixture_dir
    commits, ends = tables["commits"], tables["ends"]
    rate = m["spec"]["rate"]
    c = commits[(commits.topic == "t-slowpoke") & (commits.partition == 0)]
    e = ends[(ends.topic == "t-slowpoke") & (ends.partition == 0)]
    lag = partition_lag_of(_arrow(c), _arrow(e), 10_000, m["end_ms"]).to_pandas()
    at_commit = lag[lag.kind == "commit"]
    assert len(at_commit) == len(c)
    end = (at_commit.ts_ms - m["t0_ms"]) // 1000 * rate + rate
    assert (at_commit.lag_records == end - end * 4 // 5).all()
    assert (at_commit.lag_seconds > 0).iloc[-1]
    healthy = commits[(commits.topic == "t-healthy-0") & (commits.partition == 0)]
    hl = partition_lag_of(_arrow(healthy),
                       _arrow(ends[(ends.topic == "t-healthy-0") & (ends.partition == 0)]),
                       10_000, m["end_ms"]).to_pandas()
    assert (hl[hl.kind == "commit"].lag_records == 0).all()
    assert (hl[hl.kind == "commit"].lag_seconds == 0).all()


def _membership(root: Path) -> membership.MembershipTables:
    rows = []
    for s in splits.plan(root, "coord_records"):
        for r in iter_raw_records(s.path, s.start, s.end,
                                  TxnResolver.from_list(list(s.txn_markers))):
            if r.key is not None and r.key[:2] not in (b"\x00\x00", b"\x00\x01"):
                rows.append({"key": r.key, "value": r.value, "record_ts_ms": r.timestamp,
                             "coord_partition": s.partition, "log_offset": r.log_offset,
                             "txn_outcome": r.txn_outcome})
    t = membership.build(rows, topic_names(str(root)))
    membership.normalise_epoch_rows(t)
    return t


def _events(root: Path) -> list[dict[str, Any]]:
    import json

    seg = next((root / "__group_events-0").glob("*.log"))
    return [json.loads(r.value) for r in iter_raw_records(seg, 0, None)]


def test_rebalances_found(fixture_dir: Fixture) -> None:
    root, m = fixture_dir
    t = _membership(root)
    events = _events(root)
    rebs = rebalance.classic_rebalances(t, events) + rebalance.consumer_rebalances(t, events)
    for want in m["expect_rebalances"]:
        got = [r for r in rebs if r["group_id"] == want["group"]
               and r["to_epoch"] == want["to_epoch"]]
        assert len(got) == 1, want
        r = got[0]
        assert (r["start_ts_ms"], r["end_ts_ms"], r["duration_ms"], r["joined"], r["left"],
                r["estimated"]) == (want["start_ms"], want["end_ms"], want["duration_ms"],
                                    want["joined"], want["left"], want["estimated"])
    churn = next(r for r in rebs if r["group_id"] == "churn" and r["to_epoch"] == 2)
    assert any("the consumer is being closed" in x for x in churn["reasons"])


def test_assignment_balance_found(fixture_dir: Fixture) -> None:
    root, m = fixture_dir
    bal = rebalance.assignment_balance(_membership(root), {f"t-{g}": v["partitions"]
                                                          for g, v in m["groups"].items()})
    latest = {b["group_id"]: b for b in sorted(bal, key=lambda b: b["ts_ms"])}
    for group, want in m["expect_balance"].items():
        got = latest[group]
        assert {k: got[k if k not in ("max", "min") else f"{k}_per_member"] for k in want} == want
        assert got["unassigned_partitions"] == 0


def test_share_state_and_lag(fixture_dir: Fixture, tables: dict[str, pd.DataFrame]) -> None:
    from groupcoord.analytics.gold import share

    root, m = fixture_dir
    want = m["expect_share"]
    rows = []
    for s in splits.plan(root, "coord_records", topic="__share_group_state"):
        rows += [{"key": r.key, "value": r.value, "record_ts_ms": r.timestamp,
                  "log_offset": r.log_offset, "txn_outcome": r.txn_outcome}
                 for r in iter_raw_records(s.path, s.start, s.end)]
    state = share.share_state_rows(rows, topic_names(str(root)))
    assert [(r["group_id"], r["topic"], r["record_kind"]) for r in state] == \
        [(want["group"], want["topic"], "snapshot"), (want["group"], want["topic"], "update")]
    ends = tables["ends"]
    frame = ends[(ends.topic == want["topic"]) & (ends.partition == 0)]
    lag = share.share_lag(state, {(want["topic"], 0): frame})
    keys = ["ts_ms", "start_offset", "lag", "acked", "available", "archived",
            "max_delivery_count"]
    assert [{k: r[k] for k in keys} for r in lag] == \
        [{k: w[k] for k in keys} for w in want["rows"]]


def test_ownership_intervals(fixture_dir: Fixture) -> None:
    root, m = fixture_dir
    iv = rebalance.ownership_intervals(_membership(root))
    churn = sorted((r["member_id"], r["partition"], r["to_ts_ms"]) for r in iv
                   if r["group_id"] == "churn")
    change = next(r["end_ms"] for r in m["expect_rebalances"] if r["group"] == "churn")
    assert ("churn-m1", 2, change) in churn and ("churn-m0", 2, rebalance.FOREVER) in churn
    cg = [r for r in iv if r["group_id"] == "cg-rebal" and r["partition"] == 1]
    assert [(r["member_id"]) for r in sorted(cg, key=lambda r: r["from_ts_ms"])] == \
        ["cg-rebal-m1", "cg-rebal-m3"]
