"""Pending transactional offsets of one shard (the `pendingTransactionalOffsets` and
`OpenTransactions` halves of Kafka's `OffsetMetadataManager`, KIP-98 / KIP-447).

An offset written by TxnOffsetCommit sits here, keyed by the producer id of its batch,
until the transaction's COMMIT or ABORT marker is replayed. Alongside, every
(group, topic, partition) remembers which producers hold a pending offset for it: that
index answers "is this partition unstable?" (OffsetFetch RequireStable, expiry) without
walking every producer. Changed only by replay, like the committed offsets.

Rules kept (as Kafka 4.x):
- A tombstone for a partition drops every producer's pending offset for it and clears
  the partition from the index, so a deleted group has no open transaction left.
- A marker removes the producer's whole pending set; COMMIT hands it to the caller to
  materialize, ABORT drops it. A marker for a producer with nothing pending is a no-op.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# group -> topic -> partition -> value
Nested = dict[str, dict[str, dict[int, Any]]]


def _put(tree: Nested, group: str, topic: str, partition: int, value: Any) -> None:
    tree.setdefault(group, {}).setdefault(topic, {})[partition] = value


def _pop(tree: Nested, group: str, topic: str, partition: int) -> Any:
    """Remove one leaf, pruning maps left empty (Kafka never keeps empty levels)."""
    topics = tree.get(group)
    if topics is None:
        return None
    parts = topics.get(topic)
    if parts is None:
        return None
    value = parts.pop(partition, None)
    if not parts:
        del topics[topic]
        if not topics:
            del tree[group]
    return value


def iter_leaves(tree: Nested) -> Iterator[tuple[str, str, int, Any]]:
    for group, topics in tree.items():
        for topic, parts in topics.items():
            for partition, value in parts.items():
                yield group, topic, partition, value


class PendingOffsets:
    def __init__(self) -> None:
        # producer id -> group -> topic -> partition -> OffsetAndMetadata
        self.by_producer: dict[int, Nested] = {}
        # group -> topic -> partition -> producer ids with a pending offset there
        self.open: Nested = {}

    def add(self, producer_id: int, group: str, topic: str, partition: int,
            offset: Any) -> None:
        _put(self.by_producer.setdefault(producer_id, {}), group, topic, partition, offset)
        producers = self.open.get(group, {}).get(topic, {}).get(partition)
        if producers is None:
            producers = set()
            _put(self.open, group, topic, partition, producers)
        producers.add(producer_id)

    def drop_partition(self, group: str, topic: str, partition: int) -> None:
        """A tombstone for the partition: forget every producer's pending offset for it."""
        producers = _pop(self.open, group, topic, partition)
        for producer_id in producers or ():
            tree = self.by_producer.get(producer_id)
            if tree is not None:
                _pop(tree, group, topic, partition)
                if not tree:
                    del self.by_producer[producer_id]

    def end(self, producer_id: int) -> Nested:
        """The transaction of `producer_id` ended: its pending offsets, now removed."""
        tree = self.by_producer.pop(producer_id, {})
        for group, topic, partition, _ in iter_leaves(tree):
            producers = self.open.get(group, {}).get(topic, {}).get(partition)
            if producers is not None:
                producers.discard(producer_id)
                if not producers:
                    _pop(self.open, group, topic, partition)
        return tree

    def has(self, group: str, topic: str, partition: int) -> bool:
        return partition in self.open.get(group, {}).get(topic, {})

    def has_group(self, group: str) -> bool:
        """True while the group has an open transaction with an undeleted offset."""
        return group in self.open

    def partitions(self, group: str) -> list[tuple[str, int]]:
        """The group's partitions with a pending offset, sorted."""
        return sorted((t, p) for t, parts in self.open.get(group, {}).items() for p in parts)

    def canonical(self) -> dict[int, dict[tuple[str, str, int], Any]]:
        return {pid: {(g, t, p): o for g, t, p, o in iter_leaves(tree)}
                for pid, tree in self.by_producer.items()}
