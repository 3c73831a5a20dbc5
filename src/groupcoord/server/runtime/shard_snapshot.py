"""The snapshot file of a group shard: a compacted copy of its partition up to an offset.

A restart replays the snapshot and then only the log after it. The snapshot holds what the
fast loader (`fast_replay`) applies from the log up to offset X: the last record of every
offset-commit key of each run (every record of a key that had a tombstone), every other
record as it was, and every transactional batch and transaction marker whole, in the log's
own record-batch format and with each record's original log offset (records of types this
broker does not know are kept too). So loading it is the
same replay code as loading the log, and a transaction still open at X is simply replayed
pending, with its producer, until its marker comes in the tail.

The file (`coordinator.snapshot` in the partition's directory, written atomically: temp
file, fsync, rename) starts with a header naming what it covers and how to check that the
log still holds that history:

    magic "GCSNAP" | format version int16 | partition int32 | covered offset X int64 |
    base offset int64 and CRC uint32 of the log's batch ending at X |
    body length int64 | CRC-32C of the body uint32 | body: record batches

At load it is used only if it is whole (lengths and body CRC), of this format version and
partition, and the log still holds the batch ending at X with that base offset and CRC
(so the log start is at or before it and neither compaction nor truncation rewrote it);
anything else is logged and the whole log is replayed. Compaction of the range before X
does not matter: the snapshot already holds the state at X.
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from groupcoord.logformat.batch import NO_TIMESTAMP, Record, build_batch, iter_batches

if TYPE_CHECKING:
    from groupcoord.storage.partition_store import PartitionStore

log = logging.getLogger("groupcoord.coordinator")

SNAPSHOT_FILE = "coordinator.snapshot"
FORMAT_VERSION = 1
_MAGIC = b"GCSNAP"
_HEAD = struct.Struct(">6shiqqIqI")
# Records of a run go into batches of at most this many.
_RECORDS_PER_BATCH = 1000

RawRecord = tuple[int, bytes, bytes | None]
# What a snapshot holds, in log order: lists of records, or whole batches as stored.
Item = list[RawRecord] | bytes


@dataclass(frozen=True, slots=True)
class SnapshotPoint:
    """The log batch a snapshot ends with: its last offset X, base offset and CRC."""

    covered: int
    batch_base: int
    batch_crc: int


class SnapshotRejected(ValueError):
    """A snapshot file that cannot be used; the message says why."""


class SnapshotBuilder:
    """A `fast_replay.ReplaySink` keeping what is replayed, to be written as a snapshot."""

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.records = 0

    def add_records(self, records: list[RawRecord]) -> None:
        if records:
            self.items.append(records)
            self.records += len(records)

    def add_batch(self, batch: bytes) -> None:
        self.items.append(batch)
        self.records += 1


def _crc32c(data: bytes | bytearray | memoryview) -> int:
    from groupcoord.logformat.batch import compute_crc32c

    return compute_crc32c(data)


def snapshot_path(log_dir: str) -> str:
    return os.path.join(log_dir, SNAPSHOT_FILE)


def encode_snapshot(partition: int, point: SnapshotPoint, items: list[Item]) -> bytes:
    """The whole file. Pure bytes work: it runs in the writer thread."""
    body = bytearray()
    for item in items:
        if isinstance(item, bytes):
            body += item
            continue
        for start in range(0, len(item), _RECORDS_PER_BATCH):
            body += _records_batch(item[start:start + _RECORDS_PER_BATCH])
    head = _HEAD.pack(_MAGIC, FORMAT_VERSION, partition, point.covered, point.batch_base,
                      point.batch_crc, len(body), _crc32c(body))
    return head + bytes(body)


def _records_batch(records: list[RawRecord]) -> bytes:
    base = records[0][0]
    return build_batch([Record(offset - base, 0, key, value, ()) for offset, key, value
                        in records], base_offset=base, base_timestamp=NO_TIMESTAMP)


def decode_snapshot(data: bytes, partition: int) -> tuple[SnapshotPoint, list[memoryview]]:
    """The point and the batches of a snapshot file; SnapshotRejected if it is unusable."""
    if len(data) < _HEAD.size:
        raise SnapshotRejected("shorter than its header")
    magic, version, stored_partition, covered, base, crc, size, body_crc = \
        _HEAD.unpack_from(data)
    if magic != _MAGIC:
        raise SnapshotRejected("not a snapshot file")
    if version != FORMAT_VERSION:
        raise SnapshotRejected(f"format version {version}, this broker reads {FORMAT_VERSION}")
    if stored_partition != partition:
        raise SnapshotRejected(f"written for partition {stored_partition}")
    body = memoryview(data)[_HEAD.size:]
    if len(body) != size or _crc32c(body) != body_crc:
        raise SnapshotRejected("damaged (length or CRC of its body)")
    batches = [view for _, view in iter_batches(body)]
    if sum(len(v) for v in batches) != size:
        raise SnapshotRejected("damaged (a batch runs past its body)")
    return SnapshotPoint(covered, base, crc), batches


def verify_against_log(point: SnapshotPoint, plog: PartitionStore) -> None:
    """SnapshotRejected unless the log still holds the batch ending at the covered offset."""
    if plog.log_start_offset > point.batch_base:
        raise SnapshotRejected(f"the log starts at {plog.log_start_offset}, after the "
                               f"batch at {point.batch_base} it was taken at")
    header = next(iter(plog.iter_batch_headers(point.covered)), None)
    if header is None or header.base_offset != point.batch_base \
            or header.last_offset != point.covered or header.crc != point.batch_crc:
        raise SnapshotRejected(f"the log no longer holds the batch {point.batch_base}.."
                               f"{point.covered} it covers (compacted or truncated since)")


def read_snapshot_file(plog: Any, partition: int
                       ) -> tuple[SnapshotPoint, list[memoryview]] | None:
    """The snapshot beside `plog`, read and checked on its own (file and bytes work only,
    so a large one can be read on a worker thread), or None (absent, or rejected with a log
    line). `checked_against_log` then tells whether the log still fits it."""
    path = snapshot_path(plog.path)
    if not plog.io.exists(path):
        return None
    try:
        return decode_snapshot(plog.io.read_bytes(path), partition)
    except (OSError, ValueError) as exc:
        _ignore(plog, exc)
        return None


def checked_against_log(plog: Any, found: tuple[SnapshotPoint, list[memoryview]] | None
                        ) -> tuple[SnapshotPoint, list[memoryview]] | None:
    """`found` if the log still holds the batch it was taken at (a read of the log: on
    the log's thread), else None (rejected with a log line)."""
    if found is None:
        return None
    try:
        verify_against_log(found[0], plog)
    except (OSError, ValueError) as exc:
        _ignore(plog, exc)
        return None
    return found


def _ignore(plog: Any, exc: Exception) -> None:
    log.warning("ignoring the snapshot of %s (%s); replaying the whole log", plog.path, exc)


def snapshot_size(plog: Any) -> int:
    """The size of the snapshot file beside `plog`; 0 when there is none."""
    path = snapshot_path(plog.path)
    io = plog.io
    try:
        if not io.exists(path):
            return 0
        fd = io.open(path, os.O_RDONLY)
        try:
            return int(io.size(fd))
        finally:
            io.close(fd)
    except OSError:
        return 0


def covered_offset(plog: Any) -> int:
    """The offset the snapshot beside `plog` says it covers (its header only, unverified);
    -1 when there is none: to decide whether a new one is due."""
    path = snapshot_path(plog.path)
    io = plog.io
    try:
        if not io.exists(path):
            return -1
        fd = io.open(path, os.O_RDONLY)
        try:
            head = io.pread(fd, _HEAD.size, 0)
        finally:
            io.close(fd)
    except OSError:
        return -1
    if len(head) < _HEAD.size or head[:len(_MAGIC)] != _MAGIC:
        return -1
    return int(_HEAD.unpack(head)[3])


def write_snapshot(io: Any, log_dir: str, data: bytes) -> None:
    """Atomically replace the snapshot file; the temp file is removed on failure (and a
    leftover `.tmp` by the next log load)."""
    io.replace_file(snapshot_path(log_dir), data)
    io.fsync_dir(log_dir)
