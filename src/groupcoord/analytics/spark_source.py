"""The ``kafkalog`` Spark Python Data Source: Kafka log dirs as DataFrames.

``spark.read.format("kafkalog").option("table", T).load(DIR)`` with ``T`` one of
``offset_commits``, ``coord_records`` (option ``topic``: one or more internal topics,
comma-separated, default ``__consumer_offsets``; option ``exclude_types``: comma-separated
``__consumer_offsets`` record types to leave out) or ``end_offsets``;
option ``decoder`` = ``auto`` (numba when installed) / ``numba`` / ``python`` for commits.
``partitions()`` runs on the driver: one split per segment, or per batch-aligned range of
``split_bytes`` (default 128 MiB) for bigger segments, and small splits packed together up
to ``split_bytes`` per task (keeping at least ``min_tasks`` tasks); ``read()`` runs on the
executors, opens the files itself and yields Arrow record batches (the fast path through
Spark's Arrow reader). On a cluster every executor must see ``DIR`` at the same path.
``spark.readStream`` gets the streaming reader of ``analytics.stream`` (offsets keyed by
(partition, log offset)).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.types import StructType

from groupcoord.analytics import columns, splits
from groupcoord.analytics.segments import TxnResolver
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC

TABLES = tuple(columns.SCHEMAS)


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


class KafkaLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self) -> str:
        table = self.options.get("table", "offset_commits")
        if table not in columns.SCHEMAS:
            raise ValueError(f"kafkalog: unknown table {table!r}; one of {', '.join(TABLES)}")
        return columns.ddl(columns.SCHEMAS[table])

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaLogReader(dict(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        # imported here: the stream module builds on this one
        from groupcoord.analytics.stream import KafkaLogStreamReader

        return KafkaLogStreamReader(dict(self.options))


def register(spark: Any) -> None:
    spark.dataSource.register(KafkaLogDataSource)
