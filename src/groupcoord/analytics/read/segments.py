"""Reading Kafka log directories: partitions, segment files, record batches and records.

Works on any log dir in Kafka's layout (``<topic>-<partition>/<20-digit base>.log`` plus
``partition.metadata``), written by groupcoord or by a real Kafka broker. The record batch
format (v2, magic 2) is ``groupcoord.logformat.batch``'s; this module adds the files. Rules
kept:

- A torn batch at the end of a segment (a crash mid-append) ends the scan silently; a batch
  with another magic or a negative length ends it too, as Kafka's log recovery would
  (``logformat.batch.iter_log_batches``).
- Header-only scans (end offsets over time) never decompress.
- Records of batches with ``LogAppendTime`` take the batch's max timestamp.
- Transaction outcomes come from control batches (``TxnResolver``); readers decide what to
  drop (analytics.md 3.5: aborted offset commits never reach the silver tables).
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from groupcoord.logformat.batch import (
    HEADER_SIZE,
    LOG_APPEND_TIME,
    BatchHeader,
    control_key_type,
    log_header_at,
    records_payload,
)
from groupcoord.logformat.record import iter_record_fields

_DIR_RE = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")


@dataclass(frozen=True)
class PartitionDir:
    """One ``<topic>-<partition>`` directory of a log dir."""

    topic: str
    partition: int
    path: Path

    def segments(self) -> list[Path]:
        found = [p for p in self.path.iterdir() if _SEGMENT_RE.match(p.name)]
        return sorted(found, key=lambda p: int(p.name[:20]))

    def topic_id(self) -> str | None:
        """The topic id from ``partition.metadata`` (Kafka's base64 Uuid string), if any."""
        meta = self.path / "partition.metadata"
        if not meta.is_file():
            return None
        for line in meta.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "topic_id":
                return value.strip()
        return None


def list_partitions(data_dir: str | Path, topic: str | None = None) -> list[PartitionDir]:
    """Every partition directory under ``data_dir`` (optionally of one topic), sorted."""
    out = []
    for entry in Path(data_dir).iterdir():
        m = _DIR_RE.match(entry.name)
        if m and entry.is_dir() and (topic is None or m["topic"] == topic):
            out.append(PartitionDir(m["topic"], int(m["partition"]), entry))
    return sorted(out, key=lambda d: (d.topic, d.partition))


def topic_names(data_dir: str | Path) -> dict[str, str]:
    """Topic id (Kafka's base64 string) -> topic name, from every ``partition.metadata``."""
    out = {}
    for p in list_partitions(data_dir):
        tid = p.topic_id()
        if tid:
            out[tid] = p.topic
    return out


def read_range(path: str | Path, start: int = 0, end: int | None = None) -> bytes:
    """Bytes ``[start, end)`` of a file: the one place readers open segment files."""
    with open(path, "rb") as fh:
        fh.seek(start)
        return fh.read() if end is None else fh.read(end - start)


def scan_batches(path: str | Path, start: int = 0, end: int | None = None
                 ) -> Iterator[tuple[int, BatchHeader]]:
    """``(position, header)`` of each batch of a segment file from ``start``, by seeking
    from header to header (no record reads); ends where ``logformat.batch.iter_log_batches``
    would."""
    with open(path, "rb") as fh:
        file_size = os.fstat(fh.fileno()).st_size
        pos = start
        while end is None or pos < end:
            fh.seek(pos)
            header = log_header_at(fh.read(HEADER_SIZE))
            if header is None:
                return
            if pos + header.size > file_size:
                file_size = os.fstat(fh.fileno()).st_size  # a live log may have grown
                if pos + header.size > file_size:  # torn tail
                    return
            yield pos, header
            pos += header.size


def scan_headers(path: str | Path, start: int = 0, end: int | None = None
                 ) -> Iterator[BatchHeader]:
    """The batch headers of ``scan_batches``."""
    return (header for _, header in scan_batches(path, start, end))


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def iter_records(payload: bytes | memoryview, header: BatchHeader) -> Iterator[Record]:
    """Records of one batch given its records section (``logformat.batch.records_payload``)."""
    append_time = header.timestamp_type == LOG_APPEND_TIME
    for off_delta, ts_delta, key, value in iter_record_fields(payload, header.records_count):
        ts = header.max_timestamp if append_time else header.base_timestamp + ts_delta
        yield Record(header.base_offset + off_delta, ts, key, value)


def control_marker(batch: bytes | memoryview, header: BatchHeader) -> int | None:
    """The control type of a whole control batch's marker: 0 ABORT, 1 COMMIT."""
    for _, _, key, _ in iter_record_fields(records_payload(batch, header), 1):
        kind = control_key_type(key)
        if kind is not None:
            return kind
    return None


class TxnResolver:
    """Transaction outcomes of one partition, from its control batches.

    A transactional batch at offset ``o`` by producer ``p`` belongs to the transaction closed
    by ``p``'s first marker after ``o``. Batches with no marker yet are ``open``.
    """

    def __init__(self) -> None:
        self._markers: dict[int, list[tuple[int, bool]]] = {}

    def add(self, producer_id: int, offset: int, committed: bool) -> None:
        bisect.insort(self._markers.setdefault(producer_id, []), (offset, committed))

    def outcome(self, producer_id: int, offset: int) -> str:
        marks = self._markers.get(producer_id)
        if not marks:
            return "open"
        i = bisect.bisect_left(marks, (offset, False))
        if i == len(marks):
            return "open"
        return "committed" if marks[i][1] else "aborted"

    def to_list(self) -> list[tuple[int, int, bool]]:
        return [(pid, off, c) for pid, marks in self._markers.items() for off, c in marks]

    @classmethod
    def from_list(cls, items: list[tuple[int, int, bool]]) -> TxnResolver:
        r = cls()
        for pid, off, committed in items:
            r.add(pid, off, committed)
        return r


def control_positions(seg: Path) -> list[int]:
    """Positions of the control batches of a segment (numba header scan when installed)."""
    try:
        from groupcoord.analytics.read.header_scan import control_batch_positions
    except ImportError:
        return [pos for pos, h in scan_batches(seg) if h.is_control]
    return control_batch_positions(read_range(seg))


def resolve_transactions(part: PartitionDir) -> TxnResolver:
    """Scan a partition's control batches (headers, plus the tiny control records)."""
    resolver = TxnResolver()
    for seg in part.segments():
        for pos in control_positions(seg):
            header = log_header_at(read_range(seg, pos, pos + HEADER_SIZE))
            if header is None:
                continue
            batch = read_range(seg, pos, pos + header.size)
            if len(batch) < header.size:
                continue
            kind = control_marker(batch, header)
            if kind in (0, 1):
                resolver.add(header.producer_id, header.base_offset, kind == 1)
    return resolver


class PartitionTxns(TxnResolver):
    """``resolve_transactions(part)``, scanned on first use: a reader of a partition with
    no transactional batch never asks, so never reads the partition's segments twice."""

    def __init__(self, part: PartitionDir) -> None:
        super().__init__()
        self._part: PartitionDir | None = part

    def _load(self) -> None:
        if self._part is not None:
            part, self._part = self._part, None
            for pid, off, committed in resolve_transactions(part).to_list():
                self.add(pid, off, committed)

    def outcome(self, producer_id: int, offset: int) -> str:
        self._load()
        return super().outcome(producer_id, offset)

    def to_list(self) -> list[tuple[int, int, bool]]:
        self._load()
        return super().to_list()
