"""The range paths of share-partition planning (`Draft.settle` for whole ACCEPT/GAP
acknowledgement batches, `Draft.acquire_new` for never-delivered batches, the bulk
`apply_locks` and the start-offset drop of `replay`) plan exactly what the one-record-
at-a-time path plans: a differential property test over random windows, with multi-record
log batches, control batches, several members, mixed and per-offset ack types, a DLQ or
not, and the window invariant (a record for every offset in [start, end), none outside).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.share.change import Draft, ShareChange
from groupcoord.coordinator.share.dlq import DlqCause
from groupcoord.coordinator.share.partition import (
    AckType,
    Acquired,
    InvalidTransition,
    RecordState,
    ShareConfig,
    SharePartition,
    StateBatch,
)
from groupcoord.coordinator.share.records_state import InFlight, runs
from groupcoord.coordinator.share.throttle import take_throttled, throttle_limit
from groupcoord.wire.errors import ErrorCode

KEY = ("g", bytes(16), 0)
MEMBERS = ("a", "b")
LOCK_MS = 1_000


def one_by_one_ack(sp: SharePartition, member_id: str,
                   batches: Sequence[tuple[int, int, Sequence[int]]], now_ms: int) -> ShareChange:
    """`plan_acknowledge` with every offset edited and moved on its own."""
    d = Draft(sp)
    plan = []
    for first, last, types in batches:
        for offset in range(first, last + 1):
            rec = sp.records.get(offset)
            if rec is None or rec.state != RecordState.ACQUIRED or rec.member_id != member_id:
                return d.finish(ErrorCode.INVALID_RECORD_STATE)
            plan.append((offset, types[0] if len(types) == 1 else types[offset - first]))
    for offset, kind in plan:
        rec = d.edit(offset)
        if kind == AckType.ACCEPT:
            d.move(offset, rec, RecordState.ACKNOWLEDGED)
        elif kind == AckType.RELEASE:
            d.release_one(offset, rec)
        elif kind == AckType.RENEW:
            rec.deadline_ms = now_ms + sp.config.record_lock_duration_ms
        elif kind == AckType.REJECT:
            d.archive(offset, rec, DlqCause.CLIENT_REJECT)
        else:
            d.move(offset, rec, RecordState.ARCHIVED)
    d.advance_start()
    return d.finish(ErrorCode.NONE)


def one_by_one_acquire(sp: SharePartition, member_id: str, now_ms: int,
                       batches: list[tuple[int, int, bool]], max_records: int,
                       record_limit: bool = False) -> ShareChange:
    """`plan_acquire` (without BatchSize pieces) with every record acquired on its own,
    redeliveries throttled near the delivery limit by the `throttle` rules."""
    d = Draft(sp)
    if not batches:
        return d.finish([])
    deadline = now_ms + sp.config.record_lock_duration_ms
    got: list[tuple[int, int, int]] = []
    budget = max_records if max_records > 0 else 500

    def acquire(offset: int, rec: InFlight) -> None:
        d.move(offset, rec, RecordState.ACQUIRED)
        rec.delivery_count += 1
        rec.member_id, rec.deadline_ms = member_id, deadline
        got.append((offset, rec.delivery_count, 0))

    def archive_new(offset: int) -> None:
        d.move(offset, d.new(offset), RecordState.ARCHIVED)
        d.end = offset + 1

    # Redeliveries, record by record, grouped by in-flight batch for throttling.
    limit = sp.config.delivery_count_limit
    window = range(d.start, min(d.end, batches[-1][1] + 1))
    available = [(o, d.peek(o).delivery_count) for o in window
                 if d.peek(o).state == RecordState.AVAILABLE and any(
                     b <= o <= last and not c for b, last, c in batches)]
    throttled = taken_any = False

    def in_flight_batch(offset_count: tuple[int, int]) -> tuple[int, int]:
        offset = offset_count[0]
        return sp.in_flight_batch(offset) or (offset, offset)

    for span, group in groupby(available, in_flight_batch):
        records = list(group)
        if budget <= 0:
            break
        if any(count >= throttle_limit(limit) for _o, count in records):
            if taken_any:
                throttled = True
                break
            taken = take_throttled(records, span[1] - span[0] + 1, limit, budget,
                                   lambda o: acquire(o, d.edit(o)))
            budget -= taken
            if taken:
                throttled = True
                break
            continue
        for offset, _count in records:
            if budget <= 0:
                break
            acquire(offset, d.edit(offset))
            budget -= 1
            taken_any = True
    budget = 0 if throttled else min(budget, sp.config.max_record_locks - (d.end - d.start))
    for base, last, control in batches if budget > 0 else ():
        if last < d.end:
            continue
        if budget <= 0:
            break
        for offset in range(d.end, base):
            archive_new(offset)
        first = max(base, d.end)
        if control:
            for offset in range(first, last + 1):
                archive_new(offset)
            continue
        stop = min(last, first + budget - 1) if record_limit else last
        for offset in range(first, stop + 1):
            acquire(offset, d.new(offset))
            budget -= 1
        d.end = stop + 1
    d.advance_start()
    return d.finish([Acquired(f, last, count) for f, last, count, _ in runs(got)])


def summary(change: ShareChange) -> tuple[object, ...]:
    locks = {o: (r.state, r.delivery_count, r.member_id, r.deadline_ms)
             for o, r in change.locks.items()}
    return (change.start_offset, change.durable, change.changed, locks, change.end_offset,
            change.result, change.causes, change.durable_batches())


def check_window(sp: SharePartition) -> None:
    assert set(sp.records) == set(range(sp.start_offset, sp.end_offset))


def replay_and_lock(sp: SharePartition, change: ShareChange) -> None:
    """The runtime's order: replay the durable part (as its record would), then locks."""
    if change.durable:
        sp.replay(change.start_offset, change.changed)
    sp.apply_locks(change)
    check_window(sp)


def log_batches(sizes: list[tuple[int, bool]]) -> list[tuple[int, int, bool]]:
    out, base = [], 0
    for size, control in sizes:
        out.append((base, base + size - 1, control))
        base += size + (1 if size % 3 == 0 else 0)  # now and then an offset compacted away
    return out


op = st.one_of(
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(1, 40), st.booleans()),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.integers(0, 60), st.integers(0, 12),
              st.lists(st.sampled_from(list(AckType)), min_size=1, max_size=3), st.booleans()),
    st.tuples(st.just("tick"), st.integers(0, 2 * LOCK_MS)),
)


# Redelivery throttling is reached only now and then by random ops; these examples always
# take it: a record on its last attempt alone, halving pieces of a 10-record batch, and a
# fetch that stops before a throttled batch after a non-throttled one.
EXPIRE = [("fetch", "a", 40, False), ("tick", LOCK_MS)]
RELEASE = [AckType.RELEASE]


@settings(max_examples=300, deadline=None)
@example([(1, False), (1, False)], [("fetch", "a", 1, False), ("tick", LOCK_MS),
                                    ("fetch", "a", 1, False), ("tick", LOCK_MS),
                                    ("fetch", "a", 2, False)], False, 3, 5)
@example([(10, False)], EXPIRE * 5 + [("fetch", "b", 40, False)], True, 5, 60)
@example([(4, False), (4, False)],
         [("fetch", "a", 1, False), ("fetch", "b", 1, False), ("ack", "a", 4, 3, RELEASE, False),
          ("fetch", "b", 4, False), ("ack", "a", 4, 3, RELEASE, False),
          ("ack", "a", 0, 3, RELEASE, False), ("fetch", "a", 8, False)], False, 3, 60)
@given(st.lists(st.tuples(st.integers(1, 12), st.booleans()), min_size=1, max_size=12),
       st.lists(op, max_size=40), st.booleans(), st.integers(1, 3), st.integers(5, 60))
def test_range_paths_plan_as_one_by_one(sizes: list[tuple[int, bool]], ops: list, dlq: bool,
                                        limit: int, max_locks: int) -> None:
    config = ShareConfig(record_lock_duration_ms=LOCK_MS, delivery_count_limit=limit,
                         max_record_locks=max_locks, dlq=dlq)
    sp = SharePartition(*KEY, config)
    sp.initialize(0, [])
    log = log_batches(sizes)
    now = 0
    for item in ops:
        if item[0] == "fetch":
            _, member, max_records, record_limit = item
            nxt = sp.next_fetch_offset()
            read = [b for b in log if b[1] >= nxt]
            change = sp.plan_acquire(member, now, read, max_records, record_limit)
            assert summary(change) == summary(
                one_by_one_acquire(sp, member, now, read, max_records, record_limit))
            acquired = change.result
            assert isinstance(acquired, list)
            assert len(change.locks) == sum(a.last_offset - a.first_offset + 1 for a in acquired)
        elif item[0] == "ack":
            _, member, first, length, types, per_offset = item
            size = length + 1
            kinds = [types[i % len(types)] for i in range(size)] if per_offset else types[:1]
            holder = sp.records.get(first)
            who = holder.member_id if holder is not None and member == "a" else member
            # Two batches where the range is long enough: the range path takes both.
            mid = first + size // 2
            batches = ([(first, mid - 1, kinds[:mid - first] if per_offset else kinds),
                        (mid, first + length, kinds[mid - first:] if per_offset else kinds)]
                       if size >= 4 else [(first, first + length, kinds)])
            change = sp.plan_acknowledge(who, batches, now)
            assert summary(change) == summary(one_by_one_ack(sp, who, batches, now))
        else:
            now += item[1]
            change = sp.plan_expire_locks(now)
        replay_and_lock(sp, change)


def test_acquired_runs_join_across_the_window_end() -> None:
    """A redelivery at the window's end with count 1 (available with count 0 after a
    restart) and the new batch after it are one AcquiredRecords run."""
    sp = SharePartition(*KEY, ShareConfig())
    sp.initialize(0, [StateBatch(0, 2, int(RecordState.AVAILABLE), 0)])
    change = sp.plan_acquire("m", 0, [(0, 2, False), (3, 9, False)], 500)
    assert change.result == [Acquired(0, 9, 1)]
    assert summary(change) == summary(
        one_by_one_acquire(sp, "m", 0, [(0, 2, False), (3, 9, False)], 500))


def test_overlapping_ack_batches_take_the_one_by_one_path() -> None:
    """A batch that overlaps an earlier one is not settled as a range: the second move of
    an offset is refused by the transition table, as one by one."""
    sp = SharePartition(*KEY, ShareConfig())
    sp.initialize(0, [])
    sp.apply_locks(sp.plan_acquire("m", 0, [(0, 9, False)], 500))
    overlapping = [(0, 5, [AckType.ACCEPT]), (3, 9, [AckType.ACCEPT])]
    with pytest.raises(InvalidTransition):
        one_by_one_ack(sp, "m", overlapping, 0)
    with pytest.raises(InvalidTransition):
        sp.plan_acknowledge("m", overlapping, 0)
