"""numba-compiled walk over the batch headers of a segment slice in memory.

The header layout is ``groupcoord.logformat.batch``'s: its field offsets are used here, and
the tests check the walk against logformat's header parse. Used by the offset commit decoder
(``fastpath``) and, for transaction markers, by ``segments``; importing this module needs
numba.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from groupcoord.logformat.batch import (
    ATTRIBUTES_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    CONTROL_MASK,
    HEADER_SIZE,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    MIN_BATCH_LENGTH,
    PRODUCER_ID_OFFSET,
    RECORDS_COUNT_OFFSET,
)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def be_i16(buf: np.ndarray, p: int) -> Any:
    v = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
    return v - 65536 if v >= 32768 else v


@numba.njit(cache=True, nogil=True, boundscheck=False)
def be_i32(buf: np.ndarray, p: int) -> Any:
    v = np.int64(0)
    for i in range(4):
        v = (v << 8) | np.int64(buf[p + i])
    return v - 4294967296 if v >= 2147483648 else v


@numba.njit(cache=True, nogil=True, boundscheck=False)
def be_i64(buf: np.ndarray, p: int) -> Any:
    v = np.uint64(0)
    for i in range(8):
        v = (v << np.uint64(8)) | np.uint64(buf[p + i])
    return np.int64(v)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def scan_headers_array(buf: np.ndarray) -> np.ndarray:
    """Every complete batch header of a segment slice, one row each: position, size,
    attributes, base offset, last offset delta, base ts, max ts, producer id, records count.
    Stops at a torn tail or a batch that is not magic 2, as ``logformat.batch.iter_log_batches`` does."""
    cap = max(16, len(buf) // 70 + 1)
    out = np.zeros((cap, 9), dtype=np.int64)
    n = 0
    pos = 0
    while pos + HEADER_SIZE <= len(buf):
        length = be_i32(buf, pos + LENGTH_OFFSET)
        size = length + LOG_OVERHEAD
        if buf[pos + MAGIC_OFFSET] != MAGIC or length < MIN_BATCH_LENGTH or pos + size > len(buf):
            break
        if n == cap:
            grown = np.zeros((cap * 2, 9), dtype=np.int64)
            grown[:n] = out
            out, cap = grown, cap * 2
        out[n, 0], out[n, 1], out[n, 2] = pos, size, be_i16(buf, pos + ATTRIBUTES_OFFSET)
        out[n, 3], out[n, 4] = be_i64(buf, pos), be_i32(buf, pos + LAST_OFFSET_DELTA_OFFSET)
        out[n, 5] = be_i64(buf, pos + BASE_TIMESTAMP_OFFSET)
        out[n, 6] = be_i64(buf, pos + MAX_TIMESTAMP_OFFSET)
        out[n, 7] = be_i64(buf, pos + PRODUCER_ID_OFFSET)
        out[n, 8] = be_i32(buf, pos + RECORDS_COUNT_OFFSET)
        n += 1
        pos += size
    return out[:n]


def control_batch_positions(buf: bytes) -> list[int]:
    """Positions of the control batches in a segment slice."""
    h = scan_headers_array(np.frombuffer(buf, dtype=np.uint8))
    return [int(p) for p in h[(h[:, 2] & CONTROL_MASK) != 0, 0]]
