"""Uniform assignor, homogeneous subscriptions (Kafka: ``UniformHomogeneousAssignmentBuilder``).

Every member subscribes to the same topics.  Rules, in priority order:

* balance: with ``total`` partitions and ``m`` members, every member gets ``total // m``
  partitions and ``total % m`` members get one more, so sizes differ by at most one;
* stickiness: walking the members in group order, each keeps its current partitions up to
  its quota; the rest, and partitions nobody owns, are handed out to the members still under
  quota, in member order.

A member that can keep only the minimum quota gives up its claim on an extra partition unless
it is one of the last ``extras`` members, exactly as Kafka decides it, so results match
Kafka's for the same member order.  Topics are walked in Java ``HashSet`` order (see
``java_hash_set_order``) and a member's topics in its mapping's order, as in Kafka; a member
over quota keeps its lowest-numbered partitions.

Work is done on per-topic sets of ints (C-level set algebra), never one Python object per
partition, so an incremental rebalance of a large group stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping

from groupcoord.coordinator.assignors._common import (
    Assignment,
    existing,
    java_hash_set_order,
    partition_counts,
)
from groupcoord.coordinator.assignors.api import (
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    TopicDescriber,
)

# A run of unassigned partitions of one topic, handed out in order.
Chunk = tuple[bytes, list[int]]


def assign_homogeneous(group: GroupSpec, topics: TopicDescriber) -> dict[str, Assignment]:
    """Compute the target assignment of a group whose members share one subscription."""
    members = list(group.members.values())
    subscribed = members[0].subscribed_topic_ids if members else frozenset()
    if not subscribed:
        return {m.member_id: {} for m in members}
    counts = partition_counts(java_hash_set_order(subscribed), topics)
    # Targets naming partitions beyond a topic's size are rare; look for them once per topic
    # afterwards instead of once per member and topic, and redo the pass if there are any.
    kept, quotas, owned, revoked = _revoke(members, counts, drop_stale=False)
    if not all(not ps or (min(ps) >= 0 and max(ps) < counts[t]) for t, ps in owned.items()):
        kept, quotas, owned, revoked = _revoke(members, counts, drop_stale=True)
    # Kafka lists the partitions nobody owned first, then the revoked ones in member order.
    unassigned: list[Chunk] = [
        (t, sorted(set(range(n)) - owned[t]) if owned[t] else list(range(n)))
        for t, n in counts.items()
    ]
    unassigned.extend(revoked)
    _fill(kept, quotas, unassigned)
    return {m.member_id: a for m, a in zip(members, kept, strict=True)}


def _revoke(
    members: list[MemberSpec], counts: dict[bytes, int], drop_stale: bool
) -> tuple[list[Assignment], list[int], dict[bytes, set[int]], list[Chunk]]:
    """Kafka's ``maybeRevokePartitions``: what each member keeps, the quota it has left, the
    partitions some member holds, and the revoked partitions in member order."""
    min_quota, extras = divmod(sum(counts.values()), len(members))
    owned: dict[bytes, set[int]] = {t: set() for t in counts}
    kept: list[Assignment] = []
    quotas: list[int] = []
    revoked: list[Chunk] = []
    for index, member in enumerate(members):
        has_extra = extras > 0
        quota = min_quota + 1 if has_extra else min_quota
        assignment, quota = _keep_up_to_quota(
            member.assignment, counts, owned, quota, revoked, drop_stale
        )
        # Give up the extra slot for a later member, unless this member is among the last
        # ``extras`` members and so must take it.
        if quota > 0 and has_extra and len(members) - index > extras:
            quota -= 1
            has_extra = False
        if has_extra:
            extras -= 1
        kept.append(assignment)
        quotas.append(quota)
    return kept, quotas, owned, revoked


def _keep_up_to_quota(
    current: Mapping[bytes, frozenset[int]],
    counts: dict[bytes, int],
    owned: dict[bytes, set[int]],
    quota: int,
    revoked: list[Chunk],
    drop_stale: bool,
) -> tuple[Assignment, int]:
    """Keep a member's subscribed partitions up to ``quota``; return them and the quota left.

    A partition wrongly held by two members stays with the first; with ``drop_stale``,
    partitions beyond their topic's size are dropped.  ``owned`` collects every partition
    some member holds, from which the never-owned ones are computed afterwards.  Each step is
    one C-level set operation per topic: the cost is per member and topic, not per partition.
    """
    kept: Assignment = {}
    # The member's topics in its own map order, as Kafka walks ``oldAssignment.entrySet()``.
    for topic_id in current:
        n = counts.get(topic_id)
        if n is None:
            continue  # not subscribed any more: the whole topic is revoked
        partitions = existing(current[topic_id], n) if drop_stale else current[topic_id]
        topic_owned = owned[topic_id]
        if not topic_owned.isdisjoint(partitions):
            partitions = set(partitions) - topic_owned
        if not partitions:
            continue
        topic_owned.update(partitions)
        if len(partitions) <= quota:
            kept[topic_id] = set(partitions)
            quota -= len(partitions)
            continue
        ordered = sorted(partitions)
        if quota > 0:
            kept[topic_id] = set(ordered[:quota])
        revoked.append((topic_id, ordered[quota:]))
        quota = 0
    return kept, quota


def _fill(kept: list[Assignment], quotas: list[int], unassigned: list[Chunk]) -> None:
    """Hand the unassigned partitions, in order, to the members below quota, in order."""
    chunk_index, offset = 0, 0
    for assignment, quota in zip(kept, quotas, strict=True):
        while quota > 0 and chunk_index < len(unassigned):
            topic_id, partitions = unassigned[chunk_index]
            take = partitions[offset : offset + quota]
            if take:
                assignment.setdefault(topic_id, set()).update(take)
                quota -= len(take)
                offset += len(take)
            if offset >= len(partitions):
                chunk_index, offset = chunk_index + 1, 0
    while chunk_index < len(unassigned) and offset >= len(unassigned[chunk_index][1]):
        chunk_index, offset = chunk_index + 1, 0
    if chunk_index < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
