"""Damage in `__consumer_offsets` after a clean shutdown costs only the damaged commit.

60 groups that all live on one offsets partition commit once each, half before a segment
roll and half after it; then 64 bytes of garbage are written into the head, middle or tail
batch of the closed or the active segment, the shard's snapshot is removed and the broker
restarts. The coordinator must
answer every other group's committed offset (before this repair, 30 of 60 groups lost theirs),
report the damage, and set the bytes aside.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest
from helpers.confluent_io import create_topic
from helpers.threaded_broker import ThreadedBroker
from server.broker_inproc import RawClient, settle

from groupcoord.coordinator.partitioning import partition_for
from groupcoord.logformat.batch import validate
from groupcoord.server.runtime.coordinator_runtime import CoordinatorRuntime
from groupcoord.server.runtime.shard_snapshot import SNAPSHOT_FILE
from groupcoord.storage.fileio import OS_FILE_IO
from groupcoord.storage.segment import iter_file_batches
from groupcoord.wire.generated import offset_commit, offset_fetch

TOPIC, PARTITION = "events", 7
GROUPS = [g for g in (f"group-{i}" for i in range(5_000)) if partition_for(g, 50) == PARTITION][:60]


async def commit_all(port: int, groups: list[str]) -> None:
    """Each group commits offset 1000 + its index in GROUPS."""
    client = RawClient(*await asyncio.open_connection("127.0.0.1", port))
    try:
        for group in groups:
            i = GROUPS.index(group)
            request = offset_commit.OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=-1, member_id="",
                group_instance_id=None, retention_time_ms=-1, topics=[
                    offset_commit.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                        offset_commit.OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=1000 + i,
                            committed_leader_epoch=-1, committed_metadata="")])])
            resp = await client.call(request, 8, offset_commit.OffsetCommitResponse)
            assert resp.topics[0].partitions[0].error_code == 0
    finally:
        await client.close()


async def fetch_all(port: int, groups: list[str], runtime: CoordinatorRuntime
                    ) -> dict[str, int]:
    """The committed offsets, once the shard has replayed its log (run on the broker's loop:
    each turn gives the replay a slice, where a client would retry LOAD_IN_PROGRESS)."""
    await settle(lambda: not runtime.loading_partitions(), turns=1_000_000)
    client = RawClient(*await asyncio.open_connection("127.0.0.1", port))
    found = {}
    try:
        for group in groups:
            request = offset_fetch.OffsetFetchRequest(group_id=group, topics=[
                offset_fetch.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])],
                require_stable=False)
            resp = await client.call(request, 7, offset_fetch.OffsetFetchResponse)
            assert resp.error_code == 0
            found[group] = resp.topics[0].partitions[0].committed_offset
    finally:
        await client.close()
    return found


def damage_batch(path: str, which: str) -> int:
    """Garbage over the head/middle/tail batch of a segment; the position of that batch."""
    fd = os.open(path, os.O_RDWR)
    try:
        positions = [pos for pos, view in iter_file_batches(OS_FILE_IO, fd, 0, os.fstat(fd).st_size)
                     if validate(view)]
        pos = {"head": positions[0], "middle": positions[len(positions) // 2],
               "tail": positions[-1]}[which]
        os.pwrite(fd, os.urandom(64), pos + 20)
    finally:
        os.close(fd)
    return pos


@pytest.mark.parametrize("segment", ["closed", "active"])
@pytest.mark.parametrize("which", ["head", "middle", "tail"])
def test_damaged_offsets_segment_loses_only_the_damaged_commit(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, segment: str, which: str) -> None:
    assert len(GROUPS) == 60
    with ThreadedBroker(tmp_path / "data", fsync="never") as node:
        create_topic(node.bootstrap, TOPIC, 1)
        node.call(commit_all(node.port, GROUPS[:30]))
        assert node.broker is not None
        plog = node.broker.logs.get("__consumer_offsets", PARTITION)
        node.run(plog.roll)
        node.call(commit_all(node.port, GROUPS[30:]))
        target = plog.segments[0 if segment == "closed" else -1].log_path
        before = node.call(fetch_all(node.port, GROUPS, node.broker.groups))
        assert before == {g: 1000 + i for i, g in enumerate(GROUPS)}
        node.stop()  # clean: checkpoints say every segment is flushed

        damage_batch(target, which)
        # Without the shard's snapshot the load reads every batch; with it, the state up to
        # the snapshot comes from the snapshot (tests/server/test_shard_snapshot.py).
        os.unlink(os.path.join(os.path.dirname(target), SNAPSHOT_FILE))
        with caplog.at_level(logging.WARNING, logger="groupcoord.storage"):
            node.start()
        assert node.broker is not None
        after = node.call(fetch_all(node.port, GROUPS, node.broker.groups))
    lost = [g for g in GROUPS if after[g] != before[g]]
    assert len(lost) == 1, f"{len(lost)} groups lost their committed offsets: {lost}"
    assert after[lost[0]] == -1
    torn_tail = segment == "active" and which == "tail"
    level = logging.WARNING if torn_tail else logging.ERROR
    assert any(r.levelno == level and target in r.getMessage() for r in caplog.records)
    if not torn_tail:
        assert any(name.startswith(os.path.basename(target) + ".damaged-")
                   for name in os.listdir(os.path.dirname(target)))
