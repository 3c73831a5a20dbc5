"""Sparse offset and time indexes of one log segment, in Kafka's file format.

Mirrors ``org.apache.kafka.storage.internals.log.OffsetIndex`` (8-byte entries: int32
offset relative to the segment base, int32 file position) and ``TimeIndex`` (12-byte
entries: int64 timestamp, int32 relative offset). Both are big-endian like Kafka's.

Rules kept here:
- Entries are kept in memory (two parallel lists, searched with ``bisect``) and appended to
  the file as they are added, so a lookup never touches the disk. Kafka preallocates and
  memory-maps; we write exactly the used bytes, which Kafka also does on clean shutdown.
- Offset entries map the *last* offset of a batch to that batch's position (as
  ``LogSegment.append`` does since Kafka 3.x); lookups return the largest entry <= target.
- Time entries only grow: an entry is added only when its timestamp exceeds the last one.
- ``load`` rejects a file whose size is not a multiple of the entry size or whose entries
  are not monotonic; the caller then rebuilds from the log.
- An index is derived data: a failed write of an entry never fails the append it belongs
  to. The file is removed instead (a missing index is rebuilt from the log on load) and the
  in-memory entries stay complete; the next ``rewrite`` puts a whole file back.
"""

from __future__ import annotations

import logging
import os
import struct
from bisect import bisect_right
from collections.abc import Iterator

from groupcoord.storage.fileio import OS_FILE_IO, FileIO

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")

logger = logging.getLogger(__name__)


class IndexCorruptError(ValueError):
    """An index file cannot be trusted and must be rebuilt."""


class _IndexFile:
    """The file under an index: appends that degrade to "rebuild me" instead of failing."""

    def __init__(self, path: str, io: FileIO) -> None:
        self.path = path
        self.io = io
        self._fd = -1

    def open_for_append(self) -> None:
        self._fd = self.io.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append_entry(self, entry: bytes) -> None:
        if self._fd < 0:
            return
        try:
            self.io.write_all(self._fd, entry)
        except OSError as exc:
            # A torn entry would misalign the file: drop it and let the next load rebuild.
            logger.error("%s: index write failed (%s); the index will be rebuilt", self.path,
                         exc)
            self.close()
            self.io.unlink_quietly(self.path)

    def read_entries(self, entry: struct.Struct) -> Iterator[tuple[int, int]]:
        """The file's entries; ``IndexCorruptError`` if its size is not a whole number of
        them."""
        data = self.io.read_bytes(self.path)
        if len(data) % entry.size:
            raise IndexCorruptError(f"{self.path}: size {len(data)} not a multiple of "
                                    f"{entry.size}")
        return entry.iter_unpack(data)

    def replace_with(self, data: bytes) -> None:
        reopen = self._fd >= 0
        self.close()
        try:
            self.io.replace_file(self.path, data)
        except OSError as exc:
            logger.error("%s: index rewrite failed (%s); the index will be rebuilt", self.path,
                         exc)
            self.io.unlink_quietly(self.path)
            return
        if reopen:
            self.open_for_append()

    def close(self) -> None:
        if self._fd >= 0:
            self.io.close(self._fd)
            self._fd = -1


class OffsetIndex(_IndexFile):
    """Relative offset -> file position, sparse."""

    def __init__(self, path: str, base_offset: int, io: FileIO = OS_FILE_IO) -> None:
        super().__init__(path, io)
        self.base_offset = base_offset
        self.offsets: list[int] = []  # relative offsets
        self.positions: list[int] = []

    def load(self, log_size: int) -> None:
        """Read entries from disk; raise ``IndexCorruptError`` if inconsistent."""
        offsets: list[int] = []
        positions: list[int] = []
        for rel, pos in self.read_entries(_OFFSET_ENTRY):
            if (offsets and (rel <= offsets[-1] or pos <= positions[-1])) or pos >= log_size:
                raise IndexCorruptError(f"{self.path}: entries not monotonic or past the log")
            offsets.append(rel)
            positions.append(pos)
        self.offsets, self.positions = offsets, positions

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if self.offsets and rel <= self.offsets[-1]:
            return
        # Positions first: a concurrent reader bisects ``offsets`` and then indexes
        # ``positions``, so ``positions`` must never be the shorter list.
        self.positions.append(position)
        self.offsets.append(rel)
        self.append_entry(_OFFSET_ENTRY.pack(rel, position))

    def lookup(self, offset: int) -> int:
        """File position to start scanning from for ``offset`` (0 if before all entries)."""
        i = bisect_right(self.offsets, offset - self.base_offset)
        return self.positions[i - 1] if i else 0

    def rewrite(self) -> None:
        """Replace the file with the in-memory entries (after rebuild or truncation)."""
        self.replace_with(b"".join(_OFFSET_ENTRY.pack(o, p)
                                   for o, p in zip(self.offsets, self.positions)))

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or past ``position`` and rewrite the file."""
        keep = bisect_right(self.positions, position - 1)
        del self.offsets[keep:], self.positions[keep:]
        self.rewrite()


class TimeIndex(_IndexFile):
    """Timestamp -> relative offset, sparse and monotonic in timestamp."""

    def __init__(self, path: str, base_offset: int, io: FileIO = OS_FILE_IO) -> None:
        super().__init__(path, io)
        self.base_offset = base_offset
        self.timestamps: list[int] = []
        self.offsets: list[int] = []  # relative offsets

    def load(self) -> None:
        timestamps: list[int] = []
        offsets: list[int] = []
        for ts, rel in self.read_entries(_TIME_ENTRY):
            if timestamps and (ts < timestamps[-1] or rel < offsets[-1]):
                raise IndexCorruptError(f"{self.path}: entries not monotonic")
            if timestamps and ts == timestamps[-1]:
                continue  # Kafka may write a duplicate final entry on roll
            timestamps.append(ts)
            offsets.append(rel)
        self.timestamps, self.offsets = timestamps, offsets

    @property
    def last_timestamp(self) -> int:
        return self.timestamps[-1] if self.timestamps else -1

    def maybe_append(self, timestamp: int, offset: int) -> None:
        if self.timestamps and timestamp <= self.timestamps[-1]:
            return
        rel = offset - self.base_offset
        self.offsets.append(rel)  # before timestamps, for readers bisecting timestamps
        self.timestamps.append(timestamp)
        self.append_entry(_TIME_ENTRY.pack(timestamp, rel))

    def lookup(self, timestamp: int) -> int:
        """Offset to start scanning from: the entry with the largest timestamp < target."""
        i = bisect_right(self.timestamps, timestamp - 1)
        return self.base_offset + self.offsets[i - 1] if i else self.base_offset

    def rewrite(self) -> None:
        self.replace_with(b"".join(_TIME_ENTRY.pack(t, o)
                                   for t, o in zip(self.timestamps, self.offsets)))

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries whose offset is >= ``offset`` and rewrite the file."""
        rel = offset - self.base_offset
        keep = bisect_right(self.offsets, rel - 1)
        del self.timestamps[keep:], self.offsets[keep:]
        self.rewrite()
