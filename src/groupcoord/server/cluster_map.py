"""The ownership map of several nodes in one process (`--nodes N`): which node leads each
data partition and coordinates each internal partition.

One process holds one storage and one broker core; a node is a node id plus its listeners.
Kafka spreads leaders over brokers and moves them when a broker stops; this map does the
same without replication (every node reads the one storage, so a new leader has every
byte already):

- a partition's preferred node is `nodes[(partition + abs(java_string_hash(topic))) % N]`
  (`preferred_node`, also the spread of the live nodes of a cluster on PostgreSQL), so the
  partitions of a topic, and the coordinator partitions of `__consumer_offsets`,
  `__share_group_state` and `__transaction_state`, are spread over all nodes;
- a partition may be pinned to a node (moving a coordinator); a pin wins while its node
  lives;
- a partition whose chosen node is stopped goes to the next live node in id order, and
  back once its node starts again (Kafka's preferred leader election).

Nothing here does IO: `server.cluster` applies changes of the map (listeners, shard
unload and load).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from groupcoord.coordinator.partitioning import java_string_hash, partition_for
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC, SHARE_STATE_TOPIC, TXN_TOPIC
from groupcoord.server.config import Listener

# FindCoordinator key types (`FindCoordinatorRequest.CoordinatorType`).
GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2


def preferred_node(topic: str, partition: int, order: Sequence[int]) -> int:
    """The partition's preferred node among ``order``, node ids ascending (not empty)."""
    return order[(partition + abs(java_string_hash(topic))) % len(order)]


@dataclass
class Node:
    """One node: its id, whether it serves, and its advertised endpoint per listener name."""

    node_id: int
    live: bool = True
    endpoints: dict[str, Listener] = field(default_factory=dict)


class ClusterMap:
    """Data partition -> leader node, coordinator partition -> node."""

    def __init__(self, node_ids: list[int], coordinator_partitions: dict[str, int]) -> None:
        if not node_ids:
            raise ValueError("a cluster needs at least one node")
        self.nodes: dict[int, Node] = {n: Node(n) for n in sorted(node_ids)}
        self._order = sorted(node_ids)
        # Partition counts of the coordinators' topics, for FindCoordinator's key -> partition.
        self.coordinator_partitions = dict(coordinator_partitions)
        self.pinned: dict[tuple[str, int], int] = {}

    # -- placement -------------------------------------------------------------------------

    def preferred(self, topic: str, partition: int) -> int:
        return preferred_node(topic, partition, self._order)

    def owner(self, topic: str, partition: int) -> int:
        """The live node serving the partition; -1 when every node is stopped."""
        node = self.pinned.get((topic, partition))
        if node is None or not self.nodes[node].live:
            node = self.preferred(topic, partition)
        if self.nodes[node].live:
            return node
        start = self._order.index(node)
        for step in range(1, len(self._order)):
            candidate = self._order[(start + step) % len(self._order)]
            if self.nodes[candidate].live:
                return candidate
        return -1

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's leader epoch: 0, as one process over one storage never changes
        leader in Kafka's sense (every node reads the same log)."""
        return 0

    def coordinator_partition(self, key_type: int, key: str) -> tuple[str, int]:
        """The internal partition coordinating a FindCoordinator key (Kafka's
        `partitionFor` of the group, transactional id or share-partition key)."""
        topic = {GROUP_KEY: OFFSETS_TOPIC, TRANSACTION_KEY: TXN_TOPIC,
                 SHARE_KEY: SHARE_STATE_TOPIC}[key_type]
        return topic, partition_for(key, self.coordinator_partitions[topic])

    def coordinator(self, key_type: int, key: str) -> int:
        return self.owner(*self.coordinator_partition(key_type, key))

    # -- nodes -----------------------------------------------------------------------------

    def live_nodes(self) -> list[Node]:
        return [node for node in self.nodes.values() if node.live]

    def controller_id(self) -> int:
        live = self.live_nodes()
        return live[0].node_id if live else -1

    def endpoint(self, node_id: int, listener_name: str) -> Listener | None:
        node = self.nodes.get(node_id)
        return None if node is None or not node.live else node.endpoints.get(listener_name)

    def pin(self, topic: str, partition: int, node_id: int) -> None:
        if node_id not in self.nodes:
            raise ValueError(f"no node {node_id}")
        self.pinned[(topic, partition)] = node_id
