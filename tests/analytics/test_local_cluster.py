"""The same ``analyze run`` on a cluster with separate executor JVMs gives the same tables.

``local-cluster[2,1,2048]`` is Spark's standalone cluster in one machine: a master, a worker
and two executor JVMs (one core, 2 GB each), with the driver in this test's subprocess. The
driver runs no task there, so every segment byte is read by a ``kafkalog`` reader in an
executor's Python worker; the driver only lists the log dir and reads indexes and
``partition.metadata`` to plan. The run reports the executors that took part, and every
Parquet table it writes must equal the one of a ``local[2]`` run over the same fixture.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.parquet_rows import parquet_rows

from groupcoord.analytics.fixture.generate import generate
from groupcoord.analytics.fixture.spec import FixtureSpec

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SRC = Path(__file__).resolve().parents[2] / "src"

# A subprocess: one SparkContext per process, and the session fixture of the other tests
# is a local[2] one.
# Executors are launched by the cluster's worker, not forked from this process: they get the
# tested source tree through spark.executorEnv, as a cluster would through --py-files.
RUN = """
import json, os, sys
from groupcoord.analytics.driver.pipeline import RunConfig
from groupcoord.analytics.driver.run import run
from groupcoord.analytics.driver.session import build_session

master, data, out = sys.argv[1:4]
spark = build_session(master, app_name="local-cluster-test", shuffle_partitions=2,
                      extra={"spark.executorEnv.PYTHONPATH": os.environ.get("PYTHONPATH", "")})
run(spark, RunConfig(data, out, plots=False), lambda _line: None)
infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
print(json.dumps({"master": spark.sparkContext.master,
                  "executors": sorted(f"{i.host()}:{i.port()}" for i in infos)}))
spark.stop()
"""
# Tables whose row order is not defined; compared as sorted rows.
TABLES = ["silver/offset_commits", "silver/end_offsets", "bronze/coord_records",
          "silver/classic_generations", "silver/group_events", "silver/ownership",
          "gold/partition_lag", "gold/burrow_status", "gold/group_burrow_status",
          "gold/lag_rollup", "gold/commit_rate", "gold/rewinds", "gold/rebalances",
          "gold/assignment_balance", "gold/stuck_consumers", "gold/share_lag"]


def _run(master: str, data: Path, out: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", RUN, master, str(data), str(out)],
                          capture_output=True, text=True, timeout=600, check=False, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_local_cluster_tables_equal_local(tmp_path: Path) -> None:
    data = tmp_path / "data"
    generate(data, FixtureSpec(seconds=120, partitions=2))
    local = _run("local[2]", data, tmp_path / "local")
    cluster = _run("local-cluster[2,1,2048]", data, tmp_path / "cluster")
    # the driver's block manager is listed too: local mode has only that one
    assert len(local["executors"]) == 1 and cluster["master"] == "local-cluster[2,1,2048]"
    assert len(cluster["executors"]) == 3, cluster
    for table in TABLES:
        assert parquet_rows(tmp_path / "cluster" / table) == parquet_rows(tmp_path / "local" / table), \
            table
