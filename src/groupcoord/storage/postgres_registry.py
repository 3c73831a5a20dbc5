"""The nodes of a cluster on PostgreSQL and who leads what, as the lease passes read them.

``cluster_nodes`` (created by ``storage.postgres_store.ensure_schema``) holds one row per
node: its advertised endpoints (what Metadata and FindCoordinator tell clients) and a
liveness lease renewed by every lease pass with the same expiry as the node's partition
leases, so a node stops being live when its partition leases lapse, not before. A clean stop
ends the node's lease at once (``leave_cluster``).

A node's liveness decides only where leadership should go (the placement over the
live nodes) and whom clients are sent to; it fences nothing: only a partition's epoch does
(``storage.postgres_store``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from groupcoord.storage.postgres_session import READ_ISOLATION, WRITE_ISOLATION, PostgresSession


@dataclass(frozen=True)
class NodeEndpoint:
    """One advertised listener of a node: Kafka's listener name, host and port."""

    name: str
    host: str
    port: int


@dataclass(frozen=True)
class LiveNode:
    """A node whose liveness lease has not lapsed, with its advertised endpoints."""

    node_id: int
    endpoints: tuple[NodeEndpoint, ...]


@dataclass(frozen=True)
class PartitionLeader:
    """The holder of a partition's live lease and its epoch (Kafka's leader epoch)."""

    node_id: int
    epoch: int


@dataclass(frozen=True)
class ClusterView:
    """What one read of the registry and the lease table gives: the live nodes (ascending
    ids) and the leader of every partition whose lease is live."""

    live: tuple[LiveNode, ...]
    leaders: dict[tuple[str, int], PartitionLeader]

    @property
    def live_ids(self) -> list[int]:
        return [node.node_id for node in self.live]


def _encode(endpoints: tuple[NodeEndpoint, ...]) -> str:
    return json.dumps([[e.name, e.host, e.port] for e in endpoints])


def _decode(text: str) -> tuple[NodeEndpoint, ...]:
    return tuple(NodeEndpoint(str(name), str(host), int(port))
                 for name, host, port in json.loads(text))


def heartbeat_node(session: PostgresSession, node_id: int,
                   endpoints: tuple[NodeEndpoint, ...], expiry_ms: int) -> None:
    """Register the node (or renew it) with its endpoints, live until ``expiry_ms``."""
    with session.transaction(WRITE_ISOLATION) as cur:
        cur.execute("INSERT INTO cluster_nodes (node_id, endpoints, lease_expiry_ms)"
                    " VALUES (%s, %s, %s) ON CONFLICT (node_id) DO UPDATE"
                    " SET endpoints = excluded.endpoints,"
                    " lease_expiry_ms = excluded.lease_expiry_ms",
                    (node_id, _encode(endpoints), expiry_ms))


def leave_cluster(session: PostgresSession, node_id: int) -> None:
    """End the node's liveness lease now (a clean stop)."""
    with session.transaction(WRITE_ISOLATION) as cur:
        cur.execute("UPDATE cluster_nodes SET lease_expiry_ms = 0 WHERE node_id = %s",
                    (node_id,))


def cluster_view(session: PostgresSession, now_ms: int) -> ClusterView:
    """The live nodes and the live leases, from one snapshot."""
    with session.transaction(READ_ISOLATION) as cur:
        cur.execute("SELECT node_id, endpoints FROM cluster_nodes"
                    " WHERE lease_expiry_ms > %s ORDER BY node_id", (now_ms,))
        live = tuple(LiveNode(node_id, _decode(text)) for node_id, text in cur.fetchall())
        cur.execute("SELECT topic, partition_index, leader_node_id, leader_epoch"
                    " FROM partition_state WHERE leader_node_id IS NOT NULL"
                    " AND lease_expiry_ms > %s", (now_ms,))
        leaders = {(topic, partition): PartitionLeader(node_id, epoch)
                   for topic, partition, node_id, epoch in cur.fetchall()}
    return ClusterView(live, leaders)
