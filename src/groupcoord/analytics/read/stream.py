"""Streaming ``kafkalog`` reader and the incremental ``analyze run``.

``spark.readStream.format("kafkalog").option("table", T).load(DIR)`` reads the same three
tables as the batch source, but in micro-batches. Offsets are a JSON map
``{"<topic>-<partition>": next log offset}``, so Spark's checkpoint is keyed by (partition,
log offset), not by file and byte position: it survives segment rolls, cleaner rewrites
and renames (analytics.md 5.6). Rules:

- ``latestOffset`` advances a partition only to the end of its last complete batch, and on
  internal topics not past the first batch of a still-open transaction; a torn tail, or an
  open transaction, is read by a later run once complete.
- New segment files are found by offset; a new partition appears as a new key and is read
  from its earliest offset.
- When the checkpointed offset of a partition is below its earliest available offset
  (segments deleted by retention, or rewritten by the cleaner so the old base is gone),
  reading restarts at the earliest offset and the skipped offset range is counted: one
  JSON line per gap in the file named by the ``gap_log`` option.
- Offsets inside a segment that the cleaner removed are simply absent; no duplicates are
  possible since nothing below the checkpointed offset is read again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from groupcoord.analytics.read import logpos, splits
from groupcoord.analytics.read.batch_source import KafkaLogReader, SplitPartition
from groupcoord.analytics.read.segments import PartitionDir, list_partitions, resolve_transactions

INTERNAL_TOPICS = "__consumer_offsets,__group_events,__share_group_state"


def partition_key(part: PartitionDir) -> str:
    return f"{part.topic}-{part.partition}"


class KafkaLogStreamReader(DataSourceStreamReader):
    """Micro-batches of one ``kafkalog`` table; see the module docstring for the offsets."""

    def __init__(self, options: dict[str, str]) -> None:
        self.batch = KafkaLogReader(options)
        self.gap_log = options.get("gap_log")

    def _parts(self) -> list[PartitionDir]:
        b = self.batch
        if b.table == "end_offsets":
            return [p for p in list_partitions(b.path) if not p.topic.startswith("__")]
        topics = [t.strip() for t in b.topic.split(",") if t.strip()]
        return [p for t in topics for p in list_partitions(b.path, t)]

    def initialOffset(self) -> dict[str, int]:
        # Empty: every partition is new, so the first run reads from the earliest offset.
        return {}

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None
                     ) -> dict[str, int]:
        """Every partition's stable end (read limits are not supported: all available)."""
        start = dict(start or {})
        out = dict(start)  # a vanished partition keeps its offset
        txns = self.batch.table != "end_offsets"
        for part in self._parts():
            key = partition_key(part)
            end = logpos.stable_end(part, start.get(key, 0), txns)
            if end is not None:
                out[key] = max(end.next_offset, start.get(key, 0))
        return out

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        specs: list[splits.SplitSpec] = []
        for part in self._parts():
            key = partition_key(part)
            if key not in end:
                continue  # appeared after this micro-batch was planned
            lo = start.get(key, 0)
            segs = part.segments()
            earliest = logpos.base_offset(segs[0]) if segs else lo
            if key in start and lo < earliest:
                self._record_gap(key, lo, earliest)
            if end[key] <= max(lo, earliest):
                continue
            specs.extend(self._specs(part, max(lo, earliest), end[key]))
        tasks = splits.pack(specs, self.batch.split_bytes, self.batch.min_tasks)
        return [SplitPartition(t) for t in tasks]

    def _specs(self, part: PartitionDir, lo: int, hi: int) -> list[splits.SplitSpec]:
        markers: tuple[tuple[int, int, bool], ...] = ()
        if self.batch.table != "end_offsets":
            markers = tuple(sorted(resolve_transactions(part).to_list()))
        return [splits.SplitSpec(str(seg), a, b, part.topic, part.partition, markers)
                for seg, a, b in logpos.ranges(part, lo, hi)]

    def _record_gap(self, key: str, expected: int, earliest: int) -> None:
        """Count offsets lost to retention or cleaning before this run could read them."""
        if not self.gap_log:
            return
        line = {"partition": key, "expected_offset": expected, "earliest_offset": earliest,
                "skipped_offsets": earliest - expected, "ts_ms": int(time.time() * 1000)}
        with open(self.gap_log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        for spec in getattr(partition, "specs", []):
            try:
                yield from self.batch._read_split(spec)
            except FileNotFoundError:
                # deleted by retention between planning and reading: nothing left to read
                continue

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to release: the log files belong to the broker."""


def read_gaps(gap_log: str | Path) -> list[dict[str, Any]]:
    path = Path(gap_log)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
