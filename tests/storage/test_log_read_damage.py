"""Reads that meet damage in a segment that no recovery scan checked (a clean shutdown).

A read returns the intact batches before the damage, a read of an offset the damage may
hold is a `CorruptBatchError` (never a silent move to the next segment), reads after the
damage return the intact batches behind it, and the damage is logged once.
"""

from __future__ import annotations

import logging
import os

import pytest
from storage_helpers import make_batch

from groupcoord.logformat.batch import iter_batches, validate
from groupcoord.storage.config import CorruptBatchError, LogConfig
from groupcoord.storage.fileio import OS_FILE_IO
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.segment import iter_file_batches

CONFIG = LogConfig(segment_bytes=40_000, index_interval_bytes=2_000)
PER_BATCH = 10


def build(log_dir: str) -> tuple[int, int]:
    """Three segments or more of 10-record batches, closed cleanly; (log end, first end)."""
    log = PartitionLog.open(log_dir, CONFIG)
    for i in range(60):
        log.append(make_batch(PER_BATCH, ts=1000 + i, value_size=200))
    assert len(log.segments) >= 3
    end, first_end = log.log_end_offset, log.segments[1].base_offset
    log.close()
    return end, first_end


def damage(log_dir: str, offset: int, garbage: bytes, at: int = 0) -> int:
    """Overwrite bytes of the batch at base `offset` in the first segment; its position."""
    path = os.path.join(log_dir, f"{0:020d}.log")
    fd = os.open(path, os.O_RDWR)
    try:
        found = {validate(view).base_offset: pos for pos, view
                 in iter_file_batches(OS_FILE_IO, fd, 0, os.fstat(fd).st_size)}
        os.pwrite(fd, garbage, found[offset] + at)
    finally:
        os.close(fd)
    return found[offset]


def offsets_read(log: PartitionLog, offset: int, max_bytes: int = 1 << 20) -> list[int]:
    data = log.read(offset, max_bytes, log.log_end_offset)
    return [o for header, _ in iter_batches(data)
            for o in range(header.base_offset, header.last_offset + 1)]


def read_all(log: PartitionLog, offset: int, max_bytes: int) -> tuple[list[int], int | None]:
    """Fetch as a consumer does from `offset` on; what it read and where it stopped."""
    got: list[int] = []
    while offset < log.log_end_offset:
        try:
            batch = offsets_read(log, offset, max_bytes)
        except CorruptBatchError as exc:
            assert exc.offset == offset
            return got, offset
        assert batch, f"no progress at {offset}"
        got += [o for o in batch if o >= offset]
        offset = batch[-1] + 1
    return got, None


@pytest.mark.parametrize("garbage", [b"\xa5" * 64, b"\x7f" + b"\x00" * 63, b"\x00" * 64],
                         ids=["negative-length", "huge-length", "zeros"])
@pytest.mark.parametrize("max_bytes", [1 << 20, 5_000])
def test_a_read_stops_at_the_damage_and_resumes_after_it(
        log_dir: str, caplog: pytest.LogCaptureFixture, garbage: bytes, max_bytes: int) -> None:
    end, first_end = build(log_dir)
    damaged = 50
    assert damaged + 2 * PER_BATCH < first_end
    damage(log_dir, damaged, garbage)
    log = PartitionLog.open(log_dir, CONFIG, clean_shutdown=True)
    try:
        with caplog.at_level(logging.ERROR, logger="groupcoord.storage.damage"):
            got, stopped = read_all(log, 0, max_bytes)
            assert got == list(range(damaged)) and stopped == damaged
            for inside in (damaged, damaged + PER_BATCH - 1):
                with pytest.raises(CorruptBatchError):
                    log.read(inside, max_bytes, end)
            after, stopped = read_all(log, damaged + PER_BATCH, max_bytes)
            assert after == list(range(damaged + PER_BATCH, end)) and stopped is None
            assert offsets_read(log, damaged + PER_BATCH + 5)[0] == damaged + PER_BATCH
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 1, lines
        assert f"offsets {damaged}-{damaged + PER_BATCH - 1}" in lines[0]
    finally:
        log.close()


def test_a_bad_magic_byte_is_damage(log_dir: str) -> None:
    end, _ = build(log_dir)
    damage(log_dir, 100, b"\x07", at=16)
    log = PartitionLog.open(log_dir, CONFIG, clean_shutdown=True)
    try:
        assert read_all(log, 0, 1 << 20) == (list(range(100)), 100)
        assert read_all(log, 110, 1 << 20) == (list(range(110, end)), None)
    finally:
        log.close()


def test_damage_in_the_last_batches_of_a_segment_is_an_error_not_a_skip(log_dir: str) -> None:
    """Nothing valid after the damage in its segment: the next segment is not served in
    place of the damaged offsets."""
    end, first_end = build(log_dir)
    last = first_end - PER_BATCH
    damage(log_dir, last, b"\xa5" * 64)
    log = PartitionLog.open(log_dir, CONFIG, clean_shutdown=True)
    try:
        assert read_all(log, 0, 1 << 20) == (list(range(last)), last)
        assert read_all(log, first_end, 1 << 20) == (list(range(first_end, end)), None)
    finally:
        log.close()


def test_recovery_after_an_unclean_stop_still_sets_the_damage_aside(log_dir: str) -> None:
    end, _ = build(log_dir)
    damage(log_dir, 50, b"\xa5" * 64)
    log = PartitionLog.open(log_dir, CONFIG, recovery_point=0)
    try:
        [found] = log.recovery_report.damaged
        assert found.first_offset == 50
        assert read_all(log, 0, 1 << 20) == ([o for o in range(end) if not 50 <= o < 60], None)
    finally:
        log.close()


def test_a_timestamp_search_through_damage_is_an_error(log_dir: str) -> None:
    """ListOffsets by timestamp walks batches as a read does: the batch stamped 1005 (offsets
    50-59) is damaged, so a search that must pass it fails instead of answering from the
    next segment."""
    build(log_dir)
    damage(log_dir, 50, b"\xa5" * 64)
    log = PartitionLog.open(log_dir, CONFIG, clean_shutdown=True)
    try:
        assert log.offset_for_timestamp(1004) == (40, 1004)
        with pytest.raises(CorruptBatchError):
            log.offset_for_timestamp(1005)
    finally:
        log.close()
