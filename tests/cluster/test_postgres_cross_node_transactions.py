"""Transactions across the nodes of a cluster on PostgreSQL (`serve --storage URL`
subprocesses on a real server): the transaction coordinator writes the markers of the
partitions other nodes lead with WriteTxnMarkers sent to them, its offsets' included.

A confluent-kafka transactional producer bootstrapped from one node writes to six partitions
spread over three nodes and sends a group's offsets (the group coordinated by a node other
than the transaction's): a committed transaction is seen whole by a read_committed consumer
and its offsets are committed, an aborted one is seen by none and its offsets never land.
A transaction coordinator partition that moves to a node joining the cluster is unloaded by
the node that led it and loaded by the new one, which finishes the open transaction."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.confluent_io import create_topic
from helpers.polling import wait_for
from helpers.postgres_cluster import (
    SHORT_LEASE,
    TRANSACTION_KEY,
    committed_offsets,
    coordinator,
    group_coordinator,
    leader_epochs,
    listed_transactions,
    read_to_ends,
    spread_leaders,
    start_cluster,
    start_node,
)
from helpers.wire_client import WireConnection

from groupcoord.coordinator.partitioning import partition_for
from groupcoord.logformat.internal_topics import TXN_TOPIC
from groupcoord.server.cluster_map import preferred_node
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    TopicRequest,
)

pytestmark = pytest.mark.timeout(300)

TOPIC = "orders"
PARTITIONS = 6
WAIT_S = 60.0
TXN_PARTITIONS = 50  # Kafka's transaction.state.log.num.partitions, the nodes' default


def _producer(bootstrap: str, tid: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(60)
    return producer


def _read(bootstrap: str, isolation: str) -> dict[int, list[bytes]]:
    """Every record up to the high watermarks, per partition in offset order."""
    records: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for (partition, _offset), value in sorted(
            read_to_ends(bootstrap, TOPIC, PARTITIONS, isolation).items()):
        records[partition].append(value)
    return records


def _committed(bootstrap: str, group: str) -> dict[int, int]:
    return committed_offsets(bootstrap, group, TOPIC, PARTITIONS)


def _transaction(producer: Producer, bootstrap: str, group: str, label: str,
                 offsets: dict[int, int], commit: bool) -> list[bytes]:
    """Ten records on each partition and the group's offsets in one transaction, committed
    or aborted; the values written."""
    values = []
    producer.begin_transaction()
    for partition in range(PARTITIONS):
        for i in range(10):
            value = f"{label}-{partition}-{i}".encode()
            producer.produce(TOPIC, value=value, partition=partition)
            values.append(value)
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        producer.send_offsets_to_transaction(
            [TopicPartition(TOPIC, p, o) for p, o in offsets.items()],
            metadata.consumer_group_metadata(), 60)
    finally:
        metadata.close()
    if commit:
        producer.commit_transaction(60)
    else:
        producer.abort_transaction(60)
    return values


def _coordinator_epochs(node: BrokerProcess, partition: int) -> set[int]:
    """The coordinator epochs of the producers the partition's leader `node` knows."""
    conn = WireConnection("127.0.0.1", node.port)
    try:
        response = conn.call(DescribeProducersRequest(topics=[
            TopicRequest(name=TOPIC, partition_indexes=[partition])]), 0)
    finally:
        conn.close()
    assert isinstance(response, DescribeProducersResponse)
    found = response.topics[0].partitions[0]
    assert found.error_code == ErrorCode.NONE
    return {p.coordinator_epoch for p in found.active_producers}


def _group_not_coordinated_by(node: BrokerProcess, node_id: int) -> str:
    """A group whose coordinator is not `node_id`."""
    for i in range(100):
        group = f"txn-group-{i}"
        code, found = group_coordinator(node, group)
        if code == ErrorCode.NONE and found != node_id:
            return group
    raise AssertionError(f"every group is coordinated by node {node_id}")


def test_a_transaction_spanning_the_nodes_is_all_or_nothing(
        broker_factory: BrokerFactory, storage_url: str) -> None:
    nodes = start_cluster(broker_factory, storage_url, SHORT_LEASE)
    create_topic(nodes[1].bootstrap, TOPIC, PARTITIONS)
    leaders = spread_leaders(nodes, TOPIC, PARTITIONS)
    tid = "spanning"
    code, txn_node = coordinator(nodes[1], TRANSACTION_KEY, tid)
    assert code == ErrorCode.NONE
    # The transaction's partitions and its offsets are led by other nodes as well.
    assert {leader for leader in leaders.values() if leader != txn_node}
    group = _group_not_coordinated_by(nodes[1], txn_node)
    bootstrap = nodes[1].bootstrap

    producer = _producer(bootstrap, tid)
    committed = _transaction(producer, bootstrap, group, "committed",
                             {p: 100 + p for p in range(PARTITIONS)}, commit=True)
    aborted = _transaction(producer, bootstrap, group, "aborted",
                           {p: 200 + p for p in range(PARTITIONS)}, commit=False)
    producer.flush(30)

    seen = _read(bootstrap, "read_committed")
    for partition in range(PARTITIONS):
        assert seen[partition] == [f"committed-{partition}-{i}".encode() for i in range(10)]
    everything = _read(bootstrap, "read_uncommitted")
    assert sorted(v for values in everything.values() for v in values) == sorted(
        committed + aborted)
    assert _committed(bootstrap, group) == {p: 100 + p for p in range(PARTITIONS)}
    wait_for(lambda: listed_transactions(nodes[txn_node])[1].get(tid) == "CompleteAbort",
             "the coordinator to complete the abort", WAIT_S, interval=0.2)
    # The markers carry the coordinator's epoch: its `__transaction_state` lease's, so a
    # deposed coordinator's late markers would be refused.
    txn_partition = partition_for(tid, TXN_PARTITIONS)
    lease_epoch = leader_epochs(nodes[txn_node], TXN_TOPIC)[txn_partition]
    assert lease_epoch >= 1
    for partition, leader in leaders.items():
        assert _coordinator_epochs(nodes[leader], partition) == {lease_epoch}


def _tid_moving_to(node_id: int, before: list[int], after: list[int]) -> str:
    """A transactional id whose `__transaction_state` partition goes to `node_id` once it
    joins the nodes `before` (`after` with it)."""
    for i in range(1000):
        tid = f"moving-{i}"
        partition = partition_for(tid, TXN_PARTITIONS)
        if (preferred_node(TXN_TOPIC, partition, after) == node_id
                and preferred_node(TXN_TOPIC, partition, before) != node_id):
            return tid
    raise AssertionError("no transactional id moves")


def test_a_moved_transaction_coordinator_is_unloaded_and_loaded(
        broker_factory: BrokerFactory, storage_url: str) -> None:
    nodes = start_cluster(broker_factory, storage_url, SHORT_LEASE, (1, 2))
    create_topic(nodes[1].bootstrap, TOPIC, PARTITIONS)
    spread_leaders(nodes, TOPIC, PARTITIONS)
    tid = _tid_moving_to(3, [1, 2], [1, 2, 3])
    code, old = coordinator(nodes[1], TRANSACTION_KEY, tid)
    assert code == ErrorCode.NONE and old in nodes
    bootstrap = nodes[1].bootstrap

    producer = _producer(bootstrap, tid)
    producer.begin_transaction()
    for partition in range(PARTITIONS):
        producer.produce(TOPIC, value=f"open-{partition}".encode(), partition=partition)
    assert producer.flush(30) == 0
    wait_for(lambda: listed_transactions(nodes[old])[1].get(tid) == "Ongoing",
             "the open transaction on its coordinator", WAIT_S, interval=0.2)

    nodes[3] = start_node(broker_factory, storage_url, 3, SHORT_LEASE)

    def moved() -> bool:
        """The new node loaded the shard (the open transaction is in it) and the old one
        unloaded it (no longer listed there)."""
        code, found = listed_transactions(nodes[3])
        return (code == ErrorCode.NONE and found.get(tid) == "Ongoing"
                and tid not in listed_transactions(nodes[old])[1])
    wait_for(moved, "the coordinator to move to the new node", WAIT_S,
             lambda: f"old {listed_transactions(nodes[old])}, new {listed_transactions(nodes[3])}",
             interval=0.2)
    # The old node names the new coordinator once its next pass read the lease.
    wait_for(lambda: coordinator(nodes[old], TRANSACTION_KEY, tid) == (ErrorCode.NONE, 3),
             "the old node to name the new coordinator", WAIT_S, interval=0.2)

    # The client finds the new coordinator and commits there; its markers reach every
    # partition, wherever the handover put their leaders.
    producer.commit_transaction(60)
    # Read once the handover to the joining node is over: a partition between two leaders
    # is unknown to a client's watermark lookup.
    spread_leaders(nodes, TOPIC, PARTITIONS)
    seen = _read(bootstrap, "read_committed")
    assert sorted(v for values in seen.values() for v in values) == sorted(
        f"open-{p}".encode() for p in range(PARTITIONS))
