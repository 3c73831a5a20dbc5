"""Property: random interleavings of transactional and plain commits, COMMIT/ABORT
markers, OffsetDelete, DeleteGroups, offset expiry and clock advances.

1. Replay equivalence: a fresh shard loaded from the bytes of the log (transactional
   batches, control batches, record offsets) has the same `snapshot()` as the live one,
   pending offsets and open transactions included, whether or not the last transactions
   have their marker yet.
2. A reference model (Kafka's rules, written out plainly) agrees with the live shard:
   committed offsets, pending offsets per producer, and OffsetFetch with and without
   RequireStable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coord_harness import GROUP
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from txn_harness import TxnHarness

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from groupcoord.wire.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic

PARTITIONS = 4
PRODUCERS = (1, 2, 3)
RETENTION_MS = 60_000


@dataclass
class Model:
    # partition -> (offset, record offset, commit time)
    committed: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    # producer -> partition -> (offset, record offset, commit time)
    pending: dict[int, dict[int, tuple[int, int, int]]] = field(default_factory=dict)

    def tombstone(self, partition: int) -> None:
        self.committed.pop(partition, None)
        for parts in self.pending.values():
            parts.pop(partition, None)

    def end(self, producer: int, commit: bool) -> None:
        for p, entry in self.pending.pop(producer, {}).items():
            if commit and (p not in self.committed or entry[1] > self.committed[p][1]):
                self.committed[p] = entry

    def is_pending(self, partition: int) -> bool:
        return any(partition in parts for parts in self.pending.values())


def act(h: TxnHarness, m: Model, action: str, producer: int, partition: int,
        arg: int) -> None:
    if action == "txn_commit":
        base = h.next_offset
        h.txn_commit({("t", partition): arg, ("t", (partition + 1) % PARTITIONS): arg + 1},
                     producer_id=producer)
        for i, p in enumerate((partition, (partition + 1) % PARTITIONS)):
            m.pending.setdefault(producer, {})[p] = (arg + i, base + i, h.now)
    elif action == "marker":
        h.marker(producer, commit=arg % 2 == 0)
        m.end(producer, arg % 2 == 0)
    elif action == "commit":
        base = h.next_offset
        h.commit({("t", partition): arg})
        m.committed[partition] = (arg, base, h.now)
    elif action == "offset_delete":
        req = OffsetDeleteRequest(group_id=GROUP, topics=[OffsetDeleteRequestTopic(
            name="t", partitions=[OffsetDeleteRequestPartition(partition_index=partition)])])
        h.call("offset_delete", req, 0)
        m.tombstone(partition)
    elif action == "delete":
        h.apply(h.shard.delete_groups([GROUP], h.now))
        for p in range(PARTITIONS):
            m.tombstone(p)
    elif action == "cleanup":
        cleanup(h, m)
    elif action == "advance":
        h.advance((1_000, 30_000, 61_000)[arg % 3])


def cleanup(h: TxnHarness, m: Model) -> None:
    result = h.apply(h.shard.cleanup_expired_offsets(h.now))
    for rec in result.records:
        if rec.key.RECORD_TYPE != 1:
            # The group went: only when nothing is committed or pending any more.
            assert not m.committed and not any(m.pending.values())
            continue
        p = rec.key.partition
        assert not m.is_pending(p), "an offset with a pending transaction expired"
        assert h.now - m.committed[p][2] >= RETENTION_MS
        m.tombstone(p)
    for p, (_o, _r, ts) in m.committed.items():
        # Anything due and not held by a transaction did expire.
        assert h.now - ts < RETENTION_MS or m.is_pending(p)


def fetch(h: TxnHarness, stable: bool) -> dict[int, tuple[int, int]]:
    req = OffsetFetchRequest(group_id=GROUP, require_stable=stable, topics=[
        OffsetFetchRequestTopic(name="t", partition_indexes=list(range(PARTITIONS)))])
    _, result = h.call("offset_fetch", req, 7)
    return {p.partition_index: (p.committed_offset, p.error_code)
            for t in result.response.topics for p in t.partitions}


def check(h: TxnHarness, m: Model) -> None:
    assert h.fresh_replay().snapshot() == h.shard.snapshot()
    live = {p: (o.offset, o.record_offset, o.commit_timestamp_ms)
            for (_t, p), o in h.shard.offsets.canonical().get(GROUP, {}).items()}
    assert live == m.committed
    pending = {pid: {p: (o.offset, o.record_offset, o.commit_timestamp_ms)
                     for (_g, _t, p), o in parts.items()}
               for pid, parts in h.shard.offsets.pending.canonical().items()}
    assert pending == {pid: parts for pid, parts in m.pending.items() if parts}
    plain = {p: (m.committed[p][0] if p in m.committed else -1, 0) for p in range(PARTITIONS)}
    assert fetch(h, stable=False) == plain
    stable = {p: (-1, E.UNSTABLE_OFFSET_COMMIT) if m.is_pending(p) else plain[p]
              for p in range(PARTITIONS)}
    assert fetch(h, stable=True) == stable


ACTIONS = st.sampled_from(["txn_commit", "txn_commit", "txn_commit", "marker", "marker",
                           "commit", "commit", "offset_delete", "delete", "cleanup",
                           "advance", "advance"])
STEP = st.tuples(ACTIONS, st.sampled_from(PRODUCERS), st.integers(0, PARTITIONS - 1),
                 st.integers(0, 100))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=40))
def test_txn_replay_equivalence_and_model(steps: list[tuple[str, int, int, int]]) -> None:
    h = TxnHarness(GroupCoordinatorConfig(offsets_retention_minutes=RETENTION_MS // 60_000))
    m = Model()
    for action, producer, partition, arg in steps:
        act(h, m, action, producer, partition, arg)
        check(h, m)
