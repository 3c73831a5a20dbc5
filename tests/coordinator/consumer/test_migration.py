"""Online migration (testConsumerGroupHeartbeatWithStableClassicGroup,
testConsumerGroupHeartbeatWithCustomAssignorClassicGroup, testConsumerGroupHeartbeatWithEmptyClassicGroup,
testClassicGroupJoinWithEmptyConsumerGroup, testLastConsumerProtocolMemberLeavingConsumerGroup,
testJoiningConsumerGroupWithNewDynamicMember, testClassicGroupSyncToConsumerGroupRebalanceInProgress,
testClassicGroupHeartbeatToConsumerGroupRebalanceInProgress,
testConsumerGroupMemberUsingClassicProtocolFencedWhenJoinTimeout,
testClassicMemberJoinToConsumerGroupWithDisabledMigrationPolicy)."""

from __future__ import annotations

from cg_harness import GROUP, CgHarness, kinds

from groupcoord.coordinator.classic.consumer_protocol import (
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.consumer.state import MemberState
from groupcoord.wire.errors import ErrorCode as E

SUB = [("range", encode_subscription(["foo"], 1))]


def classic_group(h: CgHarness, assignments: list[dict[str, list[int]]]) -> list[str]:
    ids = []
    for i in range(len(assignments)):
        _, r = h.join(group_id=GROUP, client_id=f"c{i}", protocols=SUB)
        mid = r.response.member_id
        h.join(member_id=mid, group_id=GROUP, client_id=f"c{i}", protocols=SUB)
        ids.append(mid)
    g = h.shard.classic.get(GROUP)
    while g.state == ClassicGroupState.PREPARING_REBALANCE:
        h.advance(3000)
    for mid in ids:
        if mid != g.leader_id:
            h.sync(mid, g.generation_id, group_id=GROUP)
    h.sync(g.leader_id, g.generation_id,
           {m: encode_assignment(a) for m, a in zip(ids, assignments, strict=True)},
           group_id=GROUP)
    assert g.state == ClassicGroupState.STABLE
    return ids


def test_upgrade_on_consumer_join_keeps_assignments() -> None:
    h = CgHarness(topics={"foo": 4})
    ids = classic_group(h, [{"foo": [0, 1]}, {"foo": [2, 3]}])
    generation = h.shard.classic.get(GROUP).generation_id
    start = len(h.log)
    resp = h.hb("new", 0)
    assert resp.error_code == 0 and resp.member_epoch == generation + 1
    assert kinds(h.log[start:])[:9] == ["Classic-", "Member", "Member", "GroupMeta", "Target",
                                        "Target", "TargetMeta", "Current", "Current"]
    assert h.shard.classic.get(GROUP) is None
    g = h.group()
    assert {m: x.member_epoch for m, x in g.members.items()} == {
        ids[0]: generation, ids[1]: generation, "new": generation + 1}
    assert g.members[ids[0]].classic is not None and g.members["new"].classic is None
    # The classic members learn about the rebalance through their heartbeats.
    assert h.heartbeat(ids[0], generation, group_id=GROUP) == E.REBALANCE_IN_PROGRESS
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_upgrade_refused_for_custom_assignor_user_data_or_policy() -> None:
    h = CgHarness(GroupCoordinatorConfig(group_consumer_migration_policy="downgrade"),
                  topics={"foo": 2})
    classic_group(h, [{"foo": [0, 1]}])
    resp = h.hb("new", 0)
    assert resp.error_code == E.GROUP_ID_NOT_FOUND and "policy" in resp.error_message


def test_empty_classic_group_is_replaced() -> None:
    h = CgHarness(topics={"foo": 1})
    h.commit({("foo", 0): 5}, group_id=GROUP)   # a simple group known by its offsets
    start = len(h.log)
    assert h.hb("a", 0).error_code == 0
    assert kinds(h.log[start:])[0] == "Classic-"
    assert h.shard.classic.get(GROUP) is None and GROUP in h.shard.consumer.groups


def test_classic_member_joins_consumer_group_and_syncs() -> None:
    h = CgHarness(topics={"foo": 4})
    h.hb("a", 0)
    _, r = h.join(group_id=GROUP, client_id="cl", protocols=SUB)
    assert r.response.error_code == E.MEMBER_ID_REQUIRED
    mid = r.response.member_id
    _, r = h.join(member_id=mid, group_id=GROUP, client_id="cl", protocols=SUB)
    assert r.response.error_code == 0 and r.response.protocol_name == "range"
    assert r.response.generation_id == 2 and r.response.leader == ""
    g = h.group()
    assert g.members[mid].state == MemberState.UNRELEASED_PARTITIONS
    _, s = h.sync(mid, 2, group_id=GROUP)
    assert s.response.error_code == 0 and decode_assignment(s.response.assignment) == {}
    assert h.heartbeat(mid, 1, group_id=GROUP) == E.ILLEGAL_GENERATION
    r2 = h.hb("a", 1, owned={"foo": [0, 1, 2, 3]})
    h.hb("a", 1, owned=h.assigned(r2))
    # a released its partitions: the classic member is told to rejoin and gets them.
    assert h.heartbeat(mid, 2, group_id=GROUP) == E.REBALANCE_IN_PROGRESS
    _, r = h.join(member_id=mid, group_id=GROUP, client_id="cl", protocols=SUB)
    _, s = h.sync(mid, r.response.generation_id, group_id=GROUP)
    assert len(decode_assignment(s.response.assignment)["foo"]) == 2
    assert h.heartbeat(mid, r.response.generation_id, group_id=GROUP) == 0


def test_classic_member_fenced_when_sync_missing() -> None:
    h = CgHarness(topics={"foo": 2})
    h.hb("a", 0)
    _, r = h.join(group_id=GROUP, client_id="cl", protocols=SUB, version=3, rebalance_ms=7000)
    mid = r.response.member_id
    h.advance(7000)
    assert mid not in h.group().members


def test_disabled_policy_rejects_classic_join() -> None:
    h = CgHarness(GroupCoordinatorConfig(group_consumer_migration_policy="disabled"),
                  topics={"foo": 2})
    h.hb("a", 0)
    _, r = h.join(group_id=GROUP, protocols=SUB)
    assert r.response.error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_downgrade_when_last_consumer_member_leaves() -> None:
    h = CgHarness(topics={"foo": 4})
    ids = classic_group(h, [{"foo": [0, 1]}, {"foo": [2, 3]}])
    resp = h.hb("new", 0)
    start = len(h.log)
    h.hb("new", -1)
    assert h.log[-1].key.__class__.__name__ == "GroupMetadataKey"
    assert "GroupMeta-" in kinds(h.log[start:])
    assert GROUP not in h.shard.consumer.groups
    h.advance(0)
    classic = h.shard.classic.get(GROUP)
    assert classic.state == ClassicGroupState.PREPARING_REBALANCE
    assert set(classic.members) == set(ids) and classic.generation_id == resp.member_epoch + 1
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_classic_join_to_empty_consumer_group_converts() -> None:
    h = CgHarness(topics={"foo": 1})
    h.hb("a", 0)
    h.hb("a", -1)
    start = len(h.log)
    _, r = h.join(group_id=GROUP, protocols=SUB)
    assert r.response.error_code == E.MEMBER_ID_REQUIRED
    assert kinds(h.log[start:])[-1] == "Classic" and "GroupMeta-" in kinds(h.log[start:])
    assert GROUP not in h.shard.consumer.groups and h.shard.classic.get(GROUP) is not None


def test_classic_leave_in_consumer_group() -> None:
    h = CgHarness(topics={"foo": 2})
    h.hb("a", 0)
    _, r = h.join(group_id=GROUP, protocols=SUB, version=3)
    mid = r.response.member_id
    resp = h.leave([(mid, None), ("ghost", None)], group_id=GROUP)
    assert [m.error_code for m in resp.members] == [0, E.UNKNOWN_MEMBER_ID]
    assert set(h.group().members) == {"a"}
