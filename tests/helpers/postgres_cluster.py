"""Asking one node of a cluster on PostgreSQL who leads what (over the wire, so the answer is
that node's): the partition leaders, a group's coordinator, an offset fetch's and a produce's
error; and the brokers its Metadata lists, through confluent-kafka. Starting a cluster of
nodes and waiting until it is settled: every node listing every other, the coordinators of the
internal topics spread over them, every node telling the same."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient

from groupcoord.logformat.batch import build_batch
from groupcoord.wire.generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from groupcoord.wire.generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from groupcoord.wire.generated.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.polling import wait_for
from helpers.wire_client import WireConnection

GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2
THREE_NODES = (1, 2, 3)
SETTLE_TIMEOUT_S = 60.0
# Keys enough that their coordinators fall on every node (three internal partitions or more).
SPREAD_PROBES = 12


def node_args(storage_url: str, node_id: int, offsets_partitions: int = 3) -> list[str]:
    return ["--storage", storage_url, "--node-id", str(node_id), "--offsets-partitions",
            str(offsets_partitions), "--group-initial-rebalance-delay-ms", "0"]


# Leases of 3 s renewed every 0.5 s: takeovers within a test's patience.
SHORT_LEASE = ["--broker-session-timeout-ms", "3000", "--broker-heartbeat-interval-ms", "500"]


def partition_leaders(node: BrokerProcess, topic: str) -> dict[int, int]:
    """partition -> leader node id (-1: none) as `node` itself answers Metadata (v9)."""
    conn = WireConnection("127.0.0.1", node.port)
    try:
        response = conn.call(MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                             allow_auto_topic_creation=False), 9)
    finally:
        conn.close()
    assert isinstance(response, MetadataResponse)
    found = response.topics[0]
    if found.error_code != 0:
        return {}
    return {p.partition_index: p.leader_id for p in found.partitions}


def broker_ids(bootstrap: str) -> set[int]:
    """The node ids Metadata lists as brokers."""
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=15).brokers)


def coordinator(node: BrokerProcess, key_type: int, key: str) -> tuple[int, int]:
    """(error code, node id) of FindCoordinator (v6) for the key, asked of `node`."""
    conn = WireConnection("127.0.0.1", node.port)
    try:
        response = conn.call(FindCoordinatorRequest(key_type=key_type,
                                                    coordinator_keys=[key]), 6)
    finally:
        conn.close()
    assert isinstance(response, FindCoordinatorResponse)
    found = response.coordinators[0]
    return int(found.error_code), int(found.node_id)


def group_coordinator(node: BrokerProcess, group: str) -> tuple[int, int]:
    """(error code, node id) of FindCoordinator for the group, asked of `node`."""
    return coordinator(node, GROUP_KEY, group)


def cluster_bootstrap(request: pytest.FixtureRequest) -> BrokerProcess:
    """The bootstrap node of the session's three-node cluster (the interop suite's
    `three_node_cluster` fixture), for a broker fixture parametrised with THREE_NODE_CLUSTER."""
    node = request.getfixturevalue("three_node_cluster")
    assert isinstance(node, BrokerProcess)
    return node


def start_cluster(factory: BrokerFactory, storage_url: str, extra_args: list[str],
                  node_ids: tuple[int, ...] = THREE_NODES,
                  offsets_partitions: int = 3) -> dict[int, BrokerProcess]:
    """One node per id on the database, once every node lists them all as live."""
    nodes = {n: factory.create(node_args(storage_url, n, offsets_partitions) + extra_args,
                               start=False) for n in node_ids}
    for node in nodes.values():
        # A node opens every partition of the catalog (the internal topics' included, a
        # PostgreSQL round trip each) before it listens.
        node.start(timeout=SETTLE_TIMEOUT_S)
    wait_for(lambda: all(broker_ids(node.bootstrap) == set(node_ids) for node in nodes.values()),
             f"every node to list the live nodes {node_ids}", SETTLE_TIMEOUT_S, interval=0.2)
    return nodes


def wait_for_spread_coordinators(nodes: dict[int, BrokerProcess]) -> None:
    """Until group, transaction and share-state keys find coordinators on every node, each
    node naming the same: the internal topics exist and their leases are settled, so a
    client's lookups hold for the rest of a run."""
    share_keys = [f"probe:AAAAAAAAAAAAAAAAAAAAAA:{i}" for i in range(SPREAD_PROBES)]
    probes = {GROUP_KEY: [f"probe-{i}" for i in range(SPREAD_PROBES)],
              TRANSACTION_KEY: [f"probe-{i}" for i in range(SPREAD_PROBES)],
              SHARE_KEY: share_keys}
    seen: list[object] = []

    def settled() -> bool:
        for key_type, keys in probes.items():
            chosen = set()
            for key in keys:
                answers = {coordinator(node, key_type, key) for node in nodes.values()}
                if len(answers) != 1:
                    seen[:] = [key_type, key, answers]
                    return False
                code, node_id = answers.pop()
                if code != 0:
                    seen[:] = [key_type, key, code]
                    return False
                chosen.add(node_id)
            if chosen != set(nodes):
                seen[:] = [key_type, chosen]
                return False
        return True

    wait_for(settled, "the coordinators spread over the nodes, every node agreeing",
             SETTLE_TIMEOUT_S, lambda: f"last disagreement {seen}", interval=0.2)


def produce_error(node: BrokerProcess, topic: str, partition: int) -> int:
    """Produce one batch over the wire (no client retries); the partition's error code."""
    batch = build_batch([(b"k", b"from-another-node", [], int(time.time() * 1000))])
    request = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)])])
    conn = WireConnection("127.0.0.1", node.port)
    try:
        response = conn.call(request, 9)
    finally:
        conn.close()
    assert isinstance(response, ProduceResponse)
    return int(response.responses[0].partition_responses[0].error_code)


def offset_fetch_error(node: BrokerProcess, group: str) -> int:
    """The group's OffsetFetch error code asked of `node` (v7: one group, all partitions):
    NONE where its coordinator has it loaded, NOT_COORDINATOR elsewhere."""
    conn = WireConnection("127.0.0.1", node.port)
    try:
        response = conn.call(OffsetFetchRequest(group_id=group, topics=None), 7)
    finally:
        conn.close()
    assert isinstance(response, OffsetFetchResponse)
    return int(response.error_code)
