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
Spark's Arrow reader): that reader is ``batch_source``'s. On a cluster every executor must
see ``DIR`` at the same path.
``spark.readStream`` gets the streaming reader of ``analytics.stream`` (offsets keyed by
(partition, log offset)).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
)
from pyspark.sql.types import StructType

from groupcoord.analytics.read.batch_source import KafkaLogReader
from groupcoord.analytics.read.stream import KafkaLogStreamReader
from groupcoord.analytics.read.table_schemas import SCHEMAS, ddl

TABLES = tuple(SCHEMAS)


class KafkaLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self) -> str:
        table = self.options.get("table", "offset_commits")
        if table not in SCHEMAS:
            raise ValueError(f"kafkalog: unknown table {table!r}; one of {', '.join(TABLES)}")
        return ddl(SCHEMAS[table])

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaLogReader(dict(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaLogStreamReader(dict(self.options))


def register(spark: Any) -> None:
    spark.dataSource.register(KafkaLogDataSource)
