"""OffsetFetch (`OffsetMetadataManager.fetchOffsets/fetchAllOffsets`).

An unknown group is not an error: every requested partition answers offset -1, leader
epoch -1, metadata "" (fetch-all answers nothing). A stored topic id that differs from the
requested one means the topic was recreated: also "no offset". Only committed offsets are
answered; with RequireStable (v7+) a partition holding a pending transactional offset of
the group answers UNSTABLE_OFFSET_COMMIT with offset -1 instead, so the consumer retries
until the transaction ends (KIP-447).
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.coordinator.offsets.store import UUID_ZERO, OffsetStore
from groupcoord.wire.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class FetchedTopic:
    name: str
    topic_id: bytes
    partitions: list[FetchedPartition]


@dataclass(frozen=True, slots=True)
class TopicQuery:
    name: str
    topic_id: bytes
    partitions: list[int]


def _mismatched(stored: bytes, requested: bytes) -> bool:
    return stored != UUID_ZERO and requested != UUID_ZERO and stored != requested


def _unstable(partition: int) -> FetchedPartition:
    return FetchedPartition(partition, -1, -1, "", int(ErrorCode.UNSTABLE_OFFSET_COMMIT))


def fetch_offsets(store: OffsetStore, group_exists: bool, group_id: str,
                  topics: list[TopicQuery] | None,
                  require_stable: bool = False) -> list[FetchedTopic]:
    """Offsets for `topics`, or every committed offset when `topics` is None."""
    if topics is None:
        return _fetch_all(store, group_id, require_stable) if group_exists else []
    offsets = store.group(group_id) if group_exists else {}
    result = []
    for t in topics:
        stored = offsets.get(t.name, {})
        parts = []
        for p in t.partitions:
            o = stored.get(p)
            if require_stable and store.has_pending(group_id, t.name, p):
                parts.append(_unstable(p))
            elif o is None or _mismatched(o.topic_id, t.topic_id):
                parts.append(FetchedPartition(p, -1, -1, ""))
            else:
                parts.append(FetchedPartition(p, o.offset, o.leader_epoch, o.metadata))
        result.append(FetchedTopic(t.name, t.topic_id, parts))
    return result


def _fetch_all(store: OffsetStore, group_id: str, require_stable: bool) -> list[FetchedTopic]:
    # Like Kafka's fetchAllOffsets: the committed partitions only; one that is also
    # pending answers UNSTABLE_OFFSET_COMMIT under RequireStable.
    result = []
    for name in sorted(store.group(group_id)):
        parts = store.group(group_id)[name]
        topic_id = next((o.topic_id for o in parts.values() if o.topic_id != UUID_ZERO),
                        UUID_ZERO)
        result.append(FetchedTopic(name, topic_id, [
            _unstable(p) if require_stable and store.has_pending(group_id, name, p)
            else FetchedPartition(p, o.offset, o.leader_epoch, o.metadata)
            for p, o in sorted(parts.items())]))
    return result
