"""``silver/offset_commits`` written by the decoding tasks themselves (batch runs).

Going through the ``kafkalog`` source, every commit is decoded into Arrow in a Python
worker, streamed to the JVM, turned into Spark rows one by one and encoded into Parquet by
Spark: on ``local[2]`` that hand-off costs about three times the decode. Here each Spark
task decodes its splits (the plan and reader of the ``kafkalog`` source, ``batch_source``)
and writes its Arrow batches straight into one Parquet file with pyarrow, so the commits
never enter the JVM during ingest; Spark reads the table back like any other Parquet
dataset. The rows and columns are those of the source path (``pipeline.source_frames``),
including ``record_ts``.

Each task reads whole coordinator partitions (``splits.pack_partitions``), so each file holds
every commit of its groups: ``task_gold`` builds the lag and Burrow tables from the files one
by one, with no shuffle. The tasks report their groups and time range to the driver.

The same tasks write bronze's ``__consumer_offsets`` rows (membership records and every
other non-commit record) next to the Spark-written rows of the other internal topics: the
commit decoder already reads every record's type, so the log is read once
(``columns.commits_and_bronze``).

Only for unfiltered runs: ``--groups`` is a Java regular expression applied by Spark, so a
filtered run keeps the Spark path rather than emulate it in Python.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from groupcoord.analytics.read.table_schemas import COORD_RECORDS, OFFSET_COMMITS

# ``F.timestamp_millis`` in Spark: microseconds, UTC-adjusted
RECORD_TS = pa.field("record_ts", pa.timestamp("us", tz="UTC"))
SCHEMA = OFFSET_COMMITS.append(RECORD_TS)
ROW_GROUP_ROWS = 1 << 20


def applies(groups_regex: str | None, since_ms: int | None, until_ms: int | None) -> bool:
    return groups_regex is None and since_ms is None and until_ms is None


def with_record_ts(batch: pa.RecordBatch) -> pa.RecordBatch:
    ts = batch.column("record_ts_ms").cast(pa.timestamp("ms", tz="UTC")).cast(RECORD_TS.type)
    return pa.RecordBatch.from_arrays([*batch.columns, ts], schema=SCHEMA)


@dataclass(frozen=True)
class TaskFile:
    """One decoding task's Parquet file and what the driver needs to know of its commits."""

    path: str
    rows: int
    groups: frozenset[str]
    min_ts_ms: int | None  # of ``record_ts_ms``, nulls left out (None: no timestamp at all)
    max_ts_ms: int | None
    bronze_rows: int = 0  # the task's other ``__consumer_offsets`` records (``bronze_path``)


def _write_task(reader: Any, path: str, bronze_path: str | None, index: int,
                partition: Any) -> TaskFile:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from groupcoord.analytics.read.columns import commits_and_bronze
    from groupcoord.analytics.read.segments import PartitionDir, PartitionTxns

    commits: list[pa.RecordBatch] = []
    bronze: list[pa.RecordBatch] = []
    # the task holds whole partitions: it scans their markers itself, when it meets a
    # transactional batch
    resolvers: dict[tuple[str, int], PartitionTxns] = {}
    for spec in getattr(partition, "specs", []):
        key = (spec.topic, spec.partition)
        if key not in resolvers:
            resolvers[key] = PartitionTxns(
                PartitionDir(spec.topic, spec.partition, Path(spec.path).parent))
        txns = resolvers[key]
        c, b = commits_and_bronze(spec.path, spec.start, spec.end, spec.partition, txns,
                                  reader.decoder)
        commits += c
        bronze += b
    # one table per task, so the row groups are as big as Spark's own (not one per batch)
    table = pa.Table.from_batches([with_record_ts(b) for b in commits], schema=SCHEMA)
    pq.write_table(table, f"{path}/part-{index:05d}.parquet", row_group_size=ROW_GROUP_ROWS,
                   # Spark's own default encoding of timestamps, so every reader (pyarrow
                   # included) sees the same column type as in a Spark-written table
                   use_deprecated_int96_timestamps=True)
    bronze_rows = sum(b.num_rows for b in bronze)
    if bronze_path is not None and bronze_rows:
        # named apart from the Spark-written files of the other internal topics
        pq.write_table(pa.Table.from_batches(bronze, schema=COORD_RECORDS),
                       f"{bronze_path}/part-{index:05d}-offsets.parquet")
    span = pc.min_max(table.column("record_ts_ms"))
    return TaskFile(f"{path}/part-{index:05d}.parquet", table.num_rows,
                    frozenset(pc.unique(table.column("group_id")).drop_null().to_pylist()),
                    span["min"].as_py(), span["max"].as_py(), bronze_rows)


def write(spark: Any, data_dir: str, out_path: Path, options: dict[str, str],
          bronze_path: Path | None = None) -> list[TaskFile]:
    """Decode ``data_dir``'s offset commits into Parquet files under ``out_path`` (replaced),
    one per task of whole coordinator partitions; ``options`` are the ``kafkalog`` read
    options (``split_bytes``, ``min_tasks``, ``decoder``). With ``bronze_path`` (an existing
    directory) the same tasks also add the bronze rows of every other ``__consumer_offsets``
    record there (``columns.commits_and_bronze``), one file per task that has any."""
    from groupcoord.analytics.read import splits
    from groupcoord.analytics.read.batch_source import KafkaLogReader, SplitPartition

    reader = KafkaLogReader({**options, "path": data_dir, "table": "offset_commits"})
    specs = splits.plan(reader.path, reader.table, reader.split_bytes, reader.topic,
                        markers=False)
    # at least one task, so the table always has a schema
    tasks = [SplitPartition(t) for t in splits.pack_partitions(
        specs, reader.split_bytes, reader.min_tasks)] or [SplitPartition([])]
    shutil.rmtree(out_path, ignore_errors=True)
    out_path.mkdir(parents=True)
    path, bronze = str(out_path), None if bronze_path is None else str(bronze_path)
    return (spark.sparkContext.parallelize(list(enumerate(tasks)), len(tasks))
            .map(lambda task: _write_task(reader, path, bronze, task[0], task[1])).collect())
