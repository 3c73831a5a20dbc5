"""Segment reading: batches, records, compression, transactions and torn tails.

Batches are built with ``groupcoord.logformat.batch`` so the analytics reader is checked
against the broker's own encoder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.analytics.fixture.logwriter import PartitionWriter
from groupcoord.analytics.read import columns, splits
from groupcoord.analytics.read.reader import iter_raw_records
from groupcoord.analytics.read.segments import (
    PartitionTxns,
    iter_records,
    list_partitions,
    resolve_transactions,
    scan_batches,
    scan_headers,
)
from groupcoord.logformat import batch as lb


def _records(n: int, ts: int = 1000) -> list[lb.SimpleRecord]:
    return [lb.SimpleRecord(b"k%d" % i, b"v%d" % i, (), ts + i) for i in range(n)]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_records_of_every_compression_match_logformat(codec: int) -> None:
    raw = lb.build_batch(_records(5), base_offset=100, compression=codec)
    (info,) = [h for _, h in lb.iter_log_batches(raw)]
    assert (info.base_offset, info.last_offset, info.compression) == (100, 104, codec)
    ours = [(r.offset, r.timestamp, r.key, r.value)
            for r in iter_records(lb.records_payload(raw, info), info)]
    theirs = [(100 + r.offset_delta, 1000 + r.timestamp_delta, r.key, r.value)
              for r in lb.decode_records(raw)]
    assert ours == theirs


def test_log_append_time_uses_batch_max_timestamp() -> None:
    raw = lb.build_batch(_records(3), timestamp_type=lb.LOG_APPEND_TIME, max_timestamp=9999)
    info = lb.parse_header(raw)
    assert [r.timestamp for r in iter_records(lb.records_payload(raw, info), info)] == [9999] * 3


def test_torn_tail_ends_scan(tmp_path: Path) -> None:
    good = lb.build_batch(_records(2))
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(good + good[:-7])
    assert len(list(scan_headers(seg))) == 1
    assert len(list(lb.iter_log_batches(seg.read_bytes()))) == 1


def test_transactions_resolved_and_aborted_dropped(tmp_path: Path) -> None:
    w = PartitionWriter(tmp_path, "__consumer_offsets", 0)
    w.append([(b"\x00\x63a", b"x", 1)], producer_id=7, transactional=True)  # committed later
    w.append([(b"\x00\x63b", b"y", 2)], producer_id=8, transactional=True)  # aborted
    w.append([(b"\x00\x63c", b"z", 3)], producer_id=9, transactional=True)  # still open
    w.append_marker(7, True, 4)
    w.append_marker(8, False, 5)
    w.close()
    (part,) = list_partitions(tmp_path)
    txns = resolve_transactions(part)
    seg = part.segments()[0]
    outcomes = {r.key: r.txn_outcome for r in iter_raw_records(seg, 0, None, txns)}
    assert outcomes == {b"\x00\x63a": "committed", b"\x00\x63b": "aborted",
                        b"\x00\x63c": "open"}
    lazy = PartitionTxns(part)  # scanned on first use, to the same outcomes
    assert {r.key: r.txn_outcome for r in iter_raw_records(seg, 0, None, lazy)} == outcomes
    assert sorted(PartitionTxns(part).to_list()) == sorted(txns.to_list())


def test_partition_txns_never_scans_a_partition_nobody_asks_about(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from groupcoord.analytics.read import segments

    w = PartitionWriter(tmp_path, "__consumer_offsets", 0)
    w.append([(b"\x00\x63a", b"x", 1)])
    w.close()
    (part,) = list_partitions(tmp_path)
    scans: list[object] = []
    real = segments.resolve_transactions
    monkeypatch.setattr(segments, "resolve_transactions", lambda p: scans.append(p) or real(p))
    lazy = PartitionTxns(part)
    assert [r.key for r in iter_raw_records(part.segments()[0], 0, None, lazy)] == [b"\x00\x63a"]
    assert scans == []
    assert lazy.outcome(1, 0) == "open" and lazy.outcome(2, 5) == "open"
    assert scans == [part]  # once


def test_writer_segments_index_and_splits(tmp_path: Path) -> None:
    w = PartitionWriter(tmp_path, "t", 0, segment_bytes=2000, index_interval=300)
    for i in range(100):
        w.append([(None, b"x" * 20, i)])
    w.close()
    (part,) = list_partitions(tmp_path)
    segs = part.segments()
    assert len(segs) > 1
    offsets = [h.base_offset for s in segs for h in scan_headers(s)]
    assert offsets == list(range(100))
    for s in segs:
        assert lb.validate(s.read_bytes()[: next(scan_headers(s)).size])
        starts = splits.batch_starts(s)
        assert starts == sorted(starts) and starts[0] == 0
        assert set(starts) <= {pos for pos, _ in scan_batches(s)}
        ranges = splits.segment_ranges(s, 500)
        assert len(ranges) > 1
        rows = sum(b.num_rows for a, e in ranges
                   for b in columns.end_offset_batches(s, a, e, "t", 0))
        assert rows == len(list(scan_headers(s)))


def test_pack_keeps_order_and_limits() -> None:
    specs = [splits.SplitSpec(__file__, 0, 100 * (i + 1), "t", i) for i in range(6)]
    tasks = splits.pack(specs, 250, min_tasks=1)
    assert [s for t in tasks for s in t] == specs
    assert all(sum(s.end - s.start for s in t) <= 250 or len(t) == 1 for t in tasks)
