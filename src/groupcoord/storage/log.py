"""A partition's log: ordered segments, offset assignment, reads, roll and retention.

Mirrors ``kafka.log.UnifiedLog`` / ``LocalLog`` (single replica, no tiered storage).

Rules kept here:
- Produce bytes are stored as the client sent them: each batch is validated (magic, length,
  CRC, offset range) and only the fields outside the records are rewritten in a copy
  (base offset, partition leader epoch, and for LogAppendTime the max timestamp and CRC).
- An append is all or nothing: a failed or short write is cut off again before the
  ``KafkaStorageError`` is raised, and an fsync that fails raises it too (the caller then
  removes the unacknowledged batch with ``truncate_to``); the disk's errors never leave
  bytes behind that a later append would be written after.
- An append is a single write to the active segment; the segment rolls before the write if
  it would exceed ``segment_bytes``, is older than ``segment_ms``, its index is full, or the
  new offsets no longer fit an int32 relative to its base.
- Reads return whole batches from one segment, starting with the batch containing the
  requested offset, found through the in-memory index (``LocalLog.read``). They stop before
  damaged bytes, and an offset the damage may hold raises ``CorruptBatchError``
  (``LogSegment.find_batch``): never a silent move to the next segment.
- Retention removes whole segments, oldest first, never the active one, and moves
  ``log_start_offset`` forward (``UnifiedLog.deleteOldSegments``).
- Recovery on open lives in ``storage.recovery``.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Self

from groupcoord.logformat.batch import (
    LOG_APPEND_TIME,
    BatchHeader,
    decode_records,
    parse_header,
    validate,
)
from groupcoord.logformat.record import CorruptRecordError
from groupcoord.storage.appending import PreparedAppend, prepare_append
from groupcoord.storage.config import (
    AppendInfo,
    CorruptBatchError,
    InvalidRecordError,
    KafkaStorageError,
    LogConfig,
    OffsetOutOfRangeError,
    RecoveryReport,
)
from groupcoord.storage.fileio import OS_FILE_IO, FileIO
from groupcoord.storage.metadata import read_partition_metadata, write_partition_metadata
from groupcoord.storage.partition_store import LogSnapshot, require_end_offset
from groupcoord.storage.segment import LogSegment, iter_file_batches

_INT32_MAX = 0x7FFFFFFF
_EMPTY = memoryview(b"")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class PartitionLog:
    """The segments of one ``<topic>-<partition>`` directory."""

    def __init__(self, path: str, config: LogConfig, segments: list[LogSegment],
                 log_start_offset: int, io: FileIO = OS_FILE_IO) -> None:
        self.path = path
        self.config = config
        self.io = io
        self.segments = segments
        self._bases = [s.base_offset for s in segments]
        self.log_start_offset = log_start_offset
        self.recovery_report = RecoveryReport(path)
        self.recovery_point = self.log_end_offset
        self.topic_id: bytes | None = None
        self.closed = False

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str, config: LogConfig | None = None, *,
             log_start_offset: int = 0, recovery_point: int | None = None,
             now_ms: int | None = None, topic_id: bytes | None = None,
             io: FileIO = OS_FILE_IO, clean_shutdown: bool = False) -> Self:
        """Open or create the log at ``path``, recovering it; see ``recovery_report``.

        Only segments holding offsets at or past ``recovery_point`` (default: the last
        segment) are CRC-checked, none after a ``clean_shutdown``. A given ``topic_id`` is
        written to ``partition.metadata``.
        """
        from groupcoord.storage.recovery import load_segments

        cfg = config or LogConfig()
        io.makedirs(path)
        stored_id = read_partition_metadata(path, io)
        if topic_id is not None and stored_id != topic_id:
            write_partition_metadata(path, topic_id, io)
            stored_id = topic_id
        segments, report = load_segments(path, cfg, log_start_offset, recovery_point,
                                         _now_ms() if now_ms is None else now_ms, io,
                                         clean_shutdown)
        log = cls(path, cfg, segments, max(log_start_offset, segments[0].base_offset), io)
        log.active.open_for_append()
        log.topic_id = stored_id
        report.log_start_offset = log.log_start_offset
        report.log_end_offset = log.log_end_offset
        log.recovery_report = report
        return log

    # -- properties ------------------------------------------------------------------------

    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    # -- appending -------------------------------------------------------------------------

    # What serializes the appends of a log whose append awaits (``append_async``) with the
    # checks that must see the previous one's outcome (producer state). A file log's append
    # never yields to the loop, so it needs none.
    append_lock: AbstractAsyncContextManager[None] = nullcontext()
    # Whether ``append_async`` leaves the loop (and so yields to other tasks) while it writes.
    writes_off_loop = False

    def append(self, data: bytes | bytearray | memoryview, *,
               expected_end_offset: int | None = None, assign_offsets: bool = True,
               now_ms: int | None = None, leader_epoch: int | None = None,
               allow_control: bool = False, trusted: bool = False) -> AppendInfo:
        """Validate and append one or more whole batches (``storage.appending``).

        A non-None ``expected_end_offset`` other than the log end offset raises
        ``AppendPreconditionFailed`` before anything is written.
        """
        return self.append_prepared(self.prepare(
            data, expected_end_offset=expected_end_offset, assign_offsets=assign_offsets,
            now_ms=now_ms, leader_epoch=leader_epoch, allow_control=allow_control,
            trusted=trusted))

    async def append_async(self, data: bytes | bytearray | memoryview, *,
                           expected_end_offset: int | None = None, now_ms: int | None = None,
                           leader_epoch: int | None = None, allow_control: bool = False,
                           trusted: bool = False) -> AppendInfo:
        """``append``, for callers on the event loop holding ``append_lock``: a file log
        appends at once, without yielding; a log whose writes leave the loop awaits them."""
        return self.append(data, expected_end_offset=expected_end_offset, now_ms=now_ms,
                           leader_epoch=leader_epoch, allow_control=allow_control,
                           trusted=trusted)

    def prepare(self, data: bytes | bytearray | memoryview, *,
                expected_end_offset: int | None = None, assign_offsets: bool = True,
                now_ms: int | None = None, leader_epoch: int | None = None,
                allow_control: bool = False, trusted: bool = False) -> PreparedAppend:
        """``append``'s batches, validated and stamped for this log's end, nothing stored."""
        require_end_offset(expected_end_offset, self.log_end_offset)
        now = _now_ms() if now_ms is None else now_ms
        return prepare_append(
            data, self.config, self.log_end_offset, now, assign_offsets=assign_offsets,
            leader_epoch=leader_epoch, allow_control=allow_control, trusted=trusted)

    def append_prepared(self, prepared: PreparedAppend) -> AppendInfo:
        """Store batches already prepared (``storage.appending``) for this log's end, as
        they are."""
        buf, headers = prepared.buf, prepared.headers
        if headers[0].base_offset < self.log_end_offset:
            raise InvalidRecordError(f"batch offset {headers[0].base_offset} below log end "
                                     f"offset {self.log_end_offset}")
        now = _now_ms() if prepared.now_ms < 0 else prepared.now_ms
        self.active.repair_torn_tail()
        self._maybe_roll(len(buf), headers[0].base_offset, headers[-1].last_offset, now)
        self.active.append(buf, headers)
        return prepared.info(self.log_start_offset)

    def _maybe_roll(self, size: int, base_offset: int, last_offset: int, now: int) -> None:
        seg = self.active
        if seg.size == 0:
            if seg.base_offset == base_offset:
                return
            # An empty active segment at the wrong base (e.g. after DeleteRecords past the
            # end) is replaced rather than kept with offsets it cannot index.
        elif not (
            seg.size + size > self.config.segment_bytes
            or now - seg.created_ms > self.config.segment_ms
            or last_offset - seg.base_offset > _INT32_MAX
            or len(seg.offset_index.offsets) * 8 >= self.config.segment_index_bytes
        ):
            return
        self.roll(base_offset, now)

    def roll(self, base_offset: int | None = None, now_ms: int | None = None) -> LogSegment:
        """Close the active segment for appends and start a new one."""
        base = self.log_end_offset if base_offset is None else base_offset
        old = self.active
        try:
            if old.size:
                old.flush()  # before anything changes, so a failed fsync leaves it active
            seg = LogSegment(self.path, base, self.config.index_interval_bytes, self.io)
            self.io.fsync_dir(self.path)  # make the new segment's directory entry durable
        except OSError as exc:
            raise KafkaStorageError(f"rolling {self.path} at offset {base} failed: {exc}") from exc
        if old.size == 0:
            old.delete()
            self.segments.pop()
            self._bases.pop()
        else:
            old.on_become_inactive()
        seg.next_offset = base
        seg.created_ms = _now_ms() if now_ms is None else now_ms
        seg.open_for_append()
        self.segments.append(seg)
        self._bases.append(base)
        return seg

    # -- reading ---------------------------------------------------------------------------

    def _segment_index(self, offset: int) -> int:
        return max(bisect_right(self._bases, offset) - 1, 0)

    def read(self, offset: int, max_bytes: int,
             max_offset: int | None = None) -> memoryview:
        """Whole batches starting with the one containing ``offset`` (``LocalLog.read``).

        At most ``max_bytes`` unless the first batch alone is larger (then it comes whole);
        batches with base offset >= ``max_offset`` (e.g. the high watermark) are left out.
        """
        found = self.read_range(offset, max_bytes, max_offset)
        if found is None or not found[2]:
            return _EMPTY
        seg, position, length = found
        return memoryview(self.io.pread(seg.fd, length, position))

    def read_range(self, offset: int, max_bytes: int, max_offset: int | None = None
                   ) -> tuple[LogSegment, int, int] | None:
        """``(segment, position, length)`` that ``read`` would return, for ``sendfile``.

        Valid until the next retention, truncation or compaction of this log; call it from
        the thread that owns the log.
        """
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside [{self.log_start_offset}, {leo}]")
        if offset == leo or (max_offset is not None and offset >= max_offset):
            return None
        for i in range(self._segment_index(offset), len(self.segments)):
            seg = self.segments[i]
            found = seg.find_batch(offset)
            if found is not None:
                return seg, found[0], seg.locate(found[0], max_bytes, max_offset)
        return None

    def iter_batch_headers(self, from_offset: int | None = None) -> Iterator[BatchHeader]:
        """Headers of every batch from the one containing ``from_offset``; no decompression."""
        start = self.log_start_offset if from_offset is None else from_offset
        for i in range(self._segment_index(start), len(self.segments)):
            seg = self.segments[i]
            found = seg.find_batch(start)
            if found is None:
                continue
            for _, view in iter_file_batches(self.io, seg.fd, found[0], seg.size):
                yield parse_header(view)

    def iter_batches(self, from_offset: int | None = None) -> Iterator[memoryview]:
        """Every stored batch from the log start (or from the batch holding ``from_offset``,
        found through the offset index), CRC-checked (the replay of internal topics).

        Closed segments are not checked at start-up after a clean shutdown, as in Kafka; a
        replay reads every byte anyway, so it checks as it goes, and a damaged segment is
        repaired on the spot (``LogSegment.recover``: damage set aside, every valid batch
        kept) and read on from the first offset not yet returned.
        """
        start = self.log_start_offset
        if from_offset is not None:
            start = max(start, from_offset)
        repaired: set[int] = set()
        i = self._segment_index(start)
        while i < len(self.segments):
            seg = self.segments[i]
            end = 0
            damaged = False
            if seg is self.active and start >= seg.next_offset > seg.base_offset:
                # Nothing stored from `start` (a snapshot covers the log): the walk checks
                # the tail from the last index entry, as the open found the end, not every
                # batch of the segment to return none.
                first = seg.offset_index.lookup(start)
            else:
                try:
                    found = seg.find_batch(start) if start > seg.base_offset else None
                except CorruptBatchError:
                    found = None  # walked from the start below, which finds and repairs it
                first = found[0] if found is not None else 0
            for pos, view in iter_file_batches(self.io, seg.fd, first, seg.size):
                try:
                    header = validate(view)
                except CorruptRecordError:
                    damaged = True
                    break
                end = pos + header.size
                if header.last_offset < start:
                    continue
                if header.base_offset < start and start > self.log_start_offset:
                    damaged = True  # offsets went backwards: not a batch this log wrote
                    break
                start = header.last_offset + 1
                yield view
            if (damaged or (end or first) != seg.size) and seg.base_offset not in repaired:
                repaired.add(seg.base_offset)
                self._repair(seg, last=seg is self.active)
                continue
            i += 1

    def _repair(self, seg: LogSegment, last: bool) -> None:
        from groupcoord.storage.recovery import report_segment_repair

        result = seg.recover(verify=True, save_tail=not last)
        report_segment_repair(self.recovery_report, seg, result)
        if last:
            seg.open_for_append()
        else:
            seg.offset_index.close()
            seg.time_index.close()

    def snapshot(self) -> LogSnapshot:
        """The log's offsets and its batches from the log start (``iter_batches``)."""
        return LogSnapshot(self.log_start_offset, self.log_end_offset, self.recovery_point,
                           b"".join(self.iter_batches()))

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """First offset whose timestamp is >= ``timestamp`` (ListOffsets), as (offset, ts).

        -1 (latest) and -2 (earliest) give the log end/start offset with timestamp -1;
        -3 (max timestamp) gives the last offset of the batch holding the largest timestamp.
        """
        if timestamp == -1:
            return self.log_end_offset, -1
        if timestamp == -2:
            return self.log_start_offset, -1
        if timestamp == -3:
            best = max(self.segments, key=lambda s: s.max_timestamp)
            if best.max_timestamp < 0:
                return None
            return max(best.offset_of_max_timestamp, self.log_start_offset), best.max_timestamp
        for seg in self.segments:
            if seg.max_timestamp >= timestamp or seg is self.active:
                found = self._search_segment(seg, timestamp)
                if found is not None:
                    return found
        return None

    def _search_segment(self, seg: LogSegment, timestamp: int) -> tuple[int, int] | None:
        start_offset = max(seg.time_index.lookup(timestamp), self.log_start_offset)
        # Batch by batch through `find_batch`, whose walk checks each frame: damage on the
        # way is a `CorruptBatchError`, never a silent end of the search.
        found = seg.find_batch(start_offset)
        while found is not None:
            position, header = found
            if header.max_timestamp >= timestamp and header.last_offset >= self.log_start_offset:
                view = memoryview(self.io.pread(seg.fd, header.size, position))
                try:
                    records = decode_records(view)
                except CorruptRecordError as exc:
                    raise CorruptBatchError(f"{seg.log_path}: batch at byte {position}: {exc}",
                                            header.base_offset) from exc
                for rec in records:
                    offset = header.base_offset + rec.offset_delta
                    ts = (header.max_timestamp if header.timestamp_type == LOG_APPEND_TIME
                          else header.base_timestamp + rec.timestamp_delta)
                    if ts >= timestamp and offset >= start_offset:
                        return offset, ts
            found = seg.find_batch(header.last_offset + 1, start=position + header.size)
        return None

    # -- retention and truncation ------------------------------------------------------

    def delete_expired(self, now_ms: int | None = None) -> int:
        """Delete whole segments past retention.ms / retention.bytes, or wholly below the log
        start offset; return how many were deleted.

        As Kafka's `UnifiedLog.deletableSegments`, the active segment is one of them once it
        breaches retention and holds a record: the log rolls a new, empty segment at its end
        first (a log always keeps one) and its start moves to its end. Only an empty active
        segment is never deleted (it would only be made again)."""
        now = _now_ms() if now_ms is None else now_ms
        cfg = self.config
        excess = self.size - cfg.retention_bytes if cfg.retention_bytes >= 0 else 0
        deleted = 0
        while self.segments:
            seg = self.segments[0]
            last = len(self.segments) == 1
            if last and seg.size == 0:
                break
            below_start = not last and self.segments[1].base_offset <= self.log_start_offset
            too_old = cfg.retention_ms >= 0 and now - seg.largest_timestamp > cfg.retention_ms
            too_big = excess - seg.size >= 0 and cfg.retention_bytes >= 0
            if not (below_start or too_old or too_big):
                break
            excess -= seg.size
            if last:
                self.roll(self.log_end_offset, now)
            self._delete_first_segment()
            deleted += 1
        return deleted

    def _delete_first_segment(self) -> None:
        seg = self.segments.pop(0)
        self._bases.pop(0)
        seg.delete()
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to ``offset``; return the new start."""
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} beyond log end offset {self.log_end_offset}")
        self.log_start_offset = max(self.log_start_offset, offset)
        while len(self.segments) > 1 and self.segments[1].base_offset <= self.log_start_offset:
            self._delete_first_segment()
        if self.log_start_offset == self.log_end_offset and self.active.size:
            self.roll(self.log_start_offset)
            while len(self.segments) > 1:
                self._delete_first_segment()
        return self.log_start_offset

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or after ``offset`` (which should be a batch boundary)."""
        if offset >= self.log_end_offset:
            return
        while len(self.segments) > 1 and self.active.base_offset >= offset:
            self.segments.pop().delete()
            self._bases.pop()
        seg = self.active
        seg.offset_index.close()
        seg.time_index.close()
        if seg.base_offset >= offset:
            seg.delete()
            fresh = LogSegment(self.path, offset, self.config.index_interval_bytes, self.io)
            fresh.next_offset = offset
            self.segments[-1] = fresh
            self._bases[-1] = offset
            self.log_start_offset = offset
        else:
            seg.truncate_to(offset)
        self.active.open_for_append()
        self.recovery_point = min(self.recovery_point, self.log_end_offset)

    # -- durability ------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync every segment written since the last flush; advance the recovery point.

        ``KafkaStorageError`` if the disk refuses: what was written since the last flush
        may not be durable, and the recovery point stays where it was.
        """
        end = self.log_end_offset
        try:
            for seg in self.segments:
                seg.flush()
        except OSError as exc:
            raise KafkaStorageError(f"fsync of {self.path} failed: {exc}") from exc
        self.recovery_point = end

    def close(self) -> None:
        """Flush and close every file; the log object is unusable afterwards."""
        if self.closed:
            return
        try:
            self.flush()
        except KafkaStorageError:
            pass  # the recovery point stays behind, so the next load checks these bytes
        for seg in self.segments:
            seg.close()
        self.closed = True
