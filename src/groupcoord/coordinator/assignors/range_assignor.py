"""The ``range`` assignor (Kafka: ``RangeAssignor``, server side, KIP-848).

Not sticky: the result depends only on the member order and the topic sizes.

* Members are ordered static first, by instance id, then dynamic, by member id (Java
  ``String`` order).
* Per topic, with ``s`` subscribers, each gets ``n // s`` partitions and the first ``n % s``
  one more, as one contiguous range ``[next, next + quota)``; trailing members may get none.
* Homogeneous groups use one topic list for everyone, so topics of equal size are
  co-partitioned (member i gets the same partition numbers everywhere).  Heterogeneous
  groups count each topic's subscribers first and split it among them only.
"""

from __future__ import annotations

from groupcoord.coordinator.assignors._common import java_string_key, partition_counts
from groupcoord.coordinator.assignors.api import GroupSpec, MemberSpec, TopicDescriber


def _member_order(member: MemberSpec) -> tuple[int, bytes]:
    if member.instance_id is not None:
        return (0, java_string_key(member.instance_id))
    return (1, java_string_key(member.member_id))


def _ranges(num_partitions: int, num_subscribers: int) -> list[frozenset[int]]:
    """The contiguous range of each of a topic's subscribers, in order (possibly empty)."""
    quota, extra = divmod(num_partitions, num_subscribers)
    # The first ``extra`` subscribers get quota + 1, the others quota.
    big = quota + 1
    head = [frozenset(range(i * big, (i + 1) * big)) for i in range(extra)]
    base = extra * big
    tail = [
        frozenset(range(base + i * quota, base + (i + 1) * quota))
        for i in range(num_subscribers - extra)
    ]
    return head + tail


class RangeAssignor:
    """Contiguous per-topic ranges in a fixed member order."""

    name = "range"

    def assign(self, group: GroupSpec, topics: TopicDescriber) -> dict[str, dict[bytes, set[int]]]:
        members = sorted(group.members.values(), key=_member_order)
        subscribers: dict[bytes, int] = {}
        for member in members:
            for topic_id in member.subscribed_topic_ids:
                subscribers[topic_id] = subscribers.get(topic_id, 0) + 1
        counts = partition_counts(subscribers, topics)
        # Topics with the same size and subscriber count share one list of ranges (in a
        # homogeneous group that is co-partitioning); each topic walks it with its own
        # iterator, as its subscribers come in the sorted member order.
        shared: dict[tuple[int, int], list[frozenset[int]]] = {}
        ranges = {}
        for topic_id, n in counts.items():
            key = (n, subscribers[topic_id])
            if key not in shared:
                shared[key] = _ranges(*key)
            ranges[topic_id] = iter(shared[key])
        result: dict[str, dict[bytes, set[int]]] = {}
        for member in members:
            assignment: dict[bytes, set[int]] = {}
            for topic_id in member.subscribed_topic_ids:
                partitions = next(ranges[topic_id])
                if partitions:
                    assignment[topic_id] = set(partitions)
            result[member.member_id] = assignment
        # Keep the group's member order in the result, as every assignor here does.
        return {member_id: result[member_id] for member_id in group.members}
