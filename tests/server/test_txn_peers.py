"""Where the transaction RPCs of a node with peers go (`server.txn_peers`), with an
in-process broker as the peer node: markers of partitions this node leads are written here,
those another node leads go there as WriteTxnMarkers (its answers per partition), a
partition nobody leads or a peer that cannot be reached is NOT_LEADER_OR_FOLLOWER (retried
by the coordinator), a topic this node does not know ends its marker; KIP-890 verification
is answered here when this node coordinates the id, else by AddPartitionsToTxn at the
coordinator's node."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from broker_inproc import InProcBroker, run

from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.transactions.state import TopicPartition, TxnMarker
from groupcoord.server.cluster_map import TRANSACTION_KEY, ClusterMap
from groupcoord.server.config import Listener
from groupcoord.server.inter_broker import InterBrokerClient
from groupcoord.server.txn_peers import TxnPeers
from groupcoord.wire.errors import ErrorCode as E

HERE, PEER, GONE = 1, 2, 3
TOPIC = "t"
MARKER = TxnMarker(producer_id=5000, producer_epoch=0, coordinator_epoch=0, commit=True,
                   transaction_version=0)


class Owners:
    """Partition 0 here, 1 on the peer, 2 on a node that cannot be reached, 3 on none; one
    transactional id coordinated here, another on the peer."""

    def owner(self, topic: str, partition: int) -> int:
        return {0: HERE, 1: PEER, 2: GONE}.get(partition, -1)

    def coordinator(self, key_type: int, key: str) -> int:
        assert key_type == TRANSACTION_KEY
        return HERE if key == "here" else PEER


class Local:
    """This node's own writes and verifications, recorded."""

    def __init__(self) -> None:
        self.written: list[TopicPartition] = []
        self.verified: list[tuple[str, TopicPartition, bool]] = []

    async def write(self, tp: TopicPartition, marker: TxnMarker) -> int:
        assert marker == MARKER
        self.written.append(tp)
        return 0

    async def verify(self, tid: str, pid: int, epoch: int, tp: TopicPartition,
                     add: bool) -> int:
        self.verified.append((tid, tp, add))
        return 0


@asynccontextmanager
async def _peers(tmp_path: Path, topic_there: bool
                 ) -> AsyncIterator[tuple[TxnPeers, Local, InProcBroker]]:
    """This node's transaction RPCs, with an in-process broker as node PEER (knowing the
    topic or not)."""
    async with InProcBroker(tmp_path) as peer:
        if topic_there:
            peer.broker.topics.create(TOPIC, 4, {})
        cluster = ClusterMap([PEER, GONE], {})
        cluster.nodes[PEER].endpoints["PLAINTEXT"] = Listener("127.0.0.1", peer.port)
        cluster.nodes[GONE].endpoints["PLAINTEXT"] = Listener("127.0.0.1", 1)  # refused
        client = InterBrokerClient(HERE, cluster, "PLAINTEXT", ManualClock())
        local = Local()
        try:
            yield TxnPeers(HERE, Owners(), client, lambda topic: topic == TOPIC, local.write,
                           local.verify), local, peer
        finally:
            await client.close()


def test_markers_go_to_each_partitions_leader(tmp_path: Path) -> None:
    async def go() -> None:
        async with _peers(tmp_path, topic_there=True) as (peers, local, peer):
            errors = await peers.write_markers(
                [(TOPIC, 0), (TOPIC, 1), (TOPIC, 2), (TOPIC, 3), ("deleted", 0)], MARKER)
            assert errors == {(TOPIC, 0): 0, (TOPIC, 1): 0,
                              (TOPIC, 2): E.NOT_LEADER_OR_FOLLOWER,
                              (TOPIC, 3): E.NOT_LEADER_OR_FOLLOWER,
                              ("deleted", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
            assert local.written == [(TOPIC, 0)]
            plog = peer.broker.topics.log(TOPIC, 1)
            assert plog is not None and plog.log_end_offset == 1  # the peer wrote the marker
    run(go())


def test_a_leader_that_does_not_know_the_topic_yet_is_asked_again(tmp_path: Path) -> None:
    async def go() -> None:
        async with _peers(tmp_path, topic_there=False) as (peers, _local, _peer):
            errors = await peers.write_markers([(TOPIC, 1)], MARKER)
            assert errors == {(TOPIC, 1): E.NOT_LEADER_OR_FOLLOWER}
    run(go())


def test_verification_at_the_coordinators_node(tmp_path: Path) -> None:
    async def go() -> None:
        async with _peers(tmp_path, topic_there=True) as (peers, local, _peer):
            assert await peers.verify("here", 1, 0, (TOPIC, 0), add=False) == 0
            assert local.verified == [("here", (TOPIC, 0), False)]
            # The peer coordinates "there" and has no such transaction: Kafka's answer.
            assert await peers.verify("there", 1, 0, (TOPIC, 1), add=False) \
                == E.INVALID_PRODUCER_ID_MAPPING
    run(go())
