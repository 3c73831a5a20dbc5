"""Asking one node of a cluster on PostgreSQL who leads what (over the wire, so the answer is
that node's): the partition leaders, a group's or transactional id's coordinator, an offset
fetch's and a produce's error, the transactions its coordinator shards hold; the brokers its
Metadata lists, through confluent-kafka. Starting a cluster of nodes and waiting until it is
settled: every node listing every other, the coordinators of the internal topics or a topic's
partitions spread over them, every node telling the same."""

from __future__ import annotations

import time
from typing import cast

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from groupcoord.logformat.batch import build_batch
from groupcoord.wire.generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupcoord.wire.generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponsePartition,
)
from groupcoord.wire.generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from groupcoord.wire.generated.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from groupcoord.wire.messages import WireStruct
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.confluent_io import high_watermarks
from helpers.polling import wait_for
from helpers.wire_client import DEFAULT_TIMEOUT_S, WireConnection

GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2
THREE_NODES = (1, 2, 3)
WAIT_S = 60.0
# Keys enough that their coordinators fall on every node (three internal partitions or more).
SPREAD_PROBES = 12


def node_args(storage_url: str, node_id: int, offsets_partitions: int = 3) -> list[str]:
    return ["--storage", storage_url, "--node-id", str(node_id), "--offsets-partitions",
            str(offsets_partitions), "--group-initial-rebalance-delay-ms", "0"]


# Leases of 3 s renewed every 0.5 s: takeovers within a test's patience.
SHORT_LEASE = ["--broker-session-timeout-ms", "3000", "--broker-heartbeat-interval-ms", "500"]


def ask(node: BrokerProcess, request: WireStruct, version: int,
        timeout: float = DEFAULT_TIMEOUT_S) -> WireStruct:
    """One request over a connection of its own to `node`: the answer that node gives."""
    conn = WireConnection("127.0.0.1", node.port, timeout=timeout)
    try:
        return conn.call(request, version)
    finally:
        conn.close()


def partition_leaders(node: BrokerProcess, topic: str) -> dict[int, int]:
    """partition -> leader node id (-1: none) as `node` itself answers Metadata (v9)."""
    return {p.partition_index: p.leader_id for p in _partitions(node, topic)}


def leader_epochs(node: BrokerProcess, topic: str) -> dict[int, int]:
    """partition -> leader epoch (its lease's) as `node` itself answers Metadata (v9)."""
    return {p.partition_index: p.leader_epoch for p in _partitions(node, topic)}


def _partitions(node: BrokerProcess, topic: str) -> list[MetadataResponsePartition]:
    response = ask(node, MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                         allow_auto_topic_creation=False), 9)
    assert isinstance(response, MetadataResponse)
    found = response.topics[0]
    return [] if found.error_code != 0 else list(found.partitions)


def broker_ids(bootstrap: str) -> set[int]:
    """The node ids Metadata lists as brokers."""
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=15).brokers)


def coordinator(node: BrokerProcess, key_type: int, key: str,
                timeout: float = DEFAULT_TIMEOUT_S) -> tuple[int, int]:
    """(error code, node id) of FindCoordinator (v6) for the key, asked of `node`."""
    response = ask(node, FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]), 6,
                   timeout)
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


# How long a node may take to listen: it opens every partition of the catalog (the internal
# topics' included, a PostgreSQL round trip each) first, nodes start several at a time, on a
# machine the test shares.
NODE_START_TIMEOUT_S = 60.0


def start_node(factory: BrokerFactory, storage_url: str, node_id: int, extra_args: list[str],
               offsets_partitions: int = 3) -> BrokerProcess:
    """A `serve --storage` node, once it listens."""
    node = factory.create(node_args(storage_url, node_id, offsets_partitions) + extra_args,
                          start=False)
    node.start(timeout=NODE_START_TIMEOUT_S)
    return node


def start_cluster(factory: BrokerFactory, storage_url: str, extra_args: list[str],
                  node_ids: tuple[int, ...] = THREE_NODES,
                  offsets_partitions: int = 3) -> dict[int, BrokerProcess]:
    """One node per id on the database, once every node lists them all as live."""
    nodes = {n: start_node(factory, storage_url, n, extra_args, offsets_partitions)
             for n in node_ids}
    wait_for(lambda: all(broker_ids(node.bootstrap) == set(node_ids) for node in nodes.values()),
             f"every node to list the live nodes {node_ids}", WAIT_S, interval=0.2)
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
             WAIT_S, lambda: f"last disagreement {seen}", interval=0.2)


def produce_error(node: BrokerProcess, topic: str, partition: int) -> int:
    """Produce one batch over the wire (no client retries); the partition's error code."""
    batch = build_batch([(b"k", b"from-another-node", [], int(time.time() * 1000))])
    request = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)])])
    response = ask(node, request, 9)
    assert isinstance(response, ProduceResponse)
    return int(response.responses[0].partition_responses[0].error_code)


def offset_fetch_error(node: BrokerProcess, group: str) -> int:
    """The group's OffsetFetch error code asked of `node` (v7: one group, all partitions):
    NONE where its coordinator has it loaded, NOT_COORDINATOR elsewhere."""
    response = ask(node, OffsetFetchRequest(group_id=group, topics=None), 7)
    assert isinstance(response, OffsetFetchResponse)
    return int(response.error_code)


def listed_transactions(node: BrokerProcess) -> tuple[int, dict[str, str]]:
    """ListTransactions asked of `node`: (error code, transactional id -> state) over the
    coordinator shards it has loaded."""
    response = ask(node, ListTransactionsRequest(), 1)
    assert isinstance(response, ListTransactionsResponse)
    return int(response.error_code), {t.transactional_id: t.transaction_state
                                      for t in response.transaction_states}


def spread_leaders(nodes: dict[int, BrokerProcess], topic: str, partitions: int
                   ) -> dict[int, int]:
    """Once every node tells the same leaders for every partition of `topic`, spread over all
    the nodes: partition -> leader."""
    seen: list[dict[int, int]] = []

    def agreed() -> bool:
        views = [partition_leaders(node, topic) for node in nodes.values()]
        seen[:] = views
        first = views[0]
        return (len(first) == partitions and all(view == first for view in views)
                and set(first.values()) == set(nodes))
    wait_for(agreed, "the partitions spread over the nodes, every node agreeing", WAIT_S,
             lambda: f"leaders per node {seen}", interval=0.2)
    return seen[0]


def read_to_ends(bootstrap: str, topic: str, partitions: int, isolation: str
                 ) -> dict[tuple[int, int], bytes]:
    """Every record up to the high watermarks, (partition, offset) -> value, as a consumer
    of `isolation` gets them (transaction markers take offsets but are not delivered;
    read_committed reaches the ends only once every transaction there is complete)."""
    ends = high_watermarks(bootstrap, topic, partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    records: dict[tuple[int, int], bytes] = {}
    deadline = time.monotonic() + WAIT_S
    try:
        while True:
            positions = consumer.position([TopicPartition(topic, p) for p in range(partitions)])
            if all(tp.offset >= ends[tp.partition] for tp in positions):
                return records
            assert time.monotonic() < deadline, f"reading stalled at {positions}, ends {ends}"
            for msg in consumer.consume(num_messages=500, timeout=0.5):
                assert msg.error() is None, msg.error()
                records[(cast(int, msg.partition()), cast(int, msg.offset()))] = cast(
                    bytes, msg.value())
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int
                      ) -> dict[int, int]:
    """The group's committed offsets of the topic's partitions (those it has)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)],
                                   timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found if tp.offset >= 0}
