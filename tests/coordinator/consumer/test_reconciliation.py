"""Reconciliation (`CurrentAssignmentBuilderTest`, testReconciliationProcess,
testRebalanceTimeoutExpiration, testSessionTimeoutExpiration): revoke before assign,
waiting on unreleased partitions, the UNKNOWN state, and the timers that fence."""

from __future__ import annotations

from cg_harness import GROUP, CgHarness, kinds, tid

from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.consumer.reconcile import FencedMemberEpoch, reconcile
from groupcoord.coordinator.consumer.state import MemberState as S
from groupcoord.wire.errors import ErrorCode as E

T = b"t" * 16


def member(state: S = S.STABLE, epoch: int = 10, assigned: dict[int, int] | None = None,
           revoking: dict[int, int] | None = None) -> ConsumerGroupMember:
    return ConsumerGroupMember("m", member_epoch=epoch, previous_member_epoch=epoch - 1,
                               state=state, assigned={T: assigned or {}},
                               pending_revocation={T: revoking} if revoking else {})


def free(_t: bytes, _p: int) -> str | None:
    return None


def test_stable_to_unrevoked_keeps_epoch() -> None:
    m = reconcile(member(assigned={1: 10, 2: 10}), 11, {T: frozenset({2, 3})},
                  frozenset({T}), None, free, False)
    assert (m.state, m.member_epoch, m.previous_member_epoch) == (S.UNREVOKED_PARTITIONS, 10, 10)
    assert m.assigned == {T: {2: 10}} and m.pending_revocation == {T: {1: 10}}


def test_unrevoked_stays_until_owned_drops_partitions() -> None:
    m = member(S.UNREVOKED_PARTITIONS, assigned={2: 10}, revoking={1: 10})
    same = reconcile(m, 11, {T: frozenset({2, 3})}, frozenset({T}),
                     {T: frozenset({1, 2})}, free, False)
    assert same is m
    done = reconcile(m, 11, {T: frozenset({2, 3})}, frozenset({T}), {T: frozenset({2})},
                     free, False)
    assert (done.state, done.member_epoch) == (S.STABLE, 11)
    assert done.assigned == {T: {2: 10, 3: 11}} and done.pending_revocation == {}


def test_stable_to_unreleased_and_back() -> None:
    def busy(_t: bytes, p: int) -> str | None:
        return "other" if p == 3 else None
    m = reconcile(member(assigned={2: 10}), 11, {T: frozenset({2, 3})}, frozenset({T}),
                  {T: frozenset({2})}, busy, False)
    assert (m.state, m.member_epoch, m.assigned) == (S.UNRELEASED_PARTITIONS, 11, {T: {2: 10}})
    m2 = reconcile(m, 11, {T: frozenset({2, 3})}, frozenset({T}), None, free, False)
    assert (m2.state, m2.assigned) == (S.STABLE, {T: {2: 10, 3: 11}})


def test_unknown_state_fences_when_owning() -> None:
    m = member(S.UNKNOWN, assigned={1: 10})
    try:
        reconcile(m, 11, {T: frozenset({1})}, frozenset({T}), {T: frozenset({1})}, free, False)
        raise AssertionError("expected a fence")
    except FencedMemberEpoch:
        pass
    ok = reconcile(m, 11, {T: frozenset({1})}, frozenset({T}), {}, free, False)
    assert ok.state == S.STABLE and ok.member_epoch == 11


def test_unresolved_or_unsubscribed_topic_is_revoked() -> None:
    m = reconcile(member(assigned={1: 10}), 10, {T: frozenset({1})}, frozenset(), None, free,
                  True)
    assert m.state == S.UNREVOKED_PARTITIONS and m.pending_revocation == {T: {1: 10}}


def test_reconciliation_process_revoke_before_assign() -> None:
    h = CgHarness(topics={"foo": 6})
    h.hb("a", 0)
    h.hb("b", 0)                     # epoch 2: b's partitions are still a's
    g = h.group()
    assert g.members["b"].state == S.UNRELEASED_PARTITIONS and g.members["b"].assigned == {}
    resp = h.hb("a", 1, owned={"foo": list(range(6))})
    kept = h.assigned(resp)["foo"]
    assert g.members["a"].state == S.UNREVOKED_PARTITIONS and len(kept) == 3
    # Nothing of a's is handed to b while a still reports it.
    assert h.assigned(h.hb("b", 2, owned={})) == {}
    assert g.members["b"].assigned == {}
    resp = h.hb("a", 1, owned={"foo": kept})
    assert resp.member_epoch == 2 and g.members["a"].state == S.STABLE
    resp = h.hb("b", 2, owned={})
    assert sorted(h.assigned(resp)["foo"]) == sorted(set(range(6)) - set(kept))
    assert g.state().value == "Stable"


def test_rebalance_timeout_fences_member_stuck_revoking() -> None:
    h = CgHarness(topics={"foo": 6})
    h.hb("a", 0, rebalance_ms=10_000)
    h.hb("b", 0)
    h.hb("a", 1, owned={"foo": list(range(6))})
    assert h.timers[("consumer-rebalance", GROUP, "a")] == h.now + 10_000
    start = len(h.log)
    h.advance(10_000)
    assert "a" not in h.group().members
    assert kinds(h.log[start:]) == ["Current-", "Target-", "Member-", "GroupMeta"]
    assert h.hb("a", 1, owned={}).error_code == E.UNKNOWN_MEMBER_ID
    removed, bumped = h.events[-2:]
    assert removed.kind == "member_removed"
    # The removal bumped the group epoch: a rebalance, with the removal's reason.
    assert (bumped.kind, bumped.detail) == ("group_epoch_bumped", {"protocol": "consumer"})
    assert bumped.reason == removed.reason


def test_rebalance_timer_cancelled_once_revoked() -> None:
    h = CgHarness(topics={"foo": 6})
    h.hb("a", 0)
    h.hb("b", 0)
    resp = h.hb("a", 1, owned={"foo": list(range(6))})
    h.hb("a", 1, owned=h.assigned(resp))
    assert ("consumer-rebalance", GROUP, "a") not in h.timers


def test_session_timeout_fences() -> None:
    h = CgHarness(topics={"foo": 6})
    h.hb("a", 0)
    h.hb("b", 0)
    h.advance(30_000)
    h.hb("a", 1, owned={"foo": list(range(6))})
    h.advance(15_001)   # b's session (45 s) is over, a's is not
    g = h.group()
    assert set(g.members) == {"a"} and g.group_epoch == 3
    expired, bumped = h.events[-2:]
    assert expired.kind == "member_expired" and expired.member_id == "b"
    assert (bumped.kind, bumped.reason) == ("group_epoch_bumped", "session timeout")


def test_partition_epochs_index_follows_owners() -> None:
    h = CgHarness(topics={"foo": 2})
    h.hb("a", 0)
    g = h.group()
    assert g.partition_owner(tid("foo"), 0) == "a" and g.partition_epoch(tid("foo"), 1) == 1
    h.hb("a", -1)
    assert g.owners == {}
