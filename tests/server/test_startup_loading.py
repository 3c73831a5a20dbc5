"""Start-up with a large `__consumer_offsets`: the listener answers at once and the data
topic is served while the shard replays; the loading shard's group requests are answered
COORDINATOR_LOAD_IN_PROGRESS, and the committed offsets once it has loaded.

200,000 commits to 100,000 partitions keep the test quick and the load long enough to be
seen (superseded commits cost the loader little, each partition's last one a full decode);
`bench/bench_restart.py` measures 1,000,000 and 10,000,000."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from broker_inproc import InProcBroker, RawClient, run, settle

from groupcoord.coordinator.partitioning import partition_for
from groupcoord.coordinator.records import offset_commit_record
from groupcoord.logformat.batch import build_batch
from groupcoord.server.runtime.shard_log import encode_records_batch
from groupcoord.server.runtime.shard_snapshot import SNAPSHOT_FILE
from groupcoord.storage.manager import LogManager
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
)
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from groupcoord.wire.generated.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)

COMMITS = 200_000
PARTITIONS = 100_000
PER_BATCH = 100
GROUP = "busy-group"
TOPIC = "orders"


def write_commits(data: Path) -> int:
    """COMMITS offset commits of GROUP over PARTITIONS partitions of TOPIC (partition 0's
    last at offset COMMITS - PARTITIONS) straight into its `__consumer_offsets` partition,
    and a one-partition data topic; the partition."""
    partition = partition_for(GROUP, 50)
    mgr = LogManager(str(data), topic_configs={"__consumer_offsets": {
        "cleanup.policy": "compact", "segment.bytes": 104857600}})
    plog = mgr.get_or_create("__consumer_offsets", partition)
    for base in range(0, COMMITS, PER_BATCH):
        plog.append(encode_records_batch(
            [offset_commit_record(GROUP, TOPIC, (base + j) % PARTITIONS, base + j, -1, "",
                                  1_000, -1, bytes(16))
             for j in range(PER_BATCH)], 1_000))
    mgr.get_or_create(TOPIC, 0, os.urandom(16)).append(build_batch([(b"k", b"v", [], 1_000)]))
    mgr.close()
    return partition


async def _offset_fetch(c: RawClient) -> tuple[int, int]:
    resp = await c.call(OffsetFetchRequest(group_id=GROUP, topics=[
        OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])]), 7, OffsetFetchResponse)
    if resp.error_code:
        return resp.error_code, -1
    return 0, resp.topics[0].partitions[0].committed_offset


def test_data_apis_are_served_while_a_large_shard_loads(tmp_path: Path) -> None:
    partition = write_commits(tmp_path)

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            runtime = b.broker.groups
            assert runtime.loading_partitions() == [partition]
            c = await b.client()
            versions = await c.call(ApiVersionsRequest(client_software_name="test",
                                                       client_software_version="1"), 3,
                                    ApiVersionsResponse)
            assert versions.error_code == 0
            md = await c.call(MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)]), 12,
                              MetadataResponse)
            assert md.topics[0].error_code == 0
            batch = build_batch([(b"k2", b"v2", [], 2_000)])
            produced = await c.call(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
                TopicProduceData(name=TOPIC, partition_data=[
                    PartitionProduceData(index=0, records=batch)])]), 9, ProduceResponse)
            assert produced.responses[0].partition_responses[0].base_offset == 1
            fetched = await c.call(FetchRequest(
                replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_epoch=-1,
                topics=[FetchTopic(topic=TOPIC, partitions=[FetchPartition(
                    partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 12,
                FetchResponse)
            assert fetched.responses[0].partitions[0].high_watermark == 2
            assert await _offset_fetch(c) == (E.COORDINATOR_LOAD_IN_PROGRESS, -1)
            # Every answer above came while the shard was still replaying.
            assert runtime.loading_partitions() == [partition]
            # Each loop turn gives the replay one slice; no clock is involved.
            await settle(lambda: not runtime.loading_partitions(), turns=1_000_000)
            assert await _offset_fetch(c) == (0, COMMITS - PARTITIONS)
    run(go())


def test_a_restart_loads_from_the_snapshot_and_replays_only_the_tail(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    partition = write_commits(tmp_path)

    async def loaded_offset(b: InProcBroker) -> tuple[int, int]:
        runtime = b.broker.groups
        await settle(lambda: not runtime.loading_partitions(), turns=1_000_000)
        return await _offset_fetch(await b.client())

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            assert await loaded_offset(b) == (0, COMMITS - PARTITIONS)
            c = await b.client()
            committed = await c.call(OffsetCommitRequest(
                group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=[
                    OffsetCommitRequestTopic(name=TOPIC, partitions=[
                        OffsetCommitRequestPartition(partition_index=0,
                                                     committed_offset=424242)])]),
                8, OffsetCommitResponse)
            assert committed.topics[0].partitions[0].error_code == 0
        # The load wrote a snapshot up to the log end it found, and the clean shutdown one
        # that also holds the commit made since.
        snapshot = tmp_path / f"__consumer_offsets-{partition}" / SNAPSHOT_FILE
        assert snapshot.exists()
        with caplog.at_level(logging.INFO, logger="groupcoord.coordinator"):
            async with InProcBroker(tmp_path) as b:
                assert await loaded_offset(b) == (0, 424242)
        assert any(f"shard {partition} loads from its snapshot up to offset {COMMITS}"
                   in r.getMessage() for r in caplog.records)
    run(go())
