"""The target assignment off the event loop (Kafka 4.4's `group.consumer.assignor.offload.enable`):
the heartbeat returns at once with what the member had, the assignor's records are written by a
later operation, and only while the group is still at the epoch they were computed for."""

from __future__ import annotations

from dataclasses import replace

from cg_harness import GROUP, IMMEDIATE, CgHarness, kinds

from groupcoord.coordinator.consumer.target_offload import target_key

OFFLOAD = replace(IMMEDIATE, group_consumer_assignor_offload_enable=True)


def stable_group(h: CgHarness) -> int:
    """m1 alone with its first target (computed on its join) and owning it; its epoch."""
    r = h.hb("m1", 0)
    assert kinds(h.log) == ["Member", "GroupMeta", "Target", "TargetMeta", "Current"]
    assert not h.offloads
    r = h.hb("m1", r.member_epoch, owned={"foo": h.assigned(r)["foo"]})
    return int(r.member_epoch)


def test_the_target_is_written_by_a_later_operation() -> None:
    h = CgHarness(OFFLOAD, topics={"foo": 4})
    stable_group(h)
    start = len(h.log)
    r = h.hb("m2", 0)
    # The join is recorded; the new target is not computed on the heartbeat.
    assert kinds(h.log[start:]) == ["Member", "GroupMeta", "Current"]
    assert (r.member_epoch, h.assigned(r)) == (1, {})
    assert list(h.offloads) == [target_key(GROUP)]
    [applied] = h.run_offloads()
    assert applied is not None and kinds(applied.records) == ["Target", "Target", "TargetMeta"]
    assert (h.group().group_epoch, h.group().assignment_epoch) == (2, 2)
    assert {m: sum(map(len, t.values())) for m, t in h.group().target.items()} == \
        {"m1": 2, "m2": 2}


def test_one_computation_per_group_is_in_flight() -> None:
    h = CgHarness(OFFLOAD, topics={"foo": 4})
    stable_group(h)
    r = h.hb("m2", 0)
    first = h.offloads.pop(target_key(GROUP))
    h.hb("m2", r.member_epoch, owned={})  # same group epoch: nothing new to compute
    assert not h.offloads
    h.offloads[target_key(GROUP)] = first
    assert h.run_offloads()[0] is not None


def test_a_result_for_a_superseded_epoch_is_dropped() -> None:
    h = CgHarness(OFFLOAD, topics={"foo": 4})
    stable_group(h)
    h.hb("m2", 0)
    stale = h.offloads.pop(target_key(GROUP))
    r3 = h.hb("m3", 0)  # epoch 3 while epoch 2's computation runs: no second one
    assert not h.offloads
    # It finishes: the group moved on, nothing is written.
    assert stale.apply(h.shard, stale.compute(), h.now) is None
    assert h.group().assignment_epoch == 1
    h.hb("m3", r3.member_epoch, owned={})  # the next heartbeat computes for epoch 3
    [applied] = h.run_offloads()
    assert applied is not None
    assert (h.group().group_epoch, h.group().assignment_epoch) == (3, 3)
    assert set(h.group().target) == {"m1", "m2", "m3"}


def test_a_result_for_changed_members_is_dropped_and_recomputed() -> None:
    h = CgHarness(OFFLOAD, topics={"foo": 4})
    epoch = stable_group(h)
    h.hb("m2", 0)
    pending = h.offloads.pop(target_key(GROUP))
    h.hb("m2", -1)  # m2 leaves again: epoch 3, and the pending result knew m2
    assert h.group().group_epoch == 3
    assert pending.apply(h.shard, pending.compute(), h.now) is None
    h.hb("m1", epoch, owned={"foo": [0, 1, 2, 3]})  # starts the computation for epoch 3
    [applied] = h.run_offloads()
    assert applied is not None
    assert set(h.group().target) == {"m1"} and h.group().assignment_epoch == 3


def test_a_failed_computation_leaves_the_target_and_the_next_heartbeat_retries() -> None:
    h = CgHarness(OFFLOAD, topics={"foo": 4})
    stable_group(h)
    r = h.hb("m2", 0)
    task = h.offloads.pop(target_key(GROUP))
    assert task.apply(h.shard, None, h.now) is None  # the runtime passes None when it raised
    assert h.group().assignment_epoch == 1
    h.hb("m2", r.member_epoch, owned={})
    assert target_key(GROUP) in h.offloads
