"""Classic timers that fire a little before their deadline are re-armed, not lost.

The server arms timers on the loop's monotonic clock but hands the coordinator wall-clock
time, so a fire can arrive a millisecond before the deadline. Before the fix such a fire
was ignored as stale and the timer was gone: a killed member was never evicted (seen with
confluent-kafka in tests/interop/test_classic_groups.py) and a join phase could hang.
"""

from __future__ import annotations

from coord_harness import GROUP, Harness

from groupcoord.coordinator.classic.state import ClassicGroupState

S = ClassicGroupState


def _stable_member(h: Harness) -> str:
    h.join(version=3, client_id="c0")
    while h.shard.classic.get(GROUP).state is S.PREPARING_REBALANCE:
        h.advance(3_000)
    member = h.shard.classic.get(GROUP).leader_id
    h.sync(member, 1, {member: b"a"})
    assert h.shard.classic.get(GROUP).state is S.STABLE
    return member


def _fire_early(h: Harness, key: tuple) -> int:
    deadline = h.timers.pop(key)
    h.apply(h.shard.on_timer(key, deadline - 1))
    return deadline


def test_early_session_timer_is_rearmed_and_expires_at_deadline() -> None:
    h = Harness()
    member = _stable_member(h)
    key = ("heartbeat", GROUP, member)
    deadline = _fire_early(h, key)
    assert member in h.shard.classic.get(GROUP).members
    assert h.timers[key] == deadline
    h.advance(deadline - h.now)
    assert member not in h.shard.classic.get(GROUP).members


def _fire_at(h: Harness, key: tuple, deadline: int) -> None:
    h.timers.pop(key, None)
    h.now = deadline
    h.apply(h.shard.on_timer(key, deadline))


def test_early_join_timer_is_rearmed_and_completes_the_join() -> None:
    h = Harness()
    leader = _stable_member(h)
    h.join(version=3, client_id="c1")  # a newcomer; the leader has not rejoined yet
    g = h.shard.classic.get(GROUP)
    assert g.state is S.PREPARING_REBALANCE
    key = ("join", GROUP)
    deadline = _fire_early(h, key)
    assert g.state is S.PREPARING_REBALANCE and h.timers[key] == deadline
    _fire_at(h, key, deadline)
    assert g.state is S.COMPLETING_REBALANCE and leader not in g.members


def test_early_sync_timer_is_rearmed_and_expires_missing_members() -> None:
    h = Harness()
    h.join(version=3, client_id="c0")
    h.join(version=3, client_id="c1")
    g = h.shard.classic.get(GROUP)
    while g.state is S.PREPARING_REBALANCE:
        h.advance(3_000)
    assert g.state is S.COMPLETING_REBALANCE
    key = ("sync", GROUP)
    deadline = _fire_early(h, key)
    assert g.state is S.COMPLETING_REBALANCE and h.timers[key] == deadline
    _fire_at(h, key, deadline)
    assert not g.members  # nobody synced in time: both removed
