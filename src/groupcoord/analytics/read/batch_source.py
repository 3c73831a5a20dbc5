"""The batch reader of the ``kafkalog`` source (``spark_source``), which the streaming
reader (``stream``) and the direct silver writer (``direct_silver``) build on.

``partitions()`` runs on the driver and plans the splits (``splits``); ``read()`` runs on
the executors and yields the Arrow batches of ``columns``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from groupcoord.analytics.read import columns, splits
from groupcoord.analytics.read.segments import TxnResolver
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC


class SplitPartition(InputPartition):
    """One task: a list of ``SplitSpec`` read one after the other."""

    def __init__(self, specs: list[splits.SplitSpec]) -> None:
        super().__init__(len(specs))
        self.specs = specs


def _parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().rstrip("b")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.path = options.get("path") or options.get("paths", "")
        self.table = options.get("table", "offset_commits")
        self.topic = options.get("topic", OFFSETS_TOPIC)
        self.split_bytes = _parse_size(options.get("split_bytes", str(splits.DEFAULT_SPLIT_BYTES)))
        self.min_tasks = int(options.get("min_tasks", "2"))
        self.decoder = options.get("decoder", "auto")
        excl = options.get("exclude_types", "")
        self.exclude = frozenset(int(t) for t in excl.split(",") if t.strip())

    def partitions(self) -> list[InputPartition]:
        specs = splits.plan(self.path, self.table, self.split_bytes, self.topic)
        tasks = splits.pack(specs, self.split_bytes, self.min_tasks)
        # Spark needs at least one partition even for an empty log dir.
        return [SplitPartition(t) for t in tasks] or [SplitPartition([])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        for spec in getattr(partition, "specs", []):
            yield from self._read_split(spec)

    def _read_split(self, spec: splits.SplitSpec) -> Iterator[pa.RecordBatch]:
        if self.table == "end_offsets":
            return columns.end_offset_batches(spec.path, spec.start, spec.end, spec.topic,
                                              spec.partition)
        txns = TxnResolver.from_list(list(spec.txn_markers))
        if self.table == "offset_commits":
            return columns.offset_commit_batches(spec.path, spec.start, spec.end,
                                                 spec.partition, txns, self.decoder)
        return columns.coord_record_batches(spec.path, spec.start, spec.end, spec.topic,
                                            spec.partition, txns, self.exclude)
