"""Classic JoinGroup: new and existing members, initial delay, group size, pending
members, join completion (GroupMetadataManagerTest, classic join themes)."""

from __future__ import annotations

from coord_harness import GROUP, Harness

from groupcoord.coordinator.classic.consumer_protocol import encode_subscription
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.wire.errors import ErrorCode as E

S = ClassicGroupState


def group(h: Harness):
    return h.shard.classic.get(GROUP)


def test_join_unknown_member_new_group() -> None:
    h = Harness()
    _, r = h.join(member_id="ghost")
    assert r.response.error_code == E.UNKNOWN_MEMBER_ID
    assert r.response.member_id == "ghost"
    assert r.records == [] and group(h) is None


def test_generate_records_on_new_classic_group() -> None:
    h = Harness()
    _, r = h.join(version=9)
    assert r.response.error_code == E.MEMBER_ID_REQUIRED
    assert r.response.member_id == "client-1"
    assert len(r.records) == 1
    value = r.records[0].value
    assert (value.protocol_type, value.generation, value.protocol, value.leader,
            value.members) == ("", 0, None, None, [])
    # The pending member has a session timer at its session timeout.
    assert h.timers[("heartbeat", GROUP, "client-1")] == h.now + 10_000


def test_invalid_group_id_and_session_timeout() -> None:
    h = Harness()
    _, r = h.join(group_id="")
    assert r.response.error_code == E.INVALID_GROUP_ID
    _, r = h.join(session_ms=5_999)
    assert r.response.error_code == E.INVALID_SESSION_TIMEOUT
    _, r = h.join(session_ms=1_800_001)
    assert r.response.error_code == E.INVALID_SESSION_TIMEOUT
    assert h.log == []


def test_join_with_empty_protocol_type() -> None:
    h = Harness()
    _, r = h.join(protocol_type="")
    assert r.response.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    # The new group is still committed to the log, as Kafka does.
    assert len(r.records) == 1
    _, r = h.join(protocols=[])
    assert r.response.error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_inconsistent_protocol_type_and_protocols() -> None:
    h = Harness()
    h.stable_group(1)
    _, r = h.join(protocol_type="connect")
    assert r.response.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    _, r = h.join(protocols=[("roundrobin", b"")])
    assert r.response.error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_v0_join_uses_session_timeout_as_rebalance_timeout_and_null_protocol_name() -> None:
    h = Harness()
    t, r = h.join(version=0, session_ms=7_000)
    assert r.response is None
    assert group(h).members["client-1"].rebalance_timeout_ms == 7_000
    h.advance(3_000)
    resp = h.reply(t)
    assert resp.error_code == E.NONE and resp.generation_id == 1
    assert resp.protocol_name == "range" and resp.leader == "client-1"


def test_delay_initial_rebalance_on_empty_group() -> None:
    h = Harness()
    t, _ = h.join(version=3)
    assert group(h).state is S.PREPARING_REBALANCE
    h.advance(2_999)
    assert h.reply(t) is None
    h.advance(1)
    assert h.reply(t).generation_id == 1
    assert group(h).state is S.COMPLETING_REBALANCE


def test_reset_rebalance_delay_when_new_member_joins() -> None:
    h = Harness(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=3_000))
    t1, _ = h.join(version=3, rebalance_ms=10_000)
    h.advance(2_999)
    t2, _ = h.join(version=3, rebalance_ms=10_000)
    h.advance(1)
    assert group(h).state is S.PREPARING_REBALANCE  # extended by another delay
    h.advance(2_999)
    assert h.reply(t1) is None
    h.advance(1)
    assert h.reply(t1).generation_id == 1 and h.reply(t2).generation_id == 1
    assert len(h.reply(t1).members) == 2


def test_delay_rebalance_up_to_rebalance_timeout() -> None:
    h = Harness(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=3_000))
    t1, _ = h.join(version=3, rebalance_ms=5_000)
    h.advance(1)
    h.join(version=3, rebalance_ms=5_000)
    h.advance(2_999)  # t0+3000: extended by min(3000, 2000)
    assert group(h).state is S.PREPARING_REBALANCE
    h.advance(500)
    h.join(version=3, rebalance_ms=5_000)  # a newcomer, but no time remains
    h.advance(1_499)
    assert group(h).state is S.PREPARING_REBALANCE
    h.advance(1)
    assert group(h).state is S.COMPLETING_REBALANCE
    assert len(h.reply(t1).members) == 3


def test_group_over_max_size() -> None:
    h = Harness(GroupCoordinatorConfig(group_max_size=2))
    h.join(version=3)
    h.join(version=3)
    _, r = h.join(version=3)
    assert r.response.error_code == E.GROUP_MAX_SIZE_REACHED
    assert r.response.member_id == ""
    assert len(group(h).members) == 2


def test_dynamic_members_join_with_max_size_and_required_known_member() -> None:
    h = Harness(GroupCoordinatorConfig(group_max_size=2))
    ids = []
    for _ in range(3):
        _, r = h.join(version=4)
        assert r.response.error_code == E.MEMBER_ID_REQUIRED
        ids.append(r.response.member_id)
    parked = [h.join(member_id=m, version=4)[1] for m in ids]
    assert parked[0].response is None and parked[1].response is None
    assert parked[2].response.error_code == E.GROUP_MAX_SIZE_REACHED


def test_last_joining_members_are_kicked_out_when_rejoining_group_with_max_size() -> None:
    h = Harness(GroupCoordinatorConfig(group_max_size=3))
    ids = h.stable_group(3)
    h.shard.classic.config = GroupCoordinatorConfig(group_max_size=2)
    leader = group(h).leader_id
    h.join(member_id=leader)  # leader forces a rebalance
    others = [m for m in ids if m != leader]
    _, r1 = h.join(member_id=others[0])
    _, r2 = h.join(member_id=others[1])
    assert r1.response is None or r1.response.error_code == E.NONE
    assert r2.response.error_code == E.GROUP_MAX_SIZE_REACHED
    assert others[1] not in group(h).members


def test_existing_member_updated_metadata_triggers_rebalance() -> None:
    h = Harness()
    ids = h.stable_group(2)
    follower = next(m for m in ids if m != group(h).leader_id)
    _, r = h.join(member_id=follower, topics=("t", "u"))
    assert r.response is None and group(h).state is S.PREPARING_REBALANCE


def test_leader_join_in_stable_triggers_rebalance() -> None:
    h = Harness()
    h.stable_group(2)
    _, r = h.join(member_id=group(h).leader_id)
    assert r.response is None and group(h).state is S.PREPARING_REBALANCE
    kinds = [e.kind for e in h.events]
    assert kinds[-1] == "rebalance_started"


def test_existing_member_same_metadata_in_stable_no_rebalance() -> None:
    h = Harness()
    ids = h.stable_group(2)
    follower = next(m for m in ids if m != group(h).leader_id)
    _, r = h.join(member_id=follower)
    assert r.response.error_code == E.NONE and r.response.generation_id == 1
    assert r.response.members == [] and r.response.leader == group(h).leader_id
    assert group(h).state is S.STABLE


def test_existing_member_rejoin_in_completing_rebalance_gets_current_generation() -> None:
    h = Harness()
    t, _ = h.join(version=3)
    h.advance(3_000)
    mid = h.reply(t).member_id
    _, r = h.join(member_id=mid, version=3)
    assert r.response.generation_id == 1 and len(r.response.members) == 1


def test_existing_member_in_empty_group() -> None:
    h = Harness()
    ids = h.stable_group(1)
    h.leave([(ids[0], None)])
    assert group(h).state is S.EMPTY
    _, r = h.join(member_id=ids[0])
    assert r.response.error_code == E.UNKNOWN_MEMBER_ID


def test_complete_join_removes_not_yet_rejoined_dynamic_members() -> None:
    h = Harness()
    ids = h.stable_group(2)
    leader = group(h).leader_id
    follower = next(m for m in ids if m != leader)
    t, _ = h.join(member_id=leader)
    # Keep the follower alive but never rejoining.
    for _ in range(6):
        assert h.heartbeat(follower, 1) == E.REBALANCE_IN_PROGRESS
        h.advance(5_000)
    resp = h.reply(t)
    assert resp.generation_id == 2 and len(resp.members) == 1
    assert set(group(h).members) == {leader}
    assert next(m for m in ids if m != leader) not in group(h).members


def test_no_members_rejoined_extends_join_phase() -> None:
    h = Harness()
    t1, _ = h.join(version=5, instance_id="i1", session_ms=60_000)
    t2, _ = h.join(version=5, instance_id="i2", session_ms=60_000)
    h.advance(6_000)
    a, b = h.reply(t1).member_id, h.reply(t2).member_id
    gen = group(h).generation_id
    h.sync(b, gen, instance_id="i2")
    h.sync(a, gen, {a: b"x", b: b"y"}, instance_id="i1")
    assert group(h).state is S.STABLE
    _, r = h.join(version=3, rebalance_ms=1_000)  # dynamic newcomer triggers a rebalance
    assert r.response is None
    newcomer = next(m for m in group(h).members if m not in (a, b))
    h.leave([(newcomer, None)])
    assert group(h).state is S.PREPARING_REBALANCE
    h.advance(30_000)
    # Nobody rejoined: static members are kept and the join timer is armed again.
    assert group(h).state is S.PREPARING_REBALANCE
    assert ("join", GROUP) in h.timers


def test_join_completion_waits_for_pending_member() -> None:
    h = Harness()
    ids = h.stable_group(2)
    _, r = h.join(version=4)
    pending = r.response.member_id
    assert r.response.error_code == E.MEMBER_ID_REQUIRED
    t_lead, _ = h.join(member_id=ids[0])
    _t_fol, _ = h.join(member_id=ids[1])
    assert group(h).state is S.PREPARING_REBALANCE  # waiting for the pending member
    t_new, _ = h.join(member_id=pending)
    assert group(h).state is S.COMPLETING_REBALANCE
    assert h.reply(t_new).generation_id == 2
    assert len(h.reply(t_lead).members) == 3


def test_join_completion_when_pending_member_times_out() -> None:
    h = Harness()
    ids = h.stable_group(2)
    _, _r = h.join(version=4, session_ms=6_000)
    h.join(member_id=ids[0])
    h.join(member_id=ids[1])
    assert group(h).state is S.PREPARING_REBALANCE
    h.advance(6_000)
    assert group(h).state is S.COMPLETING_REBALANCE
    assert len(group(h).members) == 2


def test_new_member_join_expiration() -> None:
    h = Harness()
    ids = h.stable_group(1)
    t, r = h.join(version=3, rebalance_ms=400_000)
    newcomer = next(m for m in group(h).members if m != ids[0])
    assert r.response is None
    # The old member keeps heartbeating but never rejoins.
    for _ in range(60):
        h.advance(5_000)
        assert h.heartbeat(ids[0], 1) in (E.REBALANCE_IN_PROGRESS, E.NONE)
    resp = h.reply(t)
    assert resp.error_code == E.UNKNOWN_MEMBER_ID
    assert newcomer not in group(h).members


def test_generation_id_increments_on_rebalance() -> None:
    h = Harness()
    ids = h.stable_group(1)
    assert group(h).generation_id == 1
    t, _ = h.join(member_id=ids[0])
    assert h.reply(t).generation_id == 2


def test_subscribed_topics_follow_generation() -> None:
    h = Harness()
    h.join(version=3, protocols=[("range", encode_subscription(["a", "b"]))])
    h.advance(3_000)
    assert group(h).subscribed_topics == frozenset({"a", "b"})
