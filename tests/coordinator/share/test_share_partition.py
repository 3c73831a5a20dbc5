"""SharePartition: acquisition, acknowledgement, locks, delivery limit, start offset."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.share.partition import (
    TRANSITIONS,
    AckType,
    Acquired,
    InvalidTransition,
    RecordState,
    ShareConfig,
    SharePartition,
    StateBatch,
    check_transition,
)
from groupcoord.wire.errors import ErrorCode

TID = bytes(range(16))
LOCK = 30_000


def new_sp(**cfg: int) -> SharePartition:
    sp = SharePartition("g", TID, 0, ShareConfig(**cfg))  # type: ignore[arg-type]
    sp.initialize(0, [])
    return sp


def batches(*ranges: tuple[int, int]) -> list[tuple[int, int, bool]]:
    return [(a, b, False) for a, b in ranges]


def test_acquire_new_records_and_lock() -> None:
    sp = new_sp()
    got = sp.acquire("m1", 1000, batches((0, 4), (5, 9)), 100)
    assert got == [Acquired(0, 9, 1)]
    assert sp.end_offset == 10 and sp.start_offset == 0
    assert sp.next_deadline() == 1000 + LOCK
    # Nothing left to acquire for a second member.
    assert sp.acquire("m2", 1000, batches((0, 4), (5, 9)), 100) == []


def test_acquire_whole_batches_even_past_max_records() -> None:
    sp = new_sp()
    assert sp.acquire("m1", 0, batches((0, 4), (5, 9)), 2) == [Acquired(0, 4, 1)]
    assert sp.end_offset == 5


def test_accept_advances_start_offset() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 9)), 100)
    change = sp.plan_acknowledge("m1", [(0, 4, [AckType.ACCEPT])], 1)
    # Acknowledged records below the new start need not be written: the start says it.
    assert (change.durable, change.start_offset, change.changed) == (True, 5, [])
    assert sp.start_offset == 0  # a plan changes nothing
    assert sp.apply(change) == ErrorCode.NONE
    assert sp.start_offset == 5
    assert sp.acknowledge("m1", [(5, 9, [AckType.ACCEPT])], 1) == ErrorCode.NONE
    assert sp.start_offset == sp.end_offset == 10 and not sp.records


def test_release_makes_available_and_redelivers_with_higher_count() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 2)), 100)
    change = sp.plan_acknowledge("m1", [(1, 1, [AckType.RELEASE])], 1)
    assert change.changed == [StateBatch(1, 1, 0, 1)]
    assert sp.records[1].state == RecordState.ACQUIRED
    assert sp.apply(change) == ErrorCode.NONE
    assert sp.records[1].state == RecordState.AVAILABLE
    assert sp.acquire("m2", 2, batches((0, 2)), 100) == [Acquired(1, 1, 2)]
    assert sp.records[1].member_id == "m2"


def test_reject_archives_forever() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 2)), 100)
    assert sp.acknowledge("m1", [(0, 2, [AckType.ACCEPT, AckType.REJECT, AckType.ACCEPT])],
                          1) == ErrorCode.NONE
    assert sp.start_offset == 3
    assert sp.acquire("m1", 2, batches((0, 2)), 100) == []


def test_gap_ack_archives() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 1)), 100)
    assert sp.acknowledge("m1", [(0, 1, [AckType.GAP])], 1) == ErrorCode.NONE
    assert sp.start_offset == 2


def test_ack_by_other_member_or_unacquired_is_invalid_record_state() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 4)), 100)
    assert sp.acknowledge("m2", [(0, 0, [1])], 1) == ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("m1", [(3, 5, [1])], 1) == ErrorCode.INVALID_RECORD_STATE
    # Atomic: the valid part of a failing request changed nothing.
    assert sp.records[3].state == RecordState.ACQUIRED
    sp.acknowledge("m1", [(0, 0, [1])], 1)
    assert sp.acknowledge("m1", [(0, 0, [1])], 1) == ErrorCode.INVALID_RECORD_STATE


def test_renew_extends_lock() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 0)), 100)
    sp.acknowledge("m1", [(0, 0, [AckType.RENEW])], 20_000)
    assert sp.records[0].state == RecordState.ACQUIRED
    assert sp.next_deadline() == 20_000 + LOCK
    assert sp.expire_locks(LOCK) == 0


def test_lock_expiry_redelivers() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 1)), 100)
    assert sp.expire_locks(LOCK - 1) == 0
    assert sp.expire_locks(LOCK) == 2
    assert sp.next_deadline() is None
    assert sp.acquire("m2", LOCK, batches((0, 1)), 100) == [Acquired(0, 1, 2)]


def test_delivery_limit_archives_on_expiry_and_release() -> None:
    sp = new_sp(delivery_count_limit=2)
    sp.acquire("m1", 0, batches((0, 1)), 100)
    sp.expire_locks(LOCK)
    assert sp.acquire("m1", LOCK, batches((0, 1)), 100) == [Acquired(0, 1, 2)]
    assert sp.acknowledge("m1", [(0, 0, [AckType.RELEASE])], LOCK) == ErrorCode.NONE
    assert sp.expire_locks(3 * LOCK) == 1
    assert sp.start_offset == 2 and not sp.records  # both archived
    assert sp.acquire("m1", 3 * LOCK, batches((0, 1)), 100) == []


def test_expiry_moves_start_offset_forward_when_archived() -> None:
    sp = new_sp(delivery_count_limit=2)
    sp.acquire("m1", 0, batches((0, 0)), 100)
    sp.acquire("m1", 0, batches((1, 1)), 100)
    sp.acknowledge("m1", [(1, 1, [AckType.ACCEPT])], 1)
    sp.expire_locks(LOCK)
    sp.acquire("m1", LOCK, batches((0, 1)), 100)
    sp.expire_locks(2 * LOCK)
    assert sp.start_offset == 2


def test_max_in_flight_records() -> None:
    sp = new_sp(max_record_locks=3)
    assert sp.acquire("m1", 0, batches((0, 0), (1, 1), (2, 2), (3, 3)), 100) == [
        Acquired(0, 2, 1)]
    assert sp.acquire("m2", 0, batches((3, 3)), 100) == []
    sp.acknowledge("m1", [(0, 0, [AckType.ACCEPT])], 1)
    assert sp.acquire("m2", 0, batches((3, 3)), 100) == [Acquired(3, 3, 1)]


def test_control_batches_and_gaps_are_archived_not_acquired() -> None:
    sp = new_sp()
    got = sp.acquire("m1", 0, [(0, 1, False), (2, 2, True), (5, 6, False)], 100)
    assert got == [Acquired(0, 1, 1), Acquired(5, 6, 1)]
    assert sp.records[3].state == RecordState.ARCHIVED
    sp.acknowledge("m1", [(0, 1, [1])], 1)
    assert sp.start_offset == 5


def test_release_member_releases_only_its_records() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 1)), 100)
    sp.acquire("m2", 0, batches((2, 3)), 100)
    assert sp.release_member("m1") == 2
    assert sp.records[2].member_id == "m2"
    assert sp.next_fetch_offset() == 0


def test_initialize_from_persisted_state() -> None:
    sp = SharePartition("g", TID, 0)
    sp.initialize(5, [StateBatch(5, 6, RecordState.ACKNOWLEDGED, 1),
                      StateBatch(7, 7, RecordState.AVAILABLE, 2),
                      StateBatch(9, 9, RecordState.ARCHIVED, 5)])
    assert sp.start_offset == 7 and sp.end_offset == 10
    assert sp.records[8].state == RecordState.AVAILABLE and sp.records[8].delivery_count == 0
    assert sp.acquire("m", 0, batches((7, 12)), 100) == [
        Acquired(7, 7, 3), Acquired(8, 8, 1), Acquired(10, 12, 1)]


def test_transition_table_rejects_same_state_and_terminal_moves() -> None:
    assert RecordState.ACQUIRED not in TRANSITIONS[RecordState.ACQUIRED]
    assert not TRANSITIONS[RecordState.ACKNOWLEDGED]
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 1)), 100)
    sp.acknowledge("m1", [(1, 1, [1])], 0)
    with pytest.raises(InvalidTransition):
        check_transition(1, sp.records[1].state, RecordState.AVAILABLE)


def test_move_start_offset_drops_lower_records() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 9)), 100)
    sp.move_start_offset(5)
    assert sp.start_offset == 5 and min(sp.records) == 5


def test_record_limit_mode_splits_batches() -> None:
    sp = new_sp()
    assert sp.acquire("m1", 0, batches((0, 4), (5, 9)), 3, record_limit=True) == [
        Acquired(0, 2, 1)]
    assert sp.end_offset == 3
    assert sp.acquire("m2", 0, batches((0, 4), (5, 9)), 4, record_limit=True) == [
        Acquired(3, 6, 1)]


@pytest.mark.parametrize(("batch_size", "expected"), [
    (0, [(0, 11)]),                       # no BatchSize: one run
    (12, [(0, 11)]),                      # not more records than BatchSize
    (5, [(0, 7), (8, 11)]),               # cut at the first batch base >= 5 past the start
    (4, [(0, 3), (4, 7), (8, 11)]),
    (1, [(0, 3), (4, 7), (8, 11)]),       # never inside a log batch
])
def test_batch_size_splits_acquired_records_at_log_batches(
        batch_size: int, expected: list[tuple[int, int]]) -> None:
    """`SharePartition.createBatches`: in batch-optimized mode the acquired records are
    reported in pieces of at least BatchSize records, cut at log batch boundaries."""
    sp = new_sp()
    got = sp.acquire("m1", 0, batches((0, 3), (4, 7), (8, 11)), 100, batch_size=batch_size)
    assert got == [Acquired(a, b, 1) for a, b in expected]


def test_record_limit_mode_is_never_split() -> None:
    sp = new_sp()
    got = sp.acquire("m1", 0, batches((0, 3), (4, 7), (8, 11)), 6, record_limit=True,
                     batch_size=2)
    assert got == [Acquired(0, 5, 1)]


def test_acquire_plan_is_durable_only_for_archived_gaps() -> None:
    """Acquisition locks are soft state: a plain acquire writes nothing; archiving a
    control batch does."""
    sp = new_sp()
    plain = sp.plan_acquire("m1", 0, batches((0, 1)), 100)
    assert not plain.durable and sorted(plain.locks) == [0, 1] and not sp.records
    sp.apply(plain)
    with_control = sp.plan_acquire("m1", 0, [(2, 2, True), (3, 3, False)], 100)
    assert with_control.durable and with_control.changed == [StateBatch(2, 2, 4, 0)]


def test_replay_keeps_locks_the_record_agrees_with() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 3)), 100)
    # A snapshot of the window: acquired records persisted as available, one delivery less.
    sp.replay(0, [StateBatch(0, 3, RecordState.AVAILABLE, 0)])
    assert all(sp.records[o].member_id == "m1" for o in range(4))
    # A record that disagrees (archived) ends the acquisition.
    sp.replay(0, [StateBatch(2, 2, RecordState.ARCHIVED, 1)])
    assert sp.records[2].state == RecordState.ARCHIVED and sp.records[3].member_id == "m1"


def test_reload_keeps_agreeing_locks_and_drops_the_rest() -> None:
    sp = new_sp()
    sp.acquire("m1", 0, batches((0, 3)), 100)
    sp.reload(0, [StateBatch(1, 1, RecordState.AVAILABLE, 3)])
    assert sp.records[1].state == RecordState.AVAILABLE
    assert [sp.records[o].member_id for o in (0, 2, 3)] == ["m1"] * 3
    assert sp.end_offset == 4
