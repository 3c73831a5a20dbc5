"""The ownership map of a node of a cluster on PostgreSQL (`serve --storage`): the seam of
`server.cluster_map` (Metadata, FindCoordinator, DescribeCluster, and the
NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR checks read it), its answers from the lease table
and the node registry rather than from a placement in one process.

- a partition's owner is the node holding its live lease: this node while its copy leads
  (known at once, also between lease passes), else the holder the last lease pass read;
  -1 while nobody leads (a lease lapsed and not yet taken); its leader epoch is the lease's;
- the nodes are the live ones of the registry as the last pass read them, each with the
  endpoints it advertised; this node's are those of its bound listeners.

Nothing here does IO: `server.postgres_node` calls `follow_registry` after each pass.
"""

from __future__ import annotations

from groupcoord.server.cluster_map import ClusterMap, Node
from groupcoord.server.config import Listener
from groupcoord.storage.postgres_manager import PostgresLogManager
from groupcoord.storage.postgres_registry import NodeEndpoint


class LeaseClusterMap(ClusterMap):
    """Leaders from the leases of ``partitions``, nodes from its registry view."""

    def __init__(self, partitions: PostgresLogManager, coordinator_partitions: dict[str, int],
                 advertised: dict[str, Listener]) -> None:
        super().__init__([partitions.node_id], coordinator_partitions)
        self._partitions = partitions
        self._own = self.nodes[partitions.node_id]
        self._own.endpoints.update(advertised)

    def owner(self, topic: str, partition: int) -> int:
        leader = self._partitions.leader((topic, partition))
        return -1 if leader is None else leader.node_id

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The epoch of the partition's live lease (-1 while nobody leads): Kafka's leader
        epoch, so clients ignore Metadata older than what they have seen."""
        leader = self._partitions.leader((topic, partition))
        return -1 if leader is None else leader.epoch

    def own_endpoints(self) -> tuple[NodeEndpoint, ...]:
        """This node's advertised endpoints."""
        return tuple(NodeEndpoint(name, listener.host, listener.port)
                     for name, listener in self._own.endpoints.items())

    def follow_registry(self) -> None:
        """The live nodes as the partitions' last pass read them."""
        nodes: dict[int, Node] = {}
        for live in self._partitions.live_nodes():
            if live.node_id == self._own.node_id:
                nodes[live.node_id] = self._own
            else:
                nodes[live.node_id] = Node(live.node_id, True, {
                    e.name: Listener(e.host, e.port, e.name) for e in live.endpoints})
        self.nodes = nodes
