"""Share-partitions are assigned only once their state is initialized (Kafka 4.4's
`GroupMetadataManager.shareGroupHeartbeat`, `maybeCreateInitializeShareGroupStateRequest`,
`initializedAssignmentPending`, `subscribedTopicsChangeMap`), through the shard with a
manual clock."""

from __future__ import annotations

from typing import Any

import pytest
from coord_harness import Harness
from share_heartbeats import complete_initialization

from groupcoord.coordinator.result import OpContext
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.coordinator.share import state_metadata as smd
from groupcoord.coordinator.share import state_ops
from groupcoord.coordinator.share.group import ShareGroup
from groupcoord.coordinator.share.heartbeat import HeartbeatReply
from groupcoord.coordinator.share.state_metadata import TopicInit
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.generated.share_group_heartbeat import ShareGroupHeartbeatRequest

G = "init"
T1 = bytes([5] * 16)
T2 = bytes([6] * 16)
RETRY_MS = 30_000


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.shard.share.assignment_interval_ms = 0
    harness.shard.on_topics_changed(TopicsImage.of([("a", T1, 4), ("b", T2, 2)], 1), 0)
    return harness


def hb(h: Harness, member: str, epoch: int, topics: list[str] | None = None
       ) -> tuple[Any, HeartbeatReply]:
    _, result = h.call("share_group_heartbeat", ShareGroupHeartbeatRequest(
        group_id=G, member_id=member, member_epoch=epoch, subscribed_topic_names=topics), 1)
    assert result.response.response.error_code == 0
    return result, result.response


def parts(reply: HeartbeatReply) -> dict[bytes, list[int]]:
    assignment = reply.response.assignment
    assert assignment is not None
    return {tp.topic_id: tp.partitions for tp in assignment.topic_partitions}


def group(h: Harness) -> ShareGroup:
    found = h.shard.share.get(G)
    assert found is not None
    return found


def test_a_new_group_is_assigned_after_initialization(h: Harness) -> None:
    result, first = hb(h, "m1", 0, ["a"])
    # The first heartbeat: epoch 1, nothing assigned, the partitions written as initializing
    # in the heartbeat's own batch, and an initialization to run after the reply.
    assert first.response.member_epoch == 1 and parts(first) == {}
    assert result.records[-1] == smd.record(G, smd.StatePartitionMetadata(
        initializing={T1: TopicInit("a", frozenset(range(4)))}))
    assert first.initialize == smd.InitializeRequest(
        G, 1, {T1: TopicInit("a", frozenset(range(4)))}, {T1: -1})
    # A second member joins while the state is being initialized: nothing for it either, and
    # no second initialization of the same partitions.
    h.advance(10)
    _, second = hb(h, "m2", 0, ["a"])
    assert second.response.member_epoch == 2 and parts(second) == {}
    assert second.initialize is None
    complete_initialization(h, first)
    # The next heartbeat bumps the group epoch and spreads the partitions over both.
    _, m1 = hb(h, "m1", 1)
    assert m1.response.member_epoch == 3 and group(h).group_epoch == 3
    _, m2 = hb(h, "m2", 2)
    assert m2.response.member_epoch == 3
    assert sorted(parts(m1)[T1] + parts(m2)[T1]) == [0, 1, 2, 3]
    assert len(parts(m1)[T1]) == len(parts(m2)[T1]) == 2
    # Assigned and initialized agree now: a steady heartbeat bumps nothing.
    _, steady = hb(h, "m1", 3)
    assert steady.response.member_epoch == 3 and steady.initialize is None


def test_initializing_partitions_are_retried_after_the_retry_interval(h: Harness) -> None:
    _, first = hb(h, "m1", 0, ["a"])
    assert first.initialize is not None
    # The initialization never completed (lost with a crash, say): no retry before the
    # interval, one after it.
    h.advance(RETRY_MS - 1)
    _, early = hb(h, "m1", 1)
    assert early.initialize is None
    h.advance(1)
    _, late = hb(h, "m1", 1)
    assert late.initialize is not None and late.initialize.partitions() == {
        T1: frozenset(range(4))}


def test_a_failed_initialization_is_retried_by_the_next_heartbeat(h: Harness) -> None:
    _, first = hb(h, "m1", 0, ["a"])
    assert first.initialize is not None
    h.apply(state_ops.uninitialize(h.shard, G, first.initialize.partitions()))
    assert group(h).state_metadata == smd.StatePartitionMetadata()
    _, again = hb(h, "m1", 1)
    assert again.initialize is not None and parts(first) == {}


def test_new_partitions_of_a_known_topic_start_at_zero(h: Harness) -> None:
    _, first = hb(h, "m1", 0, ["a"])
    complete_initialization(h, first)
    hb(h, "m1", 1)
    h.shard.on_topics_changed(TopicsImage.of([("a", T1, 6), ("b", T2, 2)], 2), h.now)
    # Subscribing to a new topic as well: both need initializing, with different offsets.
    _, grown = hb(h, "m1", 2, ["a", "b"])
    assert grown.initialize is not None
    assert grown.initialize.partitions() == {T1: frozenset({4, 5}), T2: frozenset({0, 1})}
    assert grown.initialize.start_offsets == {T1: 0, T2: -1}


def test_initializing_entries_replayed_at_start_up_wait_the_interval(h: Harness) -> None:
    """Kafka stamps initializing entries when it replays them, so after a restart an
    initialization left unfinished is retried one interval after the load."""
    hb(h, "m1", 0, ["a"])
    loaded_at = h.now + 5_000
    shard = GroupCoordinatorShard(0, h.config)
    shard.on_topics_changed(h.shard.share.image, loaded_at)
    for record in h.log:
        shard.replay(record)
    shard.on_loaded(loaded_at)
    request = ShareGroupHeartbeatRequest(group_id=G, member_id="m1", member_epoch=1)
    ctx = OpContext("client", "/127.0.0.1", 0)
    early = shard.share_group_heartbeat(request, 1, ctx, loaded_at + RETRY_MS - 1)
    assert early.response.initialize is None
    late = shard.share_group_heartbeat(request, 1, ctx, loaded_at + RETRY_MS)
    assert late.response.initialize is not None
