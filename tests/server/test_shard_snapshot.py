"""Shard snapshots (`server/shard_snapshot`, `shard_loader`): snapshot plus log tail ends in
the state of a full replay; a damaged, stale, mismatched or torn snapshot is ignored with a
log line (the whole log is replayed); a failed write leaves the previous snapshot; a
transaction open at the snapshot's offset ends by its marker in the tail."""

from __future__ import annotations

import errno
import logging
import os
import random
from pathlib import Path

import pytest
from replay_log_support import random_log

from groupcoord.coordinator.records import offset_commit_record
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.logformat.batch import build_batch, parse_header, set_base_offset
from groupcoord.server.runtime.shard_loader import ShardLoader, snapshot_pass
from groupcoord.server.runtime.shard_log import ProducerEpochs, encode_end_txn_marker, replay_batch
from groupcoord.server.runtime.shard_snapshot import SNAPSHOT_FILE, snapshot_path
from groupcoord.storage.compaction import compact
from groupcoord.storage.config import LogConfig
from groupcoord.storage.faults import FaultInjectingFileIO, FaultRule
from groupcoord.storage.fileio import OS_FILE_IO, FileIO
from groupcoord.storage.log import PartitionLog

PARTITION = 0


def _open(path: Path, io: FileIO = OS_FILE_IO, **config: int) -> PartitionLog:
    return PartitionLog.open(str(path), LogConfig(**config), io=io)


def _append(plog: PartitionLog, batches: list[bytes]) -> None:
    for batch in batches:
        plog.append(batch, assign_offsets=False, allow_control=True)


def _plain(batches: list[bytes]) -> tuple[dict[str, object], dict[int, tuple[int, int]]]:
    shard, producers = GroupCoordinatorShard(PARTITION), ProducerEpochs()
    for batch in batches:
        replay_batch(memoryview(batch), shard, producers)
    return shard.snapshot(), producers.entries


def _load(plog: PartitionLog, partition: int = PARTITION
          ) -> tuple[dict[str, object], dict[int, tuple[int, int]], ShardLoader]:
    shard, producers = GroupCoordinatorShard(partition), ProducerEpochs()
    loader = ShardLoader(plog, shard, producers, partition)
    for _ in loader.steps():
        pass
    return shard.snapshot(), producers.entries, loader


def _snapshot(plog: PartitionLog) -> None:
    loader = snapshot_pass(plog, PARTITION)
    for _ in loader.steps():
        pass
    written = loader.write_snapshot()
    assert written is not None
    written.result()


def _last_offset(batch: bytes) -> int:
    return parse_header(batch).last_offset


def _commit(n: int, partition: int = 0, base: int = 0) -> bytes:
    rec = offset_commit_record("g", "t", partition, n, -1, "", 1_000, -1, bytes(16))
    return build_batch([(rec.key_bytes(), rec.value_bytes(), (), 1_000)], base_offset=base)


@pytest.mark.parametrize("seed", range(30))
def test_snapshot_and_tail_equal_a_full_replay(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    batches = random_log(rng, 80)
    first, second = sorted(rng.sample(range(1, len(batches)), 2))
    plog = _open(tmp_path / "log")
    _append(plog, batches[:first])
    _snapshot(plog)
    _append(plog, batches[first:second])
    state, producers, loader = _load(plog)
    assert loader.snapshot_point is not None
    assert loader.snapshot_point.covered == _last_offset(batches[first - 1])
    assert loader.log_records == sum(parse_header(b).records_count for b in batches[first:second])
    assert (state, producers) == _plain(batches[:second])
    # A snapshot made from the previous one and the tail is as good.
    _snapshot(plog)
    _append(plog, batches[second:])
    state, producers, loader = _load(plog)
    assert loader.snapshot_point is not None
    assert loader.snapshot_point.covered == _last_offset(batches[second - 1])
    assert (state, producers) == _plain(batches)


def _with_snapshot(tmp_path: Path, **config: int) -> tuple[PartitionLog, list[bytes]]:
    batches = random_log(random.Random(7), 60)
    plog = _open(tmp_path / "log", **config)
    _append(plog, batches[:40])
    _snapshot(plog)
    _append(plog, batches[40:])
    return plog, batches


def _assert_ignored(plog: PartitionLog, batches: list[bytes], caplog: pytest.LogCaptureFixture,
                    reason: str, partition: int = PARTITION) -> None:
    with caplog.at_level(logging.WARNING, logger="groupcoord.coordinator"):
        state, producers, loader = _load(plog, partition)
    assert loader.snapshot_point is None
    assert any("ignoring the snapshot" in r.getMessage() and reason in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
    if partition == PARTITION:
        assert (state, producers) == _plain(batches)


def _patch(plog: PartitionLog, position: int, data: bytes) -> None:
    path = snapshot_path(plog.path)
    content = bytearray(Path(path).read_bytes())
    content[position:position + len(data)] = data
    Path(path).write_bytes(bytes(content))


def test_a_damaged_snapshot_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plog, batches = _with_snapshot(tmp_path)
    size = os.path.getsize(snapshot_path(plog.path))
    _patch(plog, size - 10, b"\xff\x00\xff")
    _assert_ignored(plog, batches, caplog, "damaged")


def test_a_torn_snapshot_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plog, batches = _with_snapshot(tmp_path)
    path = snapshot_path(plog.path)
    Path(path).write_bytes(Path(path).read_bytes()[:-100])
    _assert_ignored(plog, batches, caplog, "damaged")


def test_a_snapshot_of_another_format_version_is_ignored(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plog, batches = _with_snapshot(tmp_path)
    _patch(plog, 6, (99).to_bytes(2, "big"))
    _assert_ignored(plog, batches, caplog, "format version 99")


def test_a_snapshot_of_another_partition_is_ignored(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plog, batches = _with_snapshot(tmp_path)
    _assert_ignored(plog, batches, caplog, "written for partition 0", partition=3)


def test_a_snapshot_past_a_truncated_log_is_ignored(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plog, batches = _with_snapshot(tmp_path)
    keep = batches[:30]
    plog.truncate_to(_last_offset(keep[-1]) + 1)
    _assert_ignored(plog, keep, caplog, "no longer holds")


def test_a_snapshot_whose_batch_compaction_rewrote_is_ignored(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Commits of 5 partitions over and over, one batch each, in small segments; the
    # snapshot's batch ends up superseded, so compaction rewrites its segment.
    batches = [_commit(n, n % 5, base=n) for n in range(300)]
    plog = _open(tmp_path / "log", segment_bytes=4096)
    _append(plog, batches[:100])
    _snapshot(plog)
    _append(plog, batches[100:])
    assert len(plog.segments) > 3
    compact(plog)
    with caplog.at_level(logging.WARNING, logger="groupcoord.coordinator"):
        state, _, loader = _load(plog)
    assert loader.snapshot_point is None
    assert any("compacted or truncated" in r.getMessage() for r in caplog.records)
    assert state == _plain(batches)[0]


def test_compaction_before_the_snapshot_batch_keeps_the_snapshot(tmp_path: Path) -> None:
    batches = [_commit(n, n % 5, base=n) for n in range(300)]
    plog = _open(tmp_path / "log", segment_bytes=4096)
    _append(plog, batches)
    _snapshot(plog)  # its batch is in the active segment, which compaction leaves alone
    compact(plog)
    state, _, loader = _load(plog)
    assert loader.snapshot_point is not None and loader.snapshot_point.covered == 299
    assert state == _plain(batches)[0]


def test_a_failed_snapshot_write_leaves_the_previous_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    io = FaultInjectingFileIO()
    batches = random_log(random.Random(11), 60)
    plog = _open(tmp_path / "log", io=io)
    _append(plog, batches[:20])
    _snapshot(plog)
    _append(plog, batches[20:])
    for op in ("write", "fsync"):
        rule = io.add(FaultRule(op, errno.EIO, suffix=SNAPSHOT_FILE + ".tmp"))
        with caplog.at_level(logging.WARNING, logger="groupcoord.coordinator"):
            _snapshot(plog)
        assert rule.fired == 1
        assert any("could not write the snapshot" in r.getMessage() for r in caplog.records)
        assert not os.path.exists(snapshot_path(plog.path) + ".tmp")
    state, producers, loader = _load(plog)
    assert loader.snapshot_point is not None
    assert loader.snapshot_point.covered == _last_offset(batches[19])
    assert (state, producers) == _plain(batches)


def test_a_crash_during_the_write_leaves_a_temp_file_the_next_open_removes(
        tmp_path: Path) -> None:
    plog, batches = _with_snapshot(tmp_path)
    covered = _load(plog)[2].snapshot_point
    tmp = snapshot_path(plog.path) + ".tmp"
    Path(tmp).write_bytes(b"GCSNAP half a fil")
    plog.close()
    plog = _open(tmp_path / "log")
    assert not os.path.exists(tmp)
    state, producers, loader = _load(plog)
    assert loader.snapshot_point == covered
    assert (state, producers) == _plain(batches)


def test_a_transaction_open_at_the_snapshot_ends_with_its_marker_in_the_tail(
        tmp_path: Path) -> None:
    rec = offset_commit_record("g", "t", 0, 42, -1, "", 1_000, -1, bytes(16))
    txn = build_batch([(rec.key_bytes(), rec.value_bytes(), (), 1_000)], base_offset=1,
                      producer_id=9, producer_epoch=2, base_sequence=0, transactional=True)
    marker = bytearray(encode_end_txn_marker(9, 2, 0, True, 1_000))
    set_base_offset(marker, 0, 3)
    batches = [_commit(1), txn, _commit(7, partition=1, base=2), bytes(marker)]
    plog = _open(tmp_path / "log")
    _append(plog, batches[:3])
    _snapshot(plog)
    state, producers, loader = _load(plog)
    assert loader.snapshot_point is not None and loader.log_records == 0
    assert producers == {9: (2, -1)}
    assert "pending" in state
    _append(plog, batches[3:])
    state, producers, loader = _load(plog)
    assert loader.snapshot_point is not None and loader.log_records == 1
    assert (state, producers) == _plain(batches)
    assert "pending" not in state


def test_the_runtime_snapshots_a_shard_once_its_log_grew_enough(tmp_path: Path) -> None:
    from broker_inproc import InProcBroker, run

    from groupcoord.coordinator.partitioning import partition_for
    from groupcoord.server.runtime.shard_snapshot import covered_offset
    from groupcoord.wire.generated.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
        OffsetCommitResponse,
    )

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            c = await b.client()

            async def commit(offset: int) -> None:
                resp = await c.call(OffsetCommitRequest(
                    group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
                        OffsetCommitRequestTopic(name="t", partitions=[
                            OffsetCommitRequestPartition(partition_index=0,
                                                         committed_offset=offset)])]),
                    8, OffsetCommitResponse)
                assert resp.topics[0].partitions[0].error_code == 0

            runtime = b.broker.groups
            for n in range(3):
                await commit(n)
            plog = b.broker.logs.get("__consumer_offsets", partition_for("g", 50))
            await runtime.snapshot_shards(5, 0.005)  # 3 records: not due
            assert covered_offset(plog) == -1
            await runtime.snapshot_shards(3, 0.005)
            assert covered_offset(plog) == plog.log_end_offset - 1 == 2
            await commit(3)
            await runtime.snapshot_shards(2, 0.005)  # one record since: not due
            assert covered_offset(plog) == 2
    run(go())


def test_a_snapshot_pass_stops_at_the_log_end_it_began_with(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    batches = [_commit(n, n % 5, base=n) for n in range(40)]
    plog = _open(tmp_path / "log")
    _append(plog, batches[:30])
    loader = snapshot_pass(plog, PARTITION)
    steps = loader.steps()
    next(steps)
    # The shard keeps appending while the pass runs in slices.
    _append(plog, batches[30:])
    with caplog.at_level(logging.INFO, logger="groupcoord.storage"):
        for _ in steps:
            pass
    assert loader.point is not None and loader.point.covered == 29
    assert not caplog.records  # no end-of-segment check tripped over the appends
    written = loader.write_snapshot()
    assert written is not None
    written.result()
    state, _, loaded = _load(plog)
    assert loaded.snapshot_point == loader.point and loaded.log_records == 10
    assert state == _plain(batches)[0]


def test_records_this_broker_cannot_read_stay_in_the_snapshot(tmp_path: Path) -> None:
    from replay_log_support import UNKNOWN_KEY

    from groupcoord.logformat.batch import decode_records
    from groupcoord.server.runtime.shard_snapshot import decode_snapshot

    bad_value = offset_commit_record("g", "t", 1, 1, -1, "", 1_000, -1, bytes(16)).key_bytes()
    batches = [_commit(1),
               build_batch([(UNKNOWN_KEY, b"\x00\x00", (), 1_000)], base_offset=1),
               build_batch([(bad_value, b"\x00\x03\xff", (), 1_000)], base_offset=2)]
    plog = _open(tmp_path / "log")
    _append(plog, batches)
    _snapshot(plog)
    _, stored = decode_snapshot(Path(snapshot_path(plog.path)).read_bytes(), PARTITION)
    keys = [r.key for view in stored for r in decode_records(view)]
    assert UNKNOWN_KEY in keys and bad_value in keys and len(keys) == 3
    state, _, loader = _load(plog)
    assert loader.snapshot_point is not None
    assert state == _plain(batches)[0]
