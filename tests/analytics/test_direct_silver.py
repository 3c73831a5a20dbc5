"""``silver/offset_commits`` written by the decoding tasks (``analytics.direct_silver``) holds
exactly the rows, columns and types of the ``kafkalog`` source path it replaces in batch runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from helpers.parquet_rows import parquet_rows

from groupcoord.analytics.driver.pipeline import RunConfig, source_frames
from groupcoord.analytics.silver import direct_silver

pytestmark = [pytest.mark.spark]

Fixture = tuple[Path, dict[str, Any]]


def _both(spark: Any, data_dir: Path, out: Path, split_bytes: str) -> tuple[Any, Any]:
    cfg = RunConfig(str(data_dir), str(out), split_bytes=split_bytes)
    via_source = out / "via_source"
    source_frames(spark, cfg)["offset_commits"].write.parquet(str(via_source))
    direct = out / "direct"
    direct_silver.write(spark, str(data_dir), direct,
                        {"split_bytes": split_bytes, "min_tasks": "2"})
    return spark.read.parquet(str(via_source)), spark.read.parquet(str(direct))


@pytest.mark.parametrize("split_bytes", ["128m", "64k"])
def test_same_rows_as_the_source_path(spark: Any, fixture_dir: Fixture, tmp_path: Path,
                                      split_bytes: str) -> None:
    root, manifest = fixture_dir
    expected, got = _both(spark, root, tmp_path, split_bytes)
    assert got.schema == expected.schema
    rows = parquet_rows(tmp_path / "direct")
    assert len(rows) == manifest["commit_rows"] > 0
    assert parquet_rows(tmp_path / "via_source") == rows
    # pyarrow readers (the report) see the same column types as in a Spark-written table
    assert pq.read_table(tmp_path / "direct").schema == pq.read_table(
        tmp_path / "via_source").schema.remove_metadata()
    if split_bytes == "64k":
        assert len(list((tmp_path / "direct").glob("part-*.parquet"))) > 2


def test_empty_log_dir_gives_an_empty_table_with_the_schema(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "log").mkdir()
    expected, got = _both(spark, tmp_path / "log", tmp_path, "128m")
    assert got.count() == 0
    assert got.schema == expected.schema


@pytest.mark.parametrize("decoder", ["numba", "python"])
def test_the_same_tasks_write_the_bronze_rows_of_the_source_path(
        spark: Any, fixture_dir: Fixture, tmp_path: Path, decoder: str) -> None:
    root, _ = fixture_dir
    cfg = RunConfig(str(root), str(tmp_path), split_bytes="64k")
    expected = source_frames(spark, cfg)["coord_records"].filter("topic = '__consumer_offsets'")
    bronze = tmp_path / "bronze"
    bronze.mkdir()
    files = direct_silver.write(spark, str(root), tmp_path / "silver",
                                {"split_bytes": "64k", "min_tasks": "2", "decoder": decoder},
                                bronze)
    got = spark.read.parquet(str(bronze))
    assert got.schema == expected.schema
    expected.write.parquet(str(tmp_path / "expected"))
    rows = parquet_rows(bronze)
    assert sum(f.bronze_rows for f in files) == len(rows) > 0
    assert parquet_rows(tmp_path / "expected") == rows
    assert {r.record_type for r in got.select("record_type").distinct().collect()} - {0, 1} \
        == {r.record_type for r in got.select("record_type").distinct().collect()}


def test_a_batch_run_ingests_each_internal_topic_once(spark: Any, fixture_dir: Fixture,
                                                       tmp_path: Path) -> None:
    from groupcoord.analytics.driver.pipeline import Stages, ingest

    root, _ = fixture_dir
    cfg = RunConfig(str(root), str(tmp_path / "out"))
    lines: list[str] = []
    ingest(spark, cfg, Stages(lines.append))
    expected = source_frames(spark, cfg)["coord_records"]
    got = spark.read.parquet(str(tmp_path / "out" / "bronze" / "coord_records"))
    expected.write.parquet(str(tmp_path / "expected"))
    assert parquet_rows(tmp_path / "out" / "bronze" / "coord_records") == parquet_rows(
        tmp_path / "expected")
    assert {r.topic for r in got.select("topic").distinct().collect()} >= {
        "__consumer_offsets", "__group_events"}
    assert any("one pass" in line for line in lines)
    assert not any("ingest membership records (bronze)" in line for line in lines)


def test_filtered_runs_keep_the_spark_path() -> None:
    assert direct_silver.applies(None, None, None)
    assert not direct_silver.applies("^g1$", None, None)
    assert not direct_silver.applies(None, 0, None)
    assert not direct_silver.applies(None, None, 1)
