"""The rows of a Parquet table as comparable values, read with pyarrow on the test's side.

Comparing two fixture-sized tables this way gives what Spark's `exceptAll` both ways gives
(the same rows, each as often), without two Spark jobs per table.
"""

from __future__ import annotations

import json
from pathlib import Path


def parquet_rows(path: Path) -> list[str]:
    """Every row of the table at `path` (a file, or the directory Spark wrote), each as JSON
    with sorted keys, in sorted order: two tables hold the same rows iff the lists are equal."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in table.to_pylist())
