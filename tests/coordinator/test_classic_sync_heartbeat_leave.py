"""Classic SyncGroup, Heartbeat, LeaveGroup, session and sync timeouts, loading."""

from __future__ import annotations

from coord_harness import GROUP, Harness

from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.wire.errors import ErrorCode as E

S = ClassicGroupState


def group(h: Harness):
    return h.shard.classic.get(GROUP)


def completing(h: Harness, n: int = 2) -> tuple[str, list[str]]:
    """A group in CompletingRebalance generation 1: (leader, followers)."""
    for i in range(n):
        h.join(version=3, client_id=f"c{i}")
    while group(h).state is S.PREPARING_REBALANCE:
        h.advance(3_000)
    g = group(h)
    return g.leader_id, [m for m in g.members if m != g.leader_id]


def test_sync_unknown_group_and_member() -> None:
    h = Harness()
    _, r = h.sync("x", 1)
    assert r.response.error_code == E.UNKNOWN_MEMBER_ID
    completing(h)
    _, r = h.sync("x", 1)
    assert r.response.error_code == E.UNKNOWN_MEMBER_ID


def test_sync_from_illegal_generation() -> None:
    h = Harness()
    leader, _ = completing(h)
    _, r = h.sync(leader, 2)
    assert r.response.error_code == E.ILLEGAL_GENERATION


def test_sync_inconsistent_protocol() -> None:
    h = Harness()
    leader, _ = completing(h)
    _, r = h.sync(leader, 1, protocol_name="roundrobin")
    assert r.response.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    _, r = h.sync(leader, 1, protocol_type="connect")
    assert r.response.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    # v5 requires both fields.
    _, r = h.sync(leader, 1, protocol_name=None)
    assert r.response.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    # Older versions do not carry them at all.
    _, r = h.sync(leader, 1, {leader: b"a"}, version=4, protocol_name=None,
                  protocol_type=None)
    assert r.response.error_code == E.NONE


def test_sync_follower_after_leader() -> None:
    h = Harness()
    leader, (fol,) = completing(h)
    _, r = h.sync(leader, 1, {leader: b"L", fol: b"F"})
    assert r.response.assignment == b"L" and r.response.protocol_name == "range"
    assert group(h).state is S.STABLE
    assert h.log[-1].value.members[1].assignment == b"F"
    _, r = h.sync(fol, 1)
    assert r.response.error_code == E.NONE and r.response.assignment == b"F"
    assert ("sync", GROUP) not in h.timers


def test_sync_leader_after_follower() -> None:
    h = Harness()
    leader, (fol,) = completing(h)
    t, r = h.sync(fol, 1)
    assert r.response is None
    _, r = h.sync(leader, 1, {leader: b"L"})
    assert r.response.assignment == b"L"
    # Members missing from the leader's list get an empty assignment.
    assert h.reply(t).error_code == E.NONE and h.reply(t).assignment == b""


def test_sync_in_preparing_rebalance() -> None:
    h = Harness()
    h.join(version=3)
    _, r = h.sync("client-1", 0)
    assert r.response.error_code == E.REBALANCE_IN_PROGRESS


def test_leader_failure_in_sync_group() -> None:
    h = Harness()
    leader, (fol,) = completing(h)
    t, _ = h.sync(fol, 1)
    h.advance(10_000)  # the leader never syncs nor heartbeats: its session expires
    assert h.reply(t).error_code == E.REBALANCE_IN_PROGRESS
    assert leader not in group(h).members


def test_rebalance_times_out_when_followers_do_not_sync() -> None:
    h = Harness()
    leader, (fol,) = completing(h)
    _, _r = h.sync(leader, 1, {leader: b"L", fol: b"F"})
    assert ("sync", GROUP) in h.timers
    for _ in range(6):  # the follower heartbeats but never syncs
        h.heartbeat(fol, 1)
        h.heartbeat(leader, 1)
        h.advance(5_000)
    assert fol not in group(h).members
    assert any(e.kind == "member_removed" for e in h.events)


def test_heartbeat_by_state() -> None:
    h = Harness()
    assert h.heartbeat("x", 0) == E.UNKNOWN_MEMBER_ID  # unknown group
    h.join(version=3)
    assert h.heartbeat("client-1", 0) == E.REBALANCE_IN_PROGRESS
    h.advance(3_000)
    assert h.heartbeat("client-1", 1) == E.NONE  # CompletingRebalance answers NONE
    assert h.heartbeat("client-1", 2) == E.ILLEGAL_GENERATION
    assert h.heartbeat("other", 1) == E.UNKNOWN_MEMBER_ID


def test_heartbeat_empty_group() -> None:
    h = Harness()
    ids = h.stable_group(1)
    h.leave([(ids[0], None)])
    assert h.heartbeat(ids[0], 2) == E.UNKNOWN_MEMBER_ID


def test_heartbeat_renews_session() -> None:
    h = Harness()
    ids = h.stable_group(2)
    for _ in range(5):
        h.advance(8_000)
        assert h.heartbeat(ids[0], 1) == E.NONE
        assert h.heartbeat(ids[1], 1) == E.NONE
    assert group(h).state is S.STABLE


def test_session_timeout_in_stable_triggers_rebalance() -> None:
    h = Harness()
    ids = h.stable_group(2)
    h.advance(5_000)
    h.heartbeat(ids[0], 1)
    h.advance(5_000)  # ids[1]'s session expires
    assert ids[1] not in group(h).members
    assert group(h).state is S.PREPARING_REBALANCE
    kinds = [e.kind for e in h.events]
    assert "member_expired" in kinds and kinds[-1] in ("rebalance_started", "rebalance_completed")


def test_member_session_timeout_during_rebalance() -> None:
    h = Harness()
    ids = h.stable_group(2)
    t, _ = h.join(member_id=ids[0])
    h.advance(10_000)  # ids[1] never rejoins nor heartbeats
    assert h.reply(t).generation_id == 2
    assert set(group(h).members) == {ids[0]}


def test_heartbeat_expiration_removes_pending_member() -> None:
    h = Harness()
    _, r = h.join(version=4)
    pending = r.response.member_id
    assert pending in group(h).pending_join_members
    h.advance(10_000)
    assert pending not in group(h).pending_join_members
    _, r = h.join(member_id=pending)
    assert r.response.error_code == E.UNKNOWN_MEMBER_ID


def test_pending_members_leave_group() -> None:
    h = Harness()
    ids = h.stable_group(2)
    _, r = h.join(version=4)
    pending = r.response.member_id
    h.join(member_id=ids[0])
    h.join(member_id=ids[1])
    assert group(h).state is S.PREPARING_REBALANCE  # waiting for the pending member
    resp = h.leave([(pending, None)])
    assert resp.members[0].error_code == E.NONE and resp.members[0].group_instance_id is None
    assert pending not in group(h).pending_join_members
    assert group(h).state is S.COMPLETING_REBALANCE and set(group(h).members) == set(ids)


def test_leave_unknown_group_and_member() -> None:
    h = Harness()
    # As GroupCoordinatorService.leaveGroup: no group means every member is unknown.
    resp = h.leave([("x", None)])
    assert resp.error_code == E.NONE and resp.members[0].error_code == E.UNKNOWN_MEMBER_ID
    assert h.leave([("x", None)], version=2).error_code == E.UNKNOWN_MEMBER_ID
    h.stable_group(1)
    resp = h.leave([("x", None)])
    assert resp.error_code == E.NONE and resp.members[0].error_code == E.UNKNOWN_MEMBER_ID
    # v0-2 promote the member error to the top level.
    assert h.leave([("x", None)], version=2).error_code == E.UNKNOWN_MEMBER_ID


def test_last_member_leaves_stable_group() -> None:
    h = Harness()
    ids = h.stable_group(1)
    resp = h.leave([(ids[0], None)], version=1)
    assert resp.error_code == E.NONE
    g = group(h)
    assert g.state is S.EMPTY and g.generation_id == 2
    value = h.log[-1].value
    assert (value.generation, value.members, value.protocol) == (2, [], None)
    assert value.protocol_type == "consumer"
    assert ("heartbeat", GROUP, ids[0]) not in h.timers


def test_leave_during_join_answers_parked_join() -> None:
    h = Harness()
    ids = h.stable_group(2)
    t, _ = h.join(member_id=ids[0])
    h.leave([(ids[0], None)])
    assert h.reply(t).error_code == E.UNKNOWN_MEMBER_ID


def test_on_loaded_reschedules_heartbeats_and_over_capacity_rebalances() -> None:
    h = Harness()
    ids = h.stable_group(3)
    small = GroupCoordinatorConfig(group_max_size=2)
    loaded = h.fresh_replay()
    loaded.config = small
    loaded.classic.config = small
    result = loaded.on_loaded(h.now)
    keys = {t.key for t in result.timers}
    assert {("heartbeat", GROUP, m) for m in ids} <= keys
    assert loaded.classic.get(GROUP).state is S.PREPARING_REBALANCE


def test_replay_builds_stable_group() -> None:
    h = Harness()
    ids = h.stable_group(2)
    loaded = h.fresh_replay()
    g = loaded.classic.get(GROUP)
    assert g.state is S.STABLE and g.generation_id == 1 and set(g.members) == set(ids)
    assert g.members[ids[0]].assignment == f"a-{ids[0]}".encode()
    assert g.leader_id == group(h).leader_id and g.protocol_name == "range"
    assert loaded.snapshot() == h.shard.snapshot()
