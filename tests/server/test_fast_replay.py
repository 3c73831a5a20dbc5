"""The fast loader (`server/fast_replay`) ends in exactly the state of the plain one
(`shard_log.replay_log`) over random logs, and reads each batch once."""

from __future__ import annotations

import random

import pytest
from replay_log_support import random_log

from groupcoord.coordinator.records import (
    group_metadata_record,
    offset_commit_record,
    offset_tombstone,
)
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.logformat.batch import build_batch
from groupcoord.logformat.record import CorruptRecordError
from groupcoord.server.runtime.fast_replay import SCAN_SLICE, FastReplay
from groupcoord.server.runtime.shard_log import ProducerEpochs, replay_batch


def _plain(batches: list[bytes]) -> tuple[GroupCoordinatorShard, ProducerEpochs]:
    shard, producers = GroupCoordinatorShard(0), ProducerEpochs()
    for batch in batches:
        replay_batch(memoryview(batch), shard, producers)
    return shard, producers


def _fast(batches: list[bytes]) -> tuple[GroupCoordinatorShard, ProducerEpochs]:
    shard, producers = GroupCoordinatorShard(0), ProducerEpochs()
    for _ in FastReplay(shard, producers).steps(memoryview(b) for b in batches):
        pass
    return shard, producers


@pytest.mark.parametrize("seed", range(60))
def test_fast_replay_equals_plain_replay(seed: int) -> None:
    batches = random_log(random.Random(seed), 60)
    plain, plain_producers = _plain(batches)
    fast, fast_producers = _fast(batches)
    assert fast.snapshot() == plain.snapshot()
    assert fast_producers.entries == plain_producers.entries
    assert sorted(fast.classic.groups) == sorted(plain.classic.groups)


def test_superseded_commits_are_not_decoded_but_the_last_keeps_its_log_offset() -> None:
    rows = [(offset_commit_record("g", "t", 0, n, -1, "", 1_000, -1, bytes(16)).key_bytes(),
             offset_commit_record("g", "t", 0, n, -1, "", 1_000, -1, bytes(16)).value_bytes(),
             (), 1_000) for n in range(50)]
    shard, _ = _fast([build_batch(rows, base_offset=100)])
    stored = shard.offsets.get("g", "t", 0)
    assert stored is not None and (stored.offset, stored.record_offset) == (49, 149)


def test_a_tombstone_then_a_commit_in_one_run_also_drops_the_pending_offsets() -> None:
    txn = offset_commit_record("g", "t", 0, 5, -1, "", 1_000, -1, bytes(16))
    put = offset_commit_record("g", "t", 0, 9, -1, "", 1_000, -1, bytes(16))
    tomb = offset_tombstone("g", "t", 0)
    batches = [
        build_batch([(txn.key_bytes(), txn.value_bytes(), (), 1)], base_offset=0,
                    producer_id=3, producer_epoch=0, base_sequence=0, transactional=True),
        build_batch([(tomb.key_bytes(), None, (), 1), (put.key_bytes(), put.value_bytes(),
                                                         (), 1)], base_offset=1),
    ]
    fast, _ = _fast(batches)
    assert fast.snapshot() == _plain(batches)[0].snapshot()
    assert not fast.offsets.has_pending("g", "t", 0)


def test_a_records_section_that_does_not_match_its_count_is_corrupt() -> None:
    rec = offset_commit_record("g", "t", 0, 1, -1, "", 1_000, -1, bytes(16))
    batch = bytearray(build_batch([(rec.key_bytes(), rec.value_bytes(), (), 1)]))
    batch[57:61] = (2).to_bytes(4, "big")  # recordsCount, not covered by the check here
    with pytest.raises(CorruptRecordError):
        _fast([bytes(batch)])


@pytest.mark.parametrize("other_at", [None, SCAN_SLICE - 1, SCAN_SLICE, SCAN_SLICE + 1])
def test_a_batch_longer_than_a_scan_slice_replays_as_the_plain_loader_and_yields_between(
        other_at: int | None) -> None:
    """One batch of more commits than `SCAN_SLICE` (a snapshot's can hold every commit of the
    shard) is scanned in slices with a step between them; a record of another type at, just
    before or just after a slice's end is replayed in its place."""
    rows = []
    for n in range(2 * SCAN_SLICE + 10):
        if n == other_at:
            rec = group_metadata_record("g-other", "consumer", 1, "range", "", 1_000, [])
        else:
            rec = offset_commit_record(f"g{n % 7}", "t", n % 40, n, -1, "", 1_000, -1,
                                       bytes(16))
        rows.append((rec.key_bytes(), rec.value_bytes(), (), 1_000))
    batches = [build_batch(rows, base_offset=10)]
    shard, producers = GroupCoordinatorShard(0), ProducerEpochs()
    steps = list(FastReplay(shard, producers).steps(memoryview(b) for b in batches))
    assert len(steps) > 2  # the batch did not go in one step
    plain, _ = _plain(batches)
    assert shard.snapshot() == plain.snapshot()
    assert sorted(shard.classic.groups) == sorted(plain.classic.groups)
