"""ShareGroupStatePartitionMetadata (record 15): which share-partitions of a share group are
being initialized, are initialized, or are being deleted.

Mirrors Kafka's `ShareGroup.ShareGroupStatePartitionMetadataInfo` and the helpers of
`GroupMetadataManager` that rewrite it (`subscribedTopicsChangeMap`,
`addInitializingTopicsRecords`, `initializeShareGroupState`,
`uninitializeShareGroupState`, `sharePartitionsEligibleForOffsetDeletion`,
`completeDeleteShareGroupOffsets`, `shareGroupBuildPartitionDeleteRequest`). Every change
is a whole new value (the record is keyed by group only); these functions are pure and
return the new value, which the caller writes as a record and `replay` installs.

Kafka keeps a timestamp per initializing topic, set when the record is replayed (every
entry of one record gets the same one), and a heartbeat retries an initialization only once
`group.share.initialize.retry.interval.ms` has passed since (`subscribedTopicsChangeMap`):
an initialization still running, or one lost with a crash between its two records, is not
started twice meanwhile. That timestamp is soft (`replayed_at_ms`), as in Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.topics import TopicsImage
from groupcoord.logformat.coordinator_records import CoordinatorRecord
from groupcoord.logformat.generated.share_group_state_partition_metadata import (
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    TopicInfo,
    TopicPartitionsInfo,
)

UNKNOWN_TOPIC_NAME = "<UNKNOWN>"  # Kafka's `attachTopicName` placeholder


@dataclass(frozen=True, slots=True)
class TopicInit:
    """Kafka's `InitMapValue` without the timestamp: a topic name and partitions."""

    name: str
    partitions: frozenset[int]


TopicInits = dict[bytes, TopicInit]
PartitionMap = Mapping[bytes, Iterable[int]]


@dataclass(slots=True)
class StatePartitionMetadata:
    initializing: TopicInits = field(default_factory=dict)
    initialized: TopicInits = field(default_factory=dict)
    deleting: dict[bytes, str] = field(default_factory=dict)
    # When this value was replayed: the timestamp of every initializing entry (soft, so
    # not part of equality).
    replayed_at_ms: int = field(default=-1, compare=False)

    def canonical(self) -> tuple[Any, ...]:
        def inits(m: TopicInits) -> dict[bytes, tuple[str, list[int]]]:
            return {t: (v.name, sorted(v.partitions)) for t, v in sorted(m.items())}
        return inits(self.initializing), inits(self.initialized), dict(sorted(self.deleting.items()))

    def initialized_partitions(self) -> dict[bytes, set[int]]:
        """`GroupMetadataManager.initializedShareGroupPartitions`."""
        return {t: set(v.partitions) for t, v in self.initialized.items()}


# -- records -------------------------------------------------------------------------------

def record(group_id: str, md: StatePartitionMetadata) -> CoordinatorRecord:
    """`GroupCoordinatorRecordHelpers.newShareGroupStatePartitionMetadataRecord`."""
    def infos(m: TopicInits) -> list[TopicPartitionsInfo]:
        return [TopicPartitionsInfo(topic_id=t, topic_name=v.name, partitions=sorted(v.partitions))
                for t, v in sorted(m.items()) if v.partitions]
    return CoordinatorRecord(
        ShareGroupStatePartitionMetadataKey(group_id=group_id),
        ShareGroupStatePartitionMetadataValue(
            initializing_topics=infos(md.initializing), initialized_topics=infos(md.initialized),
            deleting_topics=[TopicInfo(topic_id=t, topic_name=n)
                             for t, n in sorted(md.deleting.items())]), 0)


def tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupStatePartitionMetadataKey(group_id=group_id), None)


def from_value(value: Any, now_ms: int) -> StatePartitionMetadata:
    """The replayed form of a record value (`GroupMetadataManager.replay`), replayed at
    `now_ms`."""
    def inits(items: Iterable[Any]) -> TopicInits:
        return {bytes(i.topic_id): TopicInit(i.topic_name, frozenset(i.partitions)) for i in items}
    return StatePartitionMetadata(inits(value.initializing_topics),
                                  inits(value.initialized_topics),
                                  {bytes(i.topic_id): i.topic_name for i in value.deleting_topics},
                                  now_ms)


# -- transitions ---------------------------------------------------------------------------

def combine(a: TopicInits, b: TopicInits) -> TopicInits:
    """`combineInitMaps`: the union of partitions per topic."""
    out = dict(a)
    for topic_id, value in b.items():
        old = out.get(topic_id)
        out[topic_id] = value if old is None else TopicInit(
            old.name or value.name, old.partitions | value.partitions)
    return {t: v for t, v in out.items() if v.partitions}


def _minus(inits: TopicInits, parts: PartitionMap) -> TopicInits:
    out = {}
    for topic_id, value in inits.items():
        left = value.partitions - frozenset(parts.get(topic_id, ()))
        if left:
            out[topic_id] = TopicInit(value.name, left)
    return out


def enrich(parts: PartitionMap, image: TopicsImage) -> TopicInits:
    """`attachInitValue`: topic names from the image."""
    return {t: TopicInit(image.name_of(t) or UNKNOWN_TOPIC_NAME, frozenset(ps))
            for t, ps in parts.items() if ps}


def change_map(md: StatePartitionMetadata | None, names: Iterable[str],
               image: TopicsImage, now_ms: int, retry_interval_ms: int) -> TopicInits:
    """`subscribedTopicsChangeMap`: subscribed partitions neither initialized nor
    initializing for less than `retry_interval_ms`."""
    done: TopicInits = {}
    if md is not None:
        fresh = now_ms - md.replayed_at_ms < retry_interval_ms
        done = combine(md.initialized, md.initializing) if fresh else dict(md.initialized)
    out: TopicInits = {}
    for name in sorted(set(names)):
        topic_id = image.topic_id(name)
        if topic_id is None:
            continue
        have = done[topic_id].partitions if topic_id in done else frozenset()
        missing = frozenset(range(image.num_partitions(topic_id))) - have
        if missing:
            out[topic_id] = TopicInit(name, missing)
    return out


def known_topics(md: StatePartitionMetadata | None) -> frozenset[bytes]:
    """Topics initialized or initializing: new partitions of these start at offset 0, a
    topic not known yet at -1 (`share.auto.offset.reset`), as in Kafka 4.4's
    `maybeCreateInitializeShareGroupStateRequest`."""
    if md is None:
        return frozenset()
    return frozenset(md.initialized) | frozenset(md.initializing)


def with_initializing(md: StatePartitionMetadata | None,
                      change: TopicInits) -> StatePartitionMetadata:
    """`addInitializingTopicsRecords`: a topic initialized again is no longer deleting."""
    md = md or StatePartitionMetadata()
    return StatePartitionMetadata(combine(md.initializing, change), dict(md.initialized),
                                  {t: n for t, n in md.deleting.items() if t not in change})


def with_initialized(md: StatePartitionMetadata | None,
                     done: TopicInits) -> StatePartitionMetadata:
    """`initializeShareGroupState`: move partitions from initializing to initialized."""
    md = md or StatePartitionMetadata()
    parts = {t: v.partitions for t, v in done.items()}
    return StatePartitionMetadata(_minus(md.initializing, parts),
                                  combine(md.initialized, done), dict(md.deleting))


def without_initializing(md: StatePartitionMetadata, failed: PartitionMap
                         ) -> StatePartitionMetadata:
    """`uninitializeShareGroupState`: initialization failed; forget those partitions."""
    return StatePartitionMetadata(_minus(md.initializing, failed), dict(md.initialized),
                                  dict(md.deleting))


def start_deleting(md: StatePartitionMetadata, topic_ids: Iterable[bytes]
                   ) -> StatePartitionMetadata:
    """`sharePartitionsEligibleForOffsetDeletion`: initialized topics move to deleting."""
    ids = set(topic_ids)
    deleting = dict(md.deleting)
    for topic_id in ids & set(md.initialized):
        deleting[topic_id] = md.initialized[topic_id].name
    return StatePartitionMetadata(dict(md.initializing),
                                  {t: v for t, v in md.initialized.items() if t not in ids},
                                  deleting)


def complete_deleting(md: StatePartitionMetadata, topic_ids: Iterable[bytes]
                      ) -> StatePartitionMetadata:
    """`completeDeleteShareGroupOffsets`: the state is gone; drop them from deleting."""
    ids = set(topic_ids)
    return StatePartitionMetadata(dict(md.initializing), dict(md.initialized),
                                  {t: n for t, n in md.deleting.items() if t not in ids})


def for_group_delete(md: StatePartitionMetadata) -> StatePartitionMetadata:
    """`shareGroupBuildPartitionDeleteRequest`: everything the group has goes to deleting."""
    deleting = dict(md.deleting)
    for topic_id, value in combine(md.initialized, md.initializing).items():
        deleting[topic_id] = value.name
    return StatePartitionMetadata({}, {}, deleting)


# -- the initialization a heartbeat asks for -------------------------------------------------

@dataclass(frozen=True, slots=True)
class InitializeRequest:
    """`InitializeShareGroupStateParameters` built by a heartbeat: share-partitions to
    initialize once the heartbeat is answered, at state epoch `group_epoch`, each topic
    starting at `start_offsets[topic]` (0, or -1 for `share.auto.offset.reset`)."""

    group_id: str
    group_epoch: int
    topics: TopicInits
    start_offsets: Mapping[bytes, int]

    def partitions(self) -> dict[bytes, frozenset[int]]:
        return {t: v.partitions for t, v in self.topics.items()}


UNINITIALIZED_START_OFFSET = -1  # Kafka's `PartitionFactory.UNINITIALIZED_START_OFFSET`


def initialize_request(group_id: str, group_epoch: int, md: StatePartitionMetadata | None,
                       change: TopicInits) -> InitializeRequest:
    """`buildInitializeShareGroupStateRequest`: new partitions of a known topic start at 0
    (so records produced before the initialization completes are not skipped), a new
    topic at -1."""
    known = known_topics(md)
    return InitializeRequest(group_id, group_epoch, dict(change), {
        t: 0 if t in known else UNINITIALIZED_START_OFFSET for t in change})
