"""Log offsets <-> byte positions in a partition directory (for the streaming reader).

A streaming checkpoint keyed by (partition, log offset) survives segment rolls, cleaning
and renames, which a (file, byte position) key does not (analytics.md 5.6). These helpers
turn an offset into a batch-aligned byte position: the sparse ``.index`` gives a position
at or before the offset, and a seek-based header walk (``segments.scan_batches``) finds the
exact batch. Walks stop at a torn tail, so everything here sees only complete batches.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from groupcoord.analytics.read.segments import PartitionDir, scan_batches, scan_headers

_INDEX_ENTRY = struct.Struct(">ii")


def base_offset(segment: Path) -> int:
    """The segment's base offset, from its 20-digit file name."""
    return int(segment.name[:20])


def index_position(segment: Path, offset: int) -> int:
    """A batch start at or before the first batch holding ``offset`` (0 without an index).

    Index entries may hold a batch's base or last offset (groupcoord writes the base, Kafka
    the last); either way an entry with relative offset below ``offset - base`` points at a
    batch that starts before ``offset``, so a forward walk from it misses nothing.
    """
    index = segment.with_suffix(".index")
    if not index.is_file():
        return 0
    raw = index.read_bytes()
    size = segment.stat().st_size
    rel = offset - base_offset(segment)
    best = 0
    for r, pos in _INDEX_ENTRY.iter_unpack(raw[: len(raw) - len(raw) % _INDEX_ENTRY.size]):
        # Kafka preallocates index files: zero entries after the first are padding.
        if pos <= 0 or pos >= size:
            continue
        if r < rel and pos > best:
            best = pos
    return best


def locate(segment: Path, offset: int) -> tuple[int, int | None]:
    """``(position, last_offset + 1)`` of the segment's first complete batch whose last
    offset is at or past ``offset``; when there is none, ``(end of the last complete batch,
    None)``."""
    pos = index_position(segment, offset)
    for at, h in scan_batches(segment, pos):
        if h.last_offset >= offset:
            return at, h.last_offset + 1
        pos = at + h.size
    return pos, None


def segment_end(segment: Path) -> tuple[int, int]:
    """``(byte end of the last complete batch, next offset after it)``; an empty segment
    gives ``(0, base offset)``. A torn last batch is not counted."""
    pos = index_position(segment, 1 << 62)
    nxt = base_offset(segment)
    end = pos
    for at, h in scan_batches(segment, pos):
        end, nxt = at + h.size, h.last_offset + 1
    if end == pos and pos > 0:
        # the last index entry may point at the torn batch itself: walk from the start
        for at, h in scan_batches(segment, 0):
            end, nxt = at + h.size, h.last_offset + 1
    return end, nxt


@dataclass(frozen=True)
class StableEnd:
    """Where a read of one partition may stop: the log end over complete batches, or the
    first batch of a still-open transaction (Kafka's last stable offset), whichever is
    lower, so an open transaction's commits are read once their marker has arrived."""

    next_offset: int
    earliest: int


def stable_end(part: PartitionDir, from_offset: int, transactional: bool) -> StableEnd | None:
    """The stable end of ``part`` (None when it has no segment yet)."""
    segs = part.segments()
    if not segs:
        return None
    earliest = base_offset(segs[0])
    end = segment_end(segs[-1])[1]
    if len(segs) > 1 and end == base_offset(segs[-1]):
        end = max(end, segment_end(segs[-2])[1])
    if transactional:
        end = min(end, _first_open_txn(segs, from_offset, end))
    return StableEnd(end, earliest)


def _first_open_txn(segs: list[Path], from_offset: int, end: int) -> int:
    """The base offset of the first transactional batch in ``[from_offset, end)`` whose
    producer has no marker after it (still open), else ``end``."""
    open_since: dict[int, int] = {}
    for i, seg in enumerate(_segments_from(segs, from_offset)):
        for h in scan_headers(seg, locate(seg, from_offset)[0] if i == 0 else 0):
            if h.base_offset >= end:
                break
            if h.is_control:
                open_since.pop(h.producer_id, None)
            elif h.is_transactional and h.last_offset >= from_offset:
                open_since.setdefault(h.producer_id, h.base_offset)
    return min([end, *open_since.values()])


def _segments_from(segs: list[Path], offset: int) -> list[Path]:
    """The segments that may hold offsets at or past ``offset``."""
    keep = [i for i, s in enumerate(segs) if base_offset(s) <= offset]
    return segs[keep[-1]:] if keep else segs


def ranges(part: PartitionDir, start: int, end: int) -> list[tuple[Path, int, int]]:
    """Byte ranges ``(segment, from, to)`` covering the batches of offsets ``[start, end)``;
    batches are whole (``start``/``end`` are batch boundaries from ``stable_end``)."""
    out = []
    segs = part.segments()
    for i, seg in enumerate(segs):
        nxt = base_offset(segs[i + 1]) if i + 1 < len(segs) else None
        if base_offset(seg) >= end or (nxt is not None and nxt <= start):
            continue
        lo = locate(seg, start)[0]
        hi = locate(seg, end)[0]
        if hi > lo:
            out.append((seg, lo, hi))
    return out
