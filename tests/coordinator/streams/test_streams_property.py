"""Properties of streams groups under random joins, heartbeats, leaves and time: replaying
the written records rebuilds the live state (records first, then replay), no active task
is ever held by two members (revoke before assign), and member epochs never go back."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from sg_harness import CHANGELOG, INPUT, REPARTITION, StreamsHarness, ids

from groupcoord.coordinator.config import GroupCoordinatorConfig

MEMBERS = ["m0", "m1", "m2", "m3"]
OPS = st.lists(st.tuples(st.sampled_from(["join", "beat", "leave", "advance"]),
                         st.sampled_from(MEMBERS), st.integers(0, 20_000)),
               min_size=1, max_size=40)


def _active_owners(h: StreamsHarness) -> dict[tuple[str, int], list[str]]:
    owners: dict[tuple[str, int], list[str]] = {}
    group = h.shard.streams.groups.get("wordcount")
    for m in (group.members.values() if group else []):
        for tasks in (m.assigned.active, m.pending_revocation.active):
            for s, parts in tasks.items():
                for p in parts:
                    owners.setdefault((s, p), []).append(m.member_id)
    return owners


@settings(max_examples=40, deadline=None)
@given(OPS, st.integers(0, 2))
def test_replay_equivalence_and_single_active_owner(ops: list[tuple[str, str, int]],
                                                     standbys: int) -> None:
    h = StreamsHarness(GroupCoordinatorConfig(group_streams_initial_rebalance_delay_ms=0,
                                              group_streams_num_standby_replicas=standbys))
    for topic in (INPUT, REPARTITION, CHANGELOG):
        h.create_topic(topic, 3)
    last: dict[str, Any] = {}
    epochs: dict[str, int] = {}
    for op, member, amount in ops:
        if op == "join":
            response = h.streams_heartbeat(member, 0, process=f"p-{member}").response
        elif op == "beat" and member in last:
            prev = last[member]
            response = h.streams_heartbeat(member, prev.member_epoch,
                                           active=ids(prev.active_tasks) or {},
                                           standby=ids(prev.standby_tasks) or {},
                                           warmup=ids(prev.warmup_tasks) or {}).response
        elif op == "leave" and member in last:
            h.streams_heartbeat(member, -1)
            last.pop(member)
            epochs.pop(member, None)
            continue
        elif op == "advance":
            h.advance(amount)
            continue
        else:
            continue
        if response.error_code == 0:
            if member in last and response.active_tasks is None:
                response.active_tasks = last[member].active_tasks
                response.standby_tasks = last[member].standby_tasks
                response.warmup_tasks = last[member].warmup_tasks
            last[member] = response
            assert response.member_epoch >= epochs.get(member, 0)
            epochs[member] = response.member_epoch
        else:
            last.pop(member, None)
            epochs.pop(member, None)
        assert all(len(owners) == 1 for owners in _active_owners(h).values())
    assert h.shard.snapshot() == h.fresh_replay().snapshot()
