"""Bytes of a coordinator shard's partition: records -> batch, log -> replay.

Mirrors Kafka's `CoordinatorRecordSerde` + `CoordinatorLoaderImpl`: a record's key is the
int16 record type followed by the key fields, its value the int16 version followed by
the value fields, a null value a tombstone. Records of one operation are appended as one
uncompressed batch; loading decodes every batch in order and hands each record to
`shard.replay`. Control batches and unknown record types are skipped, as Kafka's loader
does for records it does not know.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("groupcoord.coordinator")


def encode_records_batch(records: list[Any], now_ms: int) -> bytes:
    """One uncompressed v2 batch holding `records` (CoordinatorRecord) at time `now_ms`."""
    from groupcoord.logformat.batch import build_batch

    return build_batch([(rec.key_bytes(), rec.value_bytes(), (), now_ms) for rec in records])


def replay_log(plog: Any, shard: Any) -> int:
    """Replay every record of the partition into `shard`; return how many were applied."""
    if plog is None:
        return 0
    from groupcoord.logformat.batch import decode_records, parse_header
    from groupcoord.logformat.coordinator_records import decode_record

    count = 0
    for view in plog.iter_batches():
        if parse_header(view).is_control:
            continue
        for rec in decode_records(view):
            if rec.key is None:
                continue
            try:
                record = decode_record(rec.key, rec.value)
            except ValueError:
                # Unknown record types (a newer writer) and undecodable keys are skipped.
                continue
            shard.replay(record)
            count += 1
    return count
