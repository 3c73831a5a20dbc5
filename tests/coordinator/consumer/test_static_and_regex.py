"""Static members (testStaticMemberGetsBackAssignmentUponRejoin,
testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves, testLeavingStaticMemberBumpsGroupEpoch,
testShouldThrownUnreleasedInstanceIdException..., testShouldThrowFencedInstanceId...,
testSessionTimeoutExpirationStaticMember, testStaticMemberCanRejoinWhenConsumerGroupIsFull)
and regex subscriptions (testConsumerGroupMemberJoinsWithNewRegex, ...PicksUpExisting...,
testResolvedRegularExpressionsRemovedWhenMembersLeaveOrFenced, testConsumerHeartbeatRegexValidation)."""

from __future__ import annotations

from cg_harness import CgHarness, kinds, tid

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


def test_regex_resolved_on_join_and_recorded() -> None:
    h = CgHarness(topics={"foo": 2, "food": 1, "bar": 1, "__internal": 1})
    resp = h.hb("a", 0, topics=None, regex="foo.*")
    assert h.assigned(resp) == {"foo": [0, 1], "food": [0]}
    assert kinds(h.log)[:3] == ["Member", "Regex", "GroupMeta"]
    assert h.log[1].value.topics == ["foo", "food"]
    # Full match, as RE2/J `matches()`: "fo" does not match "foo".
    resp = h.hb("b", 0, topics=None, regex="fo")
    assert h.log[-1].value is not None and "b" in h.group().members
    assert h.group().regexes["fo"].topics == frozenset()


def test_invalid_regex() -> None:
    h = CgHarness()
    resp = h.hb("a", 0, topics=None, regex="(?<=x)y")
    assert resp.error_code == E.INVALID_REGULAR_EXPRESSION and h.log == []


def test_existing_regex_reused_and_removed_with_last_member() -> None:
    h = CgHarness(topics={"foo": 2, "bar": 1})
    h.hb("a", 0, topics=None, regex="f.*")
    n = len([k for k in kinds(h.log) if k == "Regex"])
    h.hb("b", 0, topics=None, regex="f.*")
    assert len([k for k in kinds(h.log) if k == "Regex"]) == n
    h.hb("a", -1)
    assert "f.*" in h.group().regexes
    h.hb("b", -1)
    assert "Regex-" in kinds(h.log) and h.group().regexes == {}


def test_regex_picks_up_created_topic() -> None:
    h = CgHarness(GroupCoordinatorConfig(group_consumer_regex_batch_refresh_min_interval_ms=0),
                  topics={"foo": 1})
    r = h.hb("a", 0, topics=None, regex="fo.*")
    h.set_topics({"foo": 1, "fox": 2})
    resp = h.hb("a", r.member_epoch, owned={"foo": [0]})
    assert h.assigned(resp) == {"foo": [0], "fox": [0, 1]}
    assert h.group().regexes["fo.*"].topics == frozenset({"foo", "fox"})


def test_regex_refresh_is_batched_by_min_interval() -> None:
    h = CgHarness(topics={"foo": 1})
    r = h.hb("a", 0, topics=None, regex="fo.*")
    h.set_topics({"foo": 1, "fox": 1})
    h.advance(5_000)
    resp = h.hb("a", r.member_epoch, owned={"foo": [0]})
    assert resp.assignment is None  # within 10 s of the last resolution
    h.advance(5_000)
    resp = h.hb("a", r.member_epoch, owned={"foo": [0]})
    assert h.assigned(resp) == {"foo": [0], "fox": [0]}
    assert tid("fox") in h.group().target["a"]
