"""Asking one node of a cluster on PostgreSQL who leads what (over the wire, so the answer is
that node's): the partition leaders, a group's coordinator, an offset fetch's and a produce's
error; and the brokers its Metadata lists, through confluent-kafka."""

from __future__ import annotations

import time

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
from helpers.broker import BrokerProcess
from helpers.wire_client import DEFAULT_TIMEOUT_S, WireConnection

GROUP_KEY = 0
TRANSACTION_KEY = 1


def node_args(storage_url: str, node_id: int) -> list[str]:
    return ["--storage", storage_url, "--node-id", str(node_id), "--offsets-partitions", "3",
            "--group-initial-rebalance-delay-ms", "0"]


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


def group_coordinator(node: BrokerProcess, group: str) -> tuple[int, int]:
    """(error code, node id) of FindCoordinator for the group, asked of `node`."""
    return coordinator(node, group, GROUP_KEY)


def coordinator(node: BrokerProcess, key: str, key_type: int,
                timeout: float = DEFAULT_TIMEOUT_S) -> tuple[int, int]:
    """(error code, node id) of FindCoordinator for a key of `key_type` (0 a group, 1 a
    transactional id), asked of `node`."""
    conn = WireConnection("127.0.0.1", node.port, timeout=timeout)
    try:
        response = conn.call(FindCoordinatorRequest(key_type=key_type,
                                                    coordinator_keys=[key]), 4)
    finally:
        conn.close()
    assert isinstance(response, FindCoordinatorResponse)
    found = response.coordinators[0]
    return int(found.error_code), int(found.node_id)


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
