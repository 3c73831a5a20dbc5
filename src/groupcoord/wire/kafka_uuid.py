"""Kafka's `Uuid`: 16 bytes written as URL-safe base64 without padding (22 characters).

`Uuid.randomUuid` draws version-4 UUIDs but never returns 0, 1 (the reserved metadata topic
id) or one whose text contains "-", which command-line tools would take for an option. The
broker uses it for topic ids, the cluster id and the member ids it assigns in consumer groups.
Randomness comes from the caller, so this module stays pure.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

ZERO = bytes(16)
METADATA_TOPIC_ID = bytes(15) + b"\x01"
RESERVED = frozenset({ZERO, METADATA_TOPIC_ID})


def uuid_text(raw: bytes) -> str:
    """`Uuid.toString`."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def random_uuid(random_bytes: Callable[[int], bytes]) -> bytes:
    """`Uuid.randomUuid`: version-4 bits set, drawn again while reserved or dashed."""
    while True:
        raw = bytearray(random_bytes(16))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        candidate = bytes(raw)
        if candidate not in RESERVED and "-" not in uuid_text(candidate):
            return candidate
