"""KIP-1263 `share.assignment.interval.ms` with a manual clock: the target assignment is
recomputed at most once per interval after the group epoch moves, by the first heartbeat
after the interval (Kafka's `canComputeNextTargetAssignment`); 0 recomputes at once."""

from __future__ import annotations

from typing import Any

import pytest
from coord_harness import Harness
from share_heartbeats import complete_initialization, initialized_group

from groupcoord.coordinator.result import OpContext
from groupcoord.coordinator.share import records as rec
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.generated.share_group_heartbeat import ShareGroupHeartbeatRequest

G = "ivl"
T1 = bytes([7] * 16)
T2 = bytes([8] * 16)


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.shard.on_topics_changed(TopicsImage.of([("a", T1, 4), ("b", T2, 2)], 1), 0)
    # Initialized before anyone joins (share_heartbeats.initialized_group), so the interval
    # alone decides when partitions are assigned.
    initialized_group(harness, G)
    return harness


def hb(h: Harness, member: str, epoch: int, topics: list[str] | None = None,
       overrides: dict[str, str] | None = None) -> Any:
    req = ShareGroupHeartbeatRequest(group_id=G, member_id=member, member_epoch=epoch,
                                     subscribed_topic_names=topics)
    result = h.shard.share_group_heartbeat(req, 1, OpContext("client", "/127.0.0.1", 0), h.now, None, overrides)
    h.apply(result)
    reply = result.response
    complete_initialization(h, reply)
    assert reply.response.error_code == 0
    return reply.response


def target_writes(h: Harness) -> list[tuple[int, int]]:
    """(assignment epoch, timestamp) of every ShareGroupTargetAssignmentMetadata written."""
    return [(r.value.assignment_epoch, r.value.assignment_timestamp) for r in h.log
            if r.key.RECORD_TYPE == rec.TARGET_METADATA and r.value is not None]


def epoch_of(h: Harness, member: str) -> int:
    return h.shard.share.get(G).members[member].member_epoch


def parts(resp: Any) -> list[int]:
    return sorted(p for tp in resp.assignment.topic_partitions for p in tp.partitions)


def test_joins_within_one_interval_cause_one_recompute(h: Harness) -> None:
    start = h.now
    first = hb(h, "m1", 0, ["a"])
    assert first.member_epoch == 1 and parts(first) == [0, 1, 2, 3]
    for member in ("m2", "m3", "m4"):
        h.advance(100)
        joined = hb(h, member, 0, ["a"])
        # Held back: the new member joins at the old target's epoch with nothing.
        assert joined.member_epoch == 1 and parts(joined) == []
        assert hb(h, "m1", 1).assignment is None
    group = h.shard.share.get(G)
    assert (group.group_epoch, group.assignment_epoch) == (4, 1)
    assert target_writes(h) == [(1, start)]
    assert group.members["m1"].assigned == {T1: frozenset({0, 1, 2, 3})}
    h.advance(700)  # start + 1000: the interval has passed
    resp = hb(h, "m3", 1)
    assert resp.member_epoch == 4 and len(parts(resp)) == 1
    assert target_writes(h) == [(1, start), (4, start + 1000)]
    # The other members pick up the one new target at their next heartbeat.
    owned = [parts(hb(h, m, 1)) for m in ("m1", "m2", "m4")] + [parts(resp)]
    assert sorted(p for o in owned for p in o) == [0, 1, 2, 3]
    assert all(epoch_of(h, m) == 4 for m in ("m1", "m2", "m3", "m4"))
    assert len(target_writes(h)) == 2


def test_assignment_appears_only_after_the_interval(h: Harness) -> None:
    hb(h, "m1", 0, ["a"])
    h.advance(10)
    hb(h, "m2", 0, ["a"])
    h.advance(989)
    assert hb(h, "m2", 1).assignment is None and epoch_of(h, "m2") == 1
    h.advance(1)
    resp = hb(h, "m2", 1)
    assert resp.member_epoch == 2 and parts(resp) in ([0, 1], [2, 3])


def test_group_config_override_changes_the_interval(h: Harness) -> None:
    slow = {"share.assignment.interval.ms": "5000"}
    hb(h, "m1", 0, ["a"], slow)
    h.advance(1_500)  # past the broker's 1000, inside the group's 5000
    assert hb(h, "m2", 0, ["a"], slow).member_epoch == 1
    h.advance(3_499)
    assert hb(h, "m2", 1, None, slow).member_epoch == 1
    h.advance(1)
    assert hb(h, "m2", 1, None, slow).member_epoch == 2
    h.advance(1)
    fast = {"share.assignment.interval.ms": "0"}
    assert hb(h, "m3", 0, ["a"], fast).member_epoch == 3


def test_interval_zero_recomputes_at_once(h: Harness) -> None:
    zero = {"share.assignment.interval.ms": "0"}
    for i, member in enumerate(("m1", "m2", "m3"), start=1):
        assert hb(h, member, 0, ["a"], zero).member_epoch == i
    assert [e for e, _ in target_writes(h)] == [1, 2, 3]
    hb(h, "m3", -1, None, zero)
    group = h.shard.share.get(G)
    assert group.assignment_epoch == group.group_epoch == 4


def test_departure_inside_the_interval_waits_for_a_heartbeat(h: Harness) -> None:
    hb(h, "m1", 0, ["a"])
    h.advance(1_000)
    hb(h, "m2", 0, ["a"])  # computed: epoch 2, m1 and m2 split the partitions
    assert len(parts(hb(h, "m1", 1))) == 2
    h.advance(100)
    hb(h, "m2", -1)
    group = h.shard.share.get(G)
    assert (group.group_epoch, group.assignment_epoch) == (3, 2)
    assert T1 not in group.target.get("m2", {})
    assert hb(h, "m1", 2).assignment is None and epoch_of(h, "m1") == 2
    h.advance(900)
    resp = hb(h, "m1", 2)
    assert resp.member_epoch == 3 and parts(resp) == [0, 1, 2, 3]


def test_last_member_leaving_lets_the_next_join_assign_at_once(h: Harness) -> None:
    hb(h, "m1", 0, ["a"])
    hb(h, "m1", -1)
    assert target_writes(h)[-1] == (2, 0)
    h.advance(10)
    assert parts(hb(h, "m2", 0, ["a"])) == [0, 1, 2, 3]


def test_subscription_change_inside_the_interval_drops_the_topic(h: Harness) -> None:
    hb(h, "m1", 0, ["a", "b"])
    h.advance(10)
    resp = hb(h, "m1", 1, ["b"])
    # The target is held back, but "a" leaves the assignment at once.
    assert resp.member_epoch == 1 and parts(resp) == [0, 1]
    assert h.shard.share.get(G).members["m1"].assigned == {T2: frozenset({0, 1})}
    h.advance(990)
    resp = hb(h, "m1", 1, ["a"])
    assert resp.member_epoch == 3 and parts(resp) == [0, 1, 2, 3]


def test_replay_keeps_the_assignment_timestamp(h: Harness) -> None:
    hb(h, "m1", 0, ["a"])
    h.advance(10)
    hb(h, "m2", 0, ["a"])
    fresh = h.fresh_replay()
    assert fresh.snapshot() == h.shard.snapshot()
    assert fresh.share.get(G).assignment_timestamp == h.now - 10


def test_broker_settings_reach_the_share_groups() -> None:
    """`group.share.*` broker properties (`serve --group-config NAME=VALUE`) configure the
    share coordinator of every shard."""
    from groupcoord.coordinator.config import GroupCoordinatorConfig
    from groupcoord.coordinator.shard import GroupCoordinatorShard

    config = GroupCoordinatorConfig.from_properties({
        "group.share.assignment.interval.ms": "0", "group.share.session.timeout.ms": "30000",
        "group.share.heartbeat.interval.ms": "2000", "group.share.max.size": "7"})
    share = GroupCoordinatorShard(0, config).share
    assert (share.assignment_interval_ms, share.session_timeout_ms,
            share.heartbeat_interval_ms, share.max_size) == (0, 30_000, 2_000, 7)
    assert GroupCoordinatorShard(0).share.assignment_interval_ms == 1_000
