"""Several nodes in one process (`nodes=3`): Metadata, DescribeCluster and FindCoordinator
answer from the ownership map, a request on the wrong node gets Kafka's
NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR, moving a coordinator unloads it on one node and
loads it on the other, and stopping a node hands what it served to the survivors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker, RawClient, run, settle

from groupcoord.coordinator.clock import ManualClock
from groupcoord.logformat.batch import build_batch
from groupcoord.server.cluster import ClusterControl
from groupcoord.server.cluster_map import OFFSETS_TOPIC, ClusterMap
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from groupcoord.wire.generated.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
)
from groupcoord.wire.generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupcoord.wire.generated.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
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
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from groupcoord.wire.generated.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from groupcoord.wire.generated.read_share_group_state import (
    PartitionData,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadStateData,
)
from groupcoord.wire.kafka_uuid import uuid_text

NODES = (0, 1, 2)
TOPIC = "spread"


async def _client(b: InProcBroker, node: int) -> RawClient:
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", b.broker.node_servers[node][0].port)
    client = RawClient(reader, writer)
    b.clients.append(client)
    return client


async def _metadata(c: RawClient, topic: str = TOPIC) -> Any:
    return await c.call(MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                        allow_auto_topic_creation=True), 12, MetadataResponse)


async def _find(c: RawClient, key: str, key_type: int = 0) -> Any:
    found = await c.call(FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]), 4,
                         FindCoordinatorResponse)
    return found.coordinators[0]


def _commit(group: str, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="",
        topics=[OffsetCommitRequestTopic(name=TOPIC, partitions=[
            OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])


async def _committed(c: RawClient, group: str) -> tuple[int, int]:
    """(group error, committed offset of partition 0)."""
    got = await c.call(OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
        group_id=group, topics=[OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])])]),
        9, OffsetFetchResponse)
    group_result = got.groups[0]
    if group_result.error_code:
        return group_result.error_code, -1
    return 0, group_result.topics[0].partitions[0].committed_offset


def test_placement_spreads_partitions_and_falls_over_to_live_nodes() -> None:
    cluster = ClusterMap(list(NODES), {OFFSETS_TOPIC: 50})
    owners = {cluster.owner(OFFSETS_TOPIC, p) for p in range(50)}
    assert owners == set(NODES)
    victim = cluster.owner("t", 0)
    cluster.nodes[victim].live = False
    assert cluster.owner("t", 0) not in (victim, -1)
    cluster.pin("t", 0, victim)  # a pin on a stopped node waits for it
    assert cluster.owner("t", 0) != victim
    cluster.nodes[victim].live = True
    assert cluster.owner("t", 0) == victim
    for node in NODES:
        cluster.nodes[node].live = False
    assert cluster.owner("t", 0) == -1 and cluster.controller_id() == -1


def test_metadata_lists_every_node_and_spreads_leaders(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, nodes=3, default_partitions=6) as b:
            ports = {n: b.broker.node_servers[n][0].port for n in NODES}
            assert len(set(ports.values())) == 3
            for node in NODES:
                c = await _client(b, node)
                md = await _metadata(c)
                assert {(x.node_id, x.port) for x in md.brokers} == set(ports.items())
                assert md.controller_id == 0
                leaders = [p.leader_id for p in md.topics[0].partitions]
                assert set(leaders) == set(NODES)
                cluster = await c.call(DescribeClusterRequest(), 0, DescribeClusterResponse)
                assert {x.broker_id for x in cluster.brokers} == set(NODES)
    run(go())


def test_wrong_node_answers_not_leader_and_not_coordinator(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, nodes=3) as b:
            clients = {n: await _client(b, n) for n in NODES}
            md = await _metadata(clients[0])
            leader = md.topics[0].partitions[0].leader_id
            other = next(n for n in NODES if n != leader)
            batch = build_batch([(b"k", b"v", [], 1000)])
            produce = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
                name=TOPIC, partition_data=[PartitionProduceData(index=0, records=batch)])])
            wrong = await clients[other].call(produce, 9, ProduceResponse)
            assert wrong.responses[0].partition_responses[0].error_code \
                == E.NOT_LEADER_OR_FOLLOWER
            right = await clients[leader].call(produce, 9, ProduceResponse)
            assert right.responses[0].partition_responses[0].error_code == 0
            fetch = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                                 session_epoch=-1, topics=[FetchTopic(topic=TOPIC, partitions=[
                                     FetchPartition(partition=0, fetch_offset=0,
                                                    partition_max_bytes=1 << 20)])])
            got = await clients[other].call(fetch, 12, FetchResponse)
            assert got.responses[0].partitions[0].error_code == E.NOT_LEADER_OR_FOLLOWER
            got = await clients[leader].call(fetch, 12, FetchResponse)
            assert got.responses[0].partitions[0].records

            coordinator = await _find(clients[other], "g")
            assert coordinator.error_code == 0
            owner = coordinator.node_id
            assert coordinator.port == b.broker.node_servers[owner][0].port
            stranger = next(n for n in NODES if n != owner)
            committed = await clients[stranger].call(_commit("g", 5), 8, OffsetCommitResponse)
            assert committed.topics[0].partitions[0].error_code == E.NOT_COORDINATOR
            committed = await clients[owner].call(_commit("g", 5), 8, OffsetCommitResponse)
            assert committed.topics[0].partitions[0].error_code == 0
            assert await _committed(clients[stranger], "g") == (E.NOT_COORDINATOR, -1)
            assert await _committed(clients[owner], "g") == (0, 5)

            txn = await _find(clients[0], "tx", key_type=1)
            txn_stranger = next(n for n in NODES if n != txn.node_id)
            init = InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60_000,
                                         producer_id=-1, producer_epoch=-1)
            refused = await clients[txn_stranger].call(init, 4, InitProducerIdResponse)
            assert refused.error_code == E.NOT_COORDINATOR
            accepted = await clients[txn.node_id].call(init, 4, InitProducerIdResponse)
            assert accepted.error_code == 0
    run(go())


def test_share_state_keys_have_their_own_coordinators(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, nodes=3, default_partitions=3) as b:
            clients = {n: await _client(b, n) for n in NODES}
            md = await _metadata(clients[0])
            topic_id = bytes(md.topics[0].topic_id)
            owners = {}
            for p in range(3):
                key = f"sg:{uuid_text(topic_id)}:{p}"
                found = await clients[0].call(FindCoordinatorRequest(
                    key_type=2, coordinator_keys=[key]), 6, FindCoordinatorResponse)
                assert found.coordinators[0].error_code == 0
                owners[p] = found.coordinators[0].node_id
                for node in NODES:
                    read = await clients[node].call(ReadShareGroupStateRequest(
                        group_id="sg", topics=[ReadStateData(topic_id=topic_id, partitions=[
                            PartitionData(partition=p, leader_epoch=-1)])]), 0,
                        ReadShareGroupStateResponse)
                    code = read.results[0].partitions[0].error_code
                    assert code == (0 if node == owners[p] else E.NOT_COORDINATOR)
    run(go())


def test_moving_a_group_coordinator_unloads_and_loads_its_shard(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, nodes=3, clock=ManualClock()) as b:
            control = ClusterControl(b.broker)
            clients = {n: await _client(b, n) for n in NODES}
            await _metadata(clients[0])  # creates the topic
            owner = (await _find(clients[0], "g")).node_id
            await clients[owner].call(_commit("g", 11), 8, OffsetCommitResponse)
            target = (owner + 1) % 3
            runtime = b.broker.groups
            async with runtime.loading:  # holds the new node's replay back
                partition = control.move_group_coordinator("g", target)
                assert await _committed(clients[owner], "g") == (E.NOT_COORDINATOR, -1)
                assert await _committed(clients[target], "g") \
                    == (E.COORDINATOR_LOAD_IN_PROGRESS, -1)
                assert (await _find(clients[owner], "g")).node_id == target
            await settle(lambda: partition not in runtime.loading_partitions())
            assert await _committed(clients[target], "g") == (0, 11)
            assert await _committed(clients[owner], "g") == (E.NOT_COORDINATOR, -1)
    run(go())


def test_stopping_a_node_hands_its_work_to_the_others(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, nodes=3, default_partitions=6) as b:
            control = ClusterControl(b.broker)
            clients = {n: await _client(b, n) for n in NODES}
            await _metadata(clients[0])
            owner = (await _find(clients[0], "g")).node_id
            await clients[owner].call(_commit("g", 3), 8, OffsetCommitResponse)
            port = b.broker.node_servers[owner][0].port
            await control.stop_node(owner)
            assert await clients[owner].closed()
            survivor = next(n for n in NODES if n != owner)
            md = await _metadata(clients[survivor])
            assert {x.node_id for x in md.brokers} == set(NODES) - {owner}
            assert owner not in {p.leader_id for p in md.topics[0].partitions}
            moved = await _find(clients[survivor], "g")
            assert moved.node_id not in (owner, -1)
            runtime = b.broker.groups
            await settle(lambda: not runtime.loading_partitions())
            assert await _committed(clients[moved.node_id], "g") == (0, 3)

            await control.start_node(owner)
            assert b.broker.node_servers[owner][0].port == port
            back = await _client(b, owner)
            assert (await _find(back, "g")).node_id == owner
            await settle(lambda: not runtime.loading_partitions())
            assert await _committed(back, "g") == (0, 3)
            md = await _metadata(back)
            assert {x.node_id for x in md.brokers} == set(NODES)
    run(go())
