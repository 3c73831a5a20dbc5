"""The `.txnindex` aborted-transaction index, its search across segments, its repair from
the log, and transaction-aware compaction."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from groupcoord.logformat.batch import build_batch, build_end_txn_marker, parse_header
from groupcoord.storage.compaction import compact
from groupcoord.storage.config import LogConfig
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.transactions import (
    append_aborted_txn,
    collect_aborted_txns,
    scan_batches,
    sync_aborted_txns,
)
from groupcoord.storage.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex


def test_entries_are_kafkas_34_byte_layout(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000000.txnindex")
    index = TransactionIndex(path, 0)
    assert not os.path.exists(path)  # created on first entry only
    index.append(AbortedTxn(7, 10, 20, 21))
    index.close()
    raw = Path(path).read_bytes()
    assert raw == struct.pack(">hqqqq", 0, 7, 10, 20, 21) and ENTRY_SIZE == 34
    with pytest.raises(ValueError):
        TransactionIndex(path, 0).append(AbortedTxn(7, 15, 20, 25))


def test_torn_tail_ignored_and_cut(tmp_path: Path) -> None:
    path = str(tmp_path / "x.txnindex")
    index = TransactionIndex(path, 0)
    index.append(AbortedTxn(1, 0, 5, 6))
    index.close()
    with open(path, "ab") as fh:
        fh.write(b"\x00\x00\x01")
    reopened = TransactionIndex(path, 0)
    assert reopened.entries == [AbortedTxn(1, 0, 5, 6)]
    reopened.append(AbortedTxn(2, 6, 9, 10))
    reopened.close()
    assert os.path.getsize(path) == 2 * ENTRY_SIZE
    assert TransactionIndex(path, 0).entries[-1] == AbortedTxn(2, 6, 9, 10)


def test_collect_stops_when_stable_offset_reaches_upper_bound(tmp_path: Path) -> None:
    index = TransactionIndex(str(tmp_path / "i.txnindex"), 0)
    # pid 2's transaction was open from 5 when pid 1 aborted: the LSO then was 5.
    index.append(AbortedTxn(1, 0, 10, 5))
    index.append(AbortedTxn(2, 5, 30, 31))
    index.append(AbortedTxn(3, 40, 50, 51))
    assert index.collect(11, 100) == ([AbortedTxn(2, 5, 30, 31), AbortedTxn(3, 40, 50, 51)],
                                      False)
    assert index.collect(0, 8) == ([AbortedTxn(1, 0, 10, 5), AbortedTxn(2, 5, 30, 31)], True)
    assert index.collect(31, 35) == ([], True)
    index.truncate_to(30)
    assert index.entries == [AbortedTxn(1, 0, 10, 5)]


def _txn_log(log_dir: str) -> PartitionLog:
    """pid 1 aborts [0..2], pid 2 commits [3], pid 1 aborts [5] across segment rolls."""
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=250))
    for pid, key in ((1, b"a"), (1, b"b")):
        log.append(build_batch([(key, b"v", [], 1)], producer_id=pid, producer_epoch=0,
                               base_sequence=0, transactional=True))
    log.append(build_end_txn_marker(0, 1, 0, 1), allow_control=True)
    log.append(build_batch([(b"c", b"v", [], 1)], producer_id=2, producer_epoch=0,
                           base_sequence=0, transactional=True))
    log.append(build_end_txn_marker(1, 2, 0, 1), allow_control=True)
    log.append(build_batch([(b"d", b"v", [], 1)], producer_id=1, producer_epoch=0,
                           base_sequence=2, transactional=True))
    log.append(build_end_txn_marker(0, 1, 0, 1), allow_control=True)
    return log


def test_scan_and_segment_search(log_dir: str) -> None:
    log = _txn_log(log_dir)
    assert len(log.segments) > 2
    scanned = list(scan_batches(log))
    assert [(b.producer_id, b.base_offset, b.commit) for b in scanned] == [
        (1, 0, None), (1, 1, None), (1, 2, False), (2, 3, None), (2, 4, True), (1, 5, None),
        (1, 6, False)]
    append_aborted_txn(log, AbortedTxn(1, 0, 2, 3))
    append_aborted_txn(log, AbortedTxn(1, 5, 6, 7))
    assert collect_aborted_txns(log, 0, 7) == [AbortedTxn(1, 0, 2, 3), AbortedTxn(1, 5, 6, 7)]
    assert collect_aborted_txns(log, 3, 7) == [AbortedTxn(1, 5, 6, 7)]
    assert collect_aborted_txns(log, 0, 2) == [AbortedTxn(1, 0, 2, 3)]


def test_sync_rebuilds_a_lost_index(log_dir: str) -> None:
    log = _txn_log(log_dir)
    want = [AbortedTxn(1, 0, 2, 3), AbortedTxn(1, 5, 6, 7)]
    assert sync_aborted_txns(log, want) == 2
    log.close()
    for name in os.listdir(log_dir):
        if name.endswith(".txnindex"):
            os.unlink(os.path.join(log_dir, name))
    reopened = PartitionLog.open(log_dir, LogConfig(segment_bytes=250))
    assert collect_aborted_txns(reopened, 0, 7) == []
    assert sync_aborted_txns(reopened, want) == 2
    assert sync_aborted_txns(reopened, want) == 0
    assert collect_aborted_txns(reopened, 0, 7) == want


def test_recovery_drops_entries_past_a_truncated_tail(log_dir: str) -> None:
    log = _txn_log(log_dir)
    append_aborted_txn(log, AbortedTxn(1, 5, 6, 7))
    log.truncate_to(6)
    assert log.active.txn_index.entries == []


def test_compaction_drops_aborted_data_and_stops_at_open_transactions(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=1))  # a segment per batch
    log.append(build_batch([(b"k", b"committed", [], 1)]))
    log.append(build_batch([(b"k", b"aborted", [], 1)], producer_id=9, producer_epoch=0,
                           base_sequence=0, transactional=True))
    log.append(build_end_txn_marker(0, 9, 0, 1), allow_control=True)
    append_aborted_txn(log, AbortedTxn(9, 1, 2, 3))
    log.append(build_batch([(b"z", b"open", [], 1)], producer_id=8, producer_epoch=0,
                           base_sequence=0, transactional=True))
    log.append(build_batch([(b"q", b"1", [], 1)]))
    assert len(log.segments) == 5
    held = compact(log, first_unstable_offset=1)
    assert held.segments_cleaned == 0
    result = compact(log, first_unstable_offset=3)
    assert result.records_removed == 1
    # The aborted "k" is gone and did not shadow the committed one; the open one stays.
    assert [parse_header(v).base_offset for v in log.iter_batches()] == [0, 2, 3, 4]
