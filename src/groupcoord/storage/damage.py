"""Damage inside a segment: find where valid batches resume, set the bad bytes aside.

Reads meet damage too: a segment loaded after a clean shutdown is not scanned (as in Kafka),
so its frames are checked as reads first walk over them (``check_frame``: length, magic,
offsets, fit in the file; the CRC is the client's to check, as with Kafka). A read stops
before a damaged frame, a fetch of an offset the damage may hold is an error
(``CorruptBatchError``, CORRUPT_MESSAGE on the wire), and offsets from the next valid batch
on stay readable. Each damaged range is logged at ERROR once (``log_unreadable``).

Kafka's ``LogSegment.recover`` stops at the first invalid batch and truncates there, which
turns 64 bad bytes in the middle of a segment into the loss of everything after them. Here
recovery goes on as ``kafka-dump-log`` can: from the bad position it searches forward for the
next position that holds a whole, CRC-valid batch whose base offset is not below the offsets
already seen, keeps every valid batch from there, and moves only the damaged bytes out of the
segment. A CRC32C match on a wrong position is a 1-in-4-billion accident, and the candidate
must also carry magic 2 and a length that fits the file.

Rules kept here:
- The damaged bytes are copied to ``<segment>.log.damaged-<position>`` beside the segment
  before the segment is rewritten without them, so an operator can still inspect them; a
  failure to save them is logged and does not stop recovery.
- The rewrite goes through a ``.log.swap`` file that is fsynced and renamed over the segment,
  the log cleaner's protocol, so a crash in the middle leaves either the old file or the new
  one (``storage.recovery`` finishes an interrupted swap).
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass

from groupcoord.logformat.batch import (
    HEADER_FIELDS,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
    PREFIX_STRUCT,
    validate,
)
from groupcoord.logformat.record import CorruptRecordError
from groupcoord.storage.fileio import FileIO

_WINDOW = 1 << 20
_MAGIC_BYTE = bytes([MAGIC])
DAMAGED_SUFFIX = ".damaged-"
# The header fields up to the last offset delta: what ``check_frame`` looks at.
_FRAME_FIELDS = [name for name, _ in HEADER_FIELDS].index("last_offset_delta") + 1
_FRAME = struct.Struct(">" + "".join(code for _, code in HEADER_FIELDS[:_FRAME_FIELDS]))
FRAME_CHECK_BYTES = _FRAME.size

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DamagedRange:
    """Bytes ``[position, position + length)`` of a segment that held no valid batch.

    ``first_offset`` is the first offset the damage may have held (the end of the valid data
    before it) and ``resume_offset`` the base offset of the first valid batch after it (the
    segment's next offset when nothing valid follows).
    """

    segment: str
    position: int
    length: int
    first_offset: int
    resume_offset: int
    saved_to: str | None = None


def check_frame(buf: bytes | memoryview, off: int, position: int, file_size: int,
                min_offset: int) -> tuple[str | None, int, int]:
    """Check the frame at ``buf[off:]`` (file ``position``, ``FRAME_CHECK_BYTES`` long) as a
    batch following offset ``min_offset - 1``: ``(why it is none, or None; the offset after
    it; its size)``.

    Only the header is looked at (one unpack), so a read can check every frame it walks.
    """
    base_offset, length, _, magic, _, _, last_delta = _FRAME.unpack_from(buf, off)
    if length < MIN_BATCH_LENGTH:
        return f"batch length {length} is below the minimum of {MIN_BATCH_LENGTH}", 0, 0
    size = length + LOG_OVERHEAD
    if position + size > file_size:
        return f"batch length {length} runs past the end of the file ({file_size} bytes)", 0, 0
    if magic != MAGIC:
        return f"magic {magic} is not {MAGIC}", 0, 0
    if base_offset < min_offset or last_delta < 0:
        return (f"offsets {base_offset}-{base_offset + last_delta} do not follow "
                f"{min_offset - 1}"), 0, 0
    return None, base_offset + last_delta + 1, size


def log_unreadable(found: DamagedRange, reason: str) -> None:
    """The one ERROR line of a damaged range met by a read."""
    logger.error(
        "%s: no valid batch at byte %d (%s): bytes %d-%d, which may hold offsets %d-%d, are "
        "unreadable and fetches of those offsets answer CORRUPT_MESSAGE; offsets from %d are "
        "read from byte %d on", found.segment, found.position, reason, found.position,
        found.position + found.length - 1, found.first_offset, found.resume_offset - 1,
        found.resume_offset, found.position + found.length)


def batch_at(io: FileIO, fd: int, position: int, end: int, min_offset: int) -> int | None:
    """Size of a whole valid batch at ``position`` (base offset >= ``min_offset``), or None."""
    prefix = io.pread(fd, LOG_OVERHEAD + 5, position)
    if len(prefix) < LOG_OVERHEAD + 5 or prefix[MAGIC_OFFSET] != MAGIC:
        return None
    base_offset, length = PREFIX_STRUCT.unpack_from(prefix)
    size = length + LOG_OVERHEAD
    if base_offset < min_offset or length < MIN_BATCH_LENGTH or position + size > end:
        return None
    try:
        validate(io.pread(fd, size, position))
    except CorruptRecordError:
        return None
    return size


def find_next_batch(io: FileIO, fd: int, start: int, end: int, min_offset: int
                    ) -> int | None:
    """First position in ``[start, end)`` where a whole valid batch begins, or None."""
    window_start = start + MAGIC_OFFSET
    while window_start < end:
        window = io.pread(fd, min(_WINDOW, end - window_start), window_start)
        if not window:
            return None
        i = window.find(_MAGIC_BYTE)
        while i >= 0:
            candidate = window_start + i - MAGIC_OFFSET
            if batch_at(io, fd, candidate, end, min_offset) is not None:
                return candidate
            i = window.find(_MAGIC_BYTE, i + 1)
        window_start += len(window)
    return None


def save_aside(fd: int, log_path: str, position: int, length: int, io: FileIO) -> str | None:
    """Copy damaged bytes next to the segment; the file name, or None if that failed."""
    target = f"{log_path}{DAMAGED_SUFFIX}{position:020d}"
    try:
        io.replace_file(target, io.pread(fd, length, position))
    except OSError as exc:
        logger.error("%s: could not save %d damaged bytes at position %d aside: %s",
                     log_path, length, position, exc)
        return None
    return target


def rewrite_without(fd: int, log_path: str, size: int, cuts: list[tuple[int, int]],
                    io: FileIO) -> None:
    """Replace the segment file by its bytes minus the ``(position, length)`` cuts."""
    swap = log_path + ".swap"
    out = io.open(swap, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        pos = 0
        for cut_at, cut_len in [*sorted(cuts), (size, 0)]:
            while pos < cut_at:
                chunk = io.pread(fd, min(_WINDOW, cut_at - pos), pos)
                io.write_all(out, chunk)
                pos += len(chunk)
            pos = cut_at + cut_len
        io.fsync(out)
    finally:
        io.close(out)
    io.replace(swap, log_path)
