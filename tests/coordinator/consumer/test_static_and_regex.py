"""Static members (testStaticMemberGetsBackAssignmentUponRejoin,
testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves, testLeavingStaticMemberBumpsGroupEpoch,
testShouldThrownUnreleasedInstanceIdException..., testShouldThrowFencedInstanceId...,
testSessionTimeoutExpirationStaticMember, testStaticMemberCanRejoinWhenConsumerGroupIsFull).
Regex subscriptions are tested in test_regex_refresh.py."""

from __future__ import annotations

from cg_harness import CgHarness, kinds

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.wire.errors import ErrorCode as E

ALL = {"foo": list(range(6))}


def test_static_member_temporary_leave_and_rejoin_gets_partitions_back() -> None:
    h = CgHarness(topics={"foo": 6})
    h.hb("a1", 0, instance_id="i-a")
    r = h.hb("b", 0)
    h.hb("a1", 1, instance_id="i-a", owned=ALL)
    a_parts = h.assigned(h.hb("a1", 1, instance_id="i-a", owned={"foo": [0, 1, 2]}))
    h.hb("b", r.member_epoch, owned={})
    epoch = h.group().group_epoch
    start = len(h.log)
    resp = h.hb("a1", -2, instance_id="i-a")
    assert (resp.error_code, resp.member_epoch) == (0, -2)
    assert kinds(h.log[start:]) == ["Current"] and h.group().group_epoch == epoch
    cur = h.log[-1].value
    assert cur.member_epoch == -2 and all(e == 0 for tp in cur.assigned_partitions
                                          for e in tp.assignment_epochs)
    start = len(h.log)
    resp = h.hb("a2", 0, instance_id="i-a")
    assert resp.error_code == 0 and resp.member_epoch == epoch
    assert h.assigned(resp) == a_parts or h.assigned(resp) == {"foo": [0, 1, 2]}
    assert kinds(h.log[start:])[:6] == ["Current-", "Target-", "Member-", "Member", "Target",
                                        "Current"]
    g = h.group()
    assert set(g.members) == {"a2", "b"} and g.static == {"i-a": "a2"}
    assert g.group_epoch == epoch


def test_unreleased_and_fenced_instance_id() -> None:
    h = CgHarness()
    h.hb("a1", 0, instance_id="i-a")
    assert h.hb("a2", 0, instance_id="i-a").error_code == E.UNRELEASED_INSTANCE_ID
    assert h.hb("a2", 1, instance_id="i-a", owned={}).error_code == E.FENCED_INSTANCE_ID
    assert h.hb("a2", -1, instance_id="i-a").error_code == E.FENCED_INSTANCE_ID
    assert h.hb("x", -1, instance_id="i-x").error_code == E.UNKNOWN_MEMBER_ID
    assert h.hb("x", 1, instance_id="i-x", owned={}).error_code == E.UNKNOWN_MEMBER_ID


def test_leaving_static_member_bumps_epoch() -> None:
    h = CgHarness()
    h.hb("a1", 0, instance_id="i-a")
    h.hb("a1", -1, instance_id="i-a")
    assert h.group().group_epoch == 2 and h.group().static == {}


def test_static_member_session_timeout_after_temporary_leave() -> None:
    h = CgHarness()
    h.hb("a1", 0, instance_id="i-a")
    h.hb("a1", -2, instance_id="i-a")
    h.advance(45_000)
    assert h.group().members == {}


def test_static_member_can_rejoin_when_group_full() -> None:
    h = CgHarness(GroupCoordinatorConfig(group_consumer_max_size=1))
    h.hb("a1", 0, instance_id="i-a")
    h.hb("a1", -2, instance_id="i-a")
    assert h.hb("a2", 0, instance_id="i-a").error_code == 0
    assert h.hb("z", 0).error_code == E.GROUP_MAX_SIZE_REACHED
