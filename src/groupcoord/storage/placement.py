"""Where a partition's leadership goes among the nodes that serve: one spread, used by the
nodes of one process (`server.cluster_map`) and by the nodes of a cluster on PostgreSQL
(`storage.postgres_manager`, over the live nodes of the registry).

A partition's preferred node is ``nodes[(partition + abs(java_string_hash(topic))) % N]``
over the node ids in ascending order, so the partitions of a topic, and the coordinator
partitions of the internal topics, are spread over every node, and every node computes the
same placement from the same list.
"""

from __future__ import annotations

from collections.abc import Sequence

from groupcoord.coordinator.partitioning import java_string_hash


def topic_offset(topic: str) -> int:
    """The topic's first partition's position in the node order."""
    return abs(java_string_hash(topic))


def preferred_node(offset: int, partition: int, order: Sequence[int]) -> int:
    """The preferred node of ``partition`` of the topic at ``offset`` (``topic_offset``)
    among ``order``, the node ids ascending (not empty)."""
    return order[(partition + offset) % len(order)]
