"""Kafka record batch v2 (magic 2): build, parse, validate and rewrite in place.

Mirrors ``org.apache.kafka.common.record.DefaultRecordBatch`` and the builder half of
``MemoryRecordsBuilder``; the records inside a batch are ``logformat.record``'s. The layout
(61-byte header, then records):

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
    maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
    recordsCount int32 | records...

Rules kept here:
- The CRC is CRC-32C over attributes..end, so baseOffset, batchLength and
  partitionLeaderEpoch can be rewritten without touching it (``set_base_offset``); changing
  attributes or maxTimestamp (``set_max_timestamp``) recomputes it.
- Readers work on memoryviews of stored bytes and never copy a batch to inspect it; only
  ``decode_records`` materialises records (decompressing when needed).
- Malformed input raises ``CorruptRecordError`` (a ``ValueError``), never ``struct.error``
  or ``IndexError``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from groupcoord.logformat.compression import CompressionError, compress, decompress
from groupcoord.logformat.record import (
    NO_TIMESTAMP,  # noqa: F401  the coordinator runtime imports it from here
    CorruptRecordError,
    Record,
    SimpleRecord,
    decode_record_at,  # noqa: F401  as NO_TIMESTAMP
    decode_records_section,
    encode_records,
)
from groupcoord.wire.primitives import Buffer


def _crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC32C; binds the C implementation on first use.

    The `crc32c` package imports importlib.metadata at import time, which costs tens of
    milliseconds of broker start-up; after the first call this name is the C function.
    """
    global _crc32c
    from crc32c import crc32c as implementation

    _crc32c = implementation
    return implementation(data, value)


MAGIC = 2

# The header layout, the one definition of it: (field, struct code) in wire order. Every
# size, offset and struct below is derived from it, and so are analytics' readers (the
# numba fast path is checked against it in the tests).
HEADER_FIELDS: tuple[tuple[str, str], ...] = (
    ("base_offset", "q"),
    ("batch_length", "i"),
    ("partition_leader_epoch", "i"),
    ("magic", "b"),
    ("crc", "I"),
    ("attributes", "h"),
    ("last_offset_delta", "i"),
    ("base_timestamp", "q"),
    ("max_timestamp", "q"),
    ("producer_id", "q"),
    ("producer_epoch", "h"),
    ("base_sequence", "i"),
    ("records_count", "i"),
)


def _fields_struct(fields: Sequence[tuple[str, str]]) -> struct.Struct:
    return struct.Struct(">" + "".join(code for _, code in fields))


HEADER_STRUCT = _fields_struct(HEADER_FIELDS)
FIELD_OFFSETS: dict[str, int] = {
    name: _fields_struct(HEADER_FIELDS[:i]).size for i, (name, _) in enumerate(HEADER_FIELDS)
}
HEADER_SIZE = HEADER_STRUCT.size  # 61
#: baseOffset + batchLength, the prefix that batchLength does not count.
PREFIX_STRUCT = _fields_struct(HEADER_FIELDS[:2])
LOG_OVERHEAD = PREFIX_STRUCT.size
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

CREATE_TIME = 0
LOG_APPEND_TIME = 1

# Attribute bits (DefaultRecordBatch.*_MASK).
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

# Control record types (ControlRecordType): key = version int16, type int16.
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
# EndTransactionMarker value: version int16, coordinator epoch int32.
_END_TXN_VALUE = struct.Struct(">hi")

# Byte offsets inside a batch.
BASE_OFFSET_OFFSET = FIELD_OFFSETS["base_offset"]
LENGTH_OFFSET = FIELD_OFFSETS["batch_length"]
PARTITION_LEADER_EPOCH_OFFSET = FIELD_OFFSETS["partition_leader_epoch"]
MAGIC_OFFSET = FIELD_OFFSETS["magic"]
CRC_OFFSET = FIELD_OFFSETS["crc"]
ATTRIBUTES_OFFSET = FIELD_OFFSETS["attributes"]  # the CRC covers from here to the end
LAST_OFFSET_DELTA_OFFSET = FIELD_OFFSETS["last_offset_delta"]
BASE_TIMESTAMP_OFFSET = FIELD_OFFSETS["base_timestamp"]
MAX_TIMESTAMP_OFFSET = FIELD_OFFSETS["max_timestamp"]
PRODUCER_ID_OFFSET = FIELD_OFFSETS["producer_id"]
RECORDS_COUNT_OFFSET = FIELD_OFFSETS["records_count"]

# Each field alone, to read or rewrite it in place.
_FIELD_STRUCTS = {name: _fields_struct(((name, code),)) for name, code in HEADER_FIELDS}
_CRC_COVERED_FROM = [name for name, _ in HEADER_FIELDS].index("attributes")
# baseOffset..crc, then attributes..recordsCount (the CRC-covered part of the header)
_HEAD = _fields_struct(HEADER_FIELDS[:_CRC_COVERED_FROM])
_TAIL = _fields_struct(HEADER_FIELDS[_CRC_COVERED_FROM:])


class BatchHeader(NamedTuple):
    """The fixed 61-byte header of a v2 batch (``DefaultRecordBatch`` accessors)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies in a log (header included)."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def parse_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """Parse the 61-byte header at ``pos`` without checking the CRC."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError("record batch header truncated")
    return BatchHeader._make(HEADER_STRUCT.unpack_from(buf, pos))


def batch_size_at(buf: Buffer, pos: int) -> int | None:
    """Total size of the batch at ``pos`` from its length prefix, or None if cut short."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    _, length = PREFIX_STRUCT.unpack_from(buf, pos)
    if length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"record batch length {length} below minimum")
    return length + LOG_OVERHEAD


def iter_batches(buf: Buffer, pos: int = 0) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Yield ``(header, view)`` for each whole batch; a partial tail ends iteration."""
    view = memoryview(buf)
    end = len(view)
    while True:
        size = batch_size_at(view, pos)
        if size is None or pos + size > end:
            return
        yield BatchHeader._make(HEADER_STRUCT.unpack_from(view, pos)), view[pos : pos + size]
        pos += size


def log_header_at(buf: Buffer, pos: int = 0) -> BatchHeader | None:
    """The header of the batch at ``pos`` as Kafka's log recovery reads it: None where the
    readable prefix of a log ends (a header cut short, a magic other than 2 or a batch length
    below the minimum). Neither the CRC nor the batch's own end is checked."""
    if len(buf) - pos < HEADER_SIZE:
        return None
    header = BatchHeader._make(HEADER_STRUCT.unpack_from(buf, pos))
    if header.magic != MAGIC or header.batch_length < MIN_BATCH_LENGTH:
        return None
    return header


def iter_log_batches(buf: Buffer, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """``(position, header)`` of each whole batch from ``pos`` on, up to where the readable
    prefix of a log ends (``log_header_at``, or a torn batch at the end): a stored log, which
    unlike ``iter_batches``'s input may end in a crash's torn write, read without raising."""
    end = len(buf)
    while (header := log_header_at(buf, pos)) is not None and pos + header.size <= end:
        yield pos, header
        pos += header.size


def compute_crc32c(data: Buffer) -> int:
    """CRC-32C of any bytes (the checksum of record batches)."""
    return _crc32c(data)


def compute_crc(batch: Buffer) -> int:
    """CRC-32C of the CRC-covered part (attributes..end) of a whole batch."""
    return _crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:])


def validate(batch: Buffer, check_offsets: bool = False) -> BatchHeader:
    """Check magic, length and CRC of one whole batch and return its header.

    ``check_offsets`` adds the produce-time rule of Kafka's ``LogValidator``: the record
    count must equal ``lastOffsetDelta + 1`` (only compaction may leave offset gaps).
    """
    view = memoryview(batch)
    if len(view) < HEADER_SIZE:
        raise CorruptRecordError("record batch shorter than its header")
    header = BatchHeader._make(HEADER_STRUCT.unpack_from(view, 0))
    if header.magic != MAGIC:
        raise CorruptRecordError(f"unsupported record batch magic {header.magic}")
    if header.batch_length + LOG_OVERHEAD != len(view):
        raise CorruptRecordError(
            f"record batch length {header.batch_length} inconsistent with {len(view)} bytes"
        )
    if _crc32c(view[ATTRIBUTES_OFFSET:]) != header.crc:
        raise CorruptRecordError("record batch CRC mismatch")
    if header.records_count < 0 or header.last_offset_delta < 0:
        raise CorruptRecordError("negative record count or last offset delta")
    if check_offsets and header.records_count != header.last_offset_delta + 1:
        raise CorruptRecordError("inconsistent batch offset range")
    return header


def set_base_offset(buf: bytearray | memoryview, pos: int, offset: int) -> None:
    """Rewrite the base offset of the batch at ``pos`` (not covered by the CRC)."""
    _FIELD_STRUCTS["base_offset"].pack_into(buf, pos + BASE_OFFSET_OFFSET, offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Rewrite the partition leader epoch (not covered by the CRC)."""
    _FIELD_STRUCTS["partition_leader_epoch"].pack_into(
        buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_max_timestamp(
    buf: bytearray | memoryview, pos: int, timestamp_type: int, max_timestamp: int
) -> None:
    """Set the timestamp type bit and maxTimestamp and recompute the CRC in place.

    As ``DefaultRecordBatch.setMaxTimestamp``: a LogAppendTime batch carries the append
    time in maxTimestamp and readers use it for every record in the batch.
    """
    attributes_struct = _FIELD_STRUCTS["attributes"]
    (attributes,) = attributes_struct.unpack_from(buf, pos + ATTRIBUTES_OFFSET)
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    else:
        attributes &= ~TIMESTAMP_TYPE_MASK
    attributes_struct.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes)
    _FIELD_STRUCTS["max_timestamp"].pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, max_timestamp)
    (length,) = _FIELD_STRUCTS["batch_length"].unpack_from(buf, pos + LENGTH_OFFSET)
    end = pos + LOG_OVERHEAD + length
    crc = _crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : end])
    _FIELD_STRUCTS["crc"].pack_into(buf, pos + CRC_OFFSET, crc)


def set_log_append_time(buf: bytearray | memoryview, pos: int, now_ms: int) -> None:
    """Stamp the batch at ``pos`` with LogAppendTime ``now_ms``."""
    set_max_timestamp(buf, pos, LOG_APPEND_TIME, now_ms)


def build_batch(
    records: Sequence[Record | SimpleRecord | tuple],
    *,
    base_offset: int = 0,
    base_timestamp: int | None = None,
    compression: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
    timestamp_type: int = CREATE_TIME,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
) -> bytes:
    """Encode one v2 batch.

    ``records`` is either ``Record`` objects (deltas given; pass ``base_timestamp``) or
    ``(key, value, headers, timestamp)`` tuples, whose offsets become 0..n-1 and whose
    first timestamp becomes the base timestamp, as ``MemoryRecordsBuilder`` does.
    ``max_timestamp`` and ``last_offset_delta`` override the computed values, as the log
    cleaner needs to keep a filtered batch's original offset range.
    """
    body, count, last_delta, base_ts, max_ts = encode_records(records, base_timestamp)
    if max_timestamp is not None:
        max_ts = max_timestamp
    payload = compress(compression, body) if compression else body
    attributes = compression & COMPRESSION_MASK
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_MASK
    if control:
        attributes |= CONTROL_MASK
    if last_offset_delta is not None:
        last_delta = last_offset_delta
    tail = _TAIL.pack(
        attributes, last_delta, base_ts, max_ts, producer_id, producer_epoch,
        base_sequence, count,
    )
    crc = _crc32c(payload, _crc32c(tail))
    length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    head = _HEAD.pack(base_offset, length, partition_leader_epoch, MAGIC, crc)
    return b"".join((head, tail, payload))


def records_payload(batch: Buffer, header: BatchHeader | None = None) -> memoryview:
    """The (decompressed) records section of a whole batch."""
    view = memoryview(batch)
    if header is None:
        header = parse_header(view)
    data = view[HEADER_SIZE : header.size]
    if header.compression:
        try:
            return memoryview(decompress(header.compression, data))
        except CompressionError as exc:
            raise CorruptRecordError(f"cannot decompress batch: {exc}") from exc
    return data


def decode_records(batch: Buffer) -> list[Record]:
    """Decode every record of a whole batch, decompressing as needed."""
    header = parse_header(batch)
    return decode_records_section(records_payload(batch, header), header.records_count)


def control_key_type(key: bytes | None) -> int | None:
    """The ControlRecordType (0 ABORT, 1 COMMIT) of a control record key (int16 version,
    int16 type), or None when the key is missing or too short."""
    if key is None or len(key) < _CONTROL_KEY.size:
        return None
    return _CONTROL_KEY.unpack_from(key, 0)[1]


def control_record_type(record: Record) -> int:
    """The ControlRecordType (0 ABORT, 1 COMMIT) from a control record's key."""
    kind = control_key_type(record.key)
    if kind is None:
        raise CorruptRecordError("control record key too short")
    return kind


def build_end_txn_marker(
    control_type: int,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A control batch holding one COMMIT/ABORT marker (``EndTransactionMarker``)."""
    key = _CONTROL_KEY.pack(0, control_type)
    value = _END_TXN_VALUE.pack(0, coordinator_epoch)
    return build_batch(
        [Record(0, 0, key, value)], base_offset=base_offset, base_timestamp=timestamp,
        producer_id=producer_id, producer_epoch=producer_epoch, transactional=True,
        control=True, partition_leader_epoch=partition_leader_epoch,
    )
