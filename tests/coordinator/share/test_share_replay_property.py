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
    log_end = 0
    for item in ops:
        if item[0] == "fetch":
            _, member, n_new, max_records = item
            log_end += n_new
            batches = [(o, o, False) for o in range(sp.next_fetch_offset(), log_end)]
            sp.acquire(member, now, batches, max_records)
        elif item[0] == "ack":
            _, member, offset, kind = item
            rec = sp.records.get(offset)
            if rec is not None and rec.state == RecordState.ACQUIRED:
                sp.acknowledge(rec.member_id if member == "a" else member,
                               [(offset, offset, [kind])], now)
        elif item[0] == "tick":
            now += item[1]
            sp.expire_locks(now)
        else:
            sp.release_member(item[1])
        changes = sp.take_changes()
        if changes is not None:
            start, changed = changes
            for rec in store.write_records(KEY, start, changed, sp.durable_batches(), now):
                # Round-trip through bytes, as the log would.
                store.replay(decode_record(rec.key_bytes(), rec.value_bytes(), SHARE))
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
