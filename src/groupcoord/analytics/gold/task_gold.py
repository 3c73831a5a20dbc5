"""Gold tables of the commits built file by file, with no shuffle: ``partition_lag``,
``burrow_status``, ``lag_rollup``, ``commit_rate`` and ``rewinds``.

A group's commits all live in one ``__consumer_offsets`` partition (the coordinator
partition is a hash of the group id), and in batch runs each ``silver/offset_commits`` file
holds whole coordinator partitions (``direct_silver``). So every (group, topic, partition)
series is complete in one file, and one Spark task per file computes its lag rows (with the
owning member) and Burrow statuses (``keyed_gold``) and the roll-ups of the lag rows
(``keyed_rollups``) and writes them with pyarrow: the commits are never shuffled, sorted by
Spark, or handed to the JVM. The rows are those of the Spark path (``spark_gold``), which stays
for filtered and
incremental runs and for logs where this does not hold: a group seen in two files (a
coordinator partition count that changed), or ownership intervals that overlap (where the
Spark range join gives a row per match).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from groupcoord.analytics.gold import keyed_gold, keyed_rollups
from groupcoord.analytics.gold import spark_gold as gold_steps
from groupcoord.analytics.gold.burrow import BurrowConfig
from groupcoord.analytics.gold.lag import BURROW_SCHEMA, LAG_SCHEMA
from groupcoord.analytics.gold.spark_gold import StartWindow
from groupcoord.analytics.silver.direct_silver import TaskFile

COMMIT_COLUMNS = ["group_id", "topic", "partition", "record_ts_ms", "log_offset",
                  "committed_offset", "tombstone"]
END_COLUMNS = ["topic", "partition", "ts_ms", "end_offset", "is_control"]
PARTITION_LAG_SCHEMA = LAG_SCHEMA.append(pa.field("owner_member_id", pa.string()))
_SEP = "\x00"

# series key ("group\0topic\0partition") -> interval starts (sorted), ends, members
OwnerIndex = dict[str, tuple[np.ndarray, np.ndarray, list[str | None]]]


def _series_key(group: Any, topic: Any, partition: Any) -> str:
    return f"{group}{_SEP}{topic}{_SEP}{partition}"


def owner_index(intervals: Sequence[dict[str, Any]]) -> OwnerIndex | None:
    """Ownership intervals by series for the as-of lookup; None when two intervals of one
    series overlap. Intervals that cannot match (a null bound, empty) are left out, as the
    Spark join's conditions leave them out."""
    by: dict[str, list[tuple[int, int, str | None]]] = {}
    for r in intervals:
        lo, hi = r["from_ts_ms"], r["to_ts_ms"]
        if lo is None or hi is None or lo >= hi:
            continue
        by.setdefault(_series_key(r["group_id"], r["topic"], r["partition"]), []).append(
            (lo, hi, r["member_id"]))
    out: OwnerIndex = {}
    for key, ivs in by.items():
        ivs.sort(key=lambda iv: iv[0])
        if any(b[0] < a[1] for a, b in itertools.pairwise(ivs)):
            return None
        out[key] = (np.array([iv[0] for iv in ivs], dtype=np.int64),
                    np.array([iv[1] for iv in ivs], dtype=np.int64), [iv[2] for iv in ivs])
    return out


@dataclass(frozen=True)
class PackedOwners:
    """The ``OwnerIndex`` of some groups as a few flat arrays: what one task is sent. Each
    task unpickles only its own groups' intervals, in a handful of objects (an index of one
    numpy array pair per series, sent whole to every task, cost each task about a second per
    40 k series, so the gold stage grew with files x series)."""

    keys: list[str]
    bounds: np.ndarray  # key i's intervals are [bounds[i], bounds[i + 1])
    starts: np.ndarray
    ends: np.ndarray
    members: list[str | None]

    def unpack(self) -> OwnerIndex:
        b = self.bounds.tolist()
        return {key: (self.starts[lo:hi], self.ends[lo:hi], self.members[lo:hi])
                for key, lo, hi in zip(self.keys, b[:-1], b[1:], strict=True)}


def pack_by_file(owners: OwnerIndex, files: Sequence[TaskFile]) -> list[PackedOwners]:
    """For each file, the intervals of the series of its groups."""
    by_group: dict[str, list[str]] = {}
    for key in owners:
        by_group.setdefault(key.split(_SEP, 1)[0], []).append(key)
    out = []
    for f in files:
        keys = [k for g in sorted(f.groups) for k in by_group.get(g, [])]
        sizes = [len(owners[k][0]) for k in keys]
        bounds = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        empty = np.zeros(0, dtype=np.int64)
        out.append(PackedOwners(
            keys, bounds,
            np.concatenate([owners[k][0] for k in keys]) if keys else empty,
            np.concatenate([owners[k][1] for k in keys]) if keys else empty,
            [m for k in keys for m in owners[k][2]]))
    return out


def disjoint(files: Sequence[TaskFile]) -> bool:
    """No group has commits in two files."""
    seen: set[str] = set()
    for f in files:
        if seen & f.groups:
            return False
        seen |= f.groups
    return True


def with_owner(plag: pa.Table, owners: OwnerIndex) -> pa.Table:
    """``plag`` plus ``owner_member_id``: the member whose interval holds the row's time.
    The rows are looked up run by run of equal (group, topic, partition): ``partition_lag``
    writes each series' commit rows, then its grid rows, together, so there are few runs and
    no sort (any order gives the same answer, with more runs)."""
    n = plag.num_rows
    pick = np.full(n, -1, dtype=np.int64)
    members: list[str | None] = []
    if n and owners:
        bounds = keyed_gold.changes(plag, ["group_id", "topic", "partition"]).tolist()
        firsts = pa.array(bounds[:-1], type=pa.int64())
        keys = zip(*(plag.column(c).take(firsts).to_pylist()
                     for c in ("group_id", "topic", "partition")), strict=True)
        ts = plag.column("ts_ms").to_numpy()
        first_member: dict[str, int] = {}  # where a series' members start in ``members``
        for lo, hi, (group, topic, partition) in zip(bounds[:-1], bounds[1:], keys,
                                                     strict=True):
            key = _series_key(group, topic, partition)
            if group is None or topic is None or partition is None or key not in owners:
                continue
            starts, ends, who = owners[key]
            if key not in first_member:
                first_member[key] = len(members)
                members.extend(who)
            j = np.searchsorted(starts, ts[lo:hi], side="right") - 1
            hit = (j >= 0) & (ts[lo:hi] < ends[np.clip(j, 0, None)])
            pick[lo:hi][hit] = first_member[key] + j[hit]
    owner = pa.array(members, pa.string()).take(pa.array(pick, mask=pick < 0)) \
        if members else pa.nulls(n, pa.string())
    return plag.append_column(PARTITION_LAG_SCHEMA.field("owner_member_id"), owner)


def read_ends(source: str | list[str]) -> pa.Table:
    """The data batches' end offsets of a table directory, or of a list of its files."""
    import pyarrow.parquet as pq

    if isinstance(source, str):
        p = Path(source)
        if not p.exists() or not any(p.glob("*.parquet")):
            return pa.table({c: [] for c in END_COLUMNS[:-1]})
    elif not source:
        return pa.table({c: [] for c in END_COLUMNS[:-1]})
    t = pq.read_table(source, columns=END_COLUMNS)
    return t.filter(pc.invert(t.column("is_control"))).select(END_COLUMNS[:-1])


def _task(index: int, commits_file: str, ends_path: str, out: str, grid_ms: int,
          until_ms: int, ticks: list[int], cfg: BurrowConfig,
          packed: PackedOwners, windows: list[StartWindow]) -> dict[str, Any]:
    """One file's gold rows; returns which percentile tables are not exact (see
    ``keyed_rollups``) and the estimated classic rebalance starts of its groups."""
    import pyarrow.parquet as pq

    owners = packed.unpack()
    commits = pq.read_table(commits_file, columns=COMMIT_COLUMNS)
    ends = keyed_gold.end_offsets_by_partition(read_ends(ends_path))
    ordered = keyed_gold.in_series_order(commits)
    plag = with_owner(keyed_gold.partition_lag(commits, ends, grid_ms, until_ms, ordered),
                      owners)
    rollup, rollup_exact = keyed_rollups.lag_rollup(plag)
    rate, rate_exact = keyed_rollups.commit_rate(plag)
    tables = {"partition_lag": plag, "lag_rollup": rollup, "commit_rate": rate,
              "rewinds": keyed_rollups.rewinds(plag),
              "burrow_status": keyed_gold.burrow_timeline(commits, ends, ticks, cfg, ordered)}
    for name, table in tables.items():
        pq.write_table(table, f"{out}/{name}/part-{index:05d}.parquet")
    inexact = [name for name, ok in (("lag_rollup", rollup_exact),
                                     ("commit_rate", rate_exact)) if not ok]
    return {"inexact": inexact, "starts": keyed_gold.last_commits_in(commits, windows)}


def build(spark: Any, files: Sequence[TaskFile], ends_path: Path, out: Path, grid_ms: int,
          until_ms: int, ticks: list[int], cfg: BurrowConfig,
          owners: OwnerIndex, rebalances: list[dict[str, Any]]) -> tuple[dict[str, Any], set[str]]:
    """Write the ``TABLES`` under ``out/gold`` (replaced), one task per commit file, and
    fill the estimated starts of ``rebalances`` (``gold.estimate_classic_starts``); returns
    the tables read back by Spark, and the percentile tables that are not exact (to be
    rebuilt by Spark from ``partition_lag``)."""
    import pyarrow.parquet as pq

    gold = out / "gold"
    for name, schema in TABLES.items():
        shutil.rmtree(gold / name, ignore_errors=True)
        (gold / name).mkdir(parents=True)
        if not files:  # keep a schema for the readers
            pq.write_table(schema.empty_table(), gold / name / "part-00000.parquet")
    where, ends = str(gold), str(ends_path)
    windows = gold_steps.classic_start_windows(rebalances)
    # each task gets its own groups' owners and windows as its element, not in the closure
    # that every task unpickles
    work = [(i, f.path, packed, [w for w in windows if w[0] in f.groups])
            for i, (f, packed) in enumerate(zip(files, pack_by_file(owners, files),
                                                strict=True))]
    results = (spark.sparkContext.parallelize(work, max(1, len(work)))
               .map(lambda t: _task(t[0], t[1], ends, where, grid_ms, until_ms, ticks, cfg,
                                    t[2], t[3])).collect()) if work else []
    starts: dict[tuple[str, int], int] = {}
    for r in results:  # a group's commits are in one file: no key comes twice
        starts.update(r["starts"])
    gold_steps.fill_classic_starts(rebalances, starts)
    inexact = {name for r in results for name in r["inexact"]}
    return {name: spark.read.parquet(str(gold / name)) for name in TABLES}, inexact


TABLES = {"partition_lag": PARTITION_LAG_SCHEMA, "burrow_status": BURROW_SCHEMA,
          "lag_rollup": keyed_rollups.LAG_ROLLUP_SCHEMA,
          "commit_rate": keyed_rollups.COMMIT_RATE_SCHEMA,
          "rewinds": keyed_rollups.REWINDS_SCHEMA}
