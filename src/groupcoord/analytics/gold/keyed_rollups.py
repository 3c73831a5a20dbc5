"""``lag_rollup``, ``commit_rate`` and ``rewinds`` over ``partition_lag`` rows of whole groups.

The rows of ``gold.lag_rollup`` / ``gold.commit_rate`` / ``gold.rewinds`` computed with
numpy over an Arrow table that holds every row of its groups (one ``task_gold`` file), so
they need no shuffle. Every grouping key starts with the group id, so no output row needs
two files.

``percentile_approx`` in Spark keeps every value while a group has fewer than
1 / (2 * relative error) = 5,000 of them (default accuracy 10,000) and then returns the
value of rank ``ceil(p * n)``: that is what is computed here, and ``exact`` says whether
every group was under that size (else the caller keeps Spark's approximation).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from groupcoord.analytics.gold.keyed_gold import changes, key_codes
from groupcoord.analytics.read.table_schemas import arrow_schema

EXACT_PERCENTILE_VALUES = 5_000
BUCKET_S = 60

LAG_ROLLUP_SCHEMA = arrow_schema(
    "group_id STRING, topic STRING, bucket_ms BIGINT, sum_lag BIGINT, max_lag BIGINT, "
    "p95_lag BIGINT, max_lag_seconds DOUBLE, partitions BIGINT")
COMMIT_RATE_SCHEMA = arrow_schema(
    "group_id STRING, member_id STRING, topic STRING, bucket_ms BIGINT, commits BIGINT, "
    "partitions_committed BIGINT, median_commit_interval_s DOUBLE, empty_commits BIGINT")
REWINDS_SCHEMA = arrow_schema(
    "group_id STRING, topic STRING, partition INT, ts_ms BIGINT, from_offset BIGINT, "
    "to_offset BIGINT, recovered_ts_ms BIGINT, rewound_by BIGINT, recovered BOOLEAN")


def _bucket(ts: np.ndarray, bucket_s: int) -> np.ndarray:
    # as Spark's ``(ts_ms / 1000 / bucket_s).cast("long") * bucket_s * 1000`` (double maths)
    return (ts / 1000 / bucket_s).astype(np.int64) * bucket_s * 1000


def _ranked(values: np.ndarray, lo: np.ndarray, n: np.ndarray, p: float) -> np.ndarray:
    """Per run ``[lo, lo + n)`` of ascending ``values``: the value of rank ceil(p * n)."""
    rank = np.array([max(1, math.ceil(p * k)) for k in n.tolist()], dtype=np.int64)
    return values[lo + rank - 1]


def lag_rollup(plag: pa.Table, bucket_s: int = BUCKET_S) -> tuple[pa.Table, bool]:
    grid = plag.filter(pc.equal(plag.column("kind"), "grid"))
    if not grid.num_rows:
        return LAG_ROLLUP_SCHEMA.empty_table(), True
    grid = grid.append_column("bucket_ms", pa.array(_bucket(
        grid.column("ts_ms").to_numpy(), bucket_s)))
    keys = ["group_id", "topic", "bucket_ms"]
    per_partition = grid.group_by([*keys, "partition"], use_threads=False).aggregate(
        [("lag_records", "max"), ("lag_seconds", "max")])
    t = per_partition.take(pc.sort_indices(per_partition, [
        *[(k, "ascending") for k in keys], ("lag_records_max", "ascending")]))
    bounds = changes(t, keys)
    lo, n = bounds[:-1], np.diff(bounds)
    lag = t.column("lag_records_max").to_numpy()
    secs = t.column("lag_seconds_max").to_numpy()
    first = pa.array(lo, type=pa.int64())
    out = pa.Table.from_arrays([
        *[t.column(k).take(first) for k in keys],
        pa.array(np.add.reduceat(lag, lo)), pa.array(lag[lo + n - 1]),
        pa.array(_ranked(lag, lo, n, 0.95)), pa.array(np.maximum.reduceat(secs, lo)),
        pa.array(n)], schema=LAG_ROLLUP_SCHEMA)
    return out, bool(n.max() < EXACT_PERCENTILE_VALUES)


def _runs(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of the runs of equal ``keys`` (already in run order)."""
    n = len(keys[0])
    change = np.zeros(n, dtype=bool)
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(change)
    lo = np.concatenate([[0], starts]).astype(np.int64)
    return lo, np.diff(np.concatenate([lo, [n]]))


def _combined(keys: list[np.ndarray]) -> np.ndarray | None:
    """One int64 per row ordered as the rows' ``keys`` tuples (lexicographically), or None
    when the key ranges do not fit in 63 bits. One sort key instead of several: each key of
    ``np.lexsort`` is a sorting pass of its own."""
    out = np.zeros(len(keys[0]), dtype=np.int64)
    span = 1
    for k in keys:
        lo = int(k.min()) if len(k) else 0
        width = (int(k.max()) - lo + 1) if len(k) else 1
        span *= width
        if span >= 1 << 62:
            return None
        out = out * width + (k - lo)
    return out


def _rows_of(plag: pa.Table, kind: str) -> np.ndarray:
    return np.flatnonzero(pc.equal(plag.column("kind"), kind).to_numpy(zero_copy_only=False))


def commit_rate(plag: pa.Table, bucket_s: int = BUCKET_S) -> tuple[pa.Table, bool]:
    rows = _rows_of(plag, "commit")
    if not len(rows):
        return COMMIT_RATE_SCHEMA.empty_table(), True
    group, member, topic = (k[rows] for k in key_codes(
        plag, ["group_id", "owner_member_id", "topic"]))
    ts = plag.column("ts_ms").to_numpy()[rows]
    bucket = _bucket(ts, bucket_s)
    prev_ts = plag.column("prev_commit_ts_ms").take(pa.array(rows))
    valid = pc.is_valid(prev_ts).to_numpy(zero_copy_only=False)
    interval = (ts - pc.fill_null(prev_ts, 0).to_numpy()) / 1000.0
    # per run, the known intervals ascending, then the unknown ones
    run_key = _combined([group, member, topic, bucket])
    if run_key is None:
        order = np.lexsort((interval, ~valid, bucket, topic, member, group))
        keys = [group[order], member[order], topic[order], bucket[order]]
    else:
        order = np.lexsort((interval, ~valid, run_key))
        keys = [run_key[order]]
    lo, n = _runs(keys)
    run_of_row = np.repeat(np.arange(len(lo)), n)
    parts = plag.column("partition").to_numpy()[rows][order].astype(np.int64)
    pair_key = _combined([run_of_row, parts])
    if pair_key is None:
        pairs = np.lexsort((parts, run_of_row))
        runs, parts = run_of_row[pairs], parts[pairs]
    else:  # the runs are in order already: sorting the pairs' codes sorts the parts
        pair_key.sort()
        runs = pair_key // (int(parts.max()) - int(parts.min()) + 1)
        parts = pair_key
    new_pair = np.ones(len(runs), dtype=bool)
    new_pair[1:] = (runs[1:] != runs[:-1]) | (parts[1:] != parts[:-1])
    distinct = np.bincount(runs[new_pair], minlength=len(lo))
    known = np.add.reduceat(valid[order].astype(np.int64), lo)
    median = np.where(known > 0, _ranked(interval[order], lo, np.maximum(known, 1), 0.5), 0.0)
    committed = plag.column("committed_offset").to_numpy()[rows]
    prev = plag.column("prev_committed_offset").take(pa.array(rows))
    empty = (valid & (committed == pc.fill_null(prev, -2).to_numpy()))[order]
    # ``valid`` is the previous commit's presence: both columns are null together
    first = pa.array(rows[order[lo]], type=pa.int64())
    out = pa.Table.from_arrays([
        plag.column("group_id").take(first), plag.column("owner_member_id").take(first),
        plag.column("topic").take(first), pa.array(bucket[order][lo]), pa.array(n),
        pa.array(distinct), pa.array(median, mask=known == 0),
        pa.array(np.add.reduceat(empty.astype(np.int64), lo))], schema=COMMIT_RATE_SCHEMA)
    return out, bool(known.max() < EXACT_PERCENTILE_VALUES)


def rewinds(plag: pa.Table) -> pa.Table:
    """Backwards commits and the first later commit of the series at or past the
    pre-rewind offset (commit rows come first in ``plag``, grouped by series, by time)."""
    rows = _rows_of(plag, "commit")
    prev = plag.column("prev_committed_offset").take(pa.array(rows, type=pa.int64()))
    offsets = plag.column("committed_offset").to_numpy()[rows]
    before = pc.fill_null(prev, np.iinfo(np.int64).min).to_numpy()
    cand = np.flatnonzero(offsets < before)
    if not len(cand):
        return REWINDS_SCHEMA.empty_table()
    lo, _ = _runs([k[rows] for k in key_codes(plag, ["group_id", "topic", "partition"])])
    bounds = np.concatenate([lo, [len(rows)]])
    series_end = bounds[np.searchsorted(bounds, cand, side="right")]
    ts = plag.column("ts_ms").to_numpy()[rows]
    from_offset = before[cand]
    recovered = np.full(len(cand), -1, dtype=np.int64)
    for i, (row, hi) in enumerate(zip(cand.tolist(), series_end.tolist(), strict=True)):
        later = row + int(np.searchsorted(ts[row:hi], ts[row], side="right"))
        hits = np.flatnonzero(offsets[later:hi] >= from_offset[i])
        if len(hits):
            recovered[i] = ts[later + hits[0]]
    at = pa.array(rows[cand], type=pa.int64())
    to_offset = offsets[cand]
    return pa.Table.from_arrays([
        plag.column("group_id").take(at), plag.column("topic").take(at),
        plag.column("partition").take(at), pa.array(ts[cand]), pa.array(from_offset),
        pa.array(to_offset), pa.array(recovered, mask=recovered < 0),
        pa.array(from_offset - to_offset), pa.array(recovered >= 0)], schema=REWINDS_SCHEMA)
