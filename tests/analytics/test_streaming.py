"""The streaming ``kafkalog`` reader and ``analyze run --incremental`` over a growing log dir.

Run 1 sees an early state of the fixture: only the first segment of each partition, cut in
the middle of a batch (a torn tail), and some partitions not there at all. Run 2 sees the
whole fixture: the torn batch completed, new segment files and new partitions. Together the
two runs must append exactly the rows of one batch read, with no duplicates. The offset
helpers are also checked without Spark (torn tail, open transaction, gap after deletion).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from groupcoord.analytics.fixture.logwriter import PartitionWriter
from groupcoord.analytics.read import logpos
from groupcoord.analytics.read.segments import list_partitions

Fixture = tuple[Path, dict[str, Any]]
LATE_PARTITIONS = ("__consumer_offsets-3", "t-stopper-0", "t-stopper-1")


def _early_state(full: Path, dst: Path) -> None:
    """First segment of each partition, torn at 60 % of its size; late partitions absent."""
    for part in list_partitions(full):
        if part.path.name in LATE_PARTITIONS:
            continue
        out = dst / part.path.name
        out.mkdir(parents=True)
        for extra in part.path.glob("partition.metadata"):
            shutil.copy(extra, out / extra.name)
        seg = part.segments()[0]
        data = seg.read_bytes()
        (out / seg.name).write_bytes(data[: max(1, len(data) * 6 // 10)])
        shutil.copy(seg.with_suffix(".index"), out / seg.with_suffix(".index").name)


def _grow(full: Path, dst: Path) -> None:
    """The later state: every file as in the full fixture (appends complete the tail)."""
    shutil.copytree(full, dst, dirs_exist_ok=True)


def test_offsets_torn_tail_open_txn_and_gap(tmp_path: Path) -> None:
    w = PartitionWriter(tmp_path, "__consumer_offsets", 0, segment_bytes=400)
    for i in range(6):
        w.append([(b"k%d" % i, b"v" * 50, 1000 + i)])
    w.append([(b"t", b"v", 2000)], producer_id=7, transactional=True)
    w.append([(b"after", b"v", 2001)])
    w.close()
    part = list_partitions(tmp_path)[0]
    end = logpos.stable_end(part, 0, transactional=True)
    assert end is not None and end.next_offset == 6  # held back at the open transaction
    assert logpos.stable_end(part, 0, transactional=False).next_offset == 8  # type: ignore[union-attr]
    last = part.segments()[-1]
    last.write_bytes(last.read_bytes()[:-3])  # torn tail
    assert logpos.stable_end(part, 0, transactional=False).next_offset == 7  # type: ignore[union-attr]
    ranges = logpos.ranges(part, 2, 6)
    assert sum(b - a for _s, a, b in ranges) > 0
    assert all(logpos.base_offset(s) <= 6 for s, _a, _b in ranges)
    first = part.segments()[0]
    first.unlink()  # retention deleted the oldest segment: earliest moves up
    assert logpos.stable_end(part, 0, False).earliest == logpos.base_offset(  # type: ignore[union-attr]
        part.segments()[0])


def _plain(row: Any) -> tuple[Any, ...]:
    # Spark returns binary columns as bytearray, which is unhashable
    return tuple(bytes(v) if isinstance(v, bytearray) else v for v in row)


def _rows(spark: Any, path: Path, columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted(_plain(r) for r in spark.read.parquet(str(path)).select(*columns).collect())


def _batch_rows(spark: Any, data_dir: Path, table: str, columns: list[str],
                **options: str) -> list[tuple[Any, ...]]:
    reader = spark.read.format("kafkalog").option("table", table)
    for k, v in options.items():
        reader = reader.option(k, v)
    return sorted(_plain(r) for r in reader.load(str(data_dir)).select(*columns).collect())


@pytest.mark.spark
@pytest.mark.slow
def test_two_incremental_runs_equal_one_batch_run(spark: Any, fixture_dir: Fixture,
                                                  tmp_path: Path) -> None:
    from groupcoord.analytics.driver.incremental import append_new, make_ingest
    from groupcoord.analytics.driver.pipeline import RunConfig, Stages
    from groupcoord.analytics.driver.run import run
    from groupcoord.analytics.read import table_schemas

    full, manifest = fixture_dir
    data, out, ckpt = tmp_path / "log", tmp_path / "out", tmp_path / "ckpt"
    _early_state(full, data)
    cfg = RunConfig(str(data), str(out), plots=False)
    first = append_new(spark, cfg, ckpt, Stages(lambda _line: None))
    assert 0 < first["offset_commits"] < manifest["commit_rows"]
    _grow(full, data)
    summary = run(spark, cfg, lambda _line: None, ingest_fn=make_ingest(ckpt))
    assert summary["rows"]["offset_commits"] == manifest["commit_rows"]
    assert summary["rows"]["end_offsets"] == manifest["data_batches"]

    internal = "__consumer_offsets,__group_events,__share_group_state"
    cases = [("offset_commits", "silver/offset_commits", {}),
             ("end_offsets", "silver/end_offsets", {}),
             ("coord_records", "bronze/coord_records",
              {"exclude_types": "0,1", "topic": internal})]
    for table, path, opts in cases:
        cols = list(table_schemas.SCHEMAS[table].names)
        got = _rows(spark, out / path, cols)
        assert len(got) == len(set(got)), f"{table}: duplicate rows"
        assert got == _batch_rows(spark, full, table, cols, **opts), table
