"""Replay equivalence: the state rebuilt from the written ShareSnapshot/ShareUpdate
records equals the live share-partition's durable view, and a partition initialized
from it redelivers exactly the records not acknowledged or archived."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.share.partition import (
    RecordState,
    ShareConfig,
    SharePartition,
    StateBatch,
)
from groupcoord.coordinator.share.state_store import ShareStateStore
from groupcoord.logformat.coordinator_records import SHARE, decode_record

KEY = ("g", bytes(16), 0)
MEMBERS = ("a", "b", "c")

op = st.one_of(
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(1, 6), st.integers(1, 8)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.integers(0, 40), st.integers(0, 3)),
    st.tuples(st.just("tick"), st.integers(0, 40_000)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
)


def durable_view(sp: SharePartition) -> tuple[int, dict[int, tuple[int, int]]]:
    offsets = {}
    for b in sp.durable_batches():
        for o in range(b.first_offset, b.last_offset + 1):
            if (b.state, b.delivery_count) != (0, 0):
                offsets[o] = (b.state, b.delivery_count)
    return sp.start_offset, offsets


def run(sp: SharePartition, store: ShareStateStore, ops: list, now: int) -> int:
    """Plan each operation, write its records, replay them into the store and the
    partition, then take its locks: the order the share runtime keeps."""
    log_end = 0
    for item in ops:
        if item[0] == "fetch":
            _, member, n_new, max_records = item
            log_end += n_new
            batches = [(o, o, False) for o in range(sp.next_fetch_offset(), log_end)]
            change = sp.plan_acquire(member, now, batches, max_records)
        elif item[0] == "ack":
            _, member, offset, kind = item
            rec = sp.records.get(offset)
            if rec is None or rec.state != RecordState.ACQUIRED:
                continue
            change = sp.plan_acknowledge(rec.member_id if member == "a" else member,
                                         [(offset, offset, [kind])], now)
        elif item[0] == "tick":
            now += item[1]
            change = sp.plan_expire_locks(now)
        else:
            change = sp.plan_release_member(item[1])
        if change.durable:
            for rec in store.write_records(KEY, change.start_offset, change.changed,
                                           change.durable_batches, now):
                # Round-trip through bytes, as the log would.
                record = decode_record(rec.key_bytes(), rec.value_bytes(), SHARE)
                store.replay(record)
                value = record.value
                sp.replay(value.start_offset, [
                    StateBatch(b.first_offset, b.last_offset, b.delivery_state,
                               b.delivery_count) for b in value.state_batches])
        sp.apply_locks(change)
    return now


@settings(max_examples=200, deadline=None)
@given(st.lists(op, max_size=60), st.integers(2, 10), st.integers(2, 500))
def test_replay_equivalence(ops: list, limit: int, snapshot_every: int) -> None:
    sp = SharePartition(*KEY, ShareConfig(delivery_count_limit=limit))
    sp.initialize(0, [])
    store = ShareStateStore(snapshot_every=snapshot_every)
    run(sp, store, ops, 1_000)
    persisted = store.get(KEY)
    live = durable_view(sp)
    if persisted is None:
        assert live == (0, {})
        return
    assert store.canonical()[KEY] == live
    restarted = SharePartition(*KEY, ShareConfig(delivery_count_limit=limit))
    restarted.initialize(persisted.start_offset, persisted.batches())
    assert durable_view(restarted) == live
    # Nothing terminal is ever offered again; everything else still is.
    assert all(r.state != RecordState.ACQUIRED for r in restarted.records.values())
    for offset, rec in sp.records.items():
        again = restarted.records.get(offset)
        if rec.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
            assert again is None or again.state == rec.state
        elif offset < restarted.end_offset:
            assert again is not None and again.state == RecordState.AVAILABLE
