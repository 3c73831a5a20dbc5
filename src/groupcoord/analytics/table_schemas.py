"""The Arrow schemas of the three ``kafkalog`` tables, and their Spark DDL.

Column types are exact on purpose: Spark rejects Arrow batches whose types differ from the
declared schema (an int64 column declared ``int`` fails). Timestamps stay int64 epoch
milliseconds; the Spark layer turns them into timestamps.
"""

from __future__ import annotations

import pyarrow as pa

OFFSET_COMMITS = pa.schema([
    ("coord_partition", pa.int32()), ("log_offset", pa.int64()), ("record_ts_ms", pa.int64()),
    ("record_type", pa.int32()), ("group_id", pa.string()), ("topic", pa.string()),
    ("partition", pa.int32()), ("committed_offset", pa.int64()), ("leader_epoch", pa.int32()),
    ("metadata", pa.string()), ("commit_ts_ms", pa.int64()), ("expire_ts_ms", pa.int64()),
    ("value_version", pa.int32()), ("tombstone", pa.bool_()),
])

COORD_RECORDS = pa.schema([
    ("topic", pa.string()), ("coord_partition", pa.int32()), ("log_offset", pa.int64()),
    ("batch_base_offset", pa.int64()), ("record_ts_ms", pa.int64()), ("producer_id", pa.int64()),
    ("is_transactional", pa.bool_()), ("txn_outcome", pa.string()), ("record_type", pa.int32()),
    ("key", pa.binary()), ("value", pa.binary()), ("value_version", pa.int32()),
])

END_OFFSETS = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("ts_ms", pa.int64()),
    ("base_offset", pa.int64()), ("end_offset", pa.int64()), ("records", pa.int32()),
    ("batch_bytes", pa.int32()), ("is_control", pa.bool_()),
])

SCHEMAS = {"offset_commits": OFFSET_COMMITS, "coord_records": COORD_RECORDS,
           "end_offsets": END_OFFSETS}

_DDL_TYPES = {pa.int32(): "INT", pa.int64(): "BIGINT", pa.string(): "STRING",
              pa.binary(): "BINARY", pa.bool_(): "BOOLEAN", pa.float64(): "DOUBLE"}


def ddl(schema: pa.Schema) -> str:
    """The Spark DDL string of a flat Arrow schema."""
    return ", ".join(f"{f.name} {_DDL_TYPES[f.type]}" for f in schema)
