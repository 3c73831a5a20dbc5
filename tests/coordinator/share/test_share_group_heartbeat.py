"""ShareGroupHeartbeat through the shard with a manual clock: joins, epochs, errors,
session expiry, describe, list, delete, and replay equivalence."""

from __future__ import annotations

from typing import Any

import pytest
from coord_harness import Harness
from share_heartbeats import initialized_group, share_heartbeat

from groupcoord.coordinator.topics import TopicsImage
from groupcoord.server.metrics.counters import GroupCounters
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.join_group import JoinGroupRequest
from groupcoord.wire.generated.share_group_heartbeat import ShareGroupHeartbeatRequest

G = "sg"
T1 = bytes([1] * 16)
T2 = bytes([2] * 16)


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    # These tests are about membership, not KIP-1263 batching (test_share_assignment_interval):
    # with interval 0 every epoch bump recomputes the target at once.
    harness.shard.share.assignment_interval_ms = 0
    harness.shard.on_topics_changed(TopicsImage.of([("a", T1, 3), ("b", T2, 2)], 1), 0)
    # Every partition initialized before anyone joins: these tests are about membership;
    # the initialization round is test_a_new_group_is_assigned_after_initialization.
    initialized_group(harness, G)
    return harness


def hb(h: Harness, member: str, epoch: int, topics: list[str] | None = None,
       group: str = G, version: int = 1) -> Any:
    req = ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                                     subscribed_topic_names=topics)
    return share_heartbeat(h, req, version)


def assigned(resp: Any) -> dict[bytes, list[int]]:
    return {tp.topic_id: tp.partitions for tp in resp.assignment.topic_partitions}


def test_first_member_gets_everything(h: Harness) -> None:
    resp = hb(h, "m1", 0, ["a"])
    assert resp.error_code == 0 and resp.member_epoch == 1
    assert resp.heartbeat_interval_ms == 5000
    assert assigned(resp) == {T1: [0, 1, 2]}
    group = h.shard.share.get(G)
    assert group is not None and group.group_epoch == 1 and group.assignment_epoch == 1


def test_second_member_bumps_epoch_and_first_reconciles(h: Harness) -> None:
    hb(h, "m1", 0, ["a"])
    resp2 = hb(h, "m2", 0, ["a"])
    assert resp2.member_epoch == 2
    resp1 = hb(h, "m1", 1)
    assert resp1.member_epoch == 2 and resp1.assignment is not None
    parts = sorted(assigned(resp1)[T1] + assigned(resp2)[T1])
    assert parts == [0, 1, 2]
    # A steady heartbeat carries no assignment.
    assert hb(h, "m1", 2).assignment is None


def test_more_members_than_partitions_share_partitions(h: Harness) -> None:
    for i in range(5):
        hb(h, f"m{i}", 0, ["b"])
    group = h.shard.share.get(G)
    for i in range(5):
        assert hb(h, f"m{i}", group.members[f"m{i}"].member_epoch).member_epoch == 5
    owners = [sorted(group.members[f"m{i}"].assigned.get(T2, ())) for i in range(5)]
    assert all(owners) and sorted({p for o in owners for p in o}) == [0, 1]


def test_validation_errors(h: Harness) -> None:
    assert hb(h, "", 0, ["a"]).error_code == ErrorCode.INVALID_REQUEST
    assert hb(h, "x" * 37, 0, ["a"]).error_code == ErrorCode.INVALID_REQUEST
    assert hb(h, "m", -2, ["a"]).error_code == ErrorCode.INVALID_REQUEST
    assert hb(h, "m", 0, None).error_code == ErrorCode.INVALID_REQUEST
    assert hb(h, "m", 0, ["a"], group="").error_code == ErrorCode.INVALID_REQUEST
    assert hb(h, "m", 3, ["a"], group="nope").error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_unknown_member_and_fenced_epoch(h: Harness) -> None:
    hb(h, "m1", 0, ["a"])
    assert hb(h, "zz", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert hb(h, "m1", 7).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    hb(h, "m2", 0, ["a"])
    hb(h, "m1", 1)  # m1 -> epoch 2, previous 1
    assert hb(h, "m1", 1).error_code == 0  # the previous epoch is still accepted
    hb(h, "m3", 0, ["a"])
    hb(h, "m1", 2)  # -> 3, previous 2
    assert hb(h, "m1", 1).error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_leave_bumps_epoch_and_tombstones(h: Harness) -> None:
    hb(h, "m1", 0, ["a"])
    hb(h, "m2", 0, ["a"])
    resp = hb(h, "m2", -1)
    assert resp.member_epoch == -1
    group = h.shard.share.get(G)
    assert group is not None and set(group.members) == {"m1"} and group.group_epoch == 3
    resp = hb(h, "m1", 1)
    # m1 already held every partition: the epoch moves, the assignment is not resent.
    assert resp.member_epoch == 3 and resp.assignment is None
    assert group.members["m1"].assigned == {T1: frozenset({0, 1, 2})}
    assert hb(h, "m2", -1).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_session_timeout_removes_member(h: Harness) -> None:
    hb(h, "m1", 0, ["a"])
    hb(h, "m2", 0, ["a"])
    for _ in range(10):
        h.advance(20_000)
        hb(h, "m1", h.shard.share.get(G).members["m1"].member_epoch)
    group = h.shard.share.get(G)
    assert set(group.members) == {"m1"}


def test_group_size_limit(h: Harness) -> None:
    h.shard.share.max_size = 2
    hb(h, "m1", 0, ["a"])
    hb(h, "m2", 0, ["a"])
    assert hb(h, "m3", 0, ["a"]).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_other_group_type_is_not_found(h: Harness) -> None:
    join = JoinGroupRequest(group_id="classic", session_timeout_ms=10_000,
                            rebalance_timeout_ms=10_000, member_id="", protocol_type="consumer")
    h.call("join_group", join, 9)
    assert hb(h, "m", 0, ["a"], group="classic").error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_describe_list_delete(h: Harness) -> None:
    hb(h, "m1", 0, ["a", "b"])
    described = h.shard.share_group_describe(G).response
    assert described.group_state == "Stable" and described.assignor_name == "simple"
    member = described.members[0]
    assert member.member_id == "m1" and member.subscribed_topic_names == ["a", "b"]
    assert {tp.topic_name for tp in member.assignment.topic_partitions} == {"a", "b"}
    assert h.shard.share_group_describe("x").response.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    listed = h.shard.list_groups(None, ["share"]).response
    assert [(g.group_id, g.group_type, g.group_state) for g in listed] == [(G, "share", "Stable")]
    result = h.shard.delete_groups([G], h.now)
    assert result.response[0].error_code == ErrorCode.NON_EMPTY_GROUP
    hb(h, "m1", -1)
    result = h.shard.delete_groups([G], h.now)
    h.apply(result)
    assert result.response[0].error_code == 0 and h.shard.share.get(G) is None


def test_v0_generates_a_kafka_uuid_member_id(h: Harness) -> None:
    resp = hb(h, "", 0, ["a"], version=0)
    assert resp.error_code == 0 and len(resp.member_id) == 22


def test_replay_rebuilds_the_same_groups(h: Harness) -> None:
    hb(h, "m1", 0, ["a"])
    hb(h, "m2", 0, ["a", "b"])
    hb(h, "m1", 1, ["b"])
    hb(h, "m3", 0, ["b"])
    hb(h, "m2", -1)
    h.advance(60_000)
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_every_group_epoch_bump_is_a_group_event(h: Harness) -> None:
    """Joins, a subscription change, a leave and a session timeout each bump the epoch and
    write `group_epoch_bumped` (protocol share), which /metrics counts as Kafka's
    share-group-rebalance sensor."""
    h.events.clear()
    hb(h, "m1", 0, ["a"])
    hb(h, "m2", 0, ["a"])
    hb(h, "m1", 1, ["a", "b"])
    hb(h, "m1", -1)
    h.advance(h.shard.share.session_timeout_ms + 1)  # m2 stops heartbeating
    bumps = [(e.generation, e.member_id, e.reason, e.detail) for e in h.events
             if e.kind == "group_epoch_bumped"]
    share = {"protocol": "share"}
    assert bumps == [(1, "m1", "member joined", share), (2, "m2", "member joined", share),
                     (3, "m1", "member subscription changed", share),
                     (4, "m1", "the member left the group", share),
                     (5, "m2", "session timeout", share)]
    group = h.shard.share.get(G)
    assert group is not None and group.group_epoch == 5 and not group.members
    counters = GroupCounters(max_groups=10)
    counters.observe(h.events)
    assert counters.totals["share-group-rebalance"] == 5
    assert counters.rebalances[("share", "member_joined")] == 2
    assert counters.rebalances[("share", "subscription_changed")] == 1
    assert counters.rebalances[("share", "member_left")] == 1
    assert counters.rebalances[("share", "session_timeout")] == 1
