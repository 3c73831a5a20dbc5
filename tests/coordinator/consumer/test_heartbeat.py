"""ConsumerGroupHeartbeat: request validation, joining, member ids, epochs and the
error codes of `GroupMetadataManagerTest` (testMemberIdGeneration, testUnknownGroupId,
testUnknownMemberIdJoinsConsumerGroup, testConsumerGroupMemberEpochValidation,
testMemberJoinsEmptyConsumerGroup, testNewMemberIsRejectedWithMaximumMembersIsReached,
testConsumerGroupHeartbeatFullResponse, testLeavingMemberBumpsGroupEpoch, ...)."""

from __future__ import annotations

import pytest
from cg_harness import GROUP, CgHarness, kinds, tid

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.consumer.state import ConsumerGroupState, MemberState
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest

JOIN_RECORDS = ["Member", "GroupMeta", "Target", "TargetMeta", "Current"]


def raw(h: CgHarness, version: int = 1, **fields: object) -> object:
    base: dict[str, object] = {"group_id": GROUP, "member_id": "m", "member_epoch": 0,
                               "rebalance_timeout_ms": 5000, "subscribed_topic_names": ["foo"],
                               "topic_partitions": []}
    base.update(fields)
    _, result = h.call("consumer_group_heartbeat", ConsumerGroupHeartbeatRequest(**base),
                       version)
    return result.response


@pytest.mark.parametrize(("fields", "version"), [
    ({"group_id": ""}, 1),
    ({"member_id": ""}, 1),
    ({"member_id": "", "member_epoch": 1}, 0),
    ({"member_id": "", "member_epoch": -1}, 0),
    ({"instance_id": ""}, 1),
    ({"rack_id": ""}, 1),
    ({"rebalance_timeout_ms": -1}, 1),
    ({"topic_partitions": None}, 1),
    ({"topic_partitions": [object()]}, 1),
    ({"subscribed_topic_names": None}, 1),
    ({"member_epoch": -2}, 1),
    ({"member_epoch": -3}, 1),
])
def test_request_validation(fields: dict[str, object], version: int) -> None:
    h = CgHarness()
    resp = raw(h, version, **fields)
    assert resp.error_code == E.INVALID_REQUEST
    assert h.log == []


def test_unsupported_assignor() -> None:
    h = CgHarness()
    resp = raw(h, server_assignor="sticky")
    assert resp.error_code == E.UNSUPPORTED_ASSIGNOR
    assert "uniform" in resp.error_message


def test_v0_generates_member_id_and_v1_keeps_client_id() -> None:
    h = CgHarness()
    resp = raw(h, 0, member_id="")
    assert resp.error_code == 0 and resp.member_id == "1" and resp.member_epoch == 1
    resp = raw(h, 1, member_id="client-uuid")
    assert resp.member_id == "client-uuid" and resp.member_epoch == 2


def test_unknown_group_and_unknown_member() -> None:
    h = CgHarness()
    assert h.hb("m1", 1).error_code == E.GROUP_ID_NOT_FOUND
    assert h.hb("m1", -1).error_code == E.GROUP_ID_NOT_FOUND
    h.hb("m1", 0)
    assert h.hb("m2", 1, owned={}).error_code == E.UNKNOWN_MEMBER_ID
    assert h.hb("m2", -1).error_code == E.UNKNOWN_MEMBER_ID


def test_member_joins_empty_group_records_and_response() -> None:
    h = CgHarness()
    resp = h.hb("m1", 0, topics=["foo", "bar"])
    assert (resp.error_code, resp.member_id, resp.member_epoch) == (0, "m1", 1)
    assert resp.heartbeat_interval_ms == 5000
    assert h.assigned(resp) == {"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]}
    assert kinds(h.log) == JOIN_RECORDS
    meta = h.log[1].value
    assert meta.epoch == 1 and meta.metadata_hash != 0
    assert h.log[3].value.assignment_epoch == 1
    cur = h.log[4].value
    assert (cur.member_epoch, cur.previous_member_epoch, cur.state) == (1, 0, 0)
    assert [tp.assignment_epochs for tp in cur.assigned_partitions] == [[1, 1, 1], [1] * 6]
    assert h.group().state() == ConsumerGroupState.STABLE
    assert h.timers[("consumer-session", GROUP, "m1")] == h.now + 45_000


def test_heartbeat_without_change_writes_nothing_and_omits_assignment() -> None:
    h = CgHarness()
    h.hb("m1", 0)
    n = len(h.log)
    resp = h.hb("m1", 1, owned={"foo": list(range(6))})
    assert resp.error_code == 0 and resp.assignment is None and len(h.log) == n


def test_full_request_gets_assignment() -> None:
    h = CgHarness()
    h.hb("m1", 0)
    resp = h.hb("m1", 1, topics=["foo"], rebalance_ms=5000, owned={"foo": list(range(6))})
    assert h.assigned(resp) == {"foo": list(range(6))}


def test_member_epoch_validation() -> None:
    h = CgHarness()
    h.hb("m1", 0)
    assert h.hb("m1", 2, owned={}).error_code == E.FENCED_MEMBER_EPOCH
    h.hb("m2", 0)   # epoch 2; m1 must give partitions up
    resp = h.hb("m1", 1, owned={"foo": list(range(6))})
    assert resp.member_epoch == 1  # UNREVOKED: epoch unchanged
    resp = h.hb("m1", 1, owned=h.assigned(resp))
    assert resp.member_epoch == 2
    # The response was lost: the previous epoch with owned ⊆ assigned is tolerated ...
    assert h.hb("m1", 1, owned=h.assigned(resp)).error_code == 0
    # ... but not with partitions it does not own, nor an unknown older epoch.
    assert h.hb("m1", 1, owned={"foo": [0, 1, 2, 3, 4, 5]}).error_code == E.FENCED_MEMBER_EPOCH
    assert h.hb("m1", 0, owned={}).error_code == 0  # epoch 0 rejoins are always accepted


def test_group_max_size() -> None:
    h = CgHarness(GroupCoordinatorConfig(group_consumer_max_size=1))
    h.hb("m1", 0)
    resp = h.hb("m2", 0)
    assert resp.error_code == E.GROUP_MAX_SIZE_REACHED
    assert h.hb("m1", 1, owned={"foo": list(range(6))}).error_code == 0


def test_leaving_member_bumps_group_epoch() -> None:
    h = CgHarness()
    h.hb("m1", 0)
    h.hb("m2", 0)
    start = len(h.log)
    resp = h.hb("m2", -1)
    assert (resp.error_code, resp.member_id, resp.member_epoch) == (0, "m2", -1)
    assert kinds(h.log[start:]) == ["Current-", "Target-", "Member-", "GroupMeta"]
    assert h.group().group_epoch == 3 and "m2" not in h.group().members
    assert ("consumer-session", GROUP, "m2") not in h.timers
    resp = h.hb("m1", -1)
    assert kinds(h.log[-5:]) == ["Current-", "Target-", "Member-", "GroupMeta", "TargetMeta"]
    g = h.group()
    assert g.state() == ConsumerGroupState.EMPTY and g.assignment_epoch == g.group_epoch == 4


def test_subscription_change_bumps_epoch_and_revokes() -> None:
    h = CgHarness()
    h.hb("m1", 0, topics=["foo", "bar"])
    resp = h.hb("m1", 1, topics=["bar"], owned={"foo": list(range(6)), "bar": [0, 1, 2]})
    g = h.group()
    assert g.group_epoch == 2 and g.members["m1"].state == MemberState.UNREVOKED_PARTITIONS
    assert h.assigned(resp) == {"bar": [0, 1, 2]} and resp.member_epoch == 1
    resp = h.hb("m1", 1, owned={"bar": [0, 1, 2]})
    assert resp.member_epoch == 2 and g.members["m1"].state == MemberState.STABLE


def test_rack_change_rewrites_member_without_epoch_bump() -> None:
    h = CgHarness()
    h.hb("m1", 0)
    start = len(h.log)
    h.hb("m1", 1, rack="r1", owned={"foo": list(range(6))})
    assert kinds(h.log[start:]) == ["Member"] and h.group().group_epoch == 1


def test_assignors_and_preferred_assignor() -> None:
    h = CgHarness(topics={"foo": 4})
    h.hb("a", 0, assignor="range")
    h.hb("b", 0, assignor="range")
    g = h.group()
    assert g.target["a"] == {tid("foo"): frozenset({0, 1})}
    assert g.target["b"] == {tid("foo"): frozenset({2, 3})}


def test_topic_partition_growth_bumps_epoch_on_next_heartbeat() -> None:
    h = CgHarness(topics={"foo": 2})
    h.hb("m1", 0)
    h.set_topics({"foo": 4})
    resp = h.hb("m1", 1, owned={"foo": [0, 1]})
    assert h.group().group_epoch == 2 and h.assigned(resp) == {"foo": [0, 1, 2, 3]}


def test_deleted_topic_is_revoked() -> None:
    h = CgHarness()
    h.hb("m1", 0, topics=["foo", "bar"])
    h.set_topics({"foo": 6})
    resp = h.hb("m1", 1, owned={"foo": list(range(6)), "bar": [0, 1, 2]})
    assert h.assigned(resp) == {"foo": list(range(6))}
    assert h.group().members["m1"].state == MemberState.UNREVOKED_PARTITIONS


def test_group_states() -> None:
    h = CgHarness(topics={"foo": 2})
    h.hb("a", 0)
    g = h.group()
    assert g.state() == ConsumerGroupState.STABLE
    h.hb("b", 0)
    assert g.state() == ConsumerGroupState.RECONCILING
    h.hb("b", -1)          # the epoch moves past the target: Assigning until a heartbeat
    assert g.state() == ConsumerGroupState.ASSIGNING
    h.hb("a", 1, owned={"foo": [0, 1]})
    assert g.state() == ConsumerGroupState.STABLE and g.assignment_epoch == g.group_epoch
    h.hb("a", -1)
    assert g.state() == ConsumerGroupState.EMPTY


def test_assignor_failure_is_unknown_server_error() -> None:
    h = CgHarness(GroupCoordinatorConfig(group_consumer_assignors=("missing",)))
    resp = h.hb("a", 0)
    assert resp.error_code == E.UNKNOWN_SERVER_ERROR and h.log == []
    assert ("consumer-session", GROUP, "a") not in h.timers
