"""One log segment: a ``.log`` file of record batches plus its ``.index``/``.timeindex``.

Mirrors ``org.apache.kafka.storage.internals.log.LogSegment``.

Rules kept here:
- The log file stays open for the segment's life; an append is one write of the
  already-validated batch bytes (through the injected ``FileIO``), reads are positional (``pread``) so they share the page cache and
  never move a file position another reader depends on.
- Index entries are added as in ``LogSegment.append``: once more than
  ``index_interval_bytes`` were written since the last entry, the next batch gets an
  offset-index entry (its last offset -> its position) and a time-index entry (largest
  timestamp so far -> its offset).
- A batch is located by an in-memory index lookup and then a short forward scan of headers;
  nothing scans a segment from its start on the read path.
- Reads check every frame they walk over once (``damage.check_frame``; ``checked_to`` marks
  the checked prefix, which bytes this process wrote or recovered belong to): a read stops
  before a damaged frame, a fetch of an offset the damage may hold raises
  ``CorruptBatchError``, and the batches after the damage stay readable. Damage is an
  error, never a silent skip to the next segment.
- ``recover`` re-validates every batch (CRC, magic, offsets ascending) and rebuilds both
  indexes, like ``LogSegment.recover``; unlike it, invalid bytes followed by valid batches
  are cut out and set aside (``storage.damage``) rather than taking the valid batches with
  them, and only an invalid tail is truncated.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

from groupcoord.logformat.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    PREFIX_STRUCT,
    BatchHeader,
    parse_header,
    validate,
)
from groupcoord.logformat.record import CorruptRecordError
from groupcoord.storage.config import CorruptBatchError, KafkaStorageError
from groupcoord.storage.damage import (
    FRAME_CHECK_BYTES,
    DamagedRange,
    check_frame,
    find_next_batch,
    log_unreadable,
    rewrite_without,
    save_aside,
)
from groupcoord.storage.fileio import OS_FILE_IO, FileIO
from groupcoord.storage.index import IndexCorruptError, OffsetIndex, TimeIndex
from groupcoord.storage.txn_index import TransactionIndex

_SCAN_CHUNK = 1 << 20
_HEADER_PEEK = 16 * 1024


def segment_name(base_offset: int) -> str:
    """Kafka's file name stem: the base offset as 20 zero-padded digits."""
    return f"{base_offset:020d}"


@dataclass
class SegmentRecovery:
    """What ``LogSegment.recover`` found: valid end, what was cut off behind it, and the
    damaged ranges cut out between valid batches."""

    valid_bytes: int
    truncated_bytes: int
    batches_dropped: int
    damaged: list[DamagedRange] = field(default_factory=list)


def iter_file_batches(io: FileIO, fd: int, start: int, end: int
                      ) -> Iterator[tuple[int, memoryview]]:
    """Yield ``(position, batch view)`` for whole batches in ``fd[start:end]``.

    Stops silently at a partial tail or an impossible length; the caller compares the end
    of the last yielded batch with ``end`` to see what was left.
    """
    pos = start
    while pos < end:
        chunk = memoryview(io.pread(fd, min(_SCAN_CHUNK, end - pos), pos))
        off = 0
        while len(chunk) - off >= LOG_OVERHEAD:
            _, length = PREFIX_STRUCT.unpack_from(chunk, off)
            if length < MIN_BATCH_LENGTH:
                return
            size = length + LOG_OVERHEAD
            if off + size > len(chunk):
                break
            yield pos + off, chunk[off : off + size]
            off += size
        if off == 0:  # one batch larger than the chunk, or a torn tail
            if len(chunk) < LOG_OVERHEAD or pos + size > end:
                return
            yield pos, memoryview(io.pread(fd, size, pos))
            off = size
        pos += off


class LogSegment:
    """A segment file with its indexes, open for reads and (if active) appends."""

    def __init__(self, directory: str, base_offset: int, index_interval_bytes: int,
                 io: FileIO = OS_FILE_IO) -> None:
        stem = os.path.join(directory, segment_name(base_offset))
        self.base_offset = base_offset
        self.log_path = stem + ".log"
        self.index_interval_bytes = index_interval_bytes
        self.io = io
        self.offset_index = OffsetIndex(stem + ".index", base_offset, io)
        self.time_index = TimeIndex(stem + ".timeindex", base_offset, io)
        self.txn_index = TransactionIndex(stem + ".txnindex", base_offset, io)
        self.fd = io.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = io.size(self.fd)
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.bytes_since_last_index_entry = 0
        self.first_batch_timestamp: int | None = None
        self.created_ms = io.mtime_ms(self.fd)
        self.dirty = False
        # Set when a failed append could not be undone: the file holds bytes past ``size``
        # that must be cut before anything else is written behind them.
        self.torn_tail = False
        # Frames before ``checked_to`` are known good, the next one starts at offset
        # ``checked_offset`` or later; the damaged ranges reads met, by position.
        self.checked_to = 0
        self.checked_offset = base_offset
        self.unreadable: dict[int, DamagedRange] = {}

    # -- loading -----------------------------------------------------------------------

    def load_indexes(self) -> bool:
        """Load index files; False if they are missing or unusable (rebuild needed)."""
        try:
            self.offset_index.load(self.size)
            self.time_index.load()
        except (OSError, IndexCorruptError):
            return False
        if self.time_index.timestamps:
            self.max_timestamp = self.time_index.timestamps[-1]
            self.offset_of_max_timestamp = self.base_offset + self.time_index.offsets[-1]
        if self.size:
            first = self.read_header(0)
            if first is not None:
                self.first_batch_timestamp = first.max_timestamp
        return True

    def find_end(self) -> bool:
        """After a clean shutdown: the next offset and the index bookkeeping from the last
        index entry and a header walk to the end; False if the walk does not fit the file."""
        positions = self.offset_index.positions
        pos = positions[-1] if positions else 0
        walked_from = pos
        last: BatchHeader | None = None
        while pos < self.size:
            header = self.read_header(pos)
            if header is None or header.batch_length < MIN_BATCH_LENGTH:
                return False
            last = header
            pos += header.size
        if pos != self.size:
            return False
        if last is not None:
            self.next_offset = last.last_offset + 1
        elif self.size:
            return False
        self.bytes_since_last_index_entry = self.size - walked_from
        return True

    def recover(self, verify: bool = True, resync: bool = True,
                save_tail: bool = False) -> SegmentRecovery:
        """Scan the whole file, rebuild indexes and repair what is damaged.

        Invalid bytes followed by valid batches are set aside and cut out of the file
        (``storage.damage``, with ``resync``); invalid bytes at the end are truncated, and
        with ``save_tail`` (a closed segment, where no write can have been torn) first set
        aside and reported as damage too.
        """
        damaged: list[DamagedRange] = []
        while True:
            stop = self._scan(verify)
            if stop >= self.size or not resync:
                break
            resume = find_next_batch(self.io, self.fd, stop + 1, self.size, self.next_offset)
            if resume is None:
                break
            resume_offset = self._base_offset_at(resume)
            saved = save_aside(self.fd, self.log_path, stop, resume - stop, self.io)
            damaged.append(DamagedRange(self.log_path, stop, resume - stop, self.next_offset,
                                        resume_offset, saved))
            self._cut_out(stop, resume - stop)
        valid = stop
        dropped = self.size - valid
        batches = self._count_frames(valid) if dropped else 0
        if dropped and save_tail:
            saved = save_aside(self.fd, self.log_path, valid, dropped, self.io)
            damaged.append(DamagedRange(self.log_path, valid, dropped, self.next_offset,
                                        self.next_offset, saved))
        if dropped:
            self.io.ftruncate(self.fd, valid)
            self.size = valid
        self.offset_index.rewrite()
        self.time_index.rewrite()
        self.checked_to, self.checked_offset, self.unreadable = self.size, self.next_offset, {}
        # Aborts whose markers were cut off are no longer aborts of this log.
        self.txn_index.truncate_to(self.next_offset)
        return SegmentRecovery(valid, dropped, batches, damaged)

    def _scan(self, verify: bool) -> int:
        """Index every valid batch from the start; the position of the first invalid one."""
        self.offset_index.offsets, self.offset_index.positions = [], []
        self.time_index.timestamps, self.time_index.offsets = [], []
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self.bytes_since_last_index_entry, self.first_batch_timestamp = 0, None
        self.next_offset = self.base_offset
        valid = 0
        for pos, view in iter_file_batches(self.io, self.fd, 0, self.size):
            try:
                header = validate(view) if verify else parse_header(view)
            except CorruptRecordError:
                break
            if header.base_offset < self.next_offset or header.last_offset_delta < 0:
                break
            self._track(header, pos)
            valid = pos + header.size
        return valid

    def _base_offset_at(self, position: int) -> int:
        base_offset, _ = PREFIX_STRUCT.unpack(self.io.pread(self.fd, PREFIX_STRUCT.size, position))
        return int(base_offset)

    def _cut_out(self, position: int, length: int) -> None:
        """Rewrite the file without ``length`` bytes at ``position``; reopen it."""
        rewrite_without(self.fd, self.log_path, self.size, [(position, length)], self.io)
        self.io.close(self.fd)
        self.fd = self.io.open(self.log_path, os.O_RDWR | os.O_APPEND, 0o644)
        self.size -= length

    def _count_frames(self, start: int) -> int:
        """Best-effort count of batch frames (whole or torn) from ``start`` to the end."""
        count, pos = 0, start
        while pos < self.size:
            count += 1
            prefix = self.io.pread(self.fd, LOG_OVERHEAD, pos)
            if len(prefix) < LOG_OVERHEAD:
                break
            _, length = PREFIX_STRUCT.unpack(prefix)
            if length < MIN_BATCH_LENGTH:
                break
            pos += length + LOG_OVERHEAD
        return count

    # -- writing -------------------------------------------------------------------------

    def _track(self, header: BatchHeader, position: int) -> None:
        """Account one batch at ``position``: indexes, max timestamp, next offset."""
        last = header.base_offset + header.last_offset_delta
        if self.first_batch_timestamp is None:
            self.first_batch_timestamp = header.max_timestamp
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = last
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(last, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += header.batch_length + LOG_OVERHEAD
        self.next_offset = last + 1

    def open_for_append(self) -> None:
        self.offset_index.open_for_append()
        self.time_index.open_for_append()

    def append(self, data: bytes | bytearray, headers: list[BatchHeader]) -> None:
        """Write already-validated batches and index them; all or nothing.

        A failed or short write is cut off again before the error is raised (as
        ``KafkaStorageError``), so no later append lands behind unreadable bytes.
        """
        self.repair_torn_tail()
        position = self.size
        try:
            self.io.write_all(self.fd, data)
        except OSError as exc:
            self.cut_back(position)
            raise KafkaStorageError(f"append to {self.log_path} failed: {exc}") from exc
        # Size before next_offset: a concurrent reader may then see bytes past the log end
        # offset it read (harmless, fetches are bounded by max_offset) but never a log end
        # offset whose batch is not readable yet.
        self.size = position + len(data)
        checked = self.checked_to == position
        self.dirty = True
        for header in headers:
            self._track(header, position)
            position += header.batch_length + LOG_OVERHEAD
        if checked:
            self.checked_to, self.checked_offset = self.size, self.next_offset

    def on_become_inactive(self) -> None:
        """Record the final max timestamp in the time index, as Kafka does on roll."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.offset_index.close()
        self.time_index.close()

    def cut_back(self, size: int) -> None:
        """Remove whatever a failed write left past ``size``; if even that fails, remember
        it so ``repair_torn_tail`` retries before the next write."""
        try:
            self.io.ftruncate(self.fd, size)
        except OSError:
            self.torn_tail = True
        else:
            self.torn_tail = False
        self.size = size
        if self.checked_to > size:  # the checked end is gone: check again from the start
            self.checked_to, self.checked_offset = 0, self.base_offset
        self.unreadable = {p: r for p, r in self.unreadable.items() if p < size}

    def repair_torn_tail(self) -> None:
        """Cut bytes a failed write left behind; ``KafkaStorageError`` while impossible."""
        if not self.torn_tail:
            return
        try:
            self.io.ftruncate(self.fd, self.size)
        except OSError as exc:
            raise KafkaStorageError(f"{self.log_path} still holds a torn write: {exc}") from exc
        self.torn_tail = False

    def flush(self) -> None:
        if self.dirty:
            self.io.fsync(self.fd)
            self.dirty = False
        self.txn_index.flush()

    # -- reading -------------------------------------------------------------------------

    def read_header(self, position: int) -> BatchHeader | None:
        data = self.io.pread(self.fd, HEADER_SIZE, position)
        return parse_header(data) if len(data) == HEADER_SIZE else None

    def find_batch(self, offset: int, start: int | None = None) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``.

        Each frame walked over is checked: damage is stepped over when ``offset`` lies
        past it, and ``CorruptBatchError`` when the damage may hold ``offset``.
        """
        pos = self.offset_index.lookup(offset) if start is None else start
        expected = self.base_offset
        walked = False
        block, block_at = b"", pos
        while pos < self.size:
            off = pos - block_at
            if len(block) - off < HEADER_SIZE:
                block_at, off = pos, 0
                block = self.io.pread(self.fd, min(_HEADER_PEEK, self.size - pos), pos)
            fault = (check_frame(block, off, pos, self.size, expected)[0]
                     if len(block) - off >= HEADER_SIZE else "a partial batch header")
            if fault is not None:
                if not walked and 0 < pos and pos not in self.unreadable:
                    # Damage where the index pointed: walk from the start to learn which
                    # offsets it may hold (once, the range is remembered).
                    pos, walked, block, block_at = 0, True, b"", 0
                    continue
                damage = self._unreadable_at(pos, expected, fault)
                if offset < damage.resume_offset:
                    raise CorruptBatchError(
                        f"{self.log_path}: offset {offset} lies in damaged bytes at "
                        f"{damage.position}-{damage.position + damage.length - 1}", offset)
                pos, expected = damage.position + damage.length, damage.resume_offset
                continue
            header = parse_header(block, off)
            if header.last_offset >= offset:
                return pos, header
            walked = True
            expected = header.last_offset + 1
            pos += header.size
        return None

    def _unreadable_at(self, position: int, first_offset: int, reason: str) -> DamagedRange:
        """The damaged range starting at ``position``: up to the next valid batch (found as
        recovery finds it), logged at ERROR the first time a read meets it."""
        known = self.unreadable.get(position)
        if known is not None:
            return known
        resume = find_next_batch(self.io, self.fd, position + 1, self.size, first_offset)
        end = self.size if resume is None else resume
        resume_offset = self.next_offset if resume is None else self._base_offset_at(resume)
        found = DamagedRange(self.log_path, position, end - position, first_offset,
                             max(resume_offset, first_offset))
        self.unreadable[position] = found
        log_unreadable(found, reason)
        return found

    def _first_damage(self, position: int, limit: int) -> int | None:
        """Check the frames from ``position`` (a batch start) until one reaches ``limit``;
        the position of the first damaged frame, or None. The checked prefix grows when
        the walk starts inside it, so each byte is checked once on sequential reads."""
        if limit <= self.checked_to:
            return None
        extend = position <= self.checked_to
        pos = self.checked_to if extend else position
        expected = self.checked_offset if extend else self.base_offset
        chunk, chunk_at = b"", pos
        while pos < limit:
            off = pos - chunk_at
            if len(chunk) - off < FRAME_CHECK_BYTES:
                chunk_at, off = pos, 0
                want = max(min(_SCAN_CHUNK, limit - pos), FRAME_CHECK_BYTES)
                chunk = self.io.pread(self.fd, min(want, self.size - pos), pos)
            if len(chunk) - off >= FRAME_CHECK_BYTES:
                fault, next_offset, size = check_frame(chunk, off, pos, self.size, expected)
            else:
                fault, next_offset, size = "a partial batch header", 0, 0
            if fault is not None:
                self._unreadable_at(pos, expected, fault)
                if extend:
                    self.checked_to, self.checked_offset = pos, expected
                return pos
            expected = next_offset
            pos += size
        if extend:
            self.checked_to, self.checked_offset = pos, expected
        return None

    def _end_position(self, max_offset: int | None) -> int:
        """File position where batches with base offset >= ``max_offset`` begin."""
        if max_offset is None or max_offset >= self.next_offset:
            return self.size
        found = self.find_batch(max_offset)
        if found is None:
            return self.size
        position, header = found
        return position if header.base_offset >= max_offset else position + header.size

    def locate(self, position: int, max_bytes: int, max_offset: int | None) -> int:
        """Length of the whole batches to return from ``position`` (see ``read``).

        The cut point is found from the offset index plus a short header walk, so a large
        read does not walk every batch header it returns.
        """
        end = self._end_position(max_offset)
        if position >= end:
            return 0
        limit = min(end, position + max_bytes)
        damaged = self._first_damage(position, max(limit, position + 1))
        if damaged == position:
            raise CorruptBatchError(f"{self.log_path}: no valid batch at byte {position}",
                                    self.base_offset)
        if damaged is not None and damaged < end:
            end = damaged
            limit = min(limit, end)
        if limit == end:
            return end - position
        positions = self.offset_index.positions
        i = bisect_right(positions, limit) - 1
        walk = max(positions[i], position) if i >= 0 else position
        window = self.io.pread(self.fd, limit - walk, walk)
        off = 0
        while len(window) - off >= LOG_OVERHEAD:
            _, length = PREFIX_STRUCT.unpack_from(window, off)
            if off + length + LOG_OVERHEAD > len(window):
                break
            off += length + LOG_OVERHEAD
        if walk + off > position:
            return walk + off - position
        header = self.read_header(position)  # Kafka returns a too-large first batch whole
        return min(header.size, end - position) if header is not None else 0

    def read(self, position: int, max_bytes: int, max_offset: int | None) -> memoryview:
        """Whole batches from ``position``: at most ``max_bytes`` unless the first is larger.

        Batches whose base offset is >= ``max_offset`` are not returned.
        """
        length = self.locate(position, max_bytes, max_offset)
        return memoryview(self.io.pread(self.fd, length, position) if length else b"")

    # -- truncation and lifecycle -----------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= ``offset``; return bytes removed."""
        found = self.find_batch(offset)
        if found is None:
            return 0
        position = found[0]
        removed = self.size - position
        self.cut_back(position)  # never raises: a failed cut is retried before the next write
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to_offset(offset)
        self.txn_index.truncate_to(offset)
        self.recover(verify=False)
        return removed

    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        if self.fd >= 0:
            self.io.close(self.fd)
            self.fd = -1

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.offset_index.path, self.time_index.path,
                     self.txn_index.path):
            try:
                self.io.unlink(path)
            except FileNotFoundError:
                pass

    @property
    def largest_timestamp(self) -> int:
        """For time retention: the max timestamp, or file mtime if it holds none."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return self.created_ms
