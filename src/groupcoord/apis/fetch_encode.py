"""Hand-written FetchResponse encoder: the hot half of consuming.

Produces exactly the bytes of the generated `FetchResponse.encode` (a test compares them
for every version 4-17) for the responses this broker builds: no diverging epoch, current
leader or snapshot id tagged fields, no node endpoints. Record payloads are returned as
separate buffers so stored bytes reach the transport without a copy; everything between
them is packed into one bytearray.
"""

from __future__ import annotations

import struct
from typing import Any

from groupcoord.apis.raw_response import RawResponse
from groupcoord.wire.primitives import write_int16, write_int32, write_uvarint

_HEAD_V7 = struct.Struct(">ihi")
_PART_V4 = struct.Struct(">ihqq")
_PART_V5 = struct.Struct(">ihqqq")
_ABORTED = struct.Struct(">qq")
_SMALL = 4096


def _length(out: bytearray, count: int, flexible: bool) -> None:
    """An array's or a byte string's length: a compact (+1) uvarint or an int32."""
    if flexible:
        write_uvarint(out, count + 1)
    else:
        write_int32(out, count)


def _null(out: bytearray, flexible: bool) -> None:
    """A null array or byte string: compact length 0, or int32 -1."""
    out += b"\x00" if flexible else b"\xff\xff\xff\xff"


def _string(out: bytearray, text: str, flexible: bool) -> None:
    raw = text.encode("utf-8")
    if flexible:
        write_uvarint(out, len(raw) + 1)
    else:
        write_int16(out, len(raw))
    out += raw


def _aborted(out: bytearray, aborted: list[Any] | None, flexible: bool) -> None:
    if aborted is None:
        _null(out, flexible)
        return
    _length(out, len(aborted), flexible)
    for entry in aborted:
        out += _ABORTED.pack(entry.producer_id, entry.first_offset)
        if flexible:
            out.append(0)


def _partition(out: bytearray, parts: list[Any], p: Any, version: int) -> bytearray:
    flexible = version >= 12
    if version >= 5:
        out += _PART_V5.pack(p.partition_index, p.error_code, p.high_watermark,
                             p.last_stable_offset, p.log_start_offset)
    else:
        out += _PART_V4.pack(p.partition_index, p.error_code, p.high_watermark,
                             p.last_stable_offset)
    _aborted(out, p.aborted_transactions, flexible)
    if version >= 11:
        write_int32(out, p.preferred_read_replica)
    records = p.records
    if records is None:
        _null(out, flexible)
    else:
        size = len(records)
        _length(out, size, flexible)
        if size >= _SMALL:
            parts.append(out)
            parts.append(records)
            out = bytearray()
        else:
            out += records
    if flexible:
        out.append(0)
    return out


def encode_fetch_response(response: Any, version: int) -> RawResponse:
    """The wire body of `response` (a generated FetchResponse) at `version`."""
    flexible = version >= 12
    parts: list[Any] = []
    out = bytearray()
    if version >= 7:
        out += _HEAD_V7.pack(response.throttle_time_ms, response.error_code, response.session_id)
    else:
        write_int32(out, response.throttle_time_ms)
    topics = response.responses
    _length(out, len(topics), flexible)
    for topic in topics:
        if version >= 13:
            out += topic.topic_id
        else:
            _string(out, topic.topic, flexible)
        _length(out, len(topic.partitions), flexible)
        for p in topic.partitions:
            out = _partition(out, parts, p, version)
        if flexible:
            out.append(0)
    if flexible:
        out.append(0)
    parts.append(out)
    return RawResponse(parts, sum(len(x) for x in parts))
