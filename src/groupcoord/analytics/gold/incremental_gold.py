"""The gold tables of the commits kept up to date by ``analyze run --incremental``.

``partition_lag``, ``burrow_status``, ``lag_rollup``, ``commit_rate`` and ``rewinds`` are
the rows of ``task_gold`` (the same ``keyed_gold``/``keyed_rollups`` functions), but a run
computes only the rows from the previous run's *cut* on, from the silver files it has not
seen plus a small state of carried commits, instead of rebuilding them from all of silver.

The cut is the newest multiple of the grid, the Burrow evaluation period and the roll-up
minute at or before the end of the data. Rows before it are settled: with new data only
later than the cut, no end offset, commit or ownership interval they depend on can change,
so they are appended once (``part-settled-NNNNN.parquet``) and never rewritten. Rows at or
after it (the grid and Burrow rows of the open period, the end-of-data evaluation, the
roll-up buckets still open) and the rewinds not recovered yet are provisional
(``part-tail.parquet``): the next run deletes them and computes them again.

The state (``OUT/gold_state``) carries, per (group, topic, partition), the commits needed to
continue: every commit from the cut on, Burrow's window of the newest ``intervals`` commits
before it, the last live commit (carried onto the grid, and the predecessor of the next
commit), and everything since the predecessor of a rewind not recovered yet; plus which
silver files were read, the cut, and a fingerprint of the ownership intervals before it.

When a run finds data older than the cut (a late end offset, commit or membership record),
or Burrow's ``--min-distance`` (whose window folds the whole history), it starts over from
all of silver, which gives the same rows as a batch run.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from groupcoord.analytics.gold import keyed_gold, keyed_rollups, task_gold
from groupcoord.analytics.gold.burrow import BurrowConfig
from groupcoord.analytics.gold.task_gold import COMMIT_COLUMNS, TABLES, OwnerIndex
from groupcoord.analytics.read.table_schemas import arrow_schema

STATE_DIR = "gold_state"
TAIL = "part-tail.parquet"
# the column that places each table's rows in time
TIME_COLUMNS = {"partition_lag": "ts_ms", "burrow_status": "eval_ts_ms",
                "lag_rollup": "bucket_ms", "commit_rate": "bucket_ms", "rewinds": "ts_ms"}
REWIND_KEY = ["group_id", "topic", "partition", "ts_ms"]
COMMIT_SCHEMA = arrow_schema(
    "group_id STRING, topic STRING, partition INT, record_ts_ms BIGINT, log_offset BIGINT, "
    "committed_offset BIGINT, tombstone BOOLEAN")


@dataclass
class GoldState:
    cut_ms: int | None = None
    commit_files: list[str] = field(default_factory=list)
    end_files: list[str] = field(default_factory=list)
    owners_before_cut: str = ""
    tail_rewinds: list[list[Any]] = field(default_factory=list)
    settled_files: int = 0
    spark_tables: list[str] = field(default_factory=list)  # inexact percentiles: Spark's


def cut_period_ms(grid_ms: int, eval_every_ms: int) -> int:
    return math.lcm(grid_ms, eval_every_ms, keyed_rollups.BUCKET_S * 1000)


def applies(cfg: BurrowConfig) -> bool:
    return cfg.min_distance_ms == 0


def _load(path: Path) -> tuple[GoldState, pa.Table]:
    meta = path / "state.json"
    if not meta.exists():
        return GoldState(), COMMIT_SCHEMA.empty_table()
    st = GoldState(**json.loads(meta.read_text()))
    return st, pq.read_table(path / "commits.parquet", schema=COMMIT_SCHEMA)


def _save(path: Path, st: GoldState, carried: pa.Table) -> None:
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(carried, path / "commits.parquet.new")
    (path / "commits.parquet.new").replace(path / "commits.parquet")
    (path / "state.json.new").write_text(json.dumps(asdict(st)))
    (path / "state.json.new").replace(path / "state.json")


def forget(out: Path) -> None:
    """Drop the state: the gold tables were written some other way."""
    shutil.rmtree(out / STATE_DIR, ignore_errors=True)


def _owners_fingerprint(owners: OwnerIndex, cut_ms: int | None) -> str:
    """The ownership intervals as far as rows before ``cut_ms`` can see them."""
    if cut_ms is None:
        return ""
    h = hashlib.sha256()
    for key in sorted(owners):
        starts, ends, who = owners[key]
        for s, e, m in zip(starts.tolist(), ends.tolist(), who, strict=True):
            if s < cut_ms:
                h.update(f"{key}|{s}|{min(e, cut_ms)}|{m}\n".encode())
    return h.hexdigest()


def _min_ts(files: list[str], column: str, control: bool = False) -> int | None:
    if not files:
        return None
    t = pq.read_table(files, columns=[column, "is_control"] if control else [column])
    if control:
        t = t.filter(pc.invert(t.column("is_control")))
    return pc.min(t.column(column)).as_py()


def _read_commits(files: list[str]) -> pa.Table:
    if not files:
        return COMMIT_SCHEMA.empty_table()
    return pq.read_table(files, columns=COMMIT_COLUMNS).cast(COMMIT_SCHEMA)


def _late(st: GoldState, new_commits: list[str], new_ends: list[str],
          owners: OwnerIndex) -> bool:
    """Does new data reach back before the cut (so settled rows would change)?"""
    cut = st.cut_ms
    if cut is None:  # nothing settled yet
        return False
    return any(t is not None and t < cut for t in (
        _min_ts(new_commits, "record_ts_ms"), _min_ts(new_ends, "ts_ms", control=True))) \
        or _owners_fingerprint(owners, cut) != st.owners_before_cut


def _since(table: pa.Table, column: str, cut_ms: int | None) -> pa.Table:
    if cut_ms is None:
        return table
    return table.filter(pc.greater_equal(table.column(column), cut_ms))


def _rewinds(plag_all: pa.Table, cut_ms: int | None, tail_keys: set[tuple[Any, ...]]) -> pa.Table:
    """Rewinds from the cut on, and the earlier ones that were provisional (not recovered)."""
    rew = keyed_rollups.rewinds(plag_all)
    if cut_ms is None:
        return rew
    keys = zip(*(rew.column(c).to_pylist() for c in REWIND_KEY), strict=True)
    keep = [ts >= cut_ms or key in tail_keys
            for key, ts in zip(keys, rew.column("ts_ms").to_pylist(), strict=True)]
    return rew.filter(pa.array(keep, pa.bool_()))


def _provisional(name: str, table: pa.Table, cut_ms: int) -> np.ndarray:
    late = pc.greater_equal(table.column(TIME_COLUMNS[name]), cut_ms)
    if name == "rewinds":
        late = pc.or_(late, pc.invert(table.column("recovered")))
    return pc.fill_null(late, True).to_numpy(zero_copy_only=False)


def _carried(commits: pa.Table, cut_ms: int, intervals: int, rewinds_open: pa.Table) -> pa.Table:
    """The commits the next run needs (module doc), per series, in (time, log offset) order."""
    if not commits.num_rows:
        return COMMIT_SCHEMA.empty_table()
    keys = keyed_gold.key_codes(commits, ["group_id", "topic", "partition"])
    ts = commits.column("record_ts_ms").to_numpy()
    log_offset = commits.column("log_offset").to_numpy()
    order = np.lexsort((log_offset, ts, *reversed(keys)))
    ts = ts[order]
    live = ~pc.fill_null(commits.column("tombstone"), True).to_numpy(
        zero_copy_only=False)[order]
    change = np.zeros(len(order), dtype=bool)
    for k in keys:
        change[1:] |= k[order][1:] != k[order][:-1]
    bounds = np.concatenate([[0], np.flatnonzero(change), [len(order)]])
    open_at: dict[tuple[Any, ...], int] = {}
    for g, t, p, r in zip(*(rewinds_open.column(c).to_pylist() for c in REWIND_KEY),
                          strict=True):
        open_at[(g, t, p)] = min(open_at.get((g, t, p), r), r)
    group, topic, part = (commits.column(c).to_pylist() for c in ("group_id", "topic",
                                                                  "partition"))
    keep = np.zeros(len(order), dtype=bool)
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        before = lo + int(np.searchsorted(ts[lo:hi], cut_ms, side="left"))
        start = max(lo, before - intervals)
        first = int(order[lo])
        rewound = open_at.get((group[first], topic[first], part[first]))
        if rewound is not None:
            start = min(start, lo + int(np.searchsorted(ts[lo:hi], rewound, side="left")))
        lives = np.flatnonzero(live[lo:start])  # the last live commit before ``start``
        if len(lives):
            start = lo + int(lives[-1])
        keep[start:hi] = True
    return commits.take(pa.array(order[keep], type=pa.int64()))


def _committed_files(spark: Any, path: Path) -> list[str]:
    """The Parquet files of a table the streaming sink committed (``_spark_metadata``)."""
    if not path.exists():
        return []
    return sorted(spark.read.parquet(str(path)).inputFiles())


def _local(files: list[str]) -> list[str]:
    from urllib.parse import unquote, urlparse

    return [unquote(urlparse(f).path) if f.startswith("file:") else f for f in files]


def update(spark: Any, out: Path, commits_path: Path, ends_path: Path, grid_ms: int,
           eval_every_ms: int, until_ms: int, ticks: list[int], cfg: BurrowConfig,
           owners: OwnerIndex) -> tuple[dict[str, Any], set[str]]:
    """Bring ``out/gold``'s commit tables up to date; returns them read back by Spark and
    the tables whose percentiles are not exact here (rebuilt by Spark from
    ``partition_lag`` each run, as in ``task_gold.build``)."""
    state_path, gold = out / STATE_DIR, out / "gold"
    st, carried = _load(state_path)
    commit_files = _local(_committed_files(spark, commits_path))
    end_files = _local(_committed_files(spark, ends_path))
    new_commits = [f for f in commit_files if f not in set(st.commit_files)]
    new_ends = [f for f in end_files if f not in set(st.end_files)]
    if st.cut_ms is None or _late(st, new_commits, new_ends, owners) \
            or not all((gold / n).exists() for n in TABLES):
        # from scratch: whatever else wrote the tables (a batch run, Spark) goes first
        st, carried, new_commits = GoldState(), COMMIT_SCHEMA.empty_table(), commit_files
        for name in TABLES:
            shutil.rmtree(gold / name, ignore_errors=True)
    commits = pa.concat_tables([carried, _read_commits(new_commits)])
    ends = keyed_gold.end_offsets_by_partition(task_gold.read_ends(end_files))
    cut = st.cut_ms
    plag_all = task_gold.with_owner(keyed_gold.partition_lag(commits, ends, grid_ms, until_ms),
                                    owners)
    plag = _since(plag_all, "ts_ms", cut)
    rollup, rollup_exact = keyed_rollups.lag_rollup(plag)
    rate, rate_exact = keyed_rollups.commit_rate(plag)
    tail_keys = {tuple(k) for k in st.tail_rewinds}
    tables = {"partition_lag": plag, "lag_rollup": rollup, "commit_rate": rate,
              "rewinds": _rewinds(plag_all, cut, tail_keys),
              "burrow_status": keyed_gold.burrow_timeline(
                  commits, ends, [t for t in ticks if cut is None or t >= cut], cfg)}
    spark_tables = set(st.spark_tables) | {
        name for name, ok in (("lag_rollup", rollup_exact), ("commit_rate", rate_exact))
        if not ok}
    new_cut = until_ms // cut_period_ms(grid_ms, eval_every_ms) * cut_period_ms(
        grid_ms, eval_every_ms)
    if cut is not None:
        new_cut = max(new_cut, cut)
    seq = st.settled_files
    for name, table in tables.items():
        where = gold / name
        where.mkdir(parents=True, exist_ok=True)
        (where / TAIL).unlink(missing_ok=True)
        if name in spark_tables:
            continue
        tail = _provisional(name, table, new_cut)
        if (~tail).any():
            pq.write_table(table.filter(pa.array(~tail)), where / f"part-settled-{seq:05d}.parquet")
        # always a tail file, so the table has a schema even with no rows yet
        pq.write_table(table.filter(pa.array(tail)), where / TAIL)
    tail_rewinds = tables["rewinds"].filter(pa.array(_provisional(
        "rewinds", tables["rewinds"], new_cut)))
    _save(state_path, GoldState(
        cut_ms=new_cut, commit_files=commit_files, end_files=end_files,
        owners_before_cut=_owners_fingerprint(owners, new_cut),
        tail_rewinds=[list(k) for k in zip(*(tail_rewinds.column(c).to_pylist()
                                             for c in REWIND_KEY), strict=True)],
        settled_files=seq + 1, spark_tables=sorted(spark_tables)),
        _carried(commits, new_cut, cfg.intervals, tail_rewinds.filter(
            pc.invert(tail_rewinds.column("recovered")))))
    return {name: spark.read.parquet(str(gold / name)) for name in TABLES}, spark_tables
