"""Spark DDL <-> flat Arrow schemas (``table_schemas``): the analytics tables are declared in
DDL, and Spark is handed the DDL of their Arrow schemas."""

from __future__ import annotations

import pyarrow as pa
import pytest

from groupcoord.analytics.read.table_schemas import SCHEMAS, arrow_schema, ddl


def test_arrow_schema_reads_every_type_ddl_writes() -> None:
    schema = arrow_schema("a INT, b BIGINT, c STRING, d BINARY, e BOOLEAN, f double")
    assert schema == pa.schema([("a", pa.int32()), ("b", pa.int64()), ("c", pa.string()),
                                ("d", pa.binary()), ("e", pa.bool_()), ("f", pa.float64())])
    assert ddl(schema) == "a INT, b BIGINT, c STRING, d BINARY, e BOOLEAN, f DOUBLE"


@pytest.mark.parametrize("table", sorted(SCHEMAS))
def test_kafkalog_schemas_round_trip(table: str) -> None:
    assert arrow_schema(ddl(SCHEMAS[table])) == SCHEMAS[table]


def test_unknown_type_is_refused() -> None:
    with pytest.raises(KeyError):
        arrow_schema("a TIMESTAMP")
