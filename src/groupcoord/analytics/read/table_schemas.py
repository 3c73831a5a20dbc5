"""The Arrow schemas of the three ``kafkalog`` tables, and Spark DDL <-> flat Arrow schemas
(the analytics tables are declared in DDL).

Column types are exact on purpose: Spark rejects Arrow batches whose types differ from the
declared schema (an int64 column declared ``int`` fails). Timestamps stay int64 epoch
milliseconds; the Spark layer turns them into timestamps.
"""

from __future__ import annotations

import pyarrow as pa

_DDL_TYPES = {pa.int32(): "INT", pa.int64(): "BIGINT", pa.string(): "STRING",
              pa.binary(): "BINARY", pa.bool_(): "BOOLEAN", pa.float64(): "DOUBLE"}
_ARROW_TYPES = {name: typ for typ, name in _DDL_TYPES.items()}


def ddl(schema: pa.Schema) -> str:
    """The Spark DDL string of a flat Arrow schema."""
    return ", ".join(f"{f.name} {_DDL_TYPES[f.type]}" for f in schema)


def arrow_schema(ddl_text: str) -> pa.Schema:
    """The flat Arrow schema of a Spark DDL string (``name TYPE, ...``), ``ddl``'s inverse."""
    columns = (column.split() for column in ddl_text.split(","))
    return pa.schema([(name, _ARROW_TYPES[typ.upper()]) for name, typ in columns])


OFFSET_COMMITS = arrow_schema(
    "coord_partition INT, log_offset BIGINT, record_ts_ms BIGINT, record_type INT, "
    "group_id STRING, topic STRING, partition INT, committed_offset BIGINT, leader_epoch INT, "
    "metadata STRING, commit_ts_ms BIGINT, expire_ts_ms BIGINT, value_version INT, "
    "tombstone BOOLEAN")

COORD_RECORDS = arrow_schema(
    "topic STRING, coord_partition INT, log_offset BIGINT, batch_base_offset BIGINT, "
    "record_ts_ms BIGINT, producer_id BIGINT, is_transactional BOOLEAN, txn_outcome STRING, "
    "record_type INT, key BINARY, value BINARY, value_version INT")

END_OFFSETS = arrow_schema(
    "topic STRING, partition INT, ts_ms BIGINT, base_offset BIGINT, end_offset BIGINT, "
    "records INT, batch_bytes INT, is_control BOOLEAN")

SCHEMAS = {"offset_commits": OFFSET_COMMITS, "coord_records": COORD_RECORDS,
           "end_offsets": END_OFFSETS}
