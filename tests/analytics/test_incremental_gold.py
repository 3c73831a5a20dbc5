"""``analyze run --incremental`` keeps the gold tables of the commits up to date from the new
rows (``incremental_gold``): a run over the log as it was at some time, then a run over the
rest, gives the tables of one batch run over the whole log, and a run with nothing new
changes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.parquet_rows import parquet_rows

from groupcoord.analytics.read.segments import list_partitions, scan_batches, scan_headers

pytestmark = [pytest.mark.spark, pytest.mark.slow]

Fixture = tuple[Path, dict[str, Any]]
GOLD = ["partition_lag", "burrow_status", "lag_rollup", "commit_rate", "rewinds",
        "group_burrow_status"]


def _log_as_of(full: Path, dst: Path, at_ms: int) -> None:
    """Each partition as a live broker had it at ``at_ms``: every batch up to the first one
    with a later timestamp; partitions with no batch yet are absent."""
    for part in list_partitions(full):
        kept: list[tuple[Path, int, bool]] = []
        for seg in part.segments():
            cut = next((pos for pos, h in scan_batches(seg) if h.max_timestamp > at_ms), None)
            size = seg.stat().st_size if cut is None else cut
            if size:
                kept.append((seg, size, cut is None))
            if cut is not None:
                break
        if not kept:
            continue
        out = dst / part.path.name
        out.mkdir(parents=True)
        for extra in part.path.glob("partition.metadata"):
            shutil.copy(extra, out / extra.name)
        for seg, size, whole in kept:
            (out / seg.name).write_bytes(seg.read_bytes()[:size])
            if whole and seg.with_suffix(".index").exists():
                shutil.copy(seg.with_suffix(".index"), out / seg.with_suffix(".index").name)


def _span_ms(full: Path) -> tuple[int, int]:
    ts = [h.max_timestamp for p in list_partitions(full, "__consumer_offsets")
          for seg in p.segments() for h in scan_headers(seg)]
    return min(ts), max(ts)


def _gold_rows(out: Path) -> dict[str, list[str]]:
    return {name: parquet_rows(out / "gold" / name) for name in GOLD}


def _assert_same(got: dict[str, list[str]], want: dict[str, list[str]]) -> None:
    for name in GOLD:
        assert got[name] == want[name], name


def test_incremental_runs_update_gold_to_the_batch_tables(spark: Any, fixture_dir: Fixture,
                                                          tmp_path: Path) -> None:
    from groupcoord.analytics.driver.incremental import make_ingest
    from groupcoord.analytics.driver.pipeline import RunConfig
    from groupcoord.analytics.driver.run import run
    from groupcoord.analytics.gold.incremental_gold import STATE_DIR

    full, _ = fixture_dir
    quiet = lambda _line: None
    run(spark, RunConfig(str(full), str(tmp_path / "batch"), plots=False), quiet)
    want = _gold_rows(tmp_path / "batch")

    lo, hi = _span_ms(full)
    data, out, ckpt = tmp_path / "log", tmp_path / "out", tmp_path / "ckpt"
    _log_as_of(full, data, lo + (hi - lo) * 55 // 100 + 7_777)  # not on a minute
    cfg = RunConfig(str(data), str(out), plots=False)
    lines: list[str] = []
    run(spark, cfg, lines.append, ingest_fn=make_ingest(ckpt))
    assert any("carried state" in line for line in lines)
    first = _gold_rows(out)
    assert 0 < len(first["partition_lag"]) < len(want["partition_lag"])
    settled = sorted(p.name for p in (out / "gold" / "partition_lag").glob("*.parquet"))
    assert "part-tail.parquet" in settled and len(settled) == 2

    shutil.copytree(full, data, dirs_exist_ok=True)
    run(spark, cfg, quiet, ingest_fn=make_ingest(ckpt))
    _assert_same(_gold_rows(out), want)
    # the first run's settled rows were kept, not computed again
    assert _state(out)["settled_files"] == 2
    assert set(settled) < {p.name for p in (out / "gold" / "partition_lag").glob("*.parquet")}
    carried = (out / STATE_DIR / "commits.parquet").stat().st_size
    assert carried < sum(p.stat().st_size for p in (out / "silver" / "offset_commits")
                         .glob("*.parquet"))

    files = _files(out)
    run(spark, cfg, quiet, ingest_fn=make_ingest(ckpt))  # nothing new
    _assert_same(_gold_rows(out), want)
    assert _files(out) == files  # no settled file added
    assert _state(out)["settled_files"] == 3


def _files(out: Path) -> list[Path]:
    return sorted(p for name in GOLD[:5] for p in (out / "gold" / name).glob("*.parquet"))


def _state(out: Path) -> dict[str, Any]:
    from groupcoord.analytics.gold.incremental_gold import STATE_DIR

    return json.loads((out / STATE_DIR / "state.json").read_text())


def test_late_data_before_the_cut_starts_over(spark: Any, fixture_dir: Fixture,
                                              tmp_path: Path) -> None:
    """A partition that shows up with old batches (here: absent from the first run's log
    dir) would change settled rows: the update starts over and still equals a batch run."""
    from groupcoord.analytics.driver.incremental import make_ingest
    from groupcoord.analytics.driver.pipeline import RunConfig
    from groupcoord.analytics.driver.run import run

    full, _ = fixture_dir
    quiet = lambda _line: None
    run(spark, RunConfig(str(full), str(tmp_path / "batch"), plots=False), quiet)
    want = _gold_rows(tmp_path / "batch")
    data, out, ckpt = tmp_path / "log", tmp_path / "out", tmp_path / "ckpt"
    lo, hi = _span_ms(full)
    _log_as_of(full, data, (lo + hi) // 2)
    held_back = min(p for p in data.iterdir() if not p.name.startswith("__"))
    shutil.rmtree(held_back)
    cfg = RunConfig(str(data), str(out), plots=False)
    run(spark, cfg, quiet, ingest_fn=make_ingest(ckpt))
    shutil.copytree(full, data, dirs_exist_ok=True)
    run(spark, cfg, quiet, ingest_fn=make_ingest(ckpt))
    _assert_same(_gold_rows(out), want)
    assert len(list((out / "gold" / "partition_lag").glob("part-settled-*.parquet"))) == 1
    assert _state(out)["settled_files"] == 1  # started over
