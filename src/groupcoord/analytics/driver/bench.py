"""``groupcoord analyze bench``: decode throughput of a log dir (analytics.md 5.8).

Measures, on the given log dir: the pure-Python offset-commit decoder into Arrow (one process,
no Spark), the batch-header scan of data segments, and with ``--spark`` the Spark ingest of
offset commits (first run including Python worker start-up, then a second run).
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any

from groupcoord.analytics.fixture.generate import coordinator_partition
from groupcoord.analytics.fixture.logwriter import PartitionWriter
from groupcoord.analytics.fixture.records import key_bytes, value_bytes
from groupcoord.analytics.read import columns, splits
from groupcoord.analytics.read.segments import TxnResolver
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC


def write_bench_log(out: str | Path, commits: int, groups: int = 200, partitions: int = 12,
                    coord_partitions: int = 8, segment_bytes: int = 32 << 20) -> int:
    """A ``__consumer_offsets``-only log dir of about ``commits`` OffsetCommit records.

    Shaped like the analytics.md 2.1 sets: each group commits all its partitions in one
    batch (OffsetCommitValue v3) every 5 s; 32 MiB segments.
    """
    root = Path(out)
    writers = [PartitionWriter(root, OFFSETS_TOPIC, p, segment_bytes=segment_bytes)
               for p in range(coord_partitions)]
    keys = {(g, p): key_bytes(1, group=f"group-{g:05d}", topic=f"topic-{g % 50:03d}",
                              partition=p) for g in range(groups) for p in range(partitions)}
    written = 0
    tick = 0
    while written < commits:
        ts = 1_700_000_000_000 + tick * 5_000
        for g in range(groups):
            recs = [(keys[(g, p)], value_bytes(1, 3, offset=tick * 50 + p, leaderEpoch=0,
                                               metadata="", commitTimestamp=ts), ts)
                    for p in range(partitions)]
            writers[coordinator_partition(f"group-{g:05d}", coord_partitions)].append(recs)
            written += partitions
        tick += 1
    for w in writers:
        w.close()
    return written


def _decode_all(data_dir: str, decoder: str) -> tuple[int, int, float]:
    specs = splits.plan(data_dir, "offset_commits")
    rows = size = 0
    t = time.perf_counter()
    for s in specs:
        txns = TxnResolver.from_list(list(s.txn_markers))
        for b in columns.offset_commit_batches(s.path, s.start, s.end, s.partition, txns,
                                               decoder):
            rows += b.num_rows
        size += (s.end or Path(s.path).stat().st_size) - s.start
    return rows, size, time.perf_counter() - t


def _scan_all(data_dir: str) -> tuple[int, float]:
    n = 0
    t = time.perf_counter()
    for s in splits.plan(data_dir, "end_offsets"):
        for b in columns.end_offset_batches(s.path, s.start, s.end, s.topic, s.partition):
            n += b.num_rows
    return n, time.perf_counter() - t


def _spark(data_dir: str, master: str | None, decoder: str) -> dict[str, Any]:
    from groupcoord.analytics.driver.session import build_session

    t = time.perf_counter()
    spark = build_session(master)
    out: dict[str, Any] = {"session_start_s": round(time.perf_counter() - t, 2),
                           "master": spark.sparkContext.master, "spark_version": spark.version}
    for run in ("first", "second"):
        t = time.perf_counter()
        df = (spark.read.format("kafkalog").option("table", "offset_commits")
              .option("decoder", decoder)
              .option("min_tasks", str(spark.sparkContext.defaultParallelism)).load(data_dir))
        df.write.format("noop").mode("overwrite").save()
        out[f"{run}_ingest_s"] = round(time.perf_counter() - t, 3)
    return out


def _decoder_result(data_dir: str, decoder: str) -> dict[str, Any]:
    rows, size, secs = _decode_all(data_dir, decoder)
    return {"rows": rows, "bytes": size, "seconds": round(secs, 3),
            "rows_per_s": round(rows / secs) if secs else None,
            "mb_per_s": round(size / secs / 1e6, 1) if secs else None}


def bench(data_dir: str, spark: bool = False, master: str | None = None) -> dict[str, Any]:
    """Decode throughput per decoder (numba: first run includes JIT), header scan, Spark."""
    result: dict[str, Any] = {"data_dir": data_dir, "cpus": os.cpu_count(),
                              "python": platform.python_version()}
    result["python_decoder"] = _decoder_result(data_dir, "python")
    result["numba_decoder_first"] = _decoder_result(data_dir, "numba")
    result["numba_decoder"] = _decoder_result(data_dir, "numba")
    batches, scan_secs = _scan_all(data_dir)
    result["header_scan"] = {"batches": batches, "seconds": round(scan_secs, 3),
                             "batches_per_s": round(batches / scan_secs) if scan_secs else None}
    if spark:
        result["spark"] = _spark(data_dir, master, "numba")
        secs = result["spark"]["second_ingest_s"]
        rows = result["numba_decoder"]["rows"]
        result["spark"]["rows_per_s"] = round(rows / secs) if secs else None
    return result
