"""numba-compiled columnar decoder for offset commits (the ``offset_commits`` hot path).

Same output as ``columns.offset_commit_batches`` (the pure-Python reference it is tested
against), 10-20x faster (analytics.md 2.1). Python plans the batches from their headers
(skipping control batches and aborted or open transactions, decompressing compressed ones
into a side buffer); one compiled kernel then walks every record of the kept batches and fills
preallocated numpy columns. Strings stay (start, length) pairs into the byte buffer until one
vectorised gather builds each Arrow string column, so no Python object is made per record.
Rows whose key is not an offset commit (types other than 0/1) are dropped by a mask.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numba
import numpy as np
import pyarrow as pa

from groupcoord.analytics.read.header_scan import be_i16, be_i32, be_i64, scan_headers_array
from groupcoord.analytics.read.segments import TxnResolver, read_range
from groupcoord.analytics.read.table_schemas import OFFSET_COMMITS
from groupcoord.logformat.batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER_SIZE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from groupcoord.logformat.compression import decompress


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _varint(buf: np.ndarray, pos: int, zigzag: bool = True) -> tuple[Any, int]:
    """A varlong (``wire.primitives.read_varlong``), or with ``zigzag`` false an unsigned
    varint (``read_uvarint``, the lengths of flexible versions)."""
    result: Any = 0
    shift = 0
    while True:
        b = np.int64(buf[pos])
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    if not zigzag:
        return result, pos
    # result is an int64: mask the arithmetic shift into a logical one for 10-byte varlongs
    return ((result >> 1) & 0x7FFFFFFFFFFFFFFF) ^ -(result & 1), pos


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _value(buf: np.ndarray, p: int, out_i: np.ndarray, out_s: np.ndarray, row: int) -> None:
    """Decode an OffsetCommitValue at ``p``: cols version, offset, epoch, commit, expire."""
    version = be_i16(buf, p)
    out_i[row, 0] = version
    out_i[row, 1] = be_i64(buf, p + 2)
    p += 10
    out_i[row, 2] = -1
    out_i[row, 4] = -1
    if version >= 3:
        out_i[row, 2] = be_i32(buf, p)
        p += 4
    if version >= 4:  # compact string: unsigned varint length + 1
        n, p = _varint(buf, p, False)
        n -= 1
    else:
        n = be_i16(buf, p)
        p += 2
    out_s[row, 4] = p
    out_s[row, 5] = n
    p += n
    out_i[row, 3] = be_i64(buf, p)
    if version == 1:
        out_i[row, 4] = be_i64(buf, p + 8)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _record_head(buf: np.ndarray, pos: int) -> tuple[Any, Any, Any, Any, Any]:
    """A record's framing at ``pos``: (end position, timestamp delta, offset delta, key
    length, key position); the record attributes byte is skipped."""
    length, pos = _varint(buf, pos)
    end = pos + length
    ts_delta, pos = _varint(buf, pos + 1)
    off_delta, pos = _varint(buf, pos)
    klen, pos = _varint(buf, pos)
    return end, ts_delta, off_delta, klen, pos


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _decode(buf: np.ndarray, starts: np.ndarray, counts: np.ndarray, bases: np.ndarray,
            base_ts: np.ndarray, append: np.ndarray, out_i: np.ndarray, out_s: np.ndarray,
            meta: np.ndarray) -> int:
    """Fill one row per record; meta cols: log offset, ts, type, partition, tombstone."""
    row = 0
    for b in range(len(starts)):
        pos = starts[b]
        for _ in range(counts[b]):
            end, ts_delta, off_delta, klen, kpos = _record_head(buf, pos)
            vlen, pos = _varint(buf, kpos + max(klen, 0))
            meta[row, 0] = bases[b] + off_delta
            meta[row, 1] = base_ts[b] if append[b] else base_ts[b] + ts_delta
            meta[row, 2] = be_i16(buf, kpos) if klen >= 2 else -1
            if klen >= 2 and (meta[row, 2] == 0 or meta[row, 2] == 1):
                g = be_i16(buf, kpos + 2)
                out_s[row, 0], out_s[row, 1] = kpos + 4, g
                t = be_i16(buf, kpos + 4 + g)
                out_s[row, 2], out_s[row, 3] = kpos + 6 + g, t
                meta[row, 3] = be_i32(buf, kpos + 6 + g + t)
                meta[row, 4] = 1 if vlen < 0 else 0
                if vlen >= 0:
                    _value(buf, pos, out_i, out_s, row)
            pos = end
            row += 1
    return row


def _plan(buf: bytes, txns: TxnResolver) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Kept batches as (data buffer, per-batch [records start, count, base offset, base or
    max timestamp, log-append-time flag]); compressed records go to the buffer's tail. Also
    the header rows of the kept batches and of the data batches dropped as aborted or open
    (bronze keeps those, ``decode_range_and_others``)."""
    h = scan_headers_array(np.frombuffer(buf, dtype=np.uint8))
    attrs = h[:, 2]
    data_batch = (attrs & CONTROL_MASK) == 0
    keep = data_batch.copy()
    for i in np.flatnonzero(keep & ((attrs & TRANSACTIONAL_MASK) != 0)):  # transactional: rare
        keep[i] = txns.outcome(int(h[i, 7]), int(h[i, 3])) == "committed"
    dropped = h[data_batch & ~keep]
    h = h[keep]
    append = (h[:, 2] & TIMESTAMP_TYPE_MASK) != 0
    plan = np.stack([h[:, 0] + HEADER_SIZE, h[:, 8], h[:, 3],
                     np.where(append, h[:, 6], h[:, 5]), append.astype(np.int64)], axis=1)
    data, plan[:, 0] = _payloads(buf, h)
    return data, plan, h, dropped


def _payloads(buf: bytes, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The records sections of the batches ``h`` (header rows): one buffer holding ``buf``
    with every compressed section decompressed onto its tail, and each section's start."""
    starts = h[:, 0] + HEADER_SIZE
    compressed = np.flatnonzero((h[:, 2] & COMPRESSION_MASK) != 0)
    if not len(compressed):
        return np.frombuffer(buf, dtype=np.uint8), starts
    extra: list[bytes] = []
    tail = len(buf)
    for i in compressed:
        pos, size = int(h[i, 0]), int(h[i, 1])
        payload = decompress(int(h[i, 2]) & COMPRESSION_MASK, memoryview(buf)[pos + HEADER_SIZE : pos + size])
        starts[i] = tail
        extra.append(payload)
        tail += len(payload)
    return np.frombuffer(buf + b"".join(extra), dtype=np.uint8), starts


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _any_type_kept(buf: np.ndarray, starts: np.ndarray, counts: np.ndarray,
                   excluded: np.ndarray) -> np.ndarray:
    """Per batch: does any record have a key whose int16 type is not in ``excluded``?
    (A key shorter than two bytes, or no key, counts as kept.)"""
    out = np.zeros(len(starts), dtype=np.bool_)
    for b in range(len(starts)):
        pos = starts[b]
        for _ in range(counts[b]):
            end, _ts, _off, klen, kpos = _record_head(buf, pos)
            if klen < 2 or not np.any(excluded == be_i16(buf, kpos)):
                out[b] = True
                break
            pos = end
    return out


def ranges_without_types(path: str | Path, start: int, end: int | None,
                         excluded: frozenset[int]) -> list[tuple[int, int]]:
    """File ranges ``[from, to)`` inside ``[start, end)`` covering every data batch that holds
    a record of a type not in ``excluded`` (adjacent batches merged). Bronze uses it to skip
    the offset-commit batches, nearly all of a ``__consumer_offsets`` log, without making a
    Python object per record."""
    buf = read_range(path, start, end)
    h = scan_headers_array(np.frombuffer(buf, dtype=np.uint8))
    h = h[(h[:, 2] & CONTROL_MASK) == 0]  # control batches carry no data records
    data, starts = _payloads(buf, h)
    kept = h[_any_type_kept(data, starts, h[:, 8], np.array(sorted(excluded), dtype=np.int64))]
    return _merged_ranges(kept, start)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _gather(data: np.ndarray, starts: np.ndarray, offsets: np.ndarray,
            out: np.ndarray) -> None:
    for i in range(len(starts)):
        src = starts[i]
        for j in range(offsets[i], offsets[i + 1]):
            out[j] = data[src + j - offsets[i]]


def _strings(data: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> pa.Array:
    """Gather (start, length) slices of ``data`` into an Arrow string column, no Python loop
    (and no index array per character)."""
    lens = np.maximum(lens, 0)
    offsets = np.zeros(len(lens) + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    chars = np.empty(int(offsets[-1]), dtype=np.uint8)
    _gather(data, starts.astype(np.int64), offsets, chars)
    return pa.StringArray.from_buffers(len(lens), pa.py_buffer(offsets), pa.py_buffer(chars))


def decode_range(path: str | Path, start: int, end: int | None, coord_partition: int,
                 txns: TxnResolver) -> pa.RecordBatch:
    """Offset commits of ``[start, end)`` of a segment as one Arrow batch (OFFSET_COMMITS)."""
    return decode_range_and_others(path, start, end, coord_partition, txns)[0]


def decode_range_and_others(path: str | Path, start: int, end: int | None,
                            coord_partition: int, txns: TxnResolver
                            ) -> tuple[pa.RecordBatch, list[tuple[int, int]]]:
    """``decode_range``, plus the file ranges (as ``ranges_without_types`` with types 0/1
    excluded) of the batches holding any other record: the kernel reads every record's type
    anyway, so the bronze rows of the same range need no second scan (``direct_silver``).
    Aborted and open transactional batches, which the commits skip, are in the ranges."""
    data, plan, kept, dropped = _plan(read_range(path, start, end), txns)
    n = int(plan[:, 1].sum())
    out_i = np.zeros((n, 5), dtype=np.int64)
    out_s = np.zeros((n, 6), dtype=np.int64)
    meta = np.zeros((n, 5), dtype=np.int64)
    _decode(data, plan[:, 0], plan[:, 1], plan[:, 2], plan[:, 3], plan[:, 4].astype(np.bool_),
            out_i, out_s, meta)
    keep = (meta[:, 2] == 0) | (meta[:, 2] == 1)
    batch_of_row = np.repeat(np.arange(len(plan)), plan[:, 1])
    others = np.concatenate([kept[np.unique(batch_of_row[~keep])], dropped])
    return _commit_batch(data, coord_partition, out_i[keep], out_s[keep], meta[keep]), \
        _merged_ranges(others, start)


def _merged_ranges(headers: np.ndarray, start: int) -> list[tuple[int, int]]:
    """File ranges ``[from, to)`` of the batches ``headers`` (rows of ``scan_headers_array``
    over a slice at ``start``), in file order, adjacent batches merged."""
    headers = headers[np.argsort(headers[:, 0], kind="stable")]
    ranges: list[tuple[int, int]] = []
    for pos, size in zip((headers[:, 0] + start).tolist(), headers[:, 1].tolist(), strict=True):
        if ranges and ranges[-1][1] == pos:
            ranges[-1] = (ranges[-1][0], pos + size)
        else:
            ranges.append((pos, pos + size))
    return ranges


def _commit_batch(data: np.ndarray, coord_partition: int, out_i: np.ndarray,
                  out_s: np.ndarray, meta: np.ndarray) -> pa.RecordBatch:
    tomb = meta[:, 4].astype(np.bool_)
    live = ~tomb

    def col(values: np.ndarray, typ: pa.DataType) -> pa.Array:
        return pa.array(values.astype(typ.to_pandas_dtype()), type=typ, mask=tomb)

    cols = [
        pa.array(np.full(len(meta), coord_partition, dtype=np.int32)),
        pa.array(meta[:, 0]), pa.array(meta[:, 1]), pa.array(meta[:, 2].astype(np.int32)),
        _strings(data, out_s[:, 0], out_s[:, 1]), _strings(data, out_s[:, 2], out_s[:, 3]),
        pa.array(meta[:, 3].astype(np.int32)), col(out_i[:, 1], pa.int64()),
        col(out_i[:, 2], pa.int32()),
        pa.compute.if_else(pa.array(live), _strings(data, out_s[:, 4], out_s[:, 5]),
                           pa.scalar(None, pa.string())),
        col(out_i[:, 3], pa.int64()), col(out_i[:, 4], pa.int64()), col(out_i[:, 0], pa.int32()),
        pa.array(tomb),
    ]
    return pa.RecordBatch.from_arrays(cols, schema=OFFSET_COMMITS)
