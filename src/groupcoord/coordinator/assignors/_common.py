"""Helpers shared by the server-side assignors (Kafka: ``AssignorHelpers``).

The helpers keep Kafka's orderings where they matter for results: topic ids compare as
``org.apache.kafka.common.Uuid.compareTo`` does (two *signed* 64-bit halves) and member or
instance ids compare as ``java.lang.String.compareTo`` does (UTF-16 code units).
"""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.coordinator.assignors.api import PartitionAssignorError, TopicDescriber

Assignment = dict[bytes, set[int]]


def uuid_key(topic_id: bytes) -> tuple[int, int]:
    """Sort key equal to Kafka's ``Uuid.compareTo`` (signed most/least significant longs)."""
    return (
        int.from_bytes(topic_id[:8], "big", signed=True),
        int.from_bytes(topic_id[8:], "big", signed=True),
    )


def java_hash_set_order(topic_ids: Iterable[bytes]) -> list[bytes]:
    """The iteration order of ``new HashSet<>(topicIds)`` in Java.

    Kafka's homogeneous builders walk their subscribed topics in this order, and Kafka's
    tests expect its results.  A ``HashSet`` built from a collection sizes its table up front
    (no resize), so the order is by bucket -- the spread ``Uuid.hashCode`` masked by the table
    size.  Topics sharing a bucket keep insertion order in Java, which depends on the
    caller's set; here they fall back to ``Uuid`` order so that the result is deterministic.
    """
    ids = list(topic_ids)
    capacity = 1
    while capacity < max(int(len(ids) / 0.75) + 1, 16):
        capacity <<= 1

    def bucket(topic_id: bytes) -> int:
        xor = int.from_bytes(topic_id[:8], "big") ^ int.from_bytes(topic_id[8:], "big")
        h = ((xor >> 32) ^ xor) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(ids, key=lambda t: (bucket(t), uuid_key(t)))


def java_string_key(value: str) -> bytes:
    """Sort key equal to ``String.compareTo``: big-endian UTF-16 code units compare bytewise."""
    return value.encode("utf-16-be", "surrogatepass")


def partition_counts(topic_ids: Iterable[bytes], topics: TopicDescriber) -> dict[bytes, int]:
    """Partition count of every topic; a missing topic fails the assignment, as in Kafka."""
    counts: dict[bytes, int] = {}
    for topic_id in topic_ids:
        if topic_id in counts:
            continue
        n = topics.num_partitions(topic_id)
        if n < 0:
            raise PartitionAssignorError(
                f"Members are subscribed to topic {topic_id.hex()} "
                "which doesn't exist in the topic metadata."
            )
        counts[topic_id] = n
    return counts


def existing(partitions: frozenset[int] | set[int], n: int) -> frozenset[int] | set[int]:
    """The partitions of ``partitions`` that exist in a topic of ``n`` partitions.

    A stale target can name partitions the metadata no longer has (a topic re-created with
    fewer partitions keeps its name but not its id, so this is rare); they are dropped rather
    than handed out again.  The input is returned as is when it is clean, the common case.
    """
    if len(partitions) <= 8:
        # For the small sets most members hold, a plain loop beats the builtins' call overhead.
        for p in partitions:
            if p < 0 or p >= n:
                break
        else:
            return partitions
    elif max(partitions) < n and min(partitions) >= 0:
        return partitions
    return {p for p in partitions if 0 <= p < n}
