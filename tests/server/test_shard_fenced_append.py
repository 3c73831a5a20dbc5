"""A shard whose append is refused because another node now leads its partition
(cluster mode: the lease taken, this node's write fenced) resigns as Kafka's coordinator does
when its partition's leadership moves: the failed write's caller and every later request get
NOT_COORDINATOR (so clients look the coordinator up again), and the shard is not reloaded to
serve from a log this node no longer writes. Taking the partition again loads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker, run, settle

from groupcoord.server.runtime.shard_task import ShardState
from groupcoord.storage.config import FencedLeaderEpoch
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated import offset_commit, offset_fetch

GROUP = "fenced-append-group"


async def _commit(client: Any, offset: int) -> int:
    req = offset_commit.OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
        topics=[offset_commit.OffsetCommitRequestTopic(
            name="t", partitions=[offset_commit.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=offset)])])
    resp = await client.call(req, 8, offset_commit.OffsetCommitResponse)
    return int(resp.topics[0].partitions[0].error_code)


async def _fetch_error(client: Any) -> int:
    req = offset_fetch.OffsetFetchRequest(groups=[offset_fetch.OffsetFetchRequestGroup(
        group_id=GROUP, topics=None)])
    resp = await client.call(req, 8, offset_fetch.OffsetFetchResponse)
    return int(resp.groups[0].error_code)


def test_a_fenced_append_unloads_the_shard_until_it_is_taken_again(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = await b.client()
            groups = b.broker.groups
            assert await _commit(client, 1) == 0
            partition = groups.partition_for(GROUP)
            task = groups.shards[partition]
            real = groups.append

            def fenced(*_args: Any, **_kwargs: Any) -> Any:
                raise FencedLeaderEpoch(3, 4)
            groups.append = fenced
            assert await _commit(client, 2) == E.NOT_COORDINATOR
            await settle(lambda: task.state is ShardState.UNLOADED, turns=100_000)
            assert task.reloads == 0 and partition in groups.unloaded
            groups.append = real
            # Unloaded, not reloaded: reads and writes alike are NOT_COORDINATOR.
            assert await _fetch_error(client) == E.NOT_COORDINATOR
            assert await _commit(client, 3) == E.NOT_COORDINATOR
            # The partition taken again (a lease pass's `load`): replayed from the log,
            # which holds the commit made before the fenced one.
            groups.load(partition)
            await settle(lambda: groups.shards[partition].state is ShardState.ACTIVE,
                         turns=100_000)
            assert await _commit(client, 4) == 0
    run(go())
