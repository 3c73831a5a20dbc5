"""Assignment batching of consumer groups (KIP-1263's `group.consumer.assignment.interval.ms`,
`GroupMetadataManagerTest.testConsumerGroupAssignmentInterval`,
`testCanComputeNextTargetAssignment`): joins within one interval of the last target only
bump the group epoch; the first heartbeat after the interval computes one target for all."""

from __future__ import annotations

import pytest
from cg_harness import CgHarness, kinds, tid

from groupcoord.coordinator.assignment_interval import can_compute_next_target
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.consumer.state import ConsumerGroupState, MemberState

EVERY_5S = GroupCoordinatorConfig(group_consumer_assignment_interval_ms=5_000)


@pytest.mark.parametrize(("last", "interval", "now", "expected"), [
    (0, 5_000, 1_000, True),            # no previous target
    (1_000_000, 0, 1_000_000, True),    # interval 0: always
    (1_000_000, 5_000, 1_004_999, False),
    (1_000_000, 5_000, 1_005_000, True),
    (1_000_000, 5_000, 1_007_500, True),
])
def test_can_compute_next_target(last: int, interval: int, now: int, expected: bool) -> None:
    assert can_compute_next_target(last, interval, now) is expected


def test_joins_within_the_interval_share_one_target() -> None:
    h = CgHarness(EVERY_5S, topics={"foo": 6})
    r1 = h.hb("m1", 0)
    assert r1.member_epoch == 1 and h.assigned(r1) == {"foo": [0, 1, 2, 3, 4, 5]}
    assert kinds(h.log) == ["Member", "GroupMeta", "Target", "TargetMeta", "Current"]
    assert h.group().assignment_timestamp_ms == h.now

    h.advance(4_995)
    start = len(h.log)
    r2 = h.hb("m2", 0)
    r3 = h.hb("m3", 0)
    # Not yet: each join bumps the epoch and reconciles to the last target (nothing).
    assert (r2.member_epoch, h.assigned(r2)) == (1, {})
    assert (r3.member_epoch, h.assigned(r3)) == (1, {})
    assert kinds(h.log[start:]) == ["Member", "GroupMeta", "Current"] * 2
    group = h.group()
    assert (group.group_epoch, group.assignment_epoch) == (3, 1)
    assert group.state() == ConsumerGroupState.ASSIGNING
    assert group.members["m2"].state == MemberState.STABLE

    h.advance(10)
    start = len(h.log)
    r = h.hb("m2", 1, owned={})
    # One target for both joins, at the latest epoch; m2 waits for m1 to release.
    assert r.member_epoch == 3 and r.assignment is None
    assert kinds(h.log[start:]) == ["Target", "Target", "Target", "TargetMeta", "Current"]
    assert h.group().assignment_epoch == 3
    assert h.group().assignment_timestamp_ms == h.now
    assert h.group().members["m2"].state == MemberState.UNRELEASED_PARTITIONS
    assert {m: sum(map(len, t.values())) for m, t in h.group().target.items()} == \
        {"m1": 2, "m2": 2, "m3": 2}
    assert all(tid("foo") in t for t in h.group().target.values())


def test_heartbeats_between_targets_compute_nothing() -> None:
    h = CgHarness(EVERY_5S, topics={"foo": 4})
    h.hb("m1", 0)
    h.advance(1_000)
    h.hb("m2", 0)
    start = len(h.log)
    for _ in range(3):
        h.advance(1_000)
        h.hb("m2", 1, owned={})
    assert "Target" not in kinds(h.log[start:]) and "TargetMeta" not in kinds(h.log[start:])
    h.advance(1_000)  # 5 s since the first target
    h.hb("m2", 1, owned={})
    assert kinds(h.log[-2:]) == ["TargetMeta", "Current"]


def test_an_emptied_group_computes_its_next_target_at_once() -> None:
    """Fencing the last member writes assignment timestamp 0 (Kafka: "so that the
    assignment interval does not delay the next assignment computation")."""
    h = CgHarness(EVERY_5S, topics={"foo": 2})
    r = h.hb("m1", 0)
    h.hb("m1", -1)
    assert h.group().assignment_timestamp_ms == 0
    r = h.hb("m2", 0)
    assert r.member_epoch == 3 and h.assigned(r) == {"foo": [0, 1]}


def test_batched_state_survives_a_restart() -> None:
    h = CgHarness(EVERY_5S, topics={"foo": 6})
    h.hb("m1", 0)
    h.hb("m2", 0)
    before = h.shard.consumer.canonical()
    h.restart()
    assert h.shard.consumer.canonical() == before
    h.advance(5_000)
    r = h.hb("m2", 1, owned={})
    assert r.member_epoch == 2


def test_the_broker_setting_is_validated_against_its_bounds() -> None:
    with pytest.raises(ValueError, match="group.consumer.assignment.interval.ms"):
        GroupCoordinatorConfig.from_properties({"group.consumer.assignment.interval.ms": "20000"})
    config = GroupCoordinatorConfig.from_properties(
        {"group.consumer.assignment.interval.ms": "0"})
    assert config.group_consumer_assignment_interval_ms == 0


def test_a_static_replacement_within_the_interval_keeps_the_old_target() -> None:
    """`fromLastTargetAssignment` looks the target up by instance id: a static member that
    rejoins under a new member id with a changed subscription bumps the epoch, and until the
    next target it reconciles toward the target of the member it replaces."""
    h = CgHarness(EVERY_5S, topics={"foo": 2, "bar": 2})
    r = h.hb("a1", 0, instance_id="i-a")
    assert h.assigned(r) == {"foo": [0, 1]}
    h.hb("a1", r.member_epoch, instance_id="i-a", owned={"foo": [0, 1]})
    h.hb("a1", -2, instance_id="i-a")
    h.advance(1_000)
    r = h.hb("a2", 0, instance_id="i-a", topics=["foo", "bar"])
    assert (r.member_epoch, h.assigned(r)) == (1, {"foo": [0, 1]})
    assert (h.group().group_epoch, h.group().assignment_epoch) == (2, 1)
    assert "a1" not in h.group().members and "a1" not in h.group().target
    h.advance(4_000)
    r = h.hb("a2", 1, instance_id="i-a", owned={"foo": [0, 1]})
    assert r.member_epoch == 2 and h.assigned(r) == {"bar": [0, 1], "foo": [0, 1]}
