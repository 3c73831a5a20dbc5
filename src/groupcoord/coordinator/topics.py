"""The topics image a shard sees: name <-> id and partition counts (Kafka's `TopicsImage`
inside `MetadataImage`, reduced to what the group coordinator reads).

The image is input, not durable state: the runtime builds one from the broker's topics at
load time and whenever topics are created, deleted or grow, and hands it to every shard.
`version` increases with every change; regex resolution records it, so a shard can tell
whether topics changed since a regex was last resolved. Images are immutable values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: bytes
    num_partitions: int


@dataclass(frozen=True, slots=True)
class TopicsImage:
    version: int = 0
    by_name: dict[str, TopicImage] = field(default_factory=dict)
    by_id: dict[bytes, TopicImage] = field(default_factory=dict)

    @classmethod
    def of(cls, topics: Iterable[tuple[str, bytes, int]], version: int) -> TopicsImage:
        images = [TopicImage(name, bytes(tid), count) for name, tid, count in topics]
        return cls(version, {t.name: t for t in images}, {t.topic_id: t for t in images})

    def num_partitions(self, topic_id: bytes) -> int:
        """`SubscribedTopicDescriber.numPartitions`: -1 for a missing topic."""
        topic = self.by_id.get(topic_id)
        return -1 if topic is None else topic.num_partitions

    def topic_id(self, name: str) -> bytes | None:
        topic = self.by_name.get(name)
        return None if topic is None else topic.topic_id

    def name_of(self, topic_id: bytes) -> str | None:
        topic = self.by_id.get(topic_id)
        return None if topic is None else topic.name

    def changed_names(self, other: TopicsImage) -> set[str]:
        """Names created, deleted, re-created or resized between `other` and this image."""
        names = set(self.by_name) | set(other.by_name)
        return {n for n in names if self.by_name.get(n) != other.by_name.get(n)}


def topic_hash(image: TopicsImage, name: str) -> int:
    """A 64-bit digest of one topic's metadata (id, name, partition count); 0 if missing.

    Kafka uses XXH3-64 over the same fields (`Utils.computeTopicHash`); bit-exactness only
    matters when sharing a log with Java brokers, so a standard-library digest is used.
    """
    topic = image.by_name.get(name)
    if topic is None:
        return 0
    data = b"\x00" + topic.topic_id + name.encode() + topic.num_partitions.to_bytes(4, "big")
    return _signed64(hashlib.blake2b(data, digest_size=8).digest())


def group_hash(topic_hashes: dict[str, int]) -> int:
    """Combine topic hashes in name order (`Utils.computeGroupHash`)."""
    if not topic_hashes:
        return 0
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(topic_hashes):
        h.update(topic_hashes[name].to_bytes(8, "big", signed=True))
    return _signed64(h.digest())


def _signed64(raw: bytes) -> int:
    return int.from_bytes(raw, "big", signed=True)
