"""The partition log under injected disk faults: every append is all or nothing.

Each case arms a `FaultInjectingFileIO` rule, checks the append fails with
`KafkaStorageError` and leaves the file exactly as it was, then clears the fault and checks
the log serves again without a restart and reopens clean.
"""

from __future__ import annotations

import errno
import os

import pytest
from storage_helpers import make_batch

from groupcoord.logformat.batch import iter_batches, validate
from groupcoord.storage.config import KafkaStorageError, LogConfig
from groupcoord.storage.faults import FaultInjectingFileIO, FaultRule
from groupcoord.storage.log import PartitionLog


def open_log(log_dir: str, io: FaultInjectingFileIO, **cfg: object) -> PartitionLog:
    return PartitionLog.open(log_dir, LogConfig(**cfg), io=io)  # type: ignore[arg-type]


def offsets(log: PartitionLog) -> list[int]:
    out = []
    for seg in log.segments:
        data = seg.read(0, 1 << 24, None)
        out += [validate(v).base_offset for _, v in iter_batches(data)]
    return out


@pytest.mark.parametrize("rule", [
    FaultRule("write", errno.ENOSPC, after=3),
    FaultRule("write", errno.EIO, after=3),
    FaultRule("write", errno.ENOSPC, after=3, short=True, times=2),
], ids=["enospc-4th-write", "eio-4th-write", "short-4th-write"])
def test_failed_write_leaves_nothing_behind(log_dir: str, rule: FaultRule) -> None:
    io = FaultInjectingFileIO()
    log = open_log(log_dir, io)
    io.add(rule)
    for _ in range(3):
        log.append(make_batch())
    size = log.active.size
    with pytest.raises(KafkaStorageError):
        log.append(make_batch(value_size=500))
    assert os.path.getsize(log.active.log_path) == size and log.log_end_offset == 3
    assert io.fired and io.fired[0].path.endswith(".log")
    assert log.append(make_batch()).base_offset == 3
    log.close()
    again = open_log(log_dir, FaultInjectingFileIO())
    assert again.recovery_report.clean and offsets(again) == [0, 1, 2, 3]
    again.close()


def test_torn_write_that_cannot_be_cut_blocks_appends_until_repaired(log_dir: str) -> None:
    io = FaultInjectingFileIO()
    log = open_log(log_dir, io)
    log.append(make_batch())
    io.add(FaultRule("write", errno.ENOSPC, short=True, times=2))
    io.add(FaultRule("truncate", errno.EIO, times=None))
    with pytest.raises(KafkaStorageError):
        log.append(make_batch(value_size=400))
    torn = os.path.getsize(log.active.log_path)
    assert torn > log.active.size  # half a batch the disk would not let us remove
    with pytest.raises(KafkaStorageError, match="torn write"):
        log.append(make_batch())
    assert os.path.getsize(log.active.log_path) == torn  # nothing written behind it
    io.clear()
    assert log.append(make_batch()).base_offset == 1
    assert offsets(log) == [0, 1]
    log.close()


def test_failed_fsync_raises_and_keeps_the_recovery_point(log_dir: str) -> None:
    io = FaultInjectingFileIO()
    log = open_log(log_dir, io)
    log.append(make_batch())
    log.flush()
    log.append(make_batch())
    io.add(FaultRule("fsync", errno.EIO))
    with pytest.raises(KafkaStorageError):
        log.flush()
    assert log.recovery_point == 1
    log.truncate_to(1)  # what the broker does with an append whose fsync failed
    assert log.log_end_offset == 1 and log.append(make_batch()).base_offset == 1
    log.close()


def test_failed_roll_keeps_the_active_segment(log_dir: str) -> None:
    io = FaultInjectingFileIO()
    log = open_log(log_dir, io, segment_bytes=300)
    log.append(make_batch(value_size=200))
    io.add(FaultRule("fsync", errno.EIO))
    with pytest.raises(KafkaStorageError, match="rolling"):
        log.append(make_batch(value_size=200))
    assert len(log.segments) == 1 and log.log_end_offset == 1
    assert log.append(make_batch(value_size=200)).base_offset == 1
    assert len(log.segments) == 2
    log.close()


def test_index_write_failures_never_fail_an_append(log_dir: str) -> None:
    io = FaultInjectingFileIO()
    log = open_log(log_dir, io, index_interval_bytes=1)
    io.add(FaultRule("write", errno.ENOSPC, suffix="index", times=None))
    for _ in range(20):
        log.append(make_batch())
    assert not os.path.exists(log.active.offset_index.path)
    assert log.read(7, 1 << 20) and offsets(log) == list(range(20))
    io.clear()
    log.roll()
    log.close()
    again = open_log(log_dir, FaultInjectingFileIO(), index_interval_bytes=1)
    assert offsets(again) == list(range(20))
    assert again.read(7, 1 << 20)[:8] == (7).to_bytes(8, "big")
    again.close()
