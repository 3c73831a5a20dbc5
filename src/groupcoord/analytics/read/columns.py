"""Columnar (Arrow) output of the decoding layer: the rows the Spark source yields.

Three row kinds, one per ``kafkalog`` table:

- ``offset_commits``: decoded OffsetCommit records (types 0/1) of one segment range, aborted
  and still-open transactional commits dropped (analytics.md 3.5);
- ``coord_records``: the lossless bronze layer, raw key/value bytes with batch context;
- ``end_offsets``: one row per data batch from headers only (end offset over time).

Their schemas are in ``table_schemas``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa

from groupcoord.analytics.read.reader import RawRecord, decode_offset_commit, iter_raw_records
from groupcoord.analytics.read.segments import TxnResolver, scan_batches
from groupcoord.analytics.read.table_schemas import COORD_RECORDS, END_OFFSETS, OFFSET_COMMITS
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC, SHARE_STATE_TOPIC

CHUNK_ROWS = 65_536


def _batched(schema: pa.Schema, rows: Iterable[tuple[object, ...]]) -> Iterator[pa.RecordBatch]:
    """Row tuples (in ``schema``'s column order) as Arrow batches of ``CHUNK_ROWS`` rows."""
    cols: list[list[object]] = [[] for _ in schema]
    appenders = [c.append for c in cols]
    for row in rows:
        for app, v in zip(appenders, row, strict=True):
            app(v)
        if len(cols[0]) >= CHUNK_ROWS:
            yield _batch(schema, cols)
            for c in cols:
                c.clear()
    if cols[0]:
        yield _batch(schema, cols)


def _batch(schema: pa.Schema, cols: list[list[object]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)], schema=schema)


def numba_available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def offset_commit_batches(
    path: str | Path, start: int, end: int | None, coord_partition: int, txns: TxnResolver,
    decoder: str = "auto",
) -> Iterator[pa.RecordBatch]:
    """Offset commits of ``[start, end)`` of one ``__consumer_offsets`` segment.

    ``decoder``: ``numba`` (compiled, ``analytics.fastpath``), ``python`` (this module, the
    reference) or ``auto`` (numba when installed).
    """
    if decoder == "numba" or (decoder == "auto" and numba_available()):
        from groupcoord.analytics.read.fastpath import decode_range

        whole = decode_range(path, start, end, coord_partition, txns)
        for off in range(0, whole.num_rows, CHUNK_ROWS):
            yield whole.slice(off, CHUNK_ROWS)
        return
    yield from _python_offset_commits(path, start, end, coord_partition, txns)


def _python_offset_commits(
    path: str | Path, start: int, end: int | None, coord_partition: int, txns: TxnResolver
) -> Iterator[pa.RecordBatch]:
    def rows() -> Iterator[tuple[object, ...]]:
        for raw in iter_raw_records(path, start, end, txns):
            if raw.key is None or raw.txn_outcome in ("aborted", "open"):
                continue
            row = decode_offset_commit(raw.key, raw.value)
            if row is not None:
                yield (coord_partition, raw.log_offset, raw.timestamp, *row[:4],
                       row.committed_offset, row.leader_epoch, row.metadata, row.commit_ts,
                       row.expire_ts, row.value_version, raw.value is None)

    return _batched(OFFSET_COMMITS, rows())


FRAMED_TOPICS = frozenset({OFFSETS_TOPIC, SHARE_STATE_TOPIC})


def _int16(data: bytes | None) -> int | None:
    """The int16 type/version prefix of coordinator-framed keys and values."""
    return int.from_bytes(data[:2], "big", signed=True) if data and len(data) >= 2 else None


def coord_record_batches(
    path: str | Path, start: int, end: int | None, topic: str, coord_partition: int,
    txns: TxnResolver, exclude_types: frozenset[int] = frozenset(),
) -> Iterator[pa.RecordBatch]:
    """Bronze rows (raw key/value) of one segment range of an internal topic."""
    # exclusions name __consumer_offsets types; share-state types reuse the numbers 0 and 1
    excluded = exclude_types if topic == OFFSETS_TOPIC else frozenset()
    return _bronze_batches(_raw_records(path, start, end, txns, excluded), topic,
                           coord_partition, excluded)


def _bronze_batches(raws: Iterable[RawRecord], topic: str, coord_partition: int,
                    excluded: frozenset[int]) -> Iterator[pa.RecordBatch]:
    framed = topic in FRAMED_TOPICS

    def rows() -> Iterator[tuple[object, ...]]:
        for raw in raws:
            rtype = _int16(raw.key) if framed else None
            if rtype not in excluded:
                yield (topic, coord_partition, raw.log_offset, raw.batch_base_offset,
                       raw.timestamp, raw.producer_id, raw.is_transactional, raw.txn_outcome,
                       rtype, raw.key, raw.value, _int16(raw.value) if framed else None)

    return _batched(COORD_RECORDS, rows())


COMMIT_TYPES = frozenset({0, 1})


def commits_and_bronze(
    path: str | Path, start: int, end: int | None, coord_partition: int, txns: TxnResolver,
    decoder: str = "auto",
) -> tuple[list[pa.RecordBatch], list[pa.RecordBatch]]:
    """Both tables of one ``__consumer_offsets`` segment range: ``offset_commit_batches`` and
    ``coord_record_batches`` with the commit types excluded. With numba the range is read and
    walked once: the commit kernel also names the batches holding other records, and only
    those (membership records, a small minority) are decoded record by record."""
    if decoder == "numba" or (decoder == "auto" and numba_available()):
        from groupcoord.analytics.read.fastpath import decode_range_and_others

        commits, ranges = decode_range_and_others(path, start, end, coord_partition, txns)
        raws = (raw for lo, hi in ranges for raw in iter_raw_records(path, lo, hi, txns))
        return [commits], list(_bronze_batches(raws, OFFSETS_TOPIC, coord_partition,
                                               COMMIT_TYPES))
    return (list(_python_offset_commits(path, start, end, coord_partition, txns)),
            list(coord_record_batches(path, start, end, OFFSETS_TOPIC, coord_partition, txns,
                                      COMMIT_TYPES)))


def _raw_records(path: str | Path, start: int, end: int | None, txns: TxnResolver,
                 excluded: frozenset[int]) -> Iterator[RawRecord]:
    """``iter_raw_records``, but with exclusions and numba at hand only the batches holding
    a wanted record are read record by record."""
    if not excluded or not numba_available():
        yield from iter_raw_records(path, start, end, txns)
        return
    from groupcoord.analytics.read.fastpath import ranges_without_types

    for lo, hi in ranges_without_types(path, start, end, excluded):
        yield from iter_raw_records(path, lo, hi, txns)


def end_offset_batches(
    path: str | Path, start: int, end: int | None, topic: str, partition: int
) -> Iterator[pa.RecordBatch]:
    """One row per batch of a data segment, from its header alone (never decompressed)."""
    return _batched(END_OFFSETS, (
        (topic, partition, h.max_timestamp, h.base_offset, h.last_offset + 1, h.records_count,
         h.size, h.is_control) for _, h in scan_batches(path, start, end)))
