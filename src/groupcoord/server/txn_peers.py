"""What the transaction coordinator and the partition leaders of a cluster on PostgreSQL ask
of each other across nodes, over Kafka's inter-broker RPCs.

**Markers** (Kafka's `TransactionMarkerChannelManager`, which sends WriteTxnMarkers to each
partition's leader):

- a partition this node leads (per the lease map), its marker is written here, as on one
  node (`TransactionRuntime.write_marker`), one partition after another;
- a partition another live node leads goes to that node in one WriteTxnMarkers per node,
  the nodes asked at once; a node that cannot be reached or does not answer in time counts
  as NOT_LEADER_OR_FOLLOWER for each of its partitions (retried, as Kafka re-queues a
  marker whose request failed);
- a partition nobody leads (a lease lapsed, not taken yet) is NOT_LEADER_OR_FOLLOWER too;
- a partition of a data topic this node does not know (deleted) is
  UNKNOWN_TOPIC_OR_PARTITION, which ends its marker, as Kafka drops the markers of a
  partition missing from its metadata; a leader that does not know the topic yet (it learns
  it at its next lease pass) answers UNKNOWN_TOPIC_OR_PARTITION, retried here.

The transaction coordinator retries the partitions whose answer is retriable
(`server.transactions`).

**Verification** (KIP-890, Kafka's `AddPartitionsToTxnManager`): a partition leader about to
write a transaction's first batch to a partition (Produce, and TxnOffsetCommit on
`__consumer_offsets`) asks the transactional id's coordinator with AddPartitionsToTxn v4+
(verify only, or add for transaction version 2) when another node coordinates it; a
coordinator that cannot be reached or answers late is COORDINATOR_NOT_AVAILABLE (the producer
is told to retry).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from groupcoord.coordinator.transactions.state import TopicPartition, TxnMarker
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC
from groupcoord.server.cluster_map import TRANSACTION_KEY
from groupcoord.server.inter_broker import InterBrokerClient, PeerUnavailable
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from groupcoord.wire.generated.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

log = logging.getLogger("groupcoord.transactions")


LocalWrite = Callable[[TopicPartition, TxnMarker], Awaitable[int]]
# (transactional id, producer id, producer epoch, partition, add): the coordinator's answer.
LocalVerify = Callable[[str, int, int, TopicPartition, bool], Awaitable[int]]


class Owners(Protocol):
    """Who leads a partition and coordinates a key (`server.lease_cluster_map`)."""

    def owner(self, topic: str, partition: int) -> int: ...
    def coordinator(self, key_type: int, key: str) -> int: ...


# AddPartitionsToTxn v4: the first version a broker sends (a batch of transactions, each
# verify-only or not).
FIRST_BROKER_ADD_PARTITIONS_VERSION = 4


class TxnPeers:
    """The transaction RPCs of a node that shares its partitions with others."""

    def __init__(self, node_id: int, owners: Owners, peers: InterBrokerClient,
                 knows_topic: Callable[[str], bool], write_here: LocalWrite,
                 verify_here: LocalVerify) -> None:
        self._node_id = node_id
        self._owners = owners
        self._peers = peers
        self._knows_topic = knows_topic
        self._write_here = write_here
        self._verify_here = verify_here

    async def write_markers(self, partitions: list[TopicPartition], marker: TxnMarker
                            ) -> dict[TopicPartition, int]:
        """Each partition's answer: 0 once its marker is written, else Kafka's error."""
        errors: dict[TopicPartition, int] = {}
        remote: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            topic, partition = tp
            if topic != OFFSETS_TOPIC and not self._knows_topic(topic):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            owner = self._owners.owner(topic, partition)
            if owner == self._node_id:
                errors[tp] = await self._write_here(tp, marker)
            elif owner < 0:
                errors[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                remote.setdefault(owner, []).append(tp)
        answers = await asyncio.gather(*(self._send(node, tps, marker)
                                         for node, tps in remote.items()))
        for answer in answers:
            errors.update(answer)
        return errors

    async def _send(self, node_id: int, partitions: list[TopicPartition], marker: TxnMarker
                    ) -> dict[TopicPartition, int]:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        request = WriteTxnMarkersRequest(markers=[WritableTxnMarker(
            producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
            transaction_result=marker.commit, coordinator_epoch=marker.coordinator_epoch,
            transaction_version=marker.transaction_version,
            topics=[WritableTxnMarkerTopic(name=topic, partition_indexes=indexes)
                    for topic, indexes in by_topic.items()])])
        # Unanswered until the response names it: retried.
        errors = dict.fromkeys(partitions, int(ErrorCode.NOT_LEADER_OR_FOLLOWER))
        try:
            response = await self._peers.send(node_id, request, WriteTxnMarkersResponse)
        except PeerUnavailable as exc:
            log.info("WriteTxnMarkers to node %d failed: %s; will retry", node_id, exc)
            return errors
        for result in response.markers:
            if result.producer_id != marker.producer_id:
                continue
            for topic_result in result.topics:
                for p in topic_result.partitions:
                    tp = (topic_result.name, p.partition_index)
                    if tp in errors:
                        errors[tp] = _retried_if_unknown(p.error_code)
        return errors


    async def verify(self, tid: str, producer_id: int, producer_epoch: int,
                     tp: TopicPartition, add: bool) -> int:
        """The answer of `tid`'s coordinator for the partition: verified, or added when
        `add` (see the module docstring)."""
        node_id = self._owners.coordinator(TRANSACTION_KEY, tid)
        if node_id == self._node_id:
            return await self._verify_here(tid, producer_id, producer_epoch, tp, add)
        if node_id < 0:
            return int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        topic, partition = tp
        request = AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnTransaction(
            transactional_id=tid, producer_id=producer_id, producer_epoch=producer_epoch,
            verify_only=not add,
            topics=[AddPartitionsToTxnTopic(name=topic, partitions=[partition])])])
        try:
            response = await self._peers.send(
                node_id, request, AddPartitionsToTxnResponse,
                lowest_version=FIRST_BROKER_ADD_PARTITIONS_VERSION)
        except PeerUnavailable as exc:
            log.info("AddPartitionsToTxn to node %d failed: %s", node_id, exc)
            return int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if response.error_code:
            return int(response.error_code)
        for result in response.results_by_transaction:
            for topic_result in result.topic_results:
                for p in topic_result.results_by_partition:
                    if (topic_result.name, p.partition_index) == tp:
                        return int(p.partition_error_code)
        return int(ErrorCode.COORDINATOR_NOT_AVAILABLE)  # not answered: asked again


def _retried_if_unknown(code: int) -> int:
    """A leader that does not know the topic yet learns it at its next pass: the marker is
    retried (the topic is known here, or it was not sent)."""
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    return int(code)
