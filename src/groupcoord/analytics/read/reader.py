"""Coordinator records out of ``__consumer_offsets`` segments, as plain Python tuples.

Two decoders share the framing of ``CoordinatorRecordSerde`` (key = int16 record type + key
struct at v0; value = int16 version + value struct; null value = tombstone):

- ``decode_offset_commit`` is the hand-written hot path for types 0/1 (the bulk of any
  ``__consumer_offsets`` log), every OffsetCommitValue version 0-4;
- ``decode_record`` is the schema-driven path for every type in ``analytics.schema``.

Records with an unknown type are skipped, as Kafka's formatters and loader do. Offset
commits of aborted or still-open transactions are dropped here (analytics.md 3.5); the bronze
reader keeps them with their outcome.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from groupcoord.analytics.read.codec import CodecError, decode, decode_versioned, read_uvarint
from groupcoord.analytics.read.schema import (
    CONSUMER_ASSIGNMENT,
    CONSUMER_SUBSCRIPTION,
    COORDINATOR_RECORDS,
    SHARE_STATE_RECORDS,
    Layout,
)
from groupcoord.analytics.read.segments import TxnResolver, iter_records, read_range
from groupcoord.logformat.batch import iter_log_batches, records_payload

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_QI = struct.Struct(">qi")


class RawRecord(NamedTuple):
    """One record of a coordinator partition with its batch context (the bronze row)."""

    log_offset: int
    batch_base_offset: int
    timestamp: int
    producer_id: int
    is_transactional: bool
    txn_outcome: str  # committed / aborted / open / none
    key: bytes | None
    value: bytes | None


class OffsetCommitRow(NamedTuple):
    record_type: int
    group_id: str
    topic: str
    partition: int
    committed_offset: int | None
    leader_epoch: int | None
    metadata: str | None
    commit_ts: int | None
    expire_ts: int | None
    value_version: int | None


def iter_raw_records(
    path: str | Path, start: int, end: int | None, txns: TxnResolver | None = None
) -> Iterator[RawRecord]:
    """Every data record in ``[start, end)`` of a segment; control batches are skipped."""
    buf = memoryview(read_range(path, start, end))
    for pos, header in iter_log_batches(buf):
        if header.is_control:
            continue
        outcome = "none"
        if header.is_transactional:
            outcome = txns.outcome(header.producer_id, header.base_offset) if txns else "open"
        payload = records_payload(buf[pos : pos + header.size], header)
        for rec in iter_records(payload, header):
            yield RawRecord(rec.offset, header.base_offset, rec.timestamp, header.producer_id,
                            header.is_transactional, outcome, rec.key, rec.value)


def _str16(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = _H.unpack_from(buf, pos)
    pos += 2
    return buf[pos : pos + n].decode("utf-8"), pos + n


def decode_offset_commit(key: bytes, value: bytes | None) -> OffsetCommitRow | None:
    """Decode an offset commit (types 0/1); None for any other record type."""
    try:
        (rtype,) = _H.unpack_from(key, 0)
        if rtype not in (0, 1):
            return None
        group, pos = _str16(key, 2)
        topic, pos = _str16(key, pos)
        (partition,) = _I.unpack_from(key, pos)
        if value is None:
            return OffsetCommitRow(rtype, group, topic, partition, None, None, None, None,
                                   None, None)
        return OffsetCommitRow(rtype, group, topic, partition, *_offset_value(value))
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise CodecError(f"bad offset commit record: {exc}") from exc


def _offset_value(value: bytes) -> tuple[int, int, str, int, int, int]:
    (version,) = _H.unpack_from(value, 0)
    (offset,) = _Q.unpack_from(value, 2)
    pos = 10
    epoch = expire = -1
    if version >= 3:
        (epoch,) = _I.unpack_from(value, pos)
        pos += 4
    if version >= 4:  # flexible: compact string, then tagged fields (topicId) we ignore
        n, pos = read_uvarint(value, pos)
        metadata = value[pos : pos + n - 1].decode("utf-8")
        pos += n - 1
    else:
        metadata, pos = _str16(value, pos)
    (commit_ts,) = _Q.unpack_from(value, pos)
    if version == 1:
        (expire,) = _Q.unpack_from(value, pos + 8)
    return offset, epoch, metadata, commit_ts, expire, version


class DecodedRecord(NamedTuple):
    record_type: int
    key: dict[str, Any]
    value_version: int | None
    value: dict[str, Any] | None  # None = tombstone


def decode_record(
    key: bytes, value: bytes | None, table: dict[int, tuple[Layout, Layout]] = COORDINATOR_RECORDS
) -> DecodedRecord | None:
    """Decode any known coordinator (or share-state) record; None for unknown types."""
    if len(key) < 2:
        raise CodecError("record key shorter than its type")
    (rtype,) = _H.unpack_from(key, 0)
    layouts = table.get(rtype)
    if layouts is None:
        return None
    key_dict = decode(layouts[0], key, 0, 2)
    if value is None:
        return DecodedRecord(rtype, key_dict, None, None)
    version, value_dict = decode_versioned(layouts[1], value)
    return DecodedRecord(rtype, key_dict, version, value_dict)


def decode_share_state(key: bytes, value: bytes | None) -> DecodedRecord | None:
    return decode_record(key, value, SHARE_STATE_RECORDS)


def decode_subscription(data: bytes | None) -> dict[str, Any] | None:
    """A classic member's ConsumerProtocolSubscription; None when empty or not that protocol."""
    return _consumer_protocol(CONSUMER_SUBSCRIPTION, data)


def decode_assignment(data: bytes | None) -> dict[str, Any] | None:
    """A classic member's ConsumerProtocolAssignment; None when empty or not that protocol."""
    return _consumer_protocol(CONSUMER_ASSIGNMENT, data)


def _consumer_protocol(layout: Layout, data: bytes | None) -> dict[str, Any] | None:
    if not data:
        return None
    try:
        return decode_versioned(layout, data)[1]
    except CodecError:
        return None  # a non-consumer protocol (connect, streams) keeps its own format
