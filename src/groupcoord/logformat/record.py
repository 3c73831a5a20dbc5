"""The records of a v2 batch (magic 2): encode and decode its records section.

Mirrors ``org.apache.kafka.common.record.DefaultRecord``. Each record, its length first:

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value |
    headersCount varint | (headerKeyLength varint | headerKey | headerValueLength varint |
    headerValue)...

Lengths of -1 stand for null; the varints are ``wire.primitives``'. The batch around the
records (header, CRC, compression) is ``logformat.batch``'s.

Malformed input raises ``CorruptRecordError`` (a ``ValueError``), never ``DecodeError``
or ``IndexError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple, TypeAlias

from groupcoord.wire.errors import DecodeError
from groupcoord.wire.primitives import Buffer, read_varlong, uvarint_bytes, write_varlong

Header: TypeAlias = tuple[str, bytes | None]

NO_TIMESTAMP = -1


class CorruptRecordError(ValueError):
    """A batch failed validation: bad magic, CRC, length or record framing."""


class Record(NamedTuple):
    """One record of a v2 batch (``DefaultRecord``); offsets/timestamps are deltas."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[Header] = ()
    attributes: int = 0


class SimpleRecord(NamedTuple):
    """Builder input with an absolute timestamp; offsets are assigned in order."""

    key: bytes | None
    value: bytes | None
    headers: Sequence[Header] = ()
    timestamp: int = NO_TIMESTAMP


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(1)  # zigzag(-1): null
    else:
        write_varlong(out, len(data))
        out += data


def _encode_record(out: bytearray, rec: Record) -> None:
    body = bytearray()
    body.append(rec.attributes & 0xFF)
    write_varlong(body, rec.timestamp_delta)
    write_varlong(body, rec.offset_delta)
    _write_bytes(body, rec.key)
    _write_bytes(body, rec.value)
    write_varlong(body, len(rec.headers))
    for name, hvalue in rec.headers:
        _write_bytes(body, name.encode())
        _write_bytes(body, hvalue)
    write_varlong(out, len(body))
    out += body


def record_size(rec: Record) -> int:
    """Bytes of one encoded record with its length prefix (`DefaultRecord.sizeInBytes`)."""
    out = bytearray()
    _encode_record(out, rec)
    return len(out)


def _encode_rows(rows: Sequence[SimpleRecord | tuple], base_timestamp: int | None
                 ) -> tuple[bytearray, int, int, int]:
    """(body, record count, base timestamp, max timestamp) of `(key, value, headers,
    timestamp)` rows at offset deltas 0..n-1: `_normalise` + `_encode_record` without the
    intermediate Records (the coordinators write every record through here)."""
    full = [r if len(r) == 4 else SimpleRecord(*r) for r in rows]
    body = bytearray()
    base = full[0][3] if base_timestamp is None else base_timestamp
    max_ts = full[0][3]
    varint = uvarint_bytes
    for delta, (key, value, headers, ts) in enumerate(full):
        # The varlongs written inline (zigzag of a value >= 0 is value << 1): one call
        # less each, six per record, on the path of every coordinator record.
        ts_delta = ts - base
        rec = bytearray(b"\x00")
        if ts_delta >= 0:
            rec += varint(ts_delta << 1)
        else:
            write_varlong(rec, ts_delta)
        rec += varint(delta << 1)
        if key is None:
            rec.append(1)  # zigzag(-1): null
        else:
            rec += varint(len(key) << 1)
            rec += key
        if value is None:
            rec.append(1)
        else:
            rec += varint(len(value) << 1)
            rec += value
        rec += varint(len(headers) << 1)
        for name, hvalue in headers:
            _write_bytes(rec, name.encode())
            _write_bytes(rec, hvalue)
        body += varint(len(rec) << 1)
        body += rec
        max_ts = max(max_ts, ts)
    return body, len(full), base, max_ts


def _normalise(
    records: Sequence[Record | SimpleRecord | tuple], base_timestamp: int | None
) -> tuple[list[Record], int, int]:
    """Turn builder input into Records plus (base_timestamp, max_timestamp)."""
    if records and not isinstance(records[0], Record):
        simple = [SimpleRecord(*r) for r in records]
        base = simple[0].timestamp if base_timestamp is None else base_timestamp
        recs = [
            Record(i, r.timestamp - base, r.key, r.value, tuple(r.headers))
            for i, r in enumerate(simple)
        ]
    else:
        recs = list(records)  # type: ignore[arg-type]
        base = NO_TIMESTAMP if base_timestamp is None else base_timestamp
    if not recs:
        return recs, base, base
    return recs, base, base + max(r.timestamp_delta for r in recs)


def encode_records(records: Sequence[Record | SimpleRecord | tuple], base_timestamp: int | None
                   ) -> tuple[bytearray, int, int, int, int]:
    """(records section, record count, last offset delta, base timestamp, max timestamp) of
    builder input: ``Record`` objects (deltas given; pass ``base_timestamp``) or ``(key,
    value, headers, timestamp)`` tuples, whose offsets become 0..n-1 and whose first
    timestamp becomes the base timestamp, as ``MemoryRecordsBuilder`` does."""
    if records and not isinstance(records[0], Record):
        body, count, base_ts, max_ts = _encode_rows(records, base_timestamp)
        return body, count, count - 1, base_ts, max_ts
    recs, base_ts, max_ts = _normalise(records, base_timestamp)
    body = bytearray()
    for rec in recs:
        _encode_record(body, rec)
    last_delta = max((r.offset_delta for r in recs), default=0)
    return body, len(recs), last_delta, base_ts, max_ts


def _read_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    size, pos = read_varlong(buf, pos)
    if size < 0:
        return None, pos
    end = pos + size
    if end > len(buf):
        raise CorruptRecordError("record field runs past the end of the batch")
    return bytes(buf[pos:end]), end


def _decode_record(buf: memoryview, pos: int) -> tuple[Record, int]:
    length, pos = read_varlong(buf, pos)
    end = pos + length
    if length < 0 or end > len(buf):
        raise CorruptRecordError("record length runs past the end of the batch")
    attributes = buf[pos]
    ts_delta, p = read_varlong(buf, pos + 1)
    off_delta, p = read_varlong(buf, p)
    key, p = _read_bytes(buf, p)
    value, p = _read_bytes(buf, p)
    count, p = read_varlong(buf, p)
    if count < 0:
        raise CorruptRecordError("negative header count")
    headers: list[Header] = []
    for _ in range(count):
        name, p = _read_bytes(buf, p)
        if name is None:
            raise CorruptRecordError("null header key")
        hvalue, p = _read_bytes(buf, p)
        headers.append((name.decode("utf-8", "replace"), hvalue))
    if p != end:
        raise CorruptRecordError("record length does not match its fields")
    return Record(off_delta, ts_delta, key, value, headers, attributes), end


def decode_record_at(buf: Buffer, pos: int) -> tuple[Record, int]:
    """The record at ``pos`` of a records section and the position after it."""
    try:
        return _decode_record(memoryview(buf), pos)
    except (DecodeError, IndexError) as exc:
        raise CorruptRecordError(f"malformed record: {exc}") from exc


def record_deltas_at(buf: memoryview, pos: int) -> tuple[int, int, int]:
    """The offset and timestamp deltas of the record at ``pos`` of a records section, and
    the position after it, without decoding its key, value and headers (a scan for one
    record's timestamp)."""
    try:
        length, p = read_varlong(buf, pos)
        end = p + length
        if length < 0 or end > len(buf):
            raise CorruptRecordError("record length runs past the end of the batch")
        ts_delta, p = read_varlong(buf, p + 1)
        off_delta, _ = read_varlong(buf, p)
    except (DecodeError, IndexError) as exc:
        raise CorruptRecordError(f"malformed record: {exc}") from exc
    return off_delta, ts_delta, end


def iter_record_fields(data: Buffer, count: int
                       ) -> Iterator[tuple[int, int, bytes | None, bytes | None]]:
    """``(offset delta, timestamp delta, key, value)`` of the first ``count`` records of a
    records section, headers and attributes skipped (readers that need neither)."""
    view = memoryview(data)
    size = len(view)
    pos = 0
    try:
        for _ in range(count):
            length, pos = read_varlong(view, pos)
            end = pos + length
            if length < 0 or end > size:
                raise CorruptRecordError("record length runs past the end of the batch")
            ts_delta, p = read_varlong(view, pos + 1)  # + 1: the attributes byte
            off_delta, p = read_varlong(view, p)
            # key and value inline (not ``_read_bytes``): this loop runs once per record read
            klen, p = read_varlong(view, p)
            key = None if klen < 0 else bytes(view[p : p + klen])
            vlen, p = read_varlong(view, p + max(klen, 0))
            if p + vlen > end:
                raise CorruptRecordError("record value runs past the end of the record")
            yield off_delta, ts_delta, key, None if vlen < 0 else bytes(view[p : p + vlen])
            pos = end
    except (DecodeError, IndexError) as exc:
        raise CorruptRecordError(f"malformed record: {exc}") from exc


def decode_records_section(data: memoryview, count: int) -> list[Record]:
    """The ``count`` records of a whole (decompressed) records section, which they must fill."""
    out: list[Record] = []
    pos = 0
    try:
        for _ in range(count):
            rec, pos = _decode_record(data, pos)
            out.append(rec)
    except (DecodeError, IndexError) as exc:
        raise CorruptRecordError(f"malformed record: {exc}") from exc
    if pos != len(data):
        raise CorruptRecordError("records count does not match the records section")
    return out
