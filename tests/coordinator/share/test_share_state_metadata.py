"""ShareGroupStatePartitionMetadata (record 15): initializing -> initialized after a
heartbeat, alter/delete offsets transitions, the group-delete tombstone, and replay."""

from __future__ import annotations

from coord_harness import Harness

from groupcoord.coordinator.result import OpContext
from groupcoord.coordinator.share import state_ops
from groupcoord.coordinator.share.heartbeat import HeartbeatReply
from groupcoord.coordinator.share.state_metadata import TopicInit, TopicInits
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.share_group_heartbeat import ShareGroupHeartbeatRequest

G = "sg"
T1 = bytes([1] * 16)
T2 = bytes([2] * 16)


def harness() -> Harness:
    h = Harness()
    h.shard.on_topics_changed(TopicsImage.of([("a", T1, 3), ("b", T2, 2)], 1), 0)
    return h


def hb(h: Harness, member: str, epoch: int, topics: list[str] | None) -> HeartbeatReply:
    req = ShareGroupHeartbeatRequest(group_id=G, member_id=member, member_epoch=epoch,
                                     subscribed_topic_names=topics)
    _, result = h.call("share_group_heartbeat", req, 1)
    assert isinstance(result.response, HeartbeatReply)
    return result.response


def initialize(h: Harness, reply: HeartbeatReply) -> TopicInits:
    """Complete the initialization `reply` asked for; returns what it initialized."""
    assert reply.initialize is not None
    h.apply(state_ops.complete_initialize(h.shard, G, reply.initialize.topics))
    return reply.initialize.topics


def metadata(h: Harness):  # type: ignore[no-untyped-def]
    group = h.shard.share.get(G)
    assert group is not None
    return group.state_metadata


def test_heartbeat_initializes_subscribed_partitions_once() -> None:
    h = harness()
    _, result = h.call("share_group_heartbeat", ShareGroupHeartbeatRequest(
        group_id=G, member_id="m1", member_epoch=0, subscribed_topic_names=["a"]), 1)
    reply = result.response
    assert reply.initialize is not None
    assert reply.initialize.topics == {T1: TopicInit("a", frozenset({0, 1, 2}))}
    # Record 15 with the partitions initializing is the last record of the heartbeat.
    record = result.records[-1]
    assert record.key.RECORD_TYPE == 15
    assert [(t.topic_name, t.partitions) for t in record.value.initializing_topics] == \
        [("a", [0, 1, 2])]
    assert record.value.initialized_topics == []
    initialize(h, reply)
    md = metadata(h)
    assert md.initializing == {} and md.initialized_partitions() == {T1: {0, 1, 2}}
    steady = hb(h, "m1", 1, None)
    assert steady.initialize is None
    resubscribed = hb(h, "m1", steady.response.member_epoch, ["a", "b"])
    assert initialize(h, resubscribed) == {T2: TopicInit("b", frozenset({0, 1}))}
    assert metadata(h).initialized_partitions() == {T1: {0, 1, 2}, T2: {0, 1}}
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_failed_initialization_is_forgotten_and_retried() -> None:
    h = harness()
    first = hb(h, "m1", 0, ["b"])
    assert metadata(h).initializing == {T2: TopicInit("b", frozenset({0, 1}))}
    h.apply(state_ops.uninitialize(h.shard, G, {T2: {0, 1}}))
    assert metadata(h).initializing == {} and metadata(h).initialized == {}
    again = hb(h, "m1", 1, None)
    assert again.initialize is not None and first.initialize is not None
    assert again.initialize.topics == first.initialize.topics


def test_alter_offsets_creates_a_missing_share_group() -> None:
    """KAFKA-19662: AlterShareGroupOffsets on an unknown group id creates the share group
    (its record 15 does); with no valid partition nothing is written and no group made."""
    h = harness()
    parts = {T1: TopicInit("a", frozenset({0}))}
    assert state_ops.begin_alter_offsets(h.shard, "nothing", {}).records == []
    result = state_ops.begin_alter_offsets(h.shard, "new", parts)
    assert result.response == ErrorCode.NONE
    (record,) = result.records
    assert record.key.RECORD_TYPE == 15 and record.key.group_id == "new"
    h.apply(result)
    h.apply(state_ops.complete_initialize(h.shard, "new", parts))
    group = h.shard.share.get("new")
    assert group is not None and not group.members
    assert group.state_metadata is not None
    assert group.state_metadata.initialized_partitions() == {T1: {0}}
    assert h.shard.share.get("nothing") is None
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_initialized_partitions_always_answers() -> None:
    """A None response parks the caller: an unknown group answers an empty map."""
    h = harness()
    assert state_ops.initialized_partitions(h.shard, "nope").response == {}
    first = hb(h, "m1", 0, ["a"])
    assert state_ops.initialized_partitions(h.shard, G).response == {}
    initialize(h, first)
    assert state_ops.initialized_partitions(h.shard, G).response == {T1: {0, 1, 2}}
    # A group whose log predates record 15 (its heartbeat records without it).
    legacy = harness()
    result = legacy.shard.share_group_heartbeat(ShareGroupHeartbeatRequest(
        group_id=G, member_id="m1", member_epoch=0, subscribed_topic_names=["a"]), 1,
        OpContext("client", "/127.0.0.1", 0), legacy.now)
    result.records = [r for r in result.records if r.key.RECORD_TYPE != 15]
    legacy.apply(result)
    assert state_ops.initialized_partitions(legacy.shard, G).response == state_ops.LEGACY_STATE


def test_alter_and_delete_offsets_need_an_empty_share_group() -> None:
    h = harness()
    parts = {T1: TopicInit("a", frozenset({0}))}
    assert state_ops.begin_delete_offsets(h.shard, "nope", [T1], {}).response.error_code == \
        ErrorCode.GROUP_ID_NOT_FOUND
    first = hb(h, "m1", 0, ["a"])
    initialize(h, first)
    assert state_ops.begin_alter_offsets(h.shard, G, parts).response == ErrorCode.NON_EMPTY_GROUP
    plan = state_ops.begin_delete_offsets(h.shard, G, [T1], {}).response
    assert plan.error_code == ErrorCode.NON_EMPTY_GROUP
    hb(h, "m1", -1, None)
    plan_result = state_ops.begin_delete_offsets(h.shard, G, [T1, T2], {})
    assert plan_result.response.eligible == (T1,) and plan_result.response.no_state == (T2,)
    h.apply(plan_result)
    assert metadata(h).deleting == {T1: "a"} and metadata(h).initialized == {}
    h.apply(state_ops.complete_delete_offsets(h.shard, G, [T1]))
    assert metadata(h).deleting == {}
    alter = state_ops.begin_alter_offsets(h.shard, G, parts)
    assert alter.response == ErrorCode.NONE
    h.apply(alter)
    h.apply(state_ops.complete_initialize(h.shard, G, parts))
    assert metadata(h).initialized_partitions() == {T1: {0}}
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_group_delete_marks_deleting_then_tombstones() -> None:
    h = harness()
    first = hb(h, "m1", 0, ["a"])
    initialize(h, first)
    hb(h, "m1", -1, None)
    result = h.shard.delete_groups([G], h.now)
    types = [(r.key.RECORD_TYPE, r.value is None) for r in result.records]
    assert types[0] == (15, False)
    assert [(t.topic_id, t.topic_name) for t in result.records[0].value.deleting_topics] == \
        [(T1, "a")]
    assert types[-2:] == [(15, True), (11, True)]
    h.apply(result)
    assert h.shard.share.get(G) is None
    assert h.fresh_replay().snapshot() == h.shard.snapshot()
