"""ShareGroupStatePartitionMetadata (record 15): initializing -> initialized after a
heartbeat, alter/delete offsets transitions, the group-delete tombstone, and replay."""

from __future__ import annotations

from coord_harness import Harness

from groupcoord.coordinator.share import state_ops
from groupcoord.coordinator.share.state_metadata import TopicInit
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


def hb(h: Harness, member: str, epoch: int, topics: list[str] | None) -> None:
    req = ShareGroupHeartbeatRequest(group_id=G, member_id=member, member_epoch=epoch,
                                     subscribed_topic_names=topics)
    h.call("share_group_heartbeat", req, 1)


def initialize(h: Harness) -> dict[bytes, TopicInit]:
    begin = state_ops.begin_initialize(h.shard, G)
    h.apply(begin)
    h.apply(state_ops.complete_initialize(h.shard, G, begin.response))
    return begin.response


def metadata(h: Harness):  # type: ignore[no-untyped-def]
    group = h.shard.share.get(G)
    assert group is not None
    return group.state_metadata


def test_heartbeat_initializes_subscribed_partitions_once() -> None:
    h = harness()
    hb(h, "m1", 0, ["a"])
    begin = state_ops.begin_initialize(h.shard, G)
    assert begin.response == {T1: TopicInit("a", frozenset({0, 1, 2}))}
    (record,) = begin.records
    assert record.key.RECORD_TYPE == 15
    assert [(t.topic_name, t.partitions) for t in record.value.initializing_topics] == \
        [("a", [0, 1, 2])]
    assert record.value.initialized_topics == []
    h.apply(begin)
    h.apply(state_ops.complete_initialize(h.shard, G, begin.response))
    md = metadata(h)
    assert md.initializing == {} and md.initialized_partitions() == {T1: {0, 1, 2}}
    again = state_ops.begin_initialize(h.shard, G)
    assert again.records == [] and again.response == {}
    hb(h, "m1", 1, ["a", "b"])
    assert initialize(h) == {T2: TopicInit("b", frozenset({0, 1}))}
    assert metadata(h).initialized_partitions() == {T1: {0, 1, 2}, T2: {0, 1}}
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_failed_initialization_is_forgotten_and_retried() -> None:
    h = harness()
    hb(h, "m1", 0, ["b"])
    begin = state_ops.begin_initialize(h.shard, G)
    h.apply(begin)
    assert metadata(h).initializing == {T2: TopicInit("b", frozenset({0, 1}))}
    h.apply(state_ops.uninitialize(h.shard, G, {T2: {0, 1}}))
    assert metadata(h).initializing == {} and metadata(h).initialized == {}
    assert state_ops.begin_initialize(h.shard, G).response == begin.response


def test_alter_and_delete_offsets_need_an_empty_existing_share_group() -> None:
    h = harness()
    parts = {T1: TopicInit("a", frozenset({0}))}
    # KAFKA-19662: alter creates a missing group, which its metadata record materialises.
    created = state_ops.begin_alter_offsets(h.shard, "nope", parts)
    assert created.response == ErrorCode.NONE and len(created.records) == 1
    assert state_ops.begin_alter_offsets(h.shard, "nope", {}).response == ErrorCode.NONE
    hb(h, "m1", 0, ["a"])
    initialize(h)
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
    hb(h, "m1", 0, ["a"])
    initialize(h)
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
