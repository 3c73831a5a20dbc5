"""Static membership (KIP-345) and SkipAssignment (KIP-814) in classic groups."""

from __future__ import annotations

from coord_harness import GROUP, Harness

from groupcoord.coordinator.classic.consumer_protocol import encode_subscription
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.wire.errors import ErrorCode as E

S = ClassicGroupState


def group(h: Harness):
    return h.shard.classic.get(GROUP)


def static_stable(h: Harness, n: int = 2, version: int = 9,
                  protocols=None) -> dict[str, str]:
    """instance id -> member id of a Stable group of static members."""
    tokens = {}
    for i in range(n):
        t, _ = h.join(version=version, instance_id=f"i{i}", client_id=f"c{i}",
                      protocols=protocols)
        tokens[f"i{i}"] = t
    while group(h).state is S.PREPARING_REBALANCE:
        h.advance(3_000)
    ids = {iid: h.reply(t).member_id for iid, t in tokens.items()}
    g = group(h)
    for iid, mid in ids.items():
        if mid != g.leader_id:
            h.sync(mid, g.generation_id, instance_id=iid)
    leader_iid = next(i for i, m in ids.items() if m == g.leader_id)
    h.sync(g.leader_id, g.generation_id, {m: f"a-{i}".encode() for i, m in ids.items()},
           instance_id=leader_iid)
    assert g.state is S.STABLE
    return ids


def test_static_member_join_as_first_member() -> None:
    h = Harness()
    t, r = h.join(version=5, instance_id="i0")
    assert r.response is None  # static members skip MEMBER_ID_REQUIRED
    h.advance(3_000)
    resp = h.reply(t)
    assert resp.error_code == E.NONE and resp.member_id.startswith("i0-")
    assert group(h).static_members == {"i0": resp.member_id}


def test_replace_static_leader_in_stable_without_rebalance_v9() -> None:
    h = Harness()
    ids = static_stable(h)
    old_leader = group(h).leader_id
    leader_iid = next(i for i, m in ids.items() if m == old_leader)
    records_before = len(h.log)
    _, r = h.join(version=9, instance_id=leader_iid)
    resp = r.response
    assert resp.error_code == E.NONE and resp.member_id != old_leader
    assert resp.skip_assignment is True and resp.leader == resp.member_id
    assert len(resp.members) == 2 and resp.generation_id == 1
    assert group(h).state is S.STABLE and group(h).leader_id == resp.member_id
    # The new member id is persisted with the old assignment.
    value = h.log[records_before].value
    assert {m.member_id for m in value.members} == {resp.member_id, ids["i1" if leader_iid ==
                                                                       "i0" else "i0"]}
    assert group(h).members[resp.member_id].assignment == f"a-{leader_iid}".encode()
    # The old id is fenced.
    assert h.heartbeat(old_leader, 1, instance_id=leader_iid) == E.FENCED_INSTANCE_ID
    assert h.heartbeat(old_leader, 1) == E.UNKNOWN_MEMBER_ID
    assert any(e.kind == "member_fenced" for e in h.events)


def test_replace_static_leader_before_v9_reports_old_leader() -> None:
    h = Harness()
    static_stable(h)
    old_leader = group(h).leader_id
    leader_iid = next(i for i, m in group(h).static_members.items() if m == old_leader)
    _, r = h.join(version=8, instance_id=leader_iid)
    assert r.response.leader == old_leader and r.response.members == []
    assert r.response.skip_assignment is False


def test_replace_static_follower_in_stable() -> None:
    h = Harness()
    ids = static_stable(h)
    leader = group(h).leader_id
    fol_iid = next(i for i, m in ids.items() if m != leader)
    _, r = h.join(version=9, instance_id=fol_iid)
    assert r.response.skip_assignment is False and r.response.leader == leader
    assert r.response.members == []
    _, s = h.sync(r.response.member_id, 1, instance_id=fol_iid)
    assert s.response.assignment == f"a-{fol_iid}".encode()


def test_replace_static_member_with_updated_protocol_triggers_rebalance() -> None:
    h = Harness()
    both = [("range", encode_subscription(["t"])), ("roundrobin", encode_subscription(["t"]))]
    static_stable(h, protocols=both)
    assert group(h).protocol_name == "range"
    _, r = h.join(version=9, instance_id="i1",
                  protocols=[("roundrobin", encode_subscription(["t"]))])
    assert r.response is None and group(h).state is S.PREPARING_REBALANCE


def test_replace_static_member_in_completing_rebalance_triggers_rebalance() -> None:
    h = Harness()
    _t0, _ = h.join(version=5, instance_id="i0")
    t1, _ = h.join(version=5, instance_id="i1")
    while group(h).state is S.PREPARING_REBALANCE:
        h.advance(3_000)
    old = h.reply(t1).member_id
    _, r = h.join(version=5, instance_id="i1")
    assert r.response is None and group(h).state is S.PREPARING_REBALANCE
    assert old not in group(h).members


def test_static_member_fence_duplicate_rejoined_follower() -> None:
    h = Harness()
    ids = static_stable(h, 3)
    leader = group(h).leader_id
    fol_iid = next(i for i, m in ids.items() if m != leader)
    h.join(member_id=leader, version=9, instance_id=next(
        i for i, m in ids.items() if m == leader))  # rebalance
    t_old, r = h.join(member_id=ids[fol_iid], version=9, instance_id=fol_iid)
    assert r.response is None
    h.join(version=9, instance_id=fol_iid)  # a duplicate with the same instance id
    fenced = h.reply(t_old)
    assert fenced.error_code == E.FENCED_INSTANCE_ID and fenced.member_id == ids[fol_iid]


def test_static_member_rejoin_with_mismatched_ids() -> None:
    h = Harness()
    ids = static_stable(h)
    _, r = h.join(member_id=ids["i0"], version=9, instance_id="i1")
    assert r.response.error_code == E.FENCED_INSTANCE_ID
    _, r = h.join(member_id=ids["i0"], version=9, instance_id="unknown")
    assert r.response.error_code == E.UNKNOWN_MEMBER_ID


def test_static_leader_fails_to_rejoin_before_rebalance_timeout() -> None:
    h = Harness()
    ids = static_stable(h)
    leader = group(h).leader_id
    fol_iid, fol = next((i, m) for i, m in ids.items() if m != leader)
    t, _ = h.join(member_id=fol, version=9, instance_id=fol_iid, topics=("t", "u"))
    for _ in range(6):
        h.heartbeat(leader, 1, instance_id=next(i for i, m in ids.items() if m == leader))
        h.advance(5_000)
    resp = h.reply(t)
    # The static leader is kept; the follower that rejoined leads the new generation.
    assert resp.generation_id == 2 and resp.leader == fol
    assert leader in group(h).members


def test_admin_removal_by_instance_id() -> None:
    h = Harness()
    ids = static_stable(h)
    resp = h.leave([("", "i0"), ("", "nope")])
    assert [m.error_code for m in resp.members] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert ids["i0"] not in group(h).members
    assert group(h).state is S.PREPARING_REBALANCE


def test_static_members_valid_batch_leave() -> None:
    h = Harness()
    ids = static_stable(h)
    resp = h.leave([(ids["i0"], "i0"), (ids["i1"], "i1")])
    assert [m.error_code for m in resp.members] == [E.NONE, E.NONE]
    assert group(h).state is S.EMPTY and group(h).generation_id == 2
    assert h.log[-1].value.members == []


def test_leave_with_fenced_instance_id() -> None:
    h = Harness()
    ids = static_stable(h)
    resp = h.leave([(ids["i0"], "i1")])
    assert resp.members[0].error_code == E.FENCED_INSTANCE_ID


def test_static_rejoin_with_changed_protocols_but_same_selection() -> None:
    h = Harness()
    both = [("range", encode_subscription(["t"])), ("roundrobin", encode_subscription(["t"]))]
    static_stable(h, protocols=both)
    log_size = len(h.log)
    only_range = [("range", encode_subscription(["t", "u"]))]
    _, r = h.join(version=9, instance_id="i1", protocols=only_range)
    assert r.response is not None and r.response.error_code == E.NONE
    assert group(h).state is S.STABLE and group(h).protocol_name == "range"
    new_id = r.response.member_id
    assert group(h).members[new_id].protocols == only_range
    # The replacement is persisted with the member's new subscription.
    value = h.log[log_size].value
    sub = next(m.subscription for m in value.members if m.member_id == new_id)
    assert sub == only_range[0][1]
