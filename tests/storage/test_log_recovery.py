"""Recovery on open: torn tails, garbage, flipped bytes, missing or corrupt indexes,
and interrupted compaction swaps."""

from __future__ import annotations

import os

from storage_helpers import make_batch

from groupcoord.logformat.batch import iter_batches, validate
from groupcoord.storage.config import LogConfig
from groupcoord.storage.log import PartitionLog


def _write(log_dir: str, batches: int, **cfg: object) -> tuple[str, list[int]]:
    """Append ``batches`` single-record batches; return the active .log path and sizes."""
    log = PartitionLog.open(log_dir, LogConfig(**cfg))  # type: ignore[arg-type]
    sizes = []
    for i in range(batches):
        data = make_batch(1, value_size=50 + i)
        sizes.append(len(data))
        log.append(data)
    path = log.active.log_path
    log.close()
    return path, sizes


def _reopen(log_dir: str, **cfg: object) -> PartitionLog:
    return PartitionLog.open(log_dir, LogConfig(**cfg))  # type: ignore[arg-type]


def test_clean_reopen_reports_nothing(log_dir: str) -> None:
    _write(log_dir, 5)
    log = _reopen(log_dir)
    report = log.recovery_report
    assert report.clean and report.bytes_truncated == 0 and report.log_end_offset == 5
    assert report.last_offset == 4
    log.close()


def test_garbage_after_last_batch_is_dropped(log_dir: str) -> None:
    path, _ = _write(log_dir, 5)
    good = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(b"\x00" * 7 + b"garbage" * 10)
    log = _reopen(log_dir)
    report = log.recovery_report
    assert report.bytes_truncated == 77 and report.batches_dropped >= 1
    assert os.path.getsize(path) == good and log.log_end_offset == 5
    assert log.append(make_batch()).base_offset == 5
    log.close()


def test_batch_torn_mid_write(log_dir: str) -> None:
    path, sizes = _write(log_dir, 5)
    total = os.path.getsize(path)
    os.truncate(path, total - sizes[-1] // 2)
    log = _reopen(log_dir)
    report = log.recovery_report
    assert report.bytes_truncated == sizes[-1] - sizes[-1] // 2
    assert report.batches_dropped == 1
    assert log.log_end_offset == 4 and os.path.getsize(path) == total - sizes[-1]
    assert log.append(make_batch(2)).base_offset == 4
    assert log.log_end_offset == 6
    log.close()


def test_torn_length_prefix(log_dir: str) -> None:
    path, sizes = _write(log_dir, 3)
    total = os.path.getsize(path)
    os.truncate(path, total - sizes[-1] + 5)  # only 5 bytes of the last batch's prefix
    log = _reopen(log_dir)
    assert log.recovery_report.bytes_truncated == 5 and log.log_end_offset == 2
    log.close()


def test_flipped_byte_in_last_batch(log_dir: str) -> None:
    path, sizes = _write(log_dir, 6)
    total = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(total - 10)
        byte = f.read(1)
        f.seek(total - 10)
        f.write(bytes([byte[0] ^ 0x40]))
    log = _reopen(log_dir)
    report = log.recovery_report
    assert report.bytes_truncated == sizes[-1] and report.batches_dropped == 1
    assert log.log_end_offset == 5
    data = log.read(0, 1 << 20)
    assert [validate(v).base_offset for _, v in iter_batches(data)] == [0, 1, 2, 3, 4]
    log.close()


def test_flipped_byte_in_middle_skips_only_that_batch(log_dir: str) -> None:
    path, sizes = _write(log_dir, 6)
    with open(path, "r+b") as f:
        f.seek(sizes[0] + sizes[1] + 30)
        f.write(b"\xff\xff")
    log = _reopen(log_dir)
    report = log.recovery_report
    assert log.log_end_offset == 6 and report.bytes_truncated == 0
    [damage] = report.damaged
    assert (damage.position, damage.length) == (sizes[0] + sizes[1], sizes[2])
    assert (damage.first_offset, damage.resume_offset) == (2, 3)
    data = log.read(0, 1 << 20)
    assert [validate(v).base_offset for _, v in iter_batches(data)] == [0, 1, 3, 4, 5]
    log.close()


def test_damaged_tail_of_closed_segment_keeps_later_segments(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=600))
    for _ in range(12):
        log.append(make_batch(1, value_size=150))
    first = log.segments[0]
    second_base = log.segments[1].base_offset
    path, count, end = first.log_path, len(log.segments), log.log_end_offset
    log.close()
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) - 3)
        f.write(b"\x00\x01\x02")
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=600), recovery_point=0)
    report = log.recovery_report
    [damage] = report.damaged
    assert damage.first_offset == second_base - 1 and damage.saved_to is not None
    assert log.log_end_offset == end and len(log.segments) == count
    batches = [validate(v).base_offset for _, v in iter_batches(log.read(0, 1 << 20))]
    assert second_base - 1 not in batches
    log.close()


def test_missing_and_corrupt_indexes_are_rebuilt(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=20_000, index_interval_bytes=300))
    for _ in range(200):
        log.append(make_batch(1, value_size=150))
    old = log.segments[0]
    expected = (list(old.offset_index.offsets), list(old.time_index.timestamps))
    index_path, time_path = old.offset_index.path, old.time_index.path
    log.close()
    os.unlink(index_path)
    with open(time_path, "ab") as f:
        f.write(b"\x01\x02\x03")
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=20_000, index_interval_bytes=300),
                            recovery_point=10_000)
    assert log.recovery_report.indexes_rebuilt == 1
    seg = log.segments[0]
    assert seg.offset_index.offsets == expected[0]
    assert seg.time_index.timestamps[: len(expected[1])] == expected[1]
    assert os.path.getsize(index_path) == 8 * len(expected[0])
    log.close()


def test_interrupted_swap_is_completed_and_cleaned_is_discarded(log_dir: str) -> None:
    _write(log_dir, 3)
    seg_log = os.path.join(log_dir, "00000000000000000000.log")
    with open(seg_log, "rb") as f:
        content = f.read()
    first_batch = next(iter_batches(content))[1]
    with open(seg_log + ".swap", "wb") as f:
        f.write(first_batch)
    with open(seg_log + ".cleaned", "wb") as f:
        f.write(b"junk")
    log = _reopen(log_dir)
    assert log.log_end_offset == 1
    assert not os.path.exists(seg_log + ".cleaned") and not os.path.exists(seg_log + ".swap")
    log.close()
