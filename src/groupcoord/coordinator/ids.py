"""Member id sources, injected into the shard so the coordinator stays deterministic.

Kafka generates `prefix + "-" + UUID.randomUUID()` where the prefix is the client id, or
the group instance id for static members (`ClassicGroup.generateMemberId`), and a bare
`Uuid.randomUuid()` (22 characters of base64) for consumer-group members whose client sent
no id. The id ends up in the records, so replay never needs the source again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from groupcoord.wire.kafka_uuid import random_uuid, uuid_text


class IdSource(Protocol):
    def member_id(self, prefix: str) -> str: ...

    def uuid(self) -> str: ...


def format_uuid4(raw: bytes) -> str:
    """Format 16 random bytes as a version-4 UUID string (as `UUID.randomUUID`)."""
    b = bytearray(raw[:16])
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


class RandomIds:
    """Production source; `random_bytes(n)` is supplied by the server (e.g. `os.urandom`)."""

    def __init__(self, random_bytes: Callable[[int], bytes]) -> None:
        self._random_bytes = random_bytes

    def member_id(self, prefix: str) -> str:
        return f"{prefix}-{format_uuid4(self._random_bytes(16))}"

    def uuid(self) -> str:
        return uuid_text(random_uuid(self._random_bytes))


class SequentialIds:
    """Test source: `prefix-1`, `prefix-2`, ... in call order."""

    def __init__(self) -> None:
        self.counter = 0

    def member_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    def uuid(self) -> str:
        self.counter += 1
        return str(self.counter)
