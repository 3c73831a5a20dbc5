"""Reading and writing the consumer embedded protocol (`ConsumerProtocolSubscription` /
`ConsumerProtocolAssignment`), only as far as the coordinator needs it.

Kafka parses subscriptions with the version-0 prefix (version int16, topics array) to learn
a classic consumer group's subscribed topics (`ClassicGroup.computeSubscribedTopics`); every
later version starts with that prefix. Assignments are decoded only by tests and tools.
"""

from __future__ import annotations

import struct

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class ProtocolParseError(ValueError):
    """The bytes are not a consumer protocol message."""


def _read_i16(buf: bytes, pos: int) -> tuple[int, int]:
    if pos + 2 > len(buf):
        raise ProtocolParseError("truncated int16")
    return _I16.unpack_from(buf, pos)[0], pos + 2


def _read_i32(buf: bytes, pos: int) -> tuple[int, int]:
    if pos + 4 > len(buf):
        raise ProtocolParseError("truncated int32")
    return _I32.unpack_from(buf, pos)[0], pos + 4


def _read_str(buf: bytes, pos: int) -> tuple[str, int]:
    n, pos = _read_i16(buf, pos)
    if n < 0 or pos + n > len(buf):
        raise ProtocolParseError("bad string length")
    try:
        return bytes(buf[pos:pos + n]).decode("utf-8"), pos + n
    except UnicodeDecodeError as exc:
        raise ProtocolParseError("bad utf-8") from exc


def subscription_topics(metadata: bytes) -> list[str]:
    """Topics of a ConsumerProtocolSubscription (any version), via its v0 prefix."""
    _version, pos = _read_i16(metadata, 0)
    count, pos = _read_i32(metadata, pos)
    if count < 0:
        raise ProtocolParseError("null topic array")
    topics = []
    for _ in range(count):
        topic, pos = _read_str(metadata, pos)
        topics.append(topic)
    return topics


def encode_subscription(topics: list[str], version: int = 0) -> bytes:
    out = bytearray(_I16.pack(version))
    out += _I32.pack(len(topics))
    for t in topics:
        raw = t.encode()
        out += _I16.pack(len(raw)) + raw
    out += _I32.pack(-1)  # user data: null
    if version >= 1:
        out += _I32.pack(0)  # owned partitions: empty
    return bytes(out)


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """topic -> partitions of a ConsumerProtocolAssignment (v0 prefix)."""
    if not data:
        return {}
    _version, pos = _read_i16(data, 0)
    count, pos = _read_i32(data, pos)
    result: dict[str, list[int]] = {}
    for _ in range(max(count, 0)):
        topic, pos = _read_str(data, pos)
        n, pos = _read_i32(data, pos)
        parts = []
        for _ in range(max(n, 0)):
            p, pos = _read_i32(data, pos)
            parts.append(p)
        result.setdefault(topic, []).extend(parts)
    return result


def encode_assignment(assignment: dict[str, list[int]], version: int = 0) -> bytes:
    out = bytearray(_I16.pack(version))
    out += _I32.pack(len(assignment))
    for topic, parts in assignment.items():
        raw = topic.encode()
        out += _I16.pack(len(raw)) + raw
        out += _I32.pack(len(parts))
        for p in parts:
            out += _I32.pack(p)
    out += _I32.pack(-1)  # user data: null
    return bytes(out)
