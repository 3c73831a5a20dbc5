"""Committed and pending offsets of one shard, changed only by replay (the offsets half
of Kafka's `OffsetMetadataManager`: `replay` and `replayEndTransactionMarker`).

An offset record from a batch without a producer id is committed at once. One from a
transactional batch (producer id != -1) is pending until the producer's COMMIT or ABORT
marker (see `pending`). Every stored offset keeps the log offset of its record: on COMMIT
a pending offset replaces the committed one only if its record is the later of the two,
so a plain commit written after the transactional one (but before the marker) wins, and
compaction of `__consumer_offsets` cannot resurrect an older value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.offsets.pending import PendingOffsets, iter_leaves
from groupcoord.logformat.generated.offset_commit import OffsetCommitValue

UUID_ZERO = bytes(16)
NO_PRODUCER_ID = -1


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int  # -1: none (the value was written at a version without it)
    topic_id: bytes
    # The log offset of the record (Kafka's `recordOffset`); -1 when replayed without one.
    record_offset: int = -1

    @classmethod
    def from_value(cls, value: Any, record_offset: int = -1) -> OffsetAndMetadata:
        if type(value) is OffsetCommitValue:
            # Every version's decoder fills the fields it lacks with their defaults.
            topic_id = value.topic_id
            return cls(value.offset, value.leader_epoch, value.metadata or "",
                       value.commit_timestamp, value.expire_timestamp,
                       topic_id if type(topic_id) is bytes else bytes(topic_id or UUID_ZERO),
                       record_offset)
        # Legacy (type 0) values lack the newer fields.
        return cls(value.offset, getattr(value, "leader_epoch", -1), value.metadata or "",
                   value.commit_timestamp, getattr(value, "expire_timestamp", -1),
                   bytes(getattr(value, "topic_id", None) or UUID_ZERO), record_offset)


class OffsetStore:
    def __init__(self) -> None:
        # group -> topic -> partition -> offset
        self.offsets: dict[str, dict[str, dict[int, OffsetAndMetadata]]] = {}
        self.pending = PendingOffsets()

    def replay(self, group_id: str, topic: str, partition: int, value: Any | None,
               producer_id: int = NO_PRODUCER_ID, record_offset: int = -1) -> None:
        if value is None:
            self._remove(group_id, topic, partition)
            # A tombstone also deletes what open transactions hold for the partition.
            self.pending.drop_partition(group_id, topic, partition)
            return
        offset = OffsetAndMetadata.from_value(value, record_offset)
        if producer_id == NO_PRODUCER_ID:
            self._put(group_id, topic, partition, offset)
        else:
            self.pending.add(producer_id, group_id, topic, partition, offset)

    def replay_end_transaction_marker(self, producer_id: int, commit: bool) -> None:
        """`OffsetMetadataManager.replayEndTransactionMarker`."""
        ended = self.pending.end(producer_id)
        if not commit:
            return
        for group_id, topic, partition, offset in iter_leaves(ended):
            existing = self.get(group_id, topic, partition)
            if existing is None or offset.record_offset > existing.record_offset:
                self._put(group_id, topic, partition, offset)

    def _put(self, group_id: str, topic: str, partition: int, offset: OffsetAndMetadata) -> None:
        self.offsets.setdefault(group_id, {}).setdefault(topic, {})[partition] = offset

    def _remove(self, group_id: str, topic: str, partition: int) -> None:
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

    def get(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self.offsets.get(group_id, {}).get(topic, {}).get(partition)

    def group(self, group_id: str) -> dict[str, dict[int, OffsetAndMetadata]]:
        return self.offsets.get(group_id, {})

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        return self.pending.has(group_id, topic, partition)

    def has_open_transactions(self, group_id: str) -> bool:
        return self.pending.has_group(group_id)

    def canonical(self) -> dict[str, dict[tuple[str, int], OffsetAndMetadata]]:
        return {g: {(t, p): o for t, parts in topics.items() for p, o in parts.items()}
                for g, topics in self.offsets.items()}
