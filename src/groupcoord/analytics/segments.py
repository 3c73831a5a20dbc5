"""Reading Kafka log directories: partitions, segment files, record batches and records.

Works on any log dir in Kafka's layout (``<topic>-<partition>/<20-digit base>.log`` plus
``partition.metadata``), written by groupcoord or by a real Kafka broker. Batches are record
batch v2 (magic 2): a 61-byte header, then records, compressed as a whole when attributes bits
0-2 say so (decompressed through ``groupcoord.logformat.compression``). Rules kept:

- A torn batch at the end of a segment (a crash mid-append) ends the scan silently; a batch
  with another magic or a negative length ends it too, as Kafka's log recovery would.
- Header-only scans (end offsets over time) never decompress.
- Records of batches with ``LogAppendTime`` take the batch's max timestamp.
- Transaction outcomes come from control batches (``TxnResolver``); readers decide what to
  drop (analytics.md 3.5: aborted offset commits never reach the silver tables).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from groupcoord.logformat.batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC,
    MIN_BATCH_LENGTH,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    control_key_type,
)
from groupcoord.logformat.compression import decompress
from groupcoord.wire.primitives import read_varlong

_DIR_RE = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")


class BatchInfo(NamedTuple):
    """One batch header, with its byte position in the segment."""

    base_offset: int
    last_offset: int
    position: int
    size: int  # whole batch, including the 12-byte log overhead
    attributes: int
    producer_id: int
    producer_epoch: int
    base_timestamp: int
    max_timestamp: int
    records_count: int
    crc: int

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)


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


def read_range(path: str | Path, start: int = 0, end: int | None = None) -> bytes:
    """Bytes ``[start, end)`` of a file: the one place readers open segment files."""
    with open(path, "rb") as fh:
        fh.seek(start)
        return fh.read() if end is None else fh.read(end - start)


def parse_header(buf: bytes | memoryview, pos: int) -> BatchInfo | None:
    """The batch header at ``pos``, or None when the buffer ends inside the batch."""
    if pos + HEADER_SIZE > len(buf):
        return None
    (base, length, _ple, magic, crc, attrs, last_delta, base_ts, max_ts, pid, epoch, _seq,
     count) = HEADER_STRUCT.unpack_from(buf, pos)
    size = length + LOG_OVERHEAD
    if magic != MAGIC or length < MIN_BATCH_LENGTH or pos + size > len(buf):
        return None
    return BatchInfo(base, base + last_delta, pos, size, attrs, pid, epoch, base_ts, max_ts,
                     count, crc)


def iter_batches(buf: bytes | memoryview, base_position: int = 0) -> Iterator[BatchInfo]:
    """Batches in an in-memory segment slice; positions are offset by ``base_position``."""
    pos = 0
    while True:
        info = parse_header(buf, pos)
        if info is None:
            return
        yield info._replace(position=base_position + pos)
        pos += info.size


def scan_headers(path: str | Path, start: int = 0, end: int | None = None) -> Iterator[BatchInfo]:
    """Batch headers of a segment file by seeking from header to header (no record reads)."""
    with open(path, "rb") as fh:
        pos = start
        while end is None or pos < end:
            fh.seek(pos)
            head = fh.read(HEADER_SIZE)
            if len(head) < HEADER_SIZE:
                return
            (base, length, _ple, magic, crc, attrs, last_delta, base_ts, max_ts, pid, epoch,
             _seq, count) = HEADER_STRUCT.unpack(head)
            if magic != MAGIC or length < MIN_BATCH_LENGTH:
                return
            size = length + LOG_OVERHEAD
            fh.seek(pos + size - 1)
            if not fh.read(1):  # torn tail
                return
            yield BatchInfo(base, base + last_delta, pos, size, attrs, pid, epoch, base_ts,
                            max_ts, count, crc)
            pos += size


def records_payload(buf: bytes | memoryview, info: BatchInfo, rel_pos: int) -> bytes | memoryview:
    """The (decompressed) records section of the batch starting at ``rel_pos`` in ``buf``."""
    body = memoryview(buf)[rel_pos + HEADER_SIZE : rel_pos + info.size]
    if info.compression:
        return decompress(info.compression, body)
    return body


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def iter_records(payload: bytes | memoryview, info: BatchInfo) -> Iterator[Record]:
    """Records of one batch given its records section (see ``records_payload``)."""
    buf = payload
    pos = 0
    append_time = info.log_append_time
    for _ in range(info.records_count):
        length, pos = read_varlong(buf, pos)
        end = pos + length
        pos += 1  # record attributes, unused
        ts_delta, pos = read_varlong(buf, pos)
        off_delta, pos = read_varlong(buf, pos)
        klen, pos = read_varlong(buf, pos)
        key = None if klen < 0 else bytes(buf[pos : pos + klen])
        pos += max(klen, 0)
        vlen, pos = read_varlong(buf, pos)
        value = None if vlen < 0 else bytes(buf[pos : pos + vlen])
        ts = info.max_timestamp if append_time else info.base_timestamp + ts_delta
        yield Record(info.base_offset + off_delta, ts, key, value)
        pos = end  # headers are not needed by any reader


def control_marker(payload: bytes | memoryview) -> int | None:
    """The control type of a control batch's single record: 0 ABORT, 1 COMMIT."""
    for rec in iter_records(payload, _CONTROL_INFO):
        kind = control_key_type(rec.key)
        if kind is not None:
            return kind
    return None


_CONTROL_INFO = BatchInfo(0, 0, 0, 0, 0, -1, -1, 0, 0, 1, 0)


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
        from groupcoord.analytics.fastpath import control_batch_positions
    except ImportError:
        return [h.position for h in scan_headers(seg) if h.is_control]
    return control_batch_positions(seg)


def resolve_transactions(part: PartitionDir) -> TxnResolver:
    """Scan a partition's control batches (headers, plus the tiny control records)."""
    resolver = TxnResolver()
    for seg in part.segments():
        for pos in control_positions(seg):
            head = read_range(seg, pos, pos + HEADER_SIZE)
            raw = read_range(seg, pos, pos + LOG_OVERHEAD + _length(head))
            info = parse_header(raw, 0)
            if info is None:
                continue
            kind = control_marker(records_payload(raw, info, 0))
            if kind in (0, 1):
                resolver.add(info.producer_id, info.base_offset, kind == 1)
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


def _length(head: bytes) -> int:
    return int.from_bytes(head[8:12], "big", signed=True)
