"""The ``simple`` share-group assignor (KIP-932; Kafka: ``SimpleAssignor`` with
``SimpleHomogeneousAssignmentBuilder`` and ``SimpleHeterogeneousAssignmentBuilder``).

Share-group members may share a partition.  Within a *pool* -- every subscribed partition
and every member for a homogeneous group, or one topic and its subscribers for a
heterogeneous group (topics are balanced separately, then combined) -- with ``m`` members and
``p`` assignable partitions:

* ``desired_sharing = ceil(m / p)`` members per partition (0 when there is no partition), so
  with ``m <= p`` every partition has exactly one member, and with ``m > p`` partitions are
  shared;
* member ``i`` of the pool wants ``ceil(x * (i + 1)) - ceil(x * i)`` partitions, with
  ``x = desired_sharing * p / m`` (Kafka's float formula), which spreads them within one;
* sticky: Kafka's steps in order -- drop partitions no longer assignable or subscribed,
  trim over-full members, trim over-shared partitions, then top up under-shared partitions
  from under-full members, cycling through them.

Only partitions that exist, and that ``assignable`` accepts, are handed out (Kafka assigns
only share-partitions whose state is initialised; the caller decides that).  Kafka's Java
hash-set iteration orders are replaced by fixed ones: topics in ``Uuid`` order, partitions
ascending, members in group order; a member keeps its lowest partitions when trimmed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from groupcoord.coordinator.assignors._common import partition_counts, uuid_key
from groupcoord.coordinator.assignors.api import GroupSpec, MemberSpec, TopicDescriber

TopicPartition = tuple[bytes, int]


def _desired_counts(num_members: int, num_partitions: int) -> tuple[int, list[int]]:
    """Kafka's desired sharing and per-position desired assignment counts."""
    if num_partitions == 0:
        return 0, [0] * num_members
    sharing = (num_members + num_partitions - 1) // num_partitions
    precise = sharing * num_partitions / num_members
    counts = [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(num_members)]
    return sharing, counts


def _trim(
    pool: list[int],
    held: dict[int, list[TopicPartition]],
    desired: dict[int, int],
    sharing: int,
) -> dict[TopicPartition, list[int]]:
    """Revoke over-full members' extra partitions, then over-shared partitions' extra members.

    Returns the holders of every partition that stays assigned.
    """
    holders: dict[TopicPartition, list[int]] = {}
    for member in pool:
        kept = held[member] = held[member][: desired[member]]
        for tp in kept:
            holders.setdefault(tp, []).append(member)
    for tp, members in holders.items():
        if len(members) > sharing:
            for member in members[sharing:]:
                held[member].remove(tp)
            del members[sharing:]
    return holders


def _top_up(
    pool: list[int],
    targets: list[TopicPartition],
    held: dict[int, list[TopicPartition]],
    desired: dict[int, int],
    sharing: int,
    holders: dict[TopicPartition, list[int]],
) -> None:
    """Give under-shared partitions to under-full members, cycling through the members."""
    unfilled = [m for m in pool if len(held[m]) < desired[m]]
    cursor = 0
    for tp in targets:
        if not unfilled:
            return
        members = holders.setdefault(tp, [])
        idle = 0  # members tried since the last assignment of this partition
        while len(members) < sharing and idle < len(unfilled):
            cursor %= len(unfilled)
            member = unfilled[cursor]
            if member in members:
                cursor += 1
                idle += 1
                continue
            members.append(member)
            held[member].append(tp)
            idle = 0
            if len(held[member]) >= desired[member]:
                del unfilled[cursor]  # the cursor now points at the next member
                if not unfilled:
                    return
            else:
                cursor += 1


def _assign_pool(
    pool: list[int],
    targets: list[TopicPartition],
    held: dict[int, list[TopicPartition]],
) -> None:
    """Balance one pool in place; ``held`` maps each pool member to its sorted holdings."""
    sharing, counts = _desired_counts(len(pool), len(targets))
    desired = dict(zip(pool, counts, strict=True))
    holders = _trim(pool, held, desired, sharing)
    _top_up(pool, targets, held, desired, sharing, holders)


class SimpleAssignor:
    """Balanced, sticky, share-aware assignment for share groups."""

    name = "simple"

    def assign(
        self,
        group: GroupSpec,
        topics: TopicDescriber,
        assignable: Callable[[bytes, int], bool] | None = None,
    ) -> dict[str, dict[bytes, set[int]]]:
        members = list(group.members.values())
        subscribers: dict[bytes, list[int]] = {}
        for index, member in enumerate(members):
            for topic_id in member.subscribed_topic_ids:
                subscribers.setdefault(topic_id, []).append(index)
        order = sorted(subscribers, key=uuid_key)
        counts = partition_counts(order, topics)
        targets = {
            t: [(t, p) for p in range(counts[t]) if assignable is None or assignable(t, p)]
            for t in order
        }
        if group.homogeneous:
            pools = [(list(range(len(members))), [tp for t in order for tp in targets[t]])]
        else:
            pools = [(subscribers[t], targets[t]) for t in order]
        result: dict[str, dict[bytes, set[int]]] = {m.member_id: {} for m in members}
        for pool, pool_targets in pools:
            held = _holdings(members, pool, pool_targets)
            _assign_pool(pool, pool_targets, held)
            for index, partitions in held.items():
                out = result[members[index].member_id]
                for topic_id, p in partitions:
                    out.setdefault(topic_id, set()).add(p)
        return result


def _holdings(
    members: list[MemberSpec], pool: list[int], targets: list[TopicPartition]
) -> dict[int, list[TopicPartition]]:
    """Each pool member's current partitions that are still targets of the pool, sorted."""
    by_topic: dict[bytes, set[int]] = {}
    for topic_id, p in targets:
        by_topic.setdefault(topic_id, set()).add(p)
    held: dict[int, list[TopicPartition]] = {}
    for index in pool:
        member = members[index]
        mine: list[TopicPartition] = []
        for topic_id in sorted(member.assignment, key=uuid_key):
            valid = by_topic.get(topic_id)
            if valid and topic_id in member.subscribed_topic_ids:
                mine.extend((topic_id, p) for p in sorted(member.assignment[topic_id] & valid))
        held[index] = mine
    return held
