"""The `__transaction_state` records: `TransactionLogKey` and `TransactionLogValue`.

Mirrors Kafka's `TransactionLog.keyToBytes` / `valueToBytes` / `readTxnRecordKey` /
`readTxnRecordValue` (core `kafka.coordinator.transaction.TransactionLog`) over the specs in
apache/kafka `transaction-coordinator/src/main/resources/common/message/`
(`TransactionLogKey.json` v0, `TransactionLogValue.json` v0-1, flexible from v1). Those specs
are not in `../shared/kafka-spec-4.4`, so this small codec is written by hand.

Rules kept:
- key bytes = int16 key version (0) + `TransactionalId` as a non-flexible string;
- value bytes = int16 value version + the fields; a null value is a tombstone (the
  transactional id expired);
- `TransactionPartitions` is null for the Empty state (status 0), as Kafka writes it, and
  ignored on read for Empty;
- v1 carries the tagged fields `PreviousProducerId` (tag 0), `NextProducerId` (tag 1) and
  `ClientTransactionVersion` (tag 2), written only when they differ from their defaults;
  unknown tags are skipped.
Kafka writes v0 until the `transaction.version` feature is finalized at 1 or higher; this
broker finalizes no such feature, so v0 is the version written by default.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from groupcoord.wire.errors import DecodeError
from groupcoord.wire.primitives import (
    Buffer,
    read_compact_string,
    read_int8,
    read_int16,
    read_int32,
    read_int64,
    read_string,
    read_uvarint,
    skip_tagged_fields,
    uvarint_bytes,
    write_compact_string,
    write_string,
    write_tagged_fields,
)

KEY_VERSION = 0
VALUE_VERSION_MAX = 1
NO_PRODUCER_ID = -1

_HEAD = struct.Struct(">qhib")  # ProducerId, ProducerEpoch, TransactionTimeoutMs, Status
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I16 = struct.Struct(">h")


@dataclass
class TransactionLogValue:
    """One transactional id's metadata as stored (Kafka's `TransactionLogValue`)."""

    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    # topic -> partition ids, in the order written; None = null (Empty state).
    transaction_partitions: dict[str, list[int]] | None = None
    transaction_last_update_timestamp_ms: int = -1
    transaction_start_timestamp_ms: int = -1
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


def encode_key(transactional_id: str) -> bytes:
    out = bytearray(_I16.pack(KEY_VERSION))
    write_string(out, transactional_id)
    return bytes(out)


def decode_key(buf: Buffer) -> str:
    """The transactional id of a key; DecodeError for an unknown key version."""
    version, pos = read_int16(buf, 0)
    if version != KEY_VERSION:
        raise DecodeError(f"unknown TransactionLogKey version {version}")
    tid, _ = read_string(buf, pos)
    return tid


def _write_partitions(out: bytearray, parts: dict[str, list[int]] | None,
                      flexible: bool) -> None:
    if parts is None:
        out += b"\x00" if flexible else b"\xff\xff\xff\xff"
        return
    out += uvarint_bytes(len(parts) + 1) if flexible else _I32.pack(len(parts))
    for topic, ids in parts.items():
        if flexible:
            write_compact_string(out, topic)
            out += uvarint_bytes(len(ids) + 1)
        else:
            write_string(out, topic)
            out += _I32.pack(len(ids))
        for pid in ids:
            out += _I32.pack(pid)
        if flexible:
            out.append(0)


def encode_value(value: TransactionLogValue | None, version: int = 0) -> bytes | None:
    """Value bytes at `version` (0 or 1); None stays None (a tombstone)."""
    if value is None:
        return None
    if not 0 <= version <= VALUE_VERSION_MAX:
        raise ValueError(f"TransactionLogValue has no version {version}")
    flexible = version >= 1
    out = bytearray(_I16.pack(version))
    out += _HEAD.pack(value.producer_id, value.producer_epoch, value.transaction_timeout_ms,
                      value.transaction_status)
    _write_partitions(out, value.transaction_partitions, flexible)
    out += _I64.pack(value.transaction_last_update_timestamp_ms)
    out += _I64.pack(value.transaction_start_timestamp_ms)
    if flexible:
        tagged: list[tuple[int, Buffer]] = []
        if value.previous_producer_id != NO_PRODUCER_ID:
            tagged.append((0, _I64.pack(value.previous_producer_id)))
        if value.next_producer_id != NO_PRODUCER_ID:
            tagged.append((1, _I64.pack(value.next_producer_id)))
        if value.client_transaction_version != 0:
            tagged.append((2, _I16.pack(value.client_transaction_version)))
        write_tagged_fields(out, tagged)
    return bytes(out)


def _read_len(buf: Buffer, pos: int, flexible: bool) -> tuple[int, int]:
    """An array length; -1 for null."""
    if flexible:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    result: tuple[int, int] = read_int32(buf, pos)
    return result


def _read_partitions(buf: Buffer, pos: int,
                     flexible: bool) -> tuple[dict[str, list[int]] | None, int]:
    count, pos = _read_len(buf, pos, flexible)
    if count < 0:
        return None, pos
    parts: dict[str, list[int]] = {}
    for _ in range(count):
        topic, pos = read_compact_string(buf, pos) if flexible else read_string(buf, pos)
        n, pos = _read_len(buf, pos, flexible)
        ids = parts.setdefault(topic, [])
        for _ in range(max(n, 0)):
            pid, pos = read_int32(buf, pos)
            ids.append(pid)
        if flexible:
            pos = skip_tagged_fields(buf, pos)
    return parts, pos


def _read_tagged(buf: Buffer, pos: int, value: TransactionLogValue) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if tag == 0:
            value.previous_producer_id = read_int64(buf, pos)[0]
        elif tag == 1:
            value.next_producer_id = read_int64(buf, pos)[0]
        elif tag == 2:
            value.client_transaction_version = read_int16(buf, pos)[0]
        pos += size
    if pos > len(buf):
        raise DecodeError("tagged field runs past the end of the value")
    return pos


def decode_value(buf: Buffer | None) -> tuple[TransactionLogValue | None, int]:
    """(value, version); (None, -1) for a tombstone. DecodeError on bad input."""
    if buf is None:
        return None, -1
    version, pos = read_int16(buf, 0)
    if not 0 <= version <= VALUE_VERSION_MAX:
        raise DecodeError(f"unknown TransactionLogValue version {version}")
    flexible = version >= 1
    pid, pos = read_int64(buf, pos)
    epoch, pos = read_int16(buf, pos)
    timeout, pos = read_int32(buf, pos)
    status, pos = read_int8(buf, pos)
    parts, pos = _read_partitions(buf, pos, flexible)
    last_update, pos = read_int64(buf, pos)
    start, pos = read_int64(buf, pos)
    value = TransactionLogValue(pid, epoch, timeout, status, parts, last_update, start)
    if flexible:
        _read_tagged(buf, pos, value)
    return value, version


__all__ = [
    "KEY_VERSION",
    "TransactionLogValue",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
]
