"""A partition kept as a list of validated batches in memory: the ``PartitionStore``
contract without segments, indexes or a ``FileIO``.

Appends go through the same checks and offset assignment as the file log
(``storage.appending``); reads, truncation and DeleteRecords answer as
``storage.log.PartitionLog`` does for a log of one segment. Nothing survives the process;
``flush`` only moves the recovery point, which says what a snapshot has seen flushed.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator

from groupcoord.logformat.batch import BatchHeader, parse_header
from groupcoord.storage.appending import prepare_append
from groupcoord.storage.config import AppendInfo, LogConfig, OffsetOutOfRangeError
from groupcoord.storage.partition_store import LogSnapshot, require_end_offset

_EMPTY = memoryview(b"")


class InMemoryPartitionStore:
    """One partition's batches in a list, oldest first."""

    def __init__(self, config: LogConfig | None = None, *, log_start_offset: int = 0) -> None:
        self.config = config or LogConfig()
        self.log_start_offset = log_start_offset
        self.recovery_point = log_start_offset
        self._end = log_start_offset
        self._batches: list[bytes] = []
        # The last offset of each batch, for the search of the batch holding an offset.
        self._last_offsets: list[int] = []

    @classmethod
    def from_snapshot(cls, snapshot: LogSnapshot,
                      config: LogConfig | None = None) -> InMemoryPartitionStore:
        """A store holding exactly what ``snapshot`` holds (no batch re-stamped)."""
        store = cls(config, log_start_offset=snapshot.log_start_offset)
        for view in snapshot.iter_batches():
            store._keep(bytes(view), parse_header(view))
        store._end = snapshot.log_end_offset
        store.recovery_point = snapshot.recovery_point
        return store

    @property
    def log_end_offset(self) -> int:
        return self._end

    # -- appending -------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview, *,
               expected_end_offset: int | None = None, assign_offsets: bool = True,
               now_ms: int | None = None, leader_epoch: int | None = None,
               allow_control: bool = False, trusted: bool = False) -> AppendInfo:
        """Validate and append whole batches (``PartitionStore.append``)."""
        require_end_offset(expected_end_offset, self._end)
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        prepared = prepare_append(data, self.config, self._end, now,
                                  assign_offsets=assign_offsets, leader_epoch=leader_epoch,
                                  allow_control=allow_control, trusted=trusted)
        pos = 0
        for header in prepared.headers:
            self._keep(bytes(prepared.buf[pos : pos + header.size]), header)
            pos += header.size
        return prepared.info(self.log_start_offset)

    def _keep(self, batch: bytes, header: BatchHeader) -> None:
        self._batches.append(batch)
        self._last_offsets.append(header.last_offset)
        self._end = header.last_offset + 1

    # -- reading ---------------------------------------------------------------------------

    def _index_of(self, offset: int) -> int:
        """Index of the first batch whose last offset is >= ``offset``."""
        return bisect_left(self._last_offsets, offset)

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> memoryview:
        """Whole batches from the one holding ``offset`` (``PartitionStore.read``)."""
        if offset < self.log_start_offset or offset > self._end:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside [{self.log_start_offset}, {self._end}]")
        if offset == self._end or (max_offset is not None and offset >= max_offset):
            return _EMPTY
        out = bytearray()
        for i in range(self._index_of(offset), len(self._batches)):
            batch = self._batches[i]
            if max_offset is not None and parse_header(batch).base_offset >= max_offset:
                break
            if out and len(out) + len(batch) > max_bytes:
                break
            out += batch  # a first batch larger than max_bytes comes whole, as in Kafka
        return memoryview(bytes(out))

    def iter_batches(self, from_offset: int | None = None) -> Iterator[memoryview]:
        """Every batch from the log start, or from the one holding ``from_offset``."""
        start = self.log_start_offset if from_offset is None else max(self.log_start_offset,
                                                                     from_offset)
        for i in range(self._index_of(start), len(self._batches)):
            yield memoryview(self._batches[i])

    def iter_batch_headers(self, from_offset: int | None = None) -> Iterator[BatchHeader]:
        for view in self.iter_batches(from_offset):
            yield parse_header(view)

    # -- truncation and DeleteRecords ------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or after ``offset`` (``PartitionStore.truncate_to``)."""
        if offset >= self._end:
            return
        keep = self._index_of(offset)
        del self._batches[keep:]
        del self._last_offsets[keep:]
        self._end = self._last_offsets[-1] + 1 if self._last_offsets else offset
        self.log_start_offset = min(self.log_start_offset, self._end)
        self.recovery_point = min(self.recovery_point, self._end)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to ``offset``; return the new start."""
        if offset > self._end:
            raise OffsetOutOfRangeError(f"offset {offset} beyond log end offset {self._end}")
        self.log_start_offset = max(self.log_start_offset, offset)
        gone = self._index_of(self.log_start_offset)  # batches wholly below the start
        del self._batches[:gone]
        del self._last_offsets[:gone]
        return self.log_start_offset

    # -- durability and snapshots ----------------------------------------------------------

    def flush(self) -> None:
        self.recovery_point = self._end

    def snapshot(self) -> LogSnapshot:
        return LogSnapshot(self.log_start_offset, self._end, self.recovery_point,
                           b"".join(self._batches))
