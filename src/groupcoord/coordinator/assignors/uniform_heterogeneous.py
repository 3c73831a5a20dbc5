"""Uniform assignor, heterogeneous subscriptions (Kafka: ``UniformHeterogeneousAssignmentBuilder``).

Members subscribe to different topic sets.  The steps are Kafka's:

1. revoke the partitions of topics a member no longer subscribes to;
2. hand out the unowned partitions topic by topic -- topics ordered by partitions per
   subscriber (descending), then subscriber count (ascending), then topic id (``Uuid``
   order) -- each to the least-loaded subscriber (ties: lower member index);
3. balance: repeatedly move partitions of each topic (same topic order) from its most-loaded
   to its least-loaded subscribers until no topic improves, at most 16 rounds.

Balance is best effort: overlapping subscriptions may leave members more than one partition
apart.  ``MemberAssignmentBalancer`` below keeps Kafka's two moving ranges over the members
sorted by load, so ties break -- and results come out -- as Kafka's do.
"""

from __future__ import annotations

from groupcoord.coordinator.assignors._common import (
    Assignment,
    existing,
    partition_counts,
    uuid_key,
)
from groupcoord.coordinator.assignors.api import GroupSpec, TopicDescriber

# Kafka's bound on balancing rounds: each round roughly halves the imbalance.
MAX_ITERATION_COUNT = 16


class MemberAssignmentBalancer:
    """Least- and most-loaded ranges over one topic's subscribers sorted by load.

    The least-loaded range grows rightwards as its members receive partitions, the
    most-loaded range grows leftwards as its members give them up; the topic is balanced once
    the two ranges' partition counts differ by at most one.
    """

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        """Reset for ``members``; return the spread between the most and least loaded."""
        sizes = self.sizes
        self.sorted = sorted(members, key=lambda m: (sizes[m], m))
        first, last = sizes[self.sorted[0]], sizes[self.sorted[-1]]
        self.least_end, self.least_count, self.next_least = 0, first - 1, 0
        n = len(self.sorted)
        self.most_start, self.most_end, self.most_count, self.next_most = n, n, last + 1, n - 1
        return last - first

    def next_least_loaded(self) -> int:
        """The member to give the next partition; assumes it receives one."""
        if self.next_least >= self.least_end:
            # Every member of the range got one more: raise its level and widen it.
            self.least_count += 1
            members, sizes = self.sorted, self.sizes
            while (
                self.least_end < len(members) and sizes[members[self.least_end]] == self.least_count
            ):
                self.least_end += 1
            self.next_least = 0
        member = self.sorted[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        """The member to take the next partition from, or -1 when nobody can give one."""
        if self.next_most < self.most_start:
            members, sizes = self.sorted, self.sizes
            if self.most_end <= self.most_start and self.most_start > 0:
                # The range emptied through exclusions; restart from the next member's level so
                # that the range surely widens below.
                self.most_count = sizes[members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[members[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.sorted[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drop the member last returned by ``next_most_loaded`` (it has nothing to give)."""
        members = self.sorted
        i, j = self.next_most + 1, self.most_end - 1
        members[i], members[j] = members[j], members[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Builder:
    """State of one heterogeneous assignment: each member's partitions and load.

    Kafka keeps an owner array per topic; here ownership lives only in the members' partition
    sets, so keeping a partition costs a set operation per (member, topic) instead of a
    Python step per partition.  The one place that needs partitions grouped by owner,
    ``balance_topic``, rebuilds that order from the sets.
    """

    def __init__(self, group: GroupSpec, topics: TopicDescriber) -> None:
        self.members = list(group.members.values())
        self.subscribers: dict[bytes, list[int]] = {}
        for index, member in enumerate(self.members):
            for topic_id in member.subscribed_topic_ids:
                self.subscribers.setdefault(topic_id, []).append(index)
        self.counts = partition_counts(sorted(self.subscribers, key=uuid_key), topics)
        self.sizes = [0] * len(self.members)
        self.target: list[Assignment] = []
        self.unowned: dict[bytes, list[int]] = {}

    def topic_order(self, topic_ids: list[bytes]) -> list[bytes]:
        """Kafka's topic comparator: partitions per subscriber desc, subscribers asc, id asc."""
        counts, subscribers = self.counts, self.subscribers

        def key(t: bytes) -> tuple[float, int, tuple[int, int]]:
            s = len(subscribers[t])
            return (-(counts[t] / s), s, uuid_key(t))

        return sorted(topic_ids, key=key)

    def revoke_unsubscribed(self) -> None:
        """Keep each member's subscribed, existing partitions; find the unowned ones."""
        owned: dict[bytes, set[int]] = {t: set() for t in self.counts}
        for index, member in enumerate(self.members):
            kept: Assignment = {}
            for topic_id, current in member.assignment.items():
                if topic_id not in member.subscribed_topic_ids:
                    continue
                topic_owned = owned[topic_id]
                partitions = set(existing(current, self.counts[topic_id]))
                if not topic_owned.isdisjoint(partitions):
                    partitions -= topic_owned  # held twice in a corrupt target: first holder wins
                if partitions:
                    topic_owned |= partitions
                    kept[topic_id] = partitions
                    self.sizes[index] += len(partitions)
            self.target.append(kept)
        self.unowned = {
            t: sorted(set(range(n)) - owned[t]) if owned[t] else list(range(n))
            for t, n in self.counts.items()
        }

    def assign_unowned(self) -> None:
        """Give every unowned partition to its topic's least-loaded subscriber."""
        unowned = {t: ps for t, ps in self.unowned.items() if ps}
        balancer = MemberAssignmentBalancer(self.sizes)
        for topic_id in self.topic_order(list(unowned)):
            balancer.initialize(self.subscribers[topic_id])
            target, sizes = self.target, self.sizes
            for p in unowned[topic_id]:
                member = balancer.next_least_loaded()
                target[member].setdefault(topic_id, set()).add(p)
                sizes[member] += 1

    def move(self, topic_id: bytes, partition: int, giver: int, taker: int) -> None:
        held = self.target[giver][topic_id]
        held.discard(partition)
        if not held:
            del self.target[giver][topic_id]
        self.sizes[giver] -= 1
        self.target[taker].setdefault(topic_id, set()).add(partition)
        self.sizes[taker] += 1

    def balance(self) -> None:
        """Rebalance topics round-robin until a full round moves nothing (bounded)."""
        order = self.topic_order([t for t, s in self.subscribers.items() if len(s) >= 2])
        if not order:
            return
        balancer = MemberAssignmentBalancer(self.sizes)
        last_moved = -1
        for _ in range(MAX_ITERATION_COUNT):
            for index, topic_id in enumerate(order):
                if index == last_moved:
                    return  # a whole round since the last move: nothing more to gain
                if self.balance_topic(topic_id, balancer) > 0 or last_moved == -1:
                    last_moved = index

    def balance_topic(self, topic_id: bytes, balancer: MemberAssignmentBalancer) -> int:
        """Move this topic's partitions from most- to least-loaded subscribers; count moves."""
        subscribers = self.subscribers[topic_id]
        if balancer.initialize(subscribers) <= 1:
            return 0
        # Partitions grouped by owner index, ascending within an owner (Kafka sorts by owner,
        # then partition): an owner gives up the last partition of its run.
        partitions: list[int] = []
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for member in subscribers:  # ascending member index
            held = self.target[member].get(topic_id)
            if held:
                start[member] = len(partitions)
                partitions.extend(sorted(held))
                end[member] = len(partitions)
        moved = 0
        while not balancer.is_balanced():
            giver = balancer.next_most_loaded()
            while giver != -1 and end.get(giver, 0) - start.get(giver, 0) <= 0:
                balancer.exclude_most_loaded()
                giver = balancer.next_most_loaded()
            if giver == -1:
                break
            end[giver] -= 1
            partition = partitions[end[giver]]
            taker = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.move(topic_id, partition, giver, taker)
            moved += 1
        return moved


def assign_heterogeneous(group: GroupSpec, topics: TopicDescriber) -> dict[str, Assignment]:
    """Compute the target assignment of a group with differing subscriptions."""
    builder = _Builder(group, topics)
    builder.revoke_unsubscribed()
    if builder.counts:
        builder.assign_unowned()
        builder.balance()
    return {m.member_id: a for m, a in zip(builder.members, builder.target, strict=True)}
