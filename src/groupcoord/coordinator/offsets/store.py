"""Committed offsets of one shard, changed only by replaying OffsetCommit records
(the offsets half of Kafka's `OffsetMetadataManager`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

UUID_ZERO = bytes(16)


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int  # -1: none (the value was written at a version without it)
    topic_id: bytes

    @classmethod
    def from_value(cls, value: Any) -> OffsetAndMetadata:
        # Legacy (type 0) values lack the newer fields.
        return cls(value.offset, getattr(value, "leader_epoch", -1), value.metadata or "",
                   value.commit_timestamp, getattr(value, "expire_timestamp", -1),
                   bytes(getattr(value, "topic_id", None) or UUID_ZERO))


class OffsetStore:
    def __init__(self) -> None:
        # group -> topic -> partition -> offset
        self.offsets: dict[str, dict[str, dict[int, OffsetAndMetadata]]] = {}

    def replay(self, group_id: str, topic: str, partition: int, value: Any | None) -> None:
        if value is None:
            topics = self.offsets.get(group_id)
            if topics is None:
                return
            parts = topics.get(topic)
            if parts is not None:
                parts.pop(partition, None)
                if not parts:
                    del topics[topic]
            if not topics:
                del self.offsets[group_id]
            return
        topics = self.offsets.setdefault(group_id, {})
        topics.setdefault(topic, {})[partition] = OffsetAndMetadata.from_value(value)

    def get(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self.offsets.get(group_id, {}).get(topic, {}).get(partition)

    def group(self, group_id: str) -> dict[str, dict[int, OffsetAndMetadata]]:
        return self.offsets.get(group_id, {})

    def canonical(self) -> dict[str, dict[tuple[str, int], OffsetAndMetadata]]:
        return {g: {(t, p): o for t, parts in topics.items() for p, o in parts.items()}
                for g, topics in self.offsets.items()}
