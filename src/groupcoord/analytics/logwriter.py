"""Writes Kafka-layout partition directories for synthetic fixtures.

Only the fixture generator and tests write logs from the analytics package; the broker has
its own storage layer. Batches come from ``groupcoord.logformat.batch.build_batch`` (valid
CRC-32C), segments roll at ``segment_bytes`` and are named by their 20-digit base offset, and a
sparse ``.index`` (relativeOffset int32, position int32) gets one entry per
``index_interval`` bytes, as Kafka's ``index.interval.bytes`` does.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence
from pathlib import Path

from groupcoord.logformat.batch import build_batch, build_end_txn_marker
from groupcoord.logformat.record import SimpleRecord

_INDEX_ENTRY = struct.Struct(">ii")


class PartitionWriter:
    """Appends batches to ``<root>/<topic>-<partition>``; offsets are assigned in order."""

    def __init__(
        self,
        root: Path,
        topic: str,
        partition: int,
        *,
        topic_id: str | None = None,
        segment_bytes: int = 1 << 20,
        index_interval: int = 4096,
    ) -> None:
        self.path = root / f"{topic}-{partition}"
        self.path.mkdir(parents=True, exist_ok=True)
        if topic_id is not None:
            (self.path / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
        self.segment_bytes = segment_bytes
        self.index_interval = index_interval
        self.next_offset = 0
        self._segment_base = 0
        self._segment_size = 0
        self._since_index = 0
        self._log: bytearray = bytearray()
        self._index: bytearray = bytearray()
        self._flushed: list[tuple[int, bytes, bytes]] = []

    def append(
        self,
        records: Sequence[tuple[bytes | None, bytes | None, int]],
        *,
        compression: int = 0,
        producer_id: int = -1,
        transactional: bool = False,
    ) -> int:
        """Append one batch of ``(key, value, timestamp_ms)``; returns its base offset."""
        simple = [SimpleRecord(k, v, (), ts) for k, v, ts in records]
        batch = build_batch(simple, base_offset=self.next_offset, compression=compression,
                            producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                            transactional=transactional)
        return self._put(batch, len(simple))

    def append_marker(self, producer_id: int, commit: bool, timestamp: int) -> int:
        batch = build_end_txn_marker(1 if commit else 0, producer_id, 0, timestamp,
                                     base_offset=self.next_offset)
        return self._put(batch, 1)

    def _put(self, batch: bytes, count: int) -> int:
        if self._segment_size and self._segment_size + len(batch) > self.segment_bytes:
            self._roll()
        base = self.next_offset
        if self._since_index >= self.index_interval or not self._index and self._segment_size:
            self._index += _INDEX_ENTRY.pack(base - self._segment_base, self._segment_size)
            self._since_index = 0
        self._log += batch
        self._segment_size += len(batch)
        self._since_index += len(batch)
        self.next_offset = base + count
        return base

    def _roll(self) -> None:
        self._flushed.append((self._segment_base, bytes(self._log), bytes(self._index)))
        self._segment_base = self.next_offset
        self._segment_size = self._since_index = 0
        self._log = bytearray()
        self._index = bytearray()

    def close(self) -> None:
        """Write every segment (and its index) to disk."""
        self._flushed.append((self._segment_base, bytes(self._log), bytes(self._index)))
        for base, log, index in self._flushed:
            (self.path / f"{base:020d}.log").write_bytes(log)
            (self.path / f"{base:020d}.index").write_bytes(index)
        self._flushed = []


class LogWriters:
    """Lazily opened partition writers of one log dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.open: dict[tuple[str, int], PartitionWriter] = {}

    def get(self, topic: str, partition: int, topic_id: bytes | None = None) -> PartitionWriter:
        key = (topic, partition)
        if key not in self.open:
            tid = None if topic_id is None else base64.urlsafe_b64encode(topic_id).decode()[:22]
            self.open[key] = PartitionWriter(self.root, topic, partition, topic_id=tid,
                                             segment_bytes=64 * 1024)
        return self.open[key]

    def close(self) -> None:
        for w in self.open.values():
            w.close()
