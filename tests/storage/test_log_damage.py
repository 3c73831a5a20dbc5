"""Damage at the head, middle and tail of closed and active segments of a data log.

Every batch that is intact is kept; the damage is reported with its offsets and bytes,
set aside in a `.damaged-<position>` file, and the log appends after its old end.
"""

from __future__ import annotations

import os

import pytest
from storage_helpers import make_batch

from groupcoord.logformat.batch import HEADER_SIZE, iter_batches, validate
from groupcoord.storage.config import LogConfig
from groupcoord.storage.fileio import OS_FILE_IO
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.segment import iter_file_batches

CONFIG = LogConfig(segment_bytes=2_000, index_interval_bytes=200)
BATCHES = 30


def build(log_dir: str) -> PartitionLog:
    log = PartitionLog.open(log_dir, CONFIG)
    for i in range(BATCHES):
        log.append(make_batch(1, value_size=100 + i))
    assert len(log.segments) >= 3
    return log


def all_offsets(log: PartitionLog) -> list[int]:
    out = []
    for seg in log.segments:
        out += [validate(v).base_offset for _, v in iter_batches(seg.read(0, 1 << 24, None))]
    return out


def damage(path: str, which: str, garbage: bytes) -> tuple[int, int]:
    """Overwrite bytes inside the head/middle/tail batch; its (base offset, position)."""
    fd = os.open(path, os.O_RDWR)
    try:
        batches = [(pos, validate(view).base_offset)
                   for pos, view in iter_file_batches(OS_FILE_IO, fd, 0, os.fstat(fd).st_size)]
        pos, offset = {"head": batches[0], "middle": batches[len(batches) // 2],
                       "tail": batches[-1]}[which]
        os.pwrite(fd, garbage, pos + 20)
    finally:
        os.close(fd)
    return offset, pos


@pytest.mark.parametrize("segment", ["closed", "active"])
@pytest.mark.parametrize("which", ["head", "middle", "tail"])
def test_only_the_damaged_batch_is_lost(log_dir: str, segment: str, which: str) -> None:
    log = build(log_dir)
    seg = log.segments[1] if segment == "closed" else log.segments[-1]
    path, end = seg.log_path, log.log_end_offset
    log.close()
    lost, position = damage(path, which, os.urandom(64))

    again = PartitionLog.open(log_dir, CONFIG, recovery_point=0)  # an unclean shutdown
    report = again.recovery_report
    kept = all_offsets(again)
    assert kept == [o for o in range(end) if o != lost]
    torn_tail = segment == "active" and which == "tail"
    if torn_tail:
        # The last batch of the log is what a crash tears: truncated, as Kafka does.
        assert report.bytes_truncated > 0 and not report.damaged
        assert again.log_end_offset == end - 1
    else:
        [found] = report.damaged
        assert found.position == position and found.first_offset == lost
        assert found.saved_to is not None and os.path.getsize(found.saved_to) == found.length
        assert again.log_end_offset == end
    assert again.append(make_batch()).base_offset == again.log_end_offset - 1
    again.close()
    third = PartitionLog.open(log_dir, CONFIG, recovery_point=0)
    assert third.recovery_report.clean, "the repair must be complete on the first start"
    third.close()


def test_interrupted_repair_is_finished_on_the_next_load(log_dir: str) -> None:
    log = build(log_dir)
    path = log.segments[-1].log_path
    end = log.log_end_offset
    log.close()
    lost, _ = damage(path, "middle", b"\xff" * 64)
    # A crash after the repaired copy was written but before it replaced the segment.
    again = PartitionLog.open(log_dir, CONFIG, recovery_point=0)
    again.close()
    with open(path, "rb") as f:
        repaired = f.read()
    with open(path + ".swap", "wb") as f:
        f.write(repaired)
    damage(path, "middle", b"\xee" * 64)
    third = PartitionLog.open(log_dir, CONFIG, recovery_point=0)
    assert not os.path.exists(path + ".swap")
    assert all_offsets(third) == [o for o in range(end) if o != lost]
    third.close()


def test_replay_from_the_log_end_still_checks_the_active_tail(log_dir: str) -> None:
    """After a clean shutdown nothing is CRC-checked at the open; a replay from the log end
    (a shard whose snapshot covers the log) reads no batch, but the torn tail of the active
    segment is still found and cut, as a replay from an earlier offset would."""
    log = build(log_dir)
    path, end = log.segments[-1].log_path, log.log_end_offset
    log.close()
    damage_tail_records(path)

    again = PartitionLog.open(log_dir, CONFIG, clean_shutdown=True)
    assert again.log_end_offset == end and again.recovery_report.clean
    assert list(again.iter_batches(end)) == []
    assert again.recovery_report.bytes_truncated > 0
    assert again.log_end_offset == end - 1
    assert all_offsets(again) == list(range(end - 1))
    again.close()


def test_replay_from_the_log_end_of_an_intact_log_reads_nothing(log_dir: str) -> None:
    log = build(log_dir)
    end = log.log_end_offset
    log.close()
    again = PartitionLog.open(log_dir, CONFIG, clean_shutdown=True)
    assert list(again.iter_batches(end)) == []
    assert again.recovery_report.clean and again.log_end_offset == end
    again.close()


def damage_tail_records(path: str) -> None:
    """Garbage over the records of the segment's last batch, its header left whole: only
    a CRC check finds it (the header walk of a clean open does not)."""
    fd = os.open(path, os.O_RDWR)
    try:
        *_, (last, _) = iter_file_batches(OS_FILE_IO, fd, 0, os.fstat(fd).st_size)
        os.pwrite(fd, b"\xff" * 16, last + HEADER_SIZE)
    finally:
        os.close(fd)
