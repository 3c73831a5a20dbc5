"""A data dir in memory: `MemoryFileIO` keeps POSIX file semantics (descriptors follow
their file through renames, appends, positional writes, truncation, directory listing and
removal), and the storage code above the seam runs unchanged on it: logs roll, recover
after a reopen, compact and are deleted, with nothing written to any disk."""

from __future__ import annotations

import errno
import os

import pytest
from storage_helpers import make_batch

from groupcoord.logformat.batch import build_batch, decode_records, validate
from groupcoord.storage.compaction import compact
from groupcoord.storage.config import LogConfig
from groupcoord.storage.manager import LogManager
from groupcoord.storage.memory_io import MEMORY_ROOT, MemoryFileIO, memory_data_dir

RW_CREATE = os.O_RDWR | os.O_CREAT


def test_files_behave_as_on_posix() -> None:
    io = MemoryFileIO()
    io.makedirs("/d/sub")
    assert io.isdir("/d") and io.isdir("/d/sub")
    fd = io.open("/d/a.log", RW_CREATE | os.O_APPEND)
    io.write_all(fd, b"hello ")
    io.write_all(fd, b"world")
    assert io.pwrite(fd, b"W", 6) == 1  # appends do not move a positional write
    assert io.pread(fd, 5, 6) == b"World" and io.size(fd) == 11
    io.ftruncate(fd, 5)
    assert io.read_bytes("/d/a.log") == b"hello"
    # A renamed file keeps its open descriptor; the old name is gone.
    io.replace("/d/a.log", "/d/b.log")
    io.write_all(fd, b"!")
    assert io.read_bytes("/d/b.log") == b"hello!" and not io.exists("/d/a.log")
    io.unlink("/d/b.log")
    assert io.pread(fd, 6, 0) == b"hello!"  # unlinked but open, as on POSIX
    io.close(fd)
    assert sorted(io.listdir("/d")) == ["sub"]
    with pytest.raises(FileNotFoundError):
        io.read_bytes("/d/b.log")
    with pytest.raises(OSError) as missing:
        io.open("/nowhere/x", RW_CREATE)
    assert missing.value.errno == errno.ENOENT
    with pytest.raises(OSError) as bad:
        io.pread(fd, 1, 0)
    assert bad.value.errno == errno.EBADF


def test_directories_rename_and_remove_with_their_files() -> None:
    io = MemoryFileIO()
    io.makedirs("/data/t-0")
    io.replace_file("/data/t-0/x", b"1")
    io.replace("/data/t-0", "/data/t-0.gone-delete")
    assert io.listdir("/data") == ["t-0.gone-delete"]
    assert io.read_bytes("/data/t-0.gone-delete/x") == b"1"
    io.rmtree("/data/t-0.gone-delete")
    assert io.listdir("/data") == [] and not io.exists("/data/t-0.gone-delete/x")


def _values(manager: LogManager, topic: str) -> list[bytes | None]:
    log = manager.get(topic, 0)
    assert log is not None
    out = []
    for view in log.iter_batches():
        validate(view)
        out.extend(rec.value for rec in decode_records(view))
    return out


def test_logs_roll_reopen_compact_and_delete_in_memory() -> None:
    io = MemoryFileIO()
    data_dir = memory_data_dir()
    manager = LogManager(data_dir, LogConfig(segment_bytes=2000), io=io)
    plog = manager.get_or_create("orders", 0, b"\x01" * 16)
    for _ in range(30):
        plog.append(make_batch(3, value_size=50))
    assert len(plog.segments) > 1  # rolled
    compacted = manager.get_or_create("compacted", 0, b"\x02" * 16,
                                      {"cleanup.policy": "compact", "segment.bytes": 1000})
    for i in range(60):
        compacted.append(build_batch([(b"key-%d" % (i % 3), b"v%d" % i, [], 1000 + i)]))
    expected = _values(manager, "orders")
    manager.close()

    # A new manager over the same memory finds everything, cleanly shut down.
    again = LogManager(data_dir, LogConfig(segment_bytes=2000), io=io,
                       topic_configs={"compacted": {"cleanup.policy": "compact",
                                                    "segment.bytes": 1000}})
    reports = again.load_all()
    assert len(reports) == 2
    assert _values(again, "orders") == expected and len(expected) == 90
    log = again.get("compacted", 0)
    assert log is not None
    result = compact(log)
    assert result.records_removed > 0
    assert _values(again, "compacted")[-3:] == [b"v57", b"v58", b"v59"]
    assert again.delete_topic("orders") == 1
    assert sorted(n for n in io.listdir(data_dir) if "orders" in n) == []
    again.close()
    assert not os.path.exists(MEMORY_ROOT)


def test_the_log_cleaner_cleans_memory_logs_in_process() -> None:
    import asyncio

    from groupcoord.server.log_cleaner import LogCleaner
    from groupcoord.storage.compaction import apply_cleaned, plan_cleaning

    io = MemoryFileIO()
    manager = LogManager(memory_data_dir(), io=io, topic_configs={
        "c": {"cleanup.policy": "compact", "segment.bytes": 1000}})
    log = manager.get_or_create("c", 0, b"\x03" * 16)
    for i in range(60):
        log.append(build_batch([(b"key-%d" % (i % 3), b"v%d" % i, [], 1000 + i)]))
    job = plan_cleaning(log)
    # No worker process could see these files: the cleaner runs the job itself.
    outcome = asyncio.run(LogCleaner(io).clean(job))
    assert apply_cleaned(log, job, outcome).records_removed > 0
    manager.close()
