"""The numba decoder against the pure-Python reference decoder (``decoder="python"``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from groupcoord.analytics.fixture.logwriter import PartitionWriter
from groupcoord.analytics.read import columns, splits, table_schemas
from groupcoord.analytics.read.segments import TxnResolver, scan_batches
from groupcoord.logformat import batch as lb
from groupcoord.logformat import coordinator_records as cr
from groupcoord.logformat.generated import coordinator_records as gen

fastpath = pytest.importorskip("groupcoord.analytics.read.fastpath")
header_scan = pytest.importorskip("groupcoord.analytics.read.header_scan")


def _table(root: Path, decoder: str) -> pa.Table:
    batches = []
    for s in splits.plan(root, "offset_commits"):
        txns = TxnResolver.from_list(list(s.txn_markers))
        batches += list(columns.offset_commit_batches(s.path, s.start, s.end, s.partition, txns,
                                                      decoder))
    return pa.Table.from_batches(batches, schema=table_schemas.OFFSET_COMMITS).combine_chunks()


def test_fixture_decodes_identically(fixture_dir: tuple[Path, dict[str, Any]]) -> None:
    root, m = fixture_dir
    py, nb = _table(root, "python"), _table(root, "numba")
    assert py.num_rows == m["commit_rows"]
    assert nb.equals(py)


def _commit(offset: int, version: int, **extra: Any) -> tuple[bytes, bytes | None]:
    key = cr.encode_key(gen.OffsetCommitKey(group="grüppe", topic="t", partition=offset % 3))
    if version < 0:
        return key, None
    value = gen.OffsetCommitValue(offset=offset, leader_epoch=1, metadata="μ" * (offset % 4),
                                  commit_timestamp=offset * 10, **extra)
    return key, cr.encode_value(value, version)


def test_edge_cases_decode_identically(tmp_path: Path) -> None:
    w = PartitionWriter(tmp_path, "__consumer_offsets", 0)
    for codec in range(5):
        recs = [_commit(i, v) for i, v in enumerate([0, 3, 4, -1, 2])]
        recs.append(_commit(99, 1, expire_timestamp=12345))
        recs.append((cr.encode_key(gen.GroupMetadataKey(group="g")), None))
        w.append([(k, v, 1000 + i) for i, (k, v) in enumerate(recs)], compression=codec)
    w.append([(*_commit(7, 3), 5)], producer_id=3, transactional=True)
    w.append_marker(3, False, 6)
    w.append([(*_commit(8, 3), 7)], producer_id=4, transactional=True)
    w.append_marker(4, True, 8)
    w.close()
    seg = next(tmp_path.glob("*/*.log"))
    with seg.open("ab") as fh:  # a LogAppendTime batch, then a torn tail
        fh.write(lb.build_batch([lb.SimpleRecord(*_commit(9, 3), (), 1)], base_offset=100,
                                timestamp_type=lb.LOG_APPEND_TIME, max_timestamp=777))
        fh.write(b"\x00" * 20)
    py, nb = _table(tmp_path, "python"), _table(tmp_path, "numba")
    assert py.num_rows == 5 * 6 + 1 + 1
    assert nb.equals(py)
    assert py.column("record_ts_ms").to_pylist()[-1] == 777


def test_header_scan_matches(fixture_dir: tuple[Path, dict[str, Any]]) -> None:
    import numpy as np

    root, _ = fixture_dir
    for seg in list(root.glob("t-slowpoke-*/*.log"))[:2]:
        arr = header_scan.scan_headers_array(np.frombuffer(seg.read_bytes(), dtype=np.uint8))
        ref = list(scan_batches(seg))
        assert arr[:, 0].tolist() == [pos for pos, _ in ref]
        assert arr[:, 3].tolist() == [h.base_offset for _, h in ref]
        assert arr[:, 8].tolist() == [h.records_count for _, h in ref]


def _bronze(root: Path, monkeypatch: pytest.MonkeyPatch, with_numba: bool) -> pa.Table:
    monkeypatch.setattr(columns, "numba_available", lambda: with_numba)
    batches = []
    for s in splits.plan(root, "coord_records"):
        txns = TxnResolver.from_list(list(s.txn_markers))
        batches += list(columns.coord_record_batches(s.path, s.start, s.end, s.topic,
                                                     s.partition, txns, frozenset({0, 1})))
    return pa.Table.from_batches(batches, schema=table_schemas.COORD_RECORDS).combine_chunks()


def test_bronze_prefilter_keeps_every_wanted_record(
        fixture_dir: tuple[Path, dict[str, Any]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Skipping commit-only batches in numba leaves exactly the rows of the record-by-record
    filter: mixed batches, every compression, transactional batches, a tombstone."""
    w = PartitionWriter(tmp_path, "__consumer_offsets", 0)
    group_key = cr.encode_key(gen.GroupMetadataKey(group="g"))
    for codec in range(5):
        w.append([(*_commit(i, 3), 10 + i) for i in range(4)], compression=codec)
        w.append([(*_commit(5, 3), 20), (group_key, None, 21)], compression=codec)
    w.append([(group_key, None, 30)], producer_id=3, transactional=True)
    w.append_marker(3, True, 31)
    w.close()
    for root, wanted in ((tmp_path, 6), (fixture_dir[0], None)):
        slow = _bronze(root, monkeypatch, with_numba=False)
        fast = _bronze(root, monkeypatch, with_numba=True)
        assert fast.equals(slow)
        assert set(fast.column("record_type").to_pylist()).isdisjoint({0, 1})
        if wanted is not None:
            assert fast.num_rows == wanted
        else:
            assert fast.num_rows > 0


def test_header_columns_follow_the_logformat_layout() -> None:
    """Every column of the compiled header scan equals the field ``logformat.batch`` parses,
    on batches whose fields are all distinct, so an offset that drifts from the one layout fails."""
    import numpy as np

    built = [
        lb.build_batch([lb.SimpleRecord(b"k", b"v", (), 1_000 + i) for i in range(3)],
                       base_offset=40, producer_id=7_000_000_001, producer_epoch=3,
                       base_sequence=11, transactional=True, compression=1),
        lb.build_batch([lb.SimpleRecord(None, b"x", (), 5)], base_offset=2**40,
                       timestamp_type=lb.LOG_APPEND_TIME, max_timestamp=2**41),
    ]
    arr = header_scan.scan_headers_array(np.frombuffer(b"".join(built), dtype=np.uint8))
    refs = list(lb.iter_batches(b"".join(built)))
    assert len(arr) == len(refs) == 2
    position = 0
    for row, (ref, view) in zip(arr.tolist(), refs, strict=True):
        assert row == [position, ref.size, ref.attributes, ref.base_offset, ref.last_offset_delta,
                       ref.base_timestamp, ref.max_timestamp, ref.producer_id, ref.records_count]
        position += len(view)


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -(2**31),
                                   2**40 + 5, 2**63 - 1, -(2**63)])
def test_compiled_varint_matches_the_wire_definition(value: int) -> None:
    """The numba varlong reader (it cannot call Python) decodes what ``wire.primitives`` writes."""
    import numpy as np

    from groupcoord.wire.primitives import read_varlong, write_varlong

    out = bytearray(b"\x07")
    write_varlong(out, value)
    got, end = fastpath._varint(np.frombuffer(bytes(out), dtype=np.uint8), 1)
    assert (int(got), end) == read_varlong(bytes(out), 1) == (value, len(out))
