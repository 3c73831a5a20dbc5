"""`group.max.size` on classic groups held exactly under a burst of interleaved joins
(GroupMetadataManager.acceptJoiningMember, the GroupMetadataManagerTest max-size themes).

The shard is a single writer, so "concurrent" joiners are JoinGroups interleaved with
each other and with join phases, initial delays, parked joins and syncs. The invariant is
checked after every operation: the group never holds more members than the limit, and in
the end exactly the excess joiners were told GROUP_MAX_SIZE_REACHED, once each.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import test_property_replay as replay_props
from classic_burst import REBALANCE_MS, SESSION_MS, Burst, Kind, RecordingHarness, Stage
from coord_harness import GROUP, Harness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.wire.errors import ErrorCode as E

S = ClassicGroupState
LIMIT = 1_000
JOINERS = 2_000


def group(h: Harness) -> ClassicGroup:
    found = h.shard.classic.get(GROUP)
    assert found is not None
    return found


def bounded(h: Harness, limit: int) -> Callable[[], None]:
    """An observer failing as soon as the group holds more than `limit` members."""
    def observe() -> None:
        found = h.shard.classic.get(GROUP)
        if found is not None:
            assert len(found.members) <= limit, (found.state, len(found.members))
    return observe


@pytest.mark.parametrize("kinds", [
    [Kind.REQUIRED], [Kind.DIRECT], [Kind.STATIC], [Kind.REQUIRED, Kind.DIRECT, Kind.STATIC],
], ids=["member-id-required", "direct", "static", "mixed"])
def test_burst_of_joiners_fills_the_group_exactly(kinds: list[Kind]) -> None:
    h = RecordingHarness(GroupCoordinatorConfig(group_max_size=LIMIT))
    burst = Burst(h, [kinds[i % len(kinds)] for i in range(JOINERS)], seed=len(kinds),
                  observe=bounded(h, LIMIT))
    burst.run(max_steps=200_000)
    assert burst.other_errors == []
    # Not vacuous: newcomers kept arriving after the first generation formed, so the
    # group rebalanced again and again while filling up.
    assert group(h).generation_id >= 3, group(h).generation_id
    rejected = [j for j in burst.joiners if j.stage is Stage.REJECTED]
    members = [j for j in burst.joiners if j.stage is Stage.SYNCED]
    assert len(rejected) == JOINERS - LIMIT and len(members) == LIMIT
    assert all(j.max_size_errors == 1 for j in rejected)
    assert all(j.max_size_errors == 0 for j in members)
    g = group(h)
    assert sorted(g.members) == sorted(j.member_id for j in members)
    assert not g.pending_join_members
    # The limit holds after a restart: the log rebuilds exactly these members.
    reloaded = h.fresh_replay().classic.get(GROUP)
    assert reloaded is not None and sorted(reloaded.members) == sorted(g.members)


def stable_group(h: Harness, n: int, static: bool = False) -> list[str]:
    """`n` members (static ones with instance ids `i<k>`) synced into one generation."""
    tokens = []
    for k in range(n):
        token, _ = h.join(version=3 if not static else 9, client_id=f"c{k}",
                          instance_id=f"i{k}" if static else None,
                          session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS)
        tokens.append(token)
    h.advance(h.config.group_initial_rebalance_delay_ms)
    g = group(h)
    assert g.is_in(S.COMPLETING_REBALANCE)
    ids = [h.reply(t).member_id for t in tokens]
    for mid in ids:
        h.sync(mid, g.generation_id, {m: b"a" for m in ids} if g.is_leader(mid) else None)
    assert g.is_in(S.STABLE)
    return ids


def test_newcomers_during_a_rebalance_of_a_full_group_are_refused() -> None:
    """Kafka admits newcomers while fewer than the limit have rejoined, so a full group
    briefly holds limit + newcomers; here the seats of members that have not rejoined yet
    stay theirs, and every newcomer is refused at once."""
    h = Harness(GroupCoordinatorConfig(group_max_size=10, group_initial_rebalance_delay_ms=0))
    ids = stable_group(h, 10)
    observe = bounded(h, 10)
    h.join(member_id=group(h).leader_id or "", version=3, session_ms=SESSION_MS,
           rebalance_ms=REBALANCE_MS)
    assert group(h).is_in(S.PREPARING_REBALANCE)
    refused = 0
    for k in range(30):
        _, r = h.join(version=3 if k % 2 else 9, client_id=f"new{k}",
                      instance_id=f"new{k}" if k % 3 == 0 else None)
        observe()
        if r.response.error_code == E.MEMBER_ID_REQUIRED:
            _, r = h.join(member_id=r.response.member_id, version=9)
            observe()
        assert r.response.error_code == E.GROUP_MAX_SIZE_REACHED
        refused += 1
        if k < len(ids):
            h.join(member_id=ids[k], version=3, session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS)
            observe()
    assert refused == 30
    assert group(h).is_in(S.COMPLETING_REBALANCE) and sorted(group(h).members) == sorted(ids)


def test_a_departed_member_frees_exactly_one_seat_during_the_rebalance() -> None:
    h = Harness(GroupCoordinatorConfig(group_max_size=10, group_initial_rebalance_delay_ms=0))
    ids = stable_group(h, 10)
    h.leave([(ids[3], None)])
    assert group(h).is_in(S.PREPARING_REBALANCE) and len(group(h).members) == 9
    codes = []
    for k in range(5):
        _, r = h.join(version=3, client_id=f"new{k}", session_ms=SESSION_MS,
                      rebalance_ms=REBALANCE_MS)
        codes.append(None if r.response is None else r.response.error_code)
        assert len(group(h).members) <= 10
    assert codes == [None] + [E.GROUP_MAX_SIZE_REACHED] * 4


@pytest.mark.parametrize("state", [S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE])
def test_a_static_member_replacing_itself_in_a_full_group_adds_no_one(state: S) -> None:
    h = Harness(GroupCoordinatorConfig(group_max_size=3, group_initial_rebalance_delay_ms=0))
    ids = stable_group(h, 3, static=True)
    if state is S.PREPARING_REBALANCE:
        h.join(member_id=ids[0], instance_id="i0", session_ms=SESSION_MS,
               rebalance_ms=REBALANCE_MS, topics=("t", "u"))
    elif state is S.COMPLETING_REBALANCE:
        for k, mid in enumerate(ids):
            h.join(member_id=mid, instance_id=f"i{k}", session_ms=SESSION_MS,
                   rebalance_ms=REBALANCE_MS, topics=("t", "u"))
    assert group(h).state is state
    _, r = h.join(instance_id="i1", session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS)
    assert r.response is None or r.response.error_code == E.NONE
    assert len(group(h).members) == 3 and group(h).static_members["i1"] != ids[1]
    _, r = h.join(instance_id="i9", session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS)
    assert r.response.error_code == E.GROUP_MAX_SIZE_REACHED
    assert len(group(h).members) == 3 and "i9" not in group(h).static_members


def test_lowered_limit_after_restart_kicks_out_the_last_rejoining_members() -> None:
    """`onLoaded`: a group over a lowered limit rebalances; the first rejoiners up to the
    limit stay, later ones get GROUP_MAX_SIZE_REACHED, and members that never rejoin are
    removed with the join phase."""
    h = Harness(GroupCoordinatorConfig(group_max_size=10, group_initial_rebalance_delay_ms=0))
    ids = stable_group(h, 10)
    h.restart(GroupCoordinatorConfig(group_max_size=6, group_initial_rebalance_delay_ms=0))
    g = group(h)
    assert g.is_in(S.PREPARING_REBALANCE) and len(g.members) == 10
    _, r = h.join(version=3, client_id="late")
    assert r.response.error_code == E.GROUP_MAX_SIZE_REACHED
    codes = []
    for mid in ids[:8]:
        _, r = h.join(member_id=mid, version=3, session_ms=SESSION_MS,
                       rebalance_ms=REBALANCE_MS)
        codes.append(None if r.response is None else r.response.error_code)
    assert codes == [None] * 6 + [E.GROUP_MAX_SIZE_REACHED] * 2
    assert len(g.members) == 8  # the two that never rejoined go with the join phase
    h.advance(REBALANCE_MS)
    assert g.is_in(S.COMPLETING_REBALANCE) and sorted(g.members) == sorted(ids[:6])
    for mid in ids[:6]:
        h.sync(mid, g.generation_id, {m: b"a" for m in ids[:6]} if g.is_leader(mid) else None)
    # The next restart, with the same lowered limit, finds a group within it.
    h.restart()
    assert group(h).is_in(S.STABLE) and sorted(group(h).members) == sorted(ids[:6])


def test_limit_below_one_is_refused_at_start_up() -> None:
    for name in ("group.max.size", "group.consumer.max.size", "group.share.max.size"):
        with pytest.raises(ValueError, match=name):
            GroupCoordinatorConfig.from_properties({name: "0"})
    with pytest.raises(ValueError, match="group.share.max.size"):
        GroupCoordinatorConfig.from_properties({"group.share.max.size": "1001"})


LIMIT_STEP = st.tuples(
    st.sampled_from(["join", "join", "join", "rejoin", "sync", "heartbeat", "heartbeat",
                     "leave", "crash", "advance", "advance", "restart"]),
    st.integers(0, 5), st.integers(0, 1_000))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LIMIT_STEP, min_size=1, max_size=80))
def test_limit_holds_for_any_sequence_and_across_restarts(steps: list) -> None:
    """Random joins (direct, MEMBER_ID_REQUIRED, static), syncs, heartbeats, leaves,
    crashes, clock moves and restarts under a limit that changes between 1 and 3: the
    group never grows past the limit, never grows at all while over a lowered one, and
    replay rebuilds the live state after every step."""
    limit = 2
    h = Harness(GroupCoordinatorConfig(group_max_size=limit))
    clients = [replay_props.Client(i) for i in range(6)]
    max_gen = [0]
    before = 0
    for action, index, arg in steps:
        if action == "restart":
            limit = 1 + arg % 3
            h.restart(GroupCoordinatorConfig(group_max_size=limit))
            for c in clients:  # their connections broke: parked replies never come
                c.join_token = c.sync_token = None
            # A generation whose join completed but was never synced is not persisted
            # (Kafka's completeClassicGroupJoin writes no record for a non-empty group),
            # so generations are monotonic within one load, not across a restart.
            reloaded = h.shard.classic.get(GROUP)
            max_gen[0] = 0 if reloaded is None else reloaded.generation_id
            # A restart brings back the members of the last persisted generation: a leave
            # or an expiry since then wrote no record (Kafka writes the group at sync), so
            # the reloaded group may be larger than the live one was; it must not grow from there.
            if reloaded is not None:
                before = max(before, len(reloaded.members))
        else:
            replay_props.act(h, clients[index], action, arg)
        while sum(replay_props.poll(h, c) for c in clients):
            pass
        found = h.shard.classic.get(GROUP)
        now = 0 if found is None else len(found.members)
        assert now <= max(limit, before), (before, now, limit)
        before = now
        replay_props.check(h, max_gen)
