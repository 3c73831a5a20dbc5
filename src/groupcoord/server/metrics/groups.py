"""What a scrape reads from the coordinator shards: the number of groups of each protocol
and state, the number of committed offsets, and for the exported groups their state,
members (with the partitions each one is assigned) and committed offsets.

The read runs as an ordinary read-only operation of each loaded shard, so it sees the state
between two operations. Only the first `limit` groups of a shard, by group id, are copied
out: a scrape costs time in proportion to the exported groups, not to all groups.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.classic.consumer_protocol import (
    ProtocolParseError,
    decode_assignment,
    subscription_topics,
)
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.runtime.shard_task import Operation, ShardState

if TYPE_CHECKING:
    from groupcoord.server.runtime.coordinator_runtime import CoordinatorRuntime

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    client_id: str
    client_host: str


@dataclass(slots=True)
class GroupView:
    group_id: str
    protocol: str  # classic, consumer, streams or share
    state: str  # Kafka's state name (KIP-848 and KIP-1071 states included)
    # The member each partition is assigned to (active tasks' partitions for streams).
    owners: dict[TopicPartition, Member] = field(default_factory=dict)
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    # Streams groups: subtopology id -> its source topics.
    subtopologies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Topics the members subscribe to, when the assignment is settled (classic: Stable;
    # consumer: always, the coordinator assigns), for partitions no member holds.
    subscribed: frozenset[str] = frozenset()


@dataclass(slots=True)
class ShardGroups:
    """One shard's answer."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)  # (protocol, state)
    offset_count: int = 0
    groups: list[GroupView] = field(default_factory=list)


def read_shard(limit: int) -> Operation:
    """The read-only shard operation copying out the counts and the first `limit` groups."""

    def read(shard: GroupCoordinatorShard, _ctx: Any, _now_ms: int) -> Result:
        return Result(response=_read(shard, limit))

    return read


def _read(shard: GroupCoordinatorShard, limit: int) -> ShardGroups:
    out = ShardGroups()
    states: dict[str, tuple[str, str]] = {}
    for gid, classic in shard.classic.groups.items():
        states[gid] = ("classic", classic.state.value)
    for gid, consumer in shard.consumer.groups.items():
        states[gid] = ("consumer", consumer.state().value)
    for gid, streams in shard.streams.groups.items():
        states[gid] = ("streams", streams.state().value)
    for gid, share in shard.share.groups.items():
        states[gid] = ("share", share.state().value)
    out.counts.update(states.values())
    offsets = shard.offsets
    out.offset_count = sum(len(parts) for gid in states
                           for parts in offsets.group(gid).values())
    for gid in sorted(states)[:limit]:
        protocol, state = states[gid]
        view = GroupView(gid, protocol, state)
        view.offsets = {(topic, p): o.offset for topic, parts in offsets.group(gid).items()
                        for p, o in parts.items()}
        if protocol == "classic":
            _classic_owners(shard, gid, view)
        elif protocol == "consumer":
            _consumer_owners(shard, gid, view)
        elif protocol == "streams":
            _streams_owners(shard, gid, view)
        out.groups.append(view)
    return out


def _classic_owners(shard: GroupCoordinatorShard, gid: str, view: GroupView) -> None:
    group = shard.classic.groups[gid]
    if group.protocol_type != "consumer":
        return  # Connect and others: assignments are not the consumer protocol's
    subscribed: set[str] = set()
    for m in group.members.values():
        try:
            subscribed.update(subscription_topics(m.metadata(group.protocol_name)))
        except ProtocolParseError:
            continue
    if group.state is ClassicGroupState.STABLE:
        view.subscribed = frozenset(subscribed)
    for m in group.members.values():
        try:
            assigned = decode_assignment(m.assignment) if m.assignment else {}
        except ProtocolParseError:
            continue
        owner = Member(m.member_id, m.client_id, m.client_host)
        for topic, partitions in assigned.items():
            for p in partitions:
                view.owners[(topic, p)] = owner


def _consumer_owners(shard: GroupCoordinatorShard, gid: str, view: GroupView) -> None:
    group = shard.consumer.groups[gid]
    image = shard.consumer.image
    view.subscribed = frozenset(group.subscribed_topic_names())
    for m in group.members.values():
        owner = Member(m.member_id, m.client_id, m.client_host)
        for topic_id, partitions in m.assigned.items():
            name = image.name_of(topic_id)
            if name is not None:
                for p in partitions:
                    view.owners[(name, p)] = owner


def _streams_owners(shard: GroupCoordinatorShard, gid: str, view: GroupView) -> None:
    group = shard.streams.groups[gid]
    if group.topology is None:
        return
    for sid, sub in group.topology.subtopologies.items():
        view.subtopologies[sid] = tuple(sub.source_topics) + tuple(
            t.name for t in sub.repartition_source_topics)
    for m in group.members.values():
        owner = Member(m.member_id, m.client_id, m.client_host)
        for sid, partitions in m.assigned.active.items():
            for topic in view.subtopologies.get(sid, ()):
                for p in partitions:
                    view.owners[(topic, p)] = owner


async def read_groups(runtime: CoordinatorRuntime, limit: int) -> list[ShardGroups]:
    """Every loaded shard's answer; a shard that fails the read (unloading meanwhile) is
    left out of this scrape."""
    out = []
    for partition, task in sorted(runtime.shards.items()):
        if task.state is not ShardState.ACTIVE:
            continue
        try:
            out.append(await runtime.call_shard(partition, read_shard(limit)))
        except ApiError:
            continue
    return out
