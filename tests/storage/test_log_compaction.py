"""Compaction keeps the latest record per key at its original offset, drops old
tombstones, never touches the active segment, and leaves valid batches."""

from __future__ import annotations

from groupcoord.logformat.batch import (
    build_batch,
    build_end_txn_marker,
    decode_records,
    iter_batches,
    validate,
)
from groupcoord.storage.compaction import compact
from groupcoord.storage.config import LogConfig
from groupcoord.storage.log import PartitionLog


def _contents(log: PartitionLog) -> dict[int, tuple[bytes | None, bytes | None]]:
    out = {}
    for view in log.iter_batches():
        header = validate(view)
        for rec in decode_records(view):
            out[header.base_offset + rec.offset_delta] = (rec.key, rec.value)
    return out


def _populate(log: PartitionLog, compression: int = 0) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    for i in range(120):
        key = b"key-%d" % (i % 7)
        value = None if i % 13 == 0 else b"value-%d" % i
        info = log.append(build_batch([(key, value, [], 1000 + i)], compression=compression))
        latest[key] = info.base_offset
    return latest


def test_compaction_keeps_latest_per_key_and_offsets(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=1500))
    _populate(log)
    before = _contents(log)
    active_base = log.active.base_offset
    result = compact(log, now_ms=1000, delete_retention_ms=10_000)
    after = _contents(log)
    assert result.records_removed == len(before) - len(after) > 0
    cleaned = {o: kv for o, kv in before.items() if o < active_base}
    latest_by_key: dict[bytes | None, int] = {}
    for offset, (key, _) in sorted(cleaned.items()):
        latest_by_key[key] = offset
    expected = {o: before[o] for o in latest_by_key.values()}
    expected.update({o: kv for o, kv in before.items() if o >= active_base})
    assert after == expected  # same offsets, same key/values; tombstones still kept
    assert log.log_end_offset == 120
    log.close()
    reopened = PartitionLog.open(log_dir, LogConfig(segment_bytes=1500), recovery_point=0)
    assert reopened.recovery_report.clean and _contents(reopened) == after
    reopened.close()


def test_old_tombstones_are_dropped(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=800))
    log.append(build_batch([(b"a", b"1", [], 100)]))
    log.append(build_batch([(b"a", None, [], 200)]))
    log.append(build_batch([(b"b", b"2", [], 300)]))
    for i in range(20):
        log.append(build_batch([(b"filler", b"x" * 100, [], 400 + i)]))
    compact(log, now_ms=250, delete_retention_ms=100)  # horizon 150: tombstone at 200 stays
    kept = _contents(log)
    assert kept[1] == (b"a", None) and 0 not in kept
    compact(log, now_ms=10_000, delete_retention_ms=10)
    kept = _contents(log)
    assert 1 not in kept and kept[2] == (b"b", b"2")
    log.close()


def test_compaction_of_compressed_batches_preserves_range(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=3000))
    for i in range(30):
        records = [(b"k%d" % (j % 3), b"v%d-%d" % (i, j), [], 1000 + i) for j in range(6)]
        log.append(build_batch(records, compression=1, producer_id=4, producer_epoch=0,
                               base_sequence=6 * i))
    compact(log, now_ms=0)
    for header, view in iter_batches(log.read(0, 1 << 20)):
        validate(view)
        assert header.compression == 1 and header.producer_id == 4
        assert header.last_offset_delta == 5  # original offset range kept
    log.close()


def test_control_batches_survive(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=500))
    log.append(build_batch([(b"a", b"1", [], 1)], transactional=True, producer_id=3,
                           producer_epoch=0))
    log.append(build_end_txn_marker(1, 3, 0, 2), allow_control=True)
    for i in range(10):
        log.append(build_batch([(b"a", b"x" * 100, [], 3 + i)]))
    compact(log, now_ms=0)
    headers = list(log.iter_batch_headers(0))
    assert headers[0].is_control and headers[0].base_offset == 1
    log.close()
