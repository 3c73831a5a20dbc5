"""Planning input splits of a log dir for the ``kafkalog`` Spark source (driver side).

One split per segment file, or several batch-aligned byte ranges for a segment larger than
``split_bytes``. Segments have no sync markers, so cut points must be batch starts: they come
from the sparse ``.index`` (8-byte entries ``relativeOffset int32, position int32``) and, when
a segment has no index, from a seek-based header scan. Splits of internal topics carry their
partition's transaction markers, so a task can drop aborted commits whose marker lives in a
later segment.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from groupcoord.analytics.read.segments import (
    PartitionDir,
    list_partitions,
    resolve_transactions,
    scan_batches,
)
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC

DEFAULT_SPLIT_BYTES = 128 << 20
_INDEX_ENTRY = struct.Struct(">ii")


@dataclass(frozen=True)
class SplitSpec:
    path: str
    start: int
    end: int | None
    topic: str
    partition: int
    txn_markers: tuple[tuple[int, int, bool], ...] = field(default=())


def batch_starts(segment: Path) -> list[int]:
    """Known batch start positions of a segment: from ``.index``, else a header scan."""
    index = segment.with_suffix(".index")
    if index.is_file() and index.stat().st_size >= _INDEX_ENTRY.size:
        raw = index.read_bytes()
        usable = len(raw) - len(raw) % _INDEX_ENTRY.size
        positions = [pos for _rel, pos in _INDEX_ENTRY.iter_unpack(raw[:usable]) if pos > 0]
        # Kafka preallocates index files; trailing zero entries are not batch starts.
        return [0] + sorted(set(positions))
    return [pos for pos, _ in scan_batches(segment)]


def segment_ranges(segment: Path, split_bytes: int) -> list[tuple[int, int | None]]:
    """Batch-aligned ``[start, end)`` ranges of about ``split_bytes`` covering the file."""
    size = segment.stat().st_size
    if size <= split_bytes:
        return [(0, None)]
    ranges: list[tuple[int, int | None]] = []
    start = 0
    for pos in batch_starts(segment):
        if pos - start >= split_bytes:
            ranges.append((start, pos))
            start = pos
    ranges.append((start, None))
    return ranges


def plan(
    data_dir: str | Path, table: str, split_bytes: int = DEFAULT_SPLIT_BYTES,
    topic: str = OFFSETS_TOPIC, markers: bool = True,
) -> list[SplitSpec]:
    """All splits of ``table`` (offset_commits / coord_records / end_offsets) in a log dir;
    ``topic`` may name several internal topics, comma-separated. Without ``markers`` the
    splits carry no transaction markers (the reader of whole partitions finds them itself:
    the scan reads every segment, too slow for the driver alone)."""
    if table == "end_offsets":
        parts = [p for p in list_partitions(data_dir) if not p.topic.startswith("__")]
        return [s for p in parts for s in _partition_splits(p, split_bytes, ())]
    out: list[SplitSpec] = []
    topics = [t.strip() for t in topic.split(",") if t.strip()]
    for p in [p for t in topics for p in list_partitions(data_dir, t)]:
        found = tuple(sorted(resolve_transactions(p).to_list())) if markers else ()
        out.extend(_partition_splits(p, split_bytes, found))
    return out


def pack(specs: list[SplitSpec], max_bytes: int, min_tasks: int = 1) -> list[list[SplitSpec]]:
    """Group splits into tasks of up to ``max_bytes`` (but at least ``min_tasks`` tasks).

    Each task of a Python source costs a worker round trip (tens to hundreds of ms), so many
    small segments (data partitions, lightly used coordinator partitions) share a task.
    """
    return _pack([[s] for s in specs], max_bytes, min_tasks)


def pack_partitions(specs: list[SplitSpec], max_bytes: int,
                    min_tasks: int = 1) -> list[list[SplitSpec]]:
    """As ``pack``, but a partition's splits always share one task: every record of a
    coordinator partition (so every commit of its groups) is read by one task."""
    units: list[list[SplitSpec]] = []
    for spec in specs:
        if units and (units[-1][0].topic, units[-1][0].partition) == (spec.topic, spec.partition):
            units[-1].append(spec)
        else:
            units.append([spec])
    return _pack(units, max_bytes, min_tasks)


def _pack(units: list[list[SplitSpec]], max_bytes: int, min_tasks: int) -> list[list[SplitSpec]]:
    sizes = [sum(_size(s) for s in unit) for unit in units]
    target = max(1, min(max_bytes, sum(sizes) // max(1, min_tasks)))
    tasks: list[list[SplitSpec]] = []
    current: list[SplitSpec] = []
    filled = 0
    for unit, size in zip(units, sizes, strict=True):
        if current and filled + size > target:
            tasks.append(current)
            current, filled = [], 0
        current.extend(unit)
        filled += size
    if current:
        tasks.append(current)
    return tasks


def _size(spec: SplitSpec) -> int:
    end = spec.end if spec.end is not None else Path(spec.path).stat().st_size
    return end - spec.start


def _partition_splits(
    p: PartitionDir, split_bytes: int, markers: tuple[tuple[int, int, bool], ...]
) -> list[SplitSpec]:
    return [SplitSpec(str(seg), start, end, p.topic, p.partition, markers)
            for seg in p.segments() if seg.stat().st_size > 0
            for start, end in segment_ranges(seg, split_bytes)]
