"""OffsetFetch (`OffsetMetadataManager.fetchOffsets/fetchAllOffsets`).

An unknown group is not an error: every requested partition answers offset -1, leader
epoch -1, metadata "" (fetch-all answers nothing). A stored topic id that differs from the
requested one means the topic was recreated: also "no offset". Without transactional
offsets nothing is ever pending, so RequireStable never yields UNSTABLE_OFFSET_COMMIT here.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.coordinator.offsets.store import UUID_ZERO, OffsetStore


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


def fetch_offsets(store: OffsetStore, group_exists: bool, group_id: str,
                  topics: list[TopicQuery] | None) -> list[FetchedTopic]:
    """Offsets for `topics`, or every committed offset when `topics` is None."""
    if topics is None:
        return _fetch_all(store, group_id) if group_exists else []
    offsets = store.group(group_id) if group_exists else {}
    result = []
    for t in topics:
        stored = offsets.get(t.name, {})
        parts = []
        for p in t.partitions:
            o = stored.get(p)
            if o is None or _mismatched(o.topic_id, t.topic_id):
                parts.append(FetchedPartition(p, -1, -1, ""))
            else:
                parts.append(FetchedPartition(p, o.offset, o.leader_epoch, o.metadata))
        result.append(FetchedTopic(t.name, t.topic_id, parts))
    return result


def _fetch_all(store: OffsetStore, group_id: str) -> list[FetchedTopic]:
    result = []
    for name in sorted(store.group(group_id)):
        parts = store.group(group_id)[name]
        topic_id = next((o.topic_id for o in parts.values() if o.topic_id != UUID_ZERO),
                        UUID_ZERO)
        result.append(FetchedTopic(name, topic_id, [
            FetchedPartition(p, o.offset, o.leader_epoch, o.metadata)
            for p, o in sorted(parts.items())]))
    return result
