"""Transactions in a partition log: the aborted-transaction index across segments, and a
scan of the batch headers for whoever rebuilds producer state.

Mirrors `LocalLog.collectAbortedTransactions`, `LogSegment.updateTxnIndex` and the part of
`ProducerStateManager` recovery that needs to read the log (`UnifiedLog.loadProducerState`
replaying batch headers). The log knows offsets, not producers: the server's producer state
decides which transactions completed, and this module stores and finds the aborted ones.

Rules kept:
- an aborted transaction is indexed in the segment holding its ABORT marker;
- a fetch from `fetch_offset` gets every aborted transaction with a marker at or after it
  and a first offset below `upper_bound`, searching segments from the one holding
  `fetch_offset` until an entry's last stable offset reaches `upper_bound`;
- `sync_aborted_txns` makes the indexes equal to what a scan of the log found (recovery
  after a crash between the marker write and the index write, or a lost `.txnindex`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from groupcoord.logformat.batch import CONTROL_ABORT, decode_records, parse_header
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.segment import iter_file_batches
from groupcoord.storage.txn_index import AbortedTxn


class TxnBatch(NamedTuple):
    """What producer state needs from one batch header (plus the marker type)."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    transactional: bool
    # None for data batches; True/False for a COMMIT/ABORT marker.
    commit: bool | None
    coordinator_epoch: int


def append_aborted_txn(log: PartitionLog, txn: AbortedTxn) -> None:
    """Index an aborted transaction in the segment holding its marker (`last_offset`)."""
    segment = log.segments[0]
    for seg in log.segments:
        if seg.base_offset <= txn.last_offset:
            segment = seg
    segment.txn_index.append(txn)


def collect_aborted_txns(log: PartitionLog, fetch_offset: int,
                         upper_bound: int) -> list[AbortedTxn]:
    """The aborted transactions a read_committed fetch of [fetch_offset, upper_bound) needs."""
    out: list[AbortedTxn] = []
    started = False
    segments = log.segments
    for i, seg in enumerate(segments):
        if not started:
            nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
            if nxt is not None and nxt <= fetch_offset:
                continue
            started = True
        found, complete = seg.txn_index.collect(fetch_offset, upper_bound)
        out += found
        if complete:
            break
    return out


def scan_batches(log: PartitionLog) -> Iterator[TxnBatch]:
    """Every producer batch of the log from its start, markers decoded (no data decoded)."""
    for seg in list(log.segments):
        if seg.fd < 0:
            continue
        for _, view in iter_file_batches(log.io, seg.fd, 0, seg.size):
            h = parse_header(view)
            if h.producer_id < 0 or h.last_offset < log.log_start_offset:
                continue
            commit: bool | None = None
            coordinator_epoch = -1
            if h.is_control:
                marker = read_marker(view)
                if marker is None:
                    continue
                commit, coordinator_epoch = marker
            yield TxnBatch(h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence,
                           h.base_offset, h.last_offset, h.max_timestamp, h.is_transactional,
                           commit, coordinator_epoch)


def read_marker(view: memoryview) -> tuple[bool, int] | None:
    """(commit?, coordinator epoch) of a control batch; None if it holds no marker."""
    records = decode_records(view)
    if not records or records[0].key is None or len(records[0].key) < 4:
        return None
    key = bytes(records[0].key)
    control_type = int.from_bytes(key[2:4], "big", signed=True)
    if control_type not in (CONTROL_ABORT, 1):
        return None
    value = records[0].value
    epoch = int.from_bytes(bytes(value[2:6]), "big", signed=True) if value and len(value) >= 6 \
        else -1
    return control_type != CONTROL_ABORT, epoch


def sync_aborted_txns(log: PartitionLog, found: list[AbortedTxn]) -> int:
    """Rewrite every segment index that differs from `found` (the scan's aborted
    transactions, in marker order); return how many segments were rewritten."""
    by_segment: dict[int, list[AbortedTxn]] = {seg.base_offset: [] for seg in log.segments}
    bases = sorted(by_segment)
    for txn in found:
        base = bases[0]
        for b in bases:
            if b <= txn.last_offset:
                base = b
        by_segment[base].append(txn)
    rewritten = 0
    for seg in log.segments:
        want = by_segment[seg.base_offset]
        if seg.txn_index.entries != want:
            seg.txn_index.rewrite(want)
            rewritten += 1
    return rewritten
